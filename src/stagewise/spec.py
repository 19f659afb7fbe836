"""Names with parameters, one grammar for all: metrics, fusion methods, BM25 variants, answer criteria, options.

Every named thing a user types is ``name``, ``name@k``, ``name(key=value, ...)`` or both, and parses to a value
whose ``str`` parses back to an equal value (ir_measures' idea, stated once here instead of five times)::

    name                        map, rrf, lucene, em
    name@k                      ndcg@10, P@5, iprec_at_recall@0.1, f1@0.7
    name@k(key=value, ...)      ndcg@10(gain=exp), P@5(rel=2)
    name(key=value, ...)@k      ir_measures' order: P(rel=2)@10, nDCG(gain=exp)@10
    name(key=value, ...)        rrf(rrf_k=60), wsum(weights=(0.7,0.3)), lucene(k1=0.9,b=0.4), rbp(p=0.8)

A value is a Python literal read with :func:`ast.literal_eval` (never ``eval``): a number, a quoted string, a
tuple or list (``weights=(0.7,0.3)`` or ``[0.7, 0.3]``), ``True``, ``False`` or ``None``; anything else that is
one word is read as that word (``gain=exp``, ``dcg=exp-log2``). ``-p NAME=VALUE`` on the command line reads its
value the same way (:func:`parse_value`).

Spellings accepted besides the grammar, each kept because it is documented or is a peer's:

- trec_eval's measure names: ``P_10``, ``ndcg_cut_10``, ``ndcg_cut.10``, ``recip_rank``, ``map_cut_100``,
  ``iprec_at_recall_0.10``, and its cutoff lists ``ndcg_cut.10,20`` (see
  :func:`stagewise.metrics.measures.expand_cutoff_lists` and :data:`stagewise.metrics.measures.TREC_EVAL_NAMES`).
- ir_measures' names, each meaning ir_measures' number: ``AP``, ``nDCG@10``, ``P(rel=2)@10``, ``RR@10``,
  ``R@100``, ``Rprec``, ``Bpref``, ``infAP``, ``SetP``, ``SetR``, ``SetF``, ``SetAP``, ``NumRet``, ``NumRel``,
  ``NumRelRet``, ``Success@5``, ``Accuracy@10``, ``Compat``, ``AP(judged_only=True)``,
  ``nDCG(gains={0:0,1:1,2:3})@10``, ``nDCG(dcg='log2')@10`` (linear gain) and ``nDCG(dcg='exp-log2')@10``
  (= ``ndcg@10(gain=exp)``). Where the spelling differs from ours only in case and the number differs, the
  exact spelling decides (:data:`stagewise.metrics.measures.PEER_NAMES`): ``ERR@10`` is gdeval's
  (``err@10(max_label=4)``) and ``err@10`` ours (highest grade from the qrels); ``RBP`` is ir_measures'
  (``rbp(p=0.8,scale=False)``; ``RBP(rel=2)`` binary) and ``rbp`` trec_eval's; ``IPrec@0.1`` is trec_eval 9's
  (``iprec_at_recall@0.1(rounding=0.9)``); ``Judged@10`` is ``judged_retrieved@10``. ndeval's measures are
  refused with a message saying so; cwl_eval's user models (``INST(T=2,max_rel=3)``, ``SDCG(max_rel=3)@10``) are
  families of :mod:`stagewise.metrics.cwl`.
- ranx's names, each meaning ranx's number: ``hits@10``, ``hit_rate@10`` (= ``success@10``), ``precision@10``,
  ``recall@10``, ``f1@10``, ``mrr@10``, ``map@100``, ``ndcg@10``, ``dcg@10``, ``ndcg_burges@10``
  (= ``ndcg@10(gain=exp)``), ``r-precision``, ``bpref``, ``rbp.95`` (= ``rbp(p=0.95,scale=False)``), and its
  relevance level suffix ``map@100-l2`` (= ``map@100(rel=2)``); ``precision`` and ``recall`` without a cutoff
  are ranx's whole-list ``set_P`` and ``set_recall``.
- The answer criterion ``f1:0.5`` (documented before this grammar; the same as ``f1@0.5``).
- Names are case-insensitive, and ``-`` reads as ``_`` (``reciprocal-rank-fusion``).

The pieces: :class:`Param` (a parameter: type, default, a sentence, a validity check), :func:`parse_call` (the
syntax), :func:`canonical` and :func:`format_value` (the printed form), :class:`Registry` (name -> entry, with
aliases) and :func:`stagewise.errors.parameter_error` (the one message for a bad value: "The 'k1' parameter of
lucene must be a finite number >= 0. Got -1 instead.").
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from stagewise.errors import ConventionError, StagewiseError, parameter_error

__all__ = ["Call", "Param", "Registry", "canonical", "format_value", "parse_call", "parse_value"]

ErrorType = type[StagewiseError]

_SIMPLE = re.compile(r"([^@()\s]+)\s*(?:@\s*([^@()\s]+))?")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
# A bare word (gain=exp, dcg=exp-log2) may hold these; any other character needs quotes.
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


# ------------------------------------------------------------------------------------------------ values


def parse_value(text: str) -> Any:
    """A parameter value as typed: a Python literal when it is one, else the text itself (a bare word).

    >>> parse_value("0.5"), parse_value("(0.7,0.3)"), parse_value("exp"), parse_value("'exp-log2'")
    (0.5, (0.7, 0.3), 'exp', 'exp-log2')
    """
    text = text.strip()
    if _INT.fullmatch(text):  # the common case (a cutoff, a count) without the cost of ast
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def format_value(value: Any) -> str:
    """A parameter value as it appears in a canonical name: exact (``repr`` of floats, ``.0`` dropped) and free
    of spaces, so that it reads back to the same value.

    >>> format_value(60.0), format_value(0.1), format_value((0.7, 0.3)), format_value("exp")
    ('60', '0.1', '(0.7,0.3)', 'exp')
    """
    return _format(value, bare=True)


def _format(value: Any, *, bare: bool) -> str:
    if isinstance(value, tuple):
        return "(" + ",".join(_format(v, bare=False) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    if isinstance(value, str) and not (bare and value and set(value) <= _WORD_CHARS and _bare_reads_back(value)):
        return repr(value)  # quoted when a bare word would not read back as itself (inside a tuple it never does)
    return str(value)


def _bare_reads_back(word: str) -> bool:
    """Whether ``key=word`` unquoted reads back as the string ``word`` (``exp-log2`` does; ``1``, ``True`` and
    ``0A``, which is no Python token, do not)."""
    try:
        return _keywords(f"v={word}", word, word, ConventionError) == {"v": word}
    except ConventionError:
        return False


def canonical(name: str, at: Any = None, params: Iterable[tuple[str, Any]] = ()) -> str:
    """``name@at(k1=v1,k2=v2)``, leaving out ``@at`` when it is ``None`` and the parentheses when no parameter
    is given (parameters whose value is ``None`` are left out too).

    >>> canonical("ndcg", 10, [("gain", "exp")]), canonical("rrf", None, [("rrf_k", 60.0), ("weights", None)])
    ('ndcg@10(gain=exp)', 'rrf(rrf_k=60)')
    """
    text = name if at is None else f"{name}@{format_value(at)}"
    shown = [(k, v) for k, v in params if v is not None]
    if shown:
        text += "(" + ",".join(f"{k}={format_value(v)}" for k, v in shown) + ")"
    return text


# ------------------------------------------------------------------------------------------------ syntax


@dataclass(frozen=True)
class Call:
    """A name as parsed, before any registry gives it meaning: ``P(rel=2)@10`` -> name ``P``, at ``"10"``,
    params ``{"rel": 2}``. ``at`` keeps the text after ``@`` (its type is the registry entry's business)."""

    name: str
    at: str | None
    params: dict[str, Any]
    text: str


def parse_call(text: str, what: str, examples: str, *, error: ErrorType = ConventionError) -> Call:
    """Split ``text`` into name, ``@`` part and keyword parameters, or raise ``error`` saying what was expected.

    ``what`` names the thing (``"metric"``) and ``examples`` shows forms that work, for the message.

    >>> c = parse_call("nDCG(dcg='exp-log2')@10", "metric", "ndcg@10")
    >>> c.name, c.at, c.params
    ('nDCG', '10', {'dcg': 'exp-log2'})
    >>> parse_call("wsum(weights=(0.7,0.3))", "fusion method", "rrf").params
    {'weights': (0.7, 0.3)}
    """
    whole = str(text).strip()
    simple = _SIMPLE.fullmatch(whole)
    if simple:  # most names have no parentheses: no need for the scanner
        return Call(simple.group(1), simple.group(2), {}, whole)
    unreadable = error(f"cannot read {what} {whole!r}; expected a form like {examples}")
    cut = _first_of(whole, "@(")
    name, rest = whole[:cut].strip(), whole[cut:]
    if not name or any(ch.isspace() or ch == ")" for ch in name):
        raise unreadable
    at: str | None = None
    inner: str | None = None
    while rest:
        if rest[0] == "@" and at is None:
            end = _first_of(rest, "(", 1)
            at, rest = rest[1:end].strip(), rest[end:]
            if not at or any(ch.isspace() or ch in "@)" for ch in at):
                raise unreadable
        elif rest[0] == "(" and inner is None:
            end = _closing(rest)
            if end < 0:
                raise unreadable
            inner, rest = rest[1:end], rest[end + 1 :].strip()
        else:
            raise unreadable
    params = _keywords(inner or "", whole, examples, error)
    return Call(name, at, params, whole)


def _first_of(text: str, chars: str, start: int = 0) -> int:
    hits = [i for i in (text.find(c, start) for c in chars) if i >= 0]
    return min(hits) if hits else len(text)


def _closing(text: str) -> int:
    """Index of the parenthesis that closes ``text[0]``, skipping quoted strings; -1 when none does."""
    depth, quote, escaped = 0, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:  # the character after a backslash, a quote included, stays inside the string
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _keywords(inner: str, whole: str, examples: str, error: ErrorType) -> dict[str, Any]:
    if not inner.strip():
        return {}
    pairs = f"the parameters of {whole!r} must be key=value pairs, as in {examples}"
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        # the usual slip: a URL or a path unquoted (url=http://host:8000/v1 is no Python expression)
        quoting = " (quote a value holding ':', '/' or a space: url='http://127.0.0.1:8000/v1')"
        hint = quoting if any(c in inner for c in ":/ ") else ""
        raise error(
            f"cannot read the parameters of {whole!r}; expected key=value pairs, as in {examples}{hint}"
        ) from None
    if not isinstance(call, ast.Call) or call.args:
        raise error(pairs)
    source = f"f({inner})"
    out: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise error(pairs)
        if keyword.arg in out:
            raise error(f"parameter {keyword.arg!r} is given twice in {whole!r}")
        node = keyword.value
        if isinstance(node, ast.Name):
            out[keyword.arg] = node.id
            continue
        try:
            out[keyword.arg] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            # Not a literal: only one bare word may stand for itself (dcg=exp-log2), not an expression.
            segment = (ast.get_source_segment(source, node) or "").strip()
            if not (segment and set(segment) <= _WORD_CHARS):
                raise error(f"cannot read the value of parameter {keyword.arg!r} in {whole!r}") from None
            out[keyword.arg] = segment
    return out


# -------------------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Param:
    """A parameter: its type, default, a sentence of meaning, and what values it accepts.

    ``type`` is ``int``, ``float``, ``str``, ``bool`` or ``tuple`` (a tuple of finite numbers >= 0, not all 0:
    one weight per run). ``expected`` completes "must be ..." in the error (built from ``type`` and ``choices``
    when empty); ``check`` is the validity test applied after conversion.

    >>> p = Param(float, 0.9, "persistence", "a number in (0, 1)", lambda v: 0 < v < 1)
    >>> p.coerce("rbp", "p", "0.5")
    0.5
    >>> p.coerce("rbp", "p", 1)
    Traceback (most recent call last):
    ...
    stagewise.errors.ConventionError: The 'p' parameter of rbp must be a number in (0, 1). Got 1.0 instead.
    """

    type: type
    default: Any
    help: str
    expected: str = ""
    check: Callable[[Any], bool] | None = None
    choices: tuple[Any, ...] | None = None

    @property
    def description(self) -> str:
        """What a valid value is, as the error message says it."""
        if self.expected:
            return self.expected
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        return {int: "an int", float: "a number", bool: "True or False", tuple: _WEIGHTS}.get(self.type, "a word")

    def coerce(self, owner: str, name: str, value: Any, *, error: ErrorType = ConventionError) -> Any:
        """``value`` converted to this parameter's type, or ``error`` in the one template. ``None`` is kept
        where the default is ``None`` (it means "not set")."""
        if value is None and self.default is None:
            return None
        converted = _convert(self.type, value)
        if converted is _INVALID or (self.choices is not None and converted not in self.choices):
            raise _bad(name, owner, self.description, value, error)
        if self.check is not None and not self.check(converted):
            raise _bad(name, owner, self.description, converted, error)
        return converted


_WEIGHTS = "a list of non-negative numbers, one per run, not all zero"
_INVALID = object()


def _bad(name: str, owner: str, expected: str, got: Any, error: ErrorType) -> StagewiseError:
    template = parameter_error(name, owner, expected, got)
    return template if isinstance(template, error) else error(str(template))


def _convert(kind: type, value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, str | tuple | list):
        value = value.item()  # numpy scalars, as optimisers and frames hand them over
    if kind is tuple:
        return _weights(value)
    if kind is str:
        return value if isinstance(value, str) else _INVALID
    if isinstance(value, str) and kind in (int, float):
        value = parse_value(value)
    if isinstance(value, bool):
        return value if kind is bool else _INVALID
    if kind is bool or not isinstance(value, int | float) or not math.isfinite(value):
        return _INVALID
    if kind is int:
        return int(value) if float(value).is_integer() else _INVALID
    return float(value)


def _weights(value: Any) -> Any:
    if isinstance(value, str):
        value = [parse_value(part) for part in value.replace(",", " ").split()]
    try:
        items = tuple(value)
    except TypeError:
        return _INVALID
    out = []
    for item in items:
        item = item.item() if hasattr(item, "item") else item
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item) or item < 0:
            return _INVALID
        out.append(float(item))
    return tuple(out) if any(out) else _INVALID


