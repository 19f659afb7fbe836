"""Lazy package exports: a package names its public API in one table (name -> module), and each name loads its
module on first use, so ``import stagewise`` (or ``stagewise.rag``) stays cheap and ``stagewise --help`` instant."""

from __future__ import annotations

import importlib
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
