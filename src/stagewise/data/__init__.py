"""Containers for judgements and results, and their readers and writers.

Names load lazily, so a light module of the package (``stagewise.data.formats``, the input formats the command
line lists in its help) can be imported without the readers and polars behind them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "Qrels": "stagewise.data.qrels",
    "Run": "stagewise.data.run",
    "read_qrels": "stagewise.data.readers",
    "read_run": "stagewise.data.readers",
    "write_qrels": "stagewise.data.writers",
    "write_run": "stagewise.data.writers",
}

__all__ = ["Qrels", "Run", "read_qrels", "read_run", "write_qrels", "write_run"]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:
    from stagewise.data.qrels import Qrels
    from stagewise.data.readers import read_qrels, read_run
    from stagewise.data.run import Run
    from stagewise.data.writers import write_qrels, write_run