# ---------------------------------------------------------------------------------------------- registry


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=_Named)


def fold(name: str) -> str:
    """The key a name is looked up by: case-insensitive, ``-`` read as ``_``."""
    return name.strip().lower().replace("-", "_")


class Registry(Mapping[str, T], Generic[T]):
    """Entries by name and alias, looked up case-insensitively with ``-`` read as ``_``; a ``Mapping`` from
    folded names to entries, so ``registry["nDCG"]`` works like ``registry["ndcg"]``.

    Errors list the canonical names, built from the registry itself, so they cannot drift from it.
    """

    def __init__(
        self,
        what: str,
        *entries: T,
        aliases: Mapping[str, str] | None = None,
        error: ErrorType = ConventionError,
    ) -> None:
        """``entries`` carry their own ``name`` and ``aliases``; ``aliases`` adds a table of other names (such
        as trec_eval's) pointing at canonical names."""
        self.what = what
        self.error = error
        self._table: dict[str, T] = {}
        for entry in entries:
            for name in (entry.name, *entry.aliases):
                self._table[fold(name)] = entry
        for alias, target in (aliases or {}).items():
            self._table.setdefault(fold(alias), self._table[fold(target)])

    def register(self, entry: T, *, replace: bool = False) -> T:
        """Add ``entry`` under its name and aliases (how a plug-in adds a test, a method, a format...), and give
        it back, so it can decorate or be kept. A name already taken is an error unless ``replace``.

        >>> from collections import namedtuple
        >>> Thing = namedtuple("Thing", "name aliases")
        >>> things = Registry("thing", Thing("a", ()))
        >>> things.register(Thing("b", ("bee",))).name, things.names(), things["BEE"].name
        ('b', ['a', 'b'], 'b')
        """
        keys = [fold(name) for name in (entry.name, *entry.aliases)]
        taken = [key for key in keys if key in self._table and self._table[key] is not entry]
        if taken and not replace:
            raise self.error(f"{self.what} {taken[0]!r} is already registered; pass replace=True to replace it")
        for key in keys:
            self._table[key] = entry
        return entry

    def unregister(self, name: str) -> T:
        """Remove the entry called ``name`` (its name and every alias pointing at it) and give it back."""
        entry = self.lookup(name)
        for key in [key for key, value in self._table.items() if value is entry]:
            del self._table[key]
        return entry

    def __getitem__(self, name: str) -> T:
        return self._table[fold(name)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and fold(name) in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def names(self) -> list[str]:
        """Canonical names in registration order, aliases left out."""
        return list(dict.fromkeys(entry.name for entry in self._table.values()))

    def lookup(self, name: str) -> T:
        """The entry for ``name``, or the registry's error listing every canonical name."""
        entry = self._table.get(fold(name))
        if entry is None:
            raise self.error(
                f"unknown {self.what} {name.strip()!r}; choose one of {', '.join(self.names())}{self._guess(name)}"
            )
        return entry

    def _guess(self, name: str) -> str:
        """``"; did you mean 'ndcg'?"`` for a misspelling close to a name or an alias (its canonical name
        is offered), else nothing.

        >>> from collections import namedtuple
        >>> Thing = namedtuple("Thing", "name aliases")
        >>> Registry("thing", Thing("ndcg", ()), Thing("recall", ("R",)))._guess("ndgc")
        "; did you mean 'ndcg'?"
        """
        import difflib

        close = difflib.get_close_matches(fold(name), list(self._table), n=3, cutoff=0.6)
        canonical = list(dict.fromkeys(self._table[key].name for key in close))
        return f"; did you mean {' or '.join(repr(c) for c in canonical)}?" if canonical else ""

    def check_params(self, owner: str, params: Mapping[str, Param], given: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter of ``params`` with its value: ``given``'s converted and checked, else the default.

        An unknown key is an error that lists the parameters there are.
        """
        for key in given:
            if key not in params:
                known = ", ".join(params) or "none"
                raise self.error(f"{self.what} {owner!r} has no parameter {key!r}; its parameters: {known}")
        return {
            key: param.coerce(owner, key, given[key], error=self.error) if key in given else param.default
            for key, param in params.items()
        }
