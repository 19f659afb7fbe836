"""The engines as registry entries: their names, one line of help each, and where each is implemented.

This module imports nothing heavy (no numpy, polars or dask), so the command line reads it for ``--engine``'s
choices and help at start-up; an engine's class is imported when one is made (:meth:`EngineEntry.make`).

Adding an engine is its module (a subclass of :class:`stagewise.engines.Engine` with ``score_runs`` and
``map_groups``) and an entry registered here or from that module::

    ENGINES.register(EngineEntry("ray", "runs measured on a Ray cluster", "my_package.ray_engine:RayEngine"))

after which ``stagewise.evaluate(..., engine="ray")`` and ``stagewise eval --engine ray`` use it.

>>> ENGINES.names()
['local', 'stream', 'dask']
>>> ENGINES.lookup("Stream").factory
'stagewise.engines._stream:StreamEngine'
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stagewise.errors import ConventionError
from stagewise.spec import Registry

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.engines._base import Engine

__all__ = ["ENGINES", "EngineEntry"]


@dataclass(frozen=True)
class EngineEntry:
    """An engine by name: ``factory`` is ``"module:Class"``, imported when the engine is made; ``scheduler``
    says whether it takes a scheduler's address (its first argument)."""

    name: str
    help: str
    factory: str
    aliases: tuple[str, ...] = ()
    scheduler: bool = False

    def engine_class(self) -> type[Engine]:
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)

    def make(self, scheduler: str | None = None, **options: Any) -> Engine:
        """The engine, made with ``options`` (its constructor's keywords: ``block_bytes``, ``n_workers``...);
        an option it does not take, or a scheduler address for an engine that takes none, is a
        :class:`ConventionError`."""
        if scheduler is not None and not self.scheduler:
            raise ConventionError(
                f"a scheduler address is for the dask engine, not {self.name!r} (use --engine dask)"
            )
        cls = self.engine_class()
        args = (scheduler,) if self.scheduler else ()
        try:
            if options:  # checked only when given: a signature costs more than making the engine
                inspect.signature(cls).bind(*args, **options)
        except TypeError:
            takes = [p for p in inspect.signature(cls).parameters if p != "scheduler"]
            raise ConventionError(
                f"the {self.name} engine takes {'the options ' + ', '.join(takes) if takes else 'no options'}; "
                f"got {sorted(options)}"
            ) from None
        return cls(*args, **options)


ENGINES: Registry[EngineEntry] = Registry(
    "engine",
    EngineEntry(
        "local",
        "runs read whole into memory",
        "stagewise.engines._local:LocalEngine",
    ),
    EngineEntry(
        "stream",
        "a TREC run larger than memory, read a block of whole queries at a time; the run must be grouped by query",
        "stagewise.engines._stream:StreamEngine",
    ),
    EngineEntry(
        "dask",
        "many runs, large ones in partitions of whole queries, on a Dask cluster; needs stagewise[dask]",
        "stagewise.engines._dask:DaskEngine",
        scheduler=True,
    ),
    error=ConventionError,
)
