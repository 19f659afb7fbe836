"""Rerankers by name: each is a :class:`RerankerEntry` of :data:`RERANKERS`, its parameters declared once.

A reranker is named in the one grammar (:mod:`stagewise.spec`): ``bm25-proximity``,
``bm25-proximity(k1=0.9,alpha=0.5)``, ``cross-encoder(path='DIR')``. Its entry holds the name, a sentence of
help, its parameters as :class:`~stagewise.spec.Param` (type, default, meaning, valid values) and the factory
that builds it; :func:`make_reranker`, the reranker's canonical name, the command line's ``--reranker`` check
and help, and the error for an unknown name or a bad value all read that one declaration.

>>> entry = RERANKERS.lookup("BM25_Proximity(k1=0.9)")  # names are case-insensitive, '_' reads as '-'
>>> entry.name, list(entry.params)
('bm25-proximity', ['k1', 'b', 'alpha', 'variant'])
>>> entry.canonical(entry.values({"k1": 0.9, "alpha": 0.3}))  # parameters at their defaults are left out
'bm25-proximity(k1=0.9)'
>>> make_reranker("nope")
Traceback (most recent call last):
...
stagewise.errors.ConventionError: unknown reranker 'nope'; choose one of bm25-proximity, bi-encoder, cross-encoder

Adding a reranker touches two files, the new unit and its test: a module in this package (say
``stagewise/rerank/length.py``) whose class is registered with :func:`reranker`::

    from stagewise.rerank.base import PairReranker
    from stagewise.rerank.registry import reranker
    from stagewise.spec import Param

    @reranker("length", help="longer documents first", params={"scale": Param(float, 1.0, "a factor")})
    class LengthReranker(PairReranker):
        def __init__(self, *, scale=None, **options):
            self.scale = self.entry.values({"scale": scale})["scale"]
            super().__init__(**options)

        def score_pairs(self, query_texts, doc_texts):
            return [self.scale * len(d) for d in doc_texts]

The registry finds the package's modules itself the first time it is read (:meth:`RerankerRegistry.discover`),
so ``make_reranker("length(scale=2)")``, ``stagewise rerank --reranker length`` and the ``--help`` list take it
with no other edit. A module of this package keeps numpy and the models' libraries inside its functions:
``stagewise rerank --help`` imports every one of them to list their names. A reranker defined elsewhere (a
notebook, another package) is added with ``RERANKERS.register(RerankerEntry(...))`` or the same decorator.

This module imports neither numpy nor a reranker's implementation: entries name their factory as
``"module:attribute"`` when it lives elsewhere, resolved on use.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from stagewise.errors import ConventionError
from stagewise.spec import Param, Registry, canonical, parse_call

__all__ = ["RERANKERS", "RerankerEntry", "RerankerRegistry", "make_reranker", "reranker"]

EXAMPLES = "bm25-proximity, bm25-proximity(k1=0.9,alpha=0.5), cross-encoder(path='DIR')"


@dataclass(frozen=True)
class RerankerEntry:
    """A reranker as the registry knows it: its name, a sentence of help, its parameters and its factory.

    ``factory`` is a class or function taking the parameters as keywords (plus the options every reranker of
    :class:`~stagewise.rerank.base.PairReranker` takes: ``cache=``, ``batch_size=``), or its
    ``"module:attribute"`` path, imported when the reranker is built. ``version`` is carried into the reranked
    run's provenance: change it when the same name and parameters start to give other scores.
    """

    name: str
    factory: Callable[..., Any] | str
    help: str
    params: Mapping[str, Param] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    version: str = "1"

    def load(self) -> Callable[..., Any]:
        """The factory, imported if it was given as ``"module:attribute"``."""
        if not isinstance(self.factory, str):
            return self.factory
        module, _, attribute = self.factory.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def values(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter with its value: ``given``'s (``None`` meaning "not given") converted and checked by
        its :class:`~stagewise.spec.Param`, else the default; an unknown key is an error listing the parameters."""
        given = {key: value for key, value in given.items() if value is not None}
        return RERANKERS.check_params(self.name, self.params, given)

    def canonical(self, values: Mapping[str, Any]) -> str:
        """The name in the one grammar, leaving out the parameters at their defaults: it parses back to an
        equal reranker."""
        shown = [(key, value) for key, value in values.items() if value != self.params[key].default]
        return canonical(self.name, None, shown)

    def build(self, given: Mapping[str, Any] | None = None, **options: Any) -> Any:
        """The reranker with the parameters ``given`` (checked here, so a bad value is the grammar's one
        message before any factory runs) and ``options`` (``cache=``, ``batch_size=``: those not ``None``)."""
        values = self.values(given or {})
        extra = {key: value for key, value in options.items() if value is not None}
        return self.load()(**{k: v for k, v in values.items() if v is not None}, **extra)

    def __call__(self, **keywords: Any) -> Any:
        """The reranker from keywords, parameters and options together (``RERANKERS["bm25-proximity"](k1=0.9,
        cache=path)``), as when :data:`RERANKERS` mapped names to classes."""
        given = {key: keywords.pop(key) for key in list(keywords) if key in self.params}
        return self.build(given, **keywords)

    def describe(self) -> str:
        """One line for help: ``bm25-proximity(k1, b, alpha, variant): BM25 plus ...``."""
        params = f"({', '.join(self.params)})" if self.params else ""
        return f"{self.name}{params}: {self.help}"


