"""Containers for judgements and results, and their readers and writers."""

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels, read_run
from stagewise.data.run import Run
from stagewise.data.writers import write_qrels, write_run

__all__ = ["Qrels", "Run", "read_qrels", "read_run", "write_qrels", "write_run"]
