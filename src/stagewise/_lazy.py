"""Lazy package exports: a package names its public API in one table (name -> module), and each name loads its
module on first use, so ``import stagewise`` (or ``stagewise.rag``) stays cheap and ``stagewise --help`` instant."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    >>> space = {"__name__": "demo"}
    >>> getattr_, dir_ = lazy_exports(space, {"sqrt": "math"})
    >>> getattr_("sqrt")(9.0), dir_(), "sqrt" in space
    (3.0, ['sqrt'], True)
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # the next lookup finds it without coming here
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__


class LazyModule:
    """A module imported on first use: it stands in ``namespace`` under ``alias`` until an attribute is looked up,
    then imports the module and puts it in its own place, so later lookups are the module's own (no cost).

    A catalogue that the command line reads for its choices and help (a registry of functions that use numpy)
    declares ``np = LazyModule(globals(), "np", "numpy")``, and ``--help`` does not pay numpy's start-up.

    >>> space = {}
    >>> space["m"] = LazyModule(space, "m", "math")
    >>> space["m"].sqrt(9.0), type(space["m"]).__name__
    (3.0, 'module')
    """

    def __init__(self, namespace: dict[str, Any], alias: str, module: str) -> None:
        self._namespace, self._alias, self._module = namespace, alias, module

    def __getattr__(self, name: str) -> Any:
        module = importlib.import_module(self._module)
        self._namespace[self._alias] = module
        return getattr(module, name)


def functions_over_submodules(package: str, *names: str) -> None:
    """Keep ``package.NAME`` the exported function for each of ``names`` when a submodule of the same name is
    imported (``stagewise.stats.compare`` is the function, not the module ``stagewise/stats/compare.py``): Python
    binds an imported submodule on its package, which would replace the lazily exported function."""

    class _Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in names and isinstance(value, types.ModuleType):
                return
            super().__setattr__(name, value)

    sys.modules[package].__class__ = _Package