class RerankerRegistry(Registry[RerankerEntry]):
    """A :class:`~stagewise.spec.Registry` of rerankers that finds the modules of its package on first read
    (:meth:`discover`) and looks up a whole spec (``bm25-proximity(k1=0.9)``), its parameters checked."""

    def __init__(self, what: str, *entries: RerankerEntry, package: str | None = None) -> None:
        super().__init__(what, *entries)
        self.package = package
        self._discovered = package is None

    def discover(self, *, again: bool = False) -> None:
        """Import each public module of the registry's package once, so that the rerankers they register are
        known (a new module needs no edit anywhere else); ``again`` looks for modules added since."""
        if self._discovered and not again:
            return
        self._discovered = True  # before the imports: a module registering its entries reads the registry
        package = importlib.import_module(self.package or "")
        for module in pkgutil.iter_modules(package.__path__):
            if not module.name.startswith("_"):
                importlib.import_module(f"{package.__name__}.{module.name}")

    def register(self, entry: RerankerEntry, *, replace: bool = False) -> RerankerEntry:
        """Add ``entry`` (:meth:`stagewise.spec.Registry.register`), after the package's own rerankers, so that
        they are listed first and a name of theirs is never taken silently."""
        self.discover()
        return super().register(entry, replace=replace)

    def lookup(self, name: str) -> RerankerEntry:
        """The entry for a name or a whole spec (``bm25-proximity(k1=0.9)``, its parameters checked too), or
        the registry's error listing every reranker."""
        call = parse_call(name, self.what, EXAMPLES)
        self.discover()
        entry = super().lookup(call.name)
        if call.at is not None:
            raise self.error(f"cannot read {self.what} {call.text!r}; expected a form like {EXAMPLES}")
        entry.values(call.params)
        return entry

    def names(self) -> list[str]:
        self.discover()
        return super().names()

    def __getitem__(self, name: str) -> RerankerEntry:
        self.discover()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        self.discover()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self.discover()
        return super().__iter__()

    def __len__(self) -> int:
        self.discover()
        return super().__len__()


RERANKERS: RerankerRegistry = RerankerRegistry("reranker", package="stagewise.rerank")
"""Every reranker by name: the built-in ones (``bm25-proximity``, ``bi-encoder``, ``cross-encoder``), any module
of this package registers, and those added with :meth:`RerankerRegistry.register`."""


class _DefaultForms:
    """Each reranker with every parameter at its default, as the grammar writes it (what ``--help`` shows)."""

    def names(self) -> list[str]:
        entries = [RERANKERS[name] for name in RERANKERS.names()]
        return [canonical(e.name, None, [(k, p.default) for k, p in e.params.items()]) for e in entries]


DEFAULT_FORMS = _DefaultForms()
"""``DEFAULT_FORMS.names()``: ``bm25-proximity(k1=1.2,b=0.75,alpha=0.3,variant=lucene)``, ... (for help texts)."""

C = TypeVar("C", bound=Callable[..., Any])


def reranker(
    name: str,
    *,
    help: str,
    params: Mapping[str, Param] | None = None,
    aliases: tuple[str, ...] = (),
    version: str = "1",
    registry: RerankerRegistry | None = None,
) -> Callable[[C], C]:
    """Class decorator: register the class as reranker ``name`` and give it the entry as ``entry`` (its
    ``__init__`` checks its parameters with ``self.entry.values(...)`` and names itself with
    ``self.entry.canonical(...)``)."""

    def register(factory: C) -> C:
        entry = RerankerEntry(name, factory, help, dict(params or {}), aliases, version)
        (registry or RERANKERS).register(entry)
        factory.entry = entry  # type: ignore[attr-defined]
        return factory

    return register


def make_reranker(spec: str, *, cache: Any = None, **options: Any) -> Any:
    """A reranker from its name in the one grammar: ``bm25-proximity``, ``bm25-proximity(k1=0.9,b=0.4)``,
    ``bi-encoder``, ``bi-encoder(model='DIR',backend='onnx')``, ``cross-encoder(path='DIR')``. ``str`` of the
    result parses back to an equal reranker.

    ``cache`` (a :class:`~stagewise.rerank.base.ScoreCache` or an SQLite path) and ``options`` (``batch_size``,
    or ``encoder`` for the bi-encoder) go to the factory when not ``None``.

    >>> str(make_reranker("bm25-proximity(b=0.4)"))
    'bm25-proximity(b=0.4)'
    """
    call = parse_call(spec, "reranker", EXAMPLES)
    entry = RERANKERS.lookup(call.name)
    if call.at is not None:
        raise ConventionError(f"cannot read reranker {call.text!r}; expected a form like {EXAMPLES}")
    return entry.build(call.params, cache=cache, **options)
