"""Names that round-trip: ``rrf(rrf_k=60)`` parses to a value whose ``str`` parses back to an equal value.

Fusion methods and normalisations are chosen from registries (dicts) by name. A name may carry keyword
parameters in parentheses, read with :mod:`ast` (never ``eval``) and checked against the registry entry, so
every error lists the real choices and the real parameters.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stagewise.errors import ConventionError, parameter_error


@dataclass(frozen=True)
class Param:
    """A hyperparameter of a fusion method: its kind, default, meaning and the values it accepts.

    ``kind`` is ``"float"``, ``"int"`` or ``"weights"`` (a tuple of non-negative numbers, one per run, not
    all zero).
    """

    kind: str
    default: Any
    help: str
    expected: str
    check: Callable[[Any], bool] = lambda value: True

    def coerce(self, owner: str, name: str, value: Any) -> Any:
        """``value`` converted to this parameter's type, or a :class:`ConventionError` in the one template."""
        if value is None:
            return None
        if self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise parameter_error(name, owner, self.expected, value)
            value = float(value)
        elif self.kind == "int":
            integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            if isinstance(value, bool) or not integral:
                raise parameter_error(name, owner, self.expected, value)
            value = int(value)
        elif self.kind == "weights":
            value = coerce_weights(owner, value)
        if not self.check(value):
            raise parameter_error(name, owner, self.expected, value)
        return value


def coerce_weights(owner: str, value: Any) -> tuple[float, ...]:
    """A tuple of finite non-negative floats, not all zero."""
    expected = "a list of non-negative numbers, one per run, not all zero"
    if isinstance(value, str):
        value = [part for part in value.replace(",", " ").split() if part]
        try:
            value = [float(part) for part in value]
        except ValueError:
            raise parameter_error("weights", owner, expected, value) from None
    try:
        items = tuple(value)
    except TypeError:
        raise parameter_error("weights", owner, expected, value) from None
    out = []
    for item in items:
        item = item.item() if hasattr(item, "item") else item
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item) or item < 0:
            raise parameter_error("weights", owner, expected, value)
        out.append(float(item))
    if not out or not any(out):
        raise parameter_error("weights", owner, expected, value)
    return tuple(out)


def format_value(value: Any) -> str:
    """A parameter value as it appears in a canonical name: exact and free of spaces."""
    if isinstance(value, tuple):
        return "(" + ",".join(format_value(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def canonical(name: str, params: tuple[tuple[str, Any], ...]) -> str:
    """``name(p1=v1,p2=v2)`` for the parameters that have a value; ``name`` alone when none has."""
    shown = [(k, v) for k, v in params if v is not None]
    if not shown:
        return name
    return name + "(" + ",".join(f"{k}={format_value(v)}" for k, v in shown) + ")"


def split_call(text: str, what: str, examples: str) -> tuple[str, dict[str, Any]]:
    """``"rrf(rrf_k=30)"`` -> ``("rrf", {"rrf_k": 30})``; keyword values are Python literals or bare words."""
    text = text.strip()
    head, paren, rest = text.partition("(")
    name = head.strip()
    if not name or (paren and not rest.rstrip().endswith(")")):
        raise ConventionError(f"cannot read {what} {text!r}; expected a form like {examples}")
    if not rest:
        return name, {}
    inner = rest.rstrip()[:-1]
    if not inner.strip():
        return name, {}
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
    except SyntaxError:
        raise ConventionError(
            f"cannot read the parameters of {text!r}; expected key=value pairs, as in {examples}"
        ) from None
    if not isinstance(call, ast.Call) or call.args:
        raise ConventionError(f"the parameters of {text!r} must be key=value pairs, as in {examples}")
    values: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ConventionError(f"the parameters of {text!r} must be key=value pairs, as in {examples}")
        if isinstance(keyword.value, ast.Name):
            values[keyword.arg] = keyword.value.id
            continue
        try:
            values[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ConventionError(
                f"parameter {keyword.arg!r} of {text!r} must be a number or a list of numbers"
            ) from None
    return name, values


def lookup(registry: Mapping[str, Any], name: str, what: str, choices: list[str]) -> Any:
    """The registry entry for ``name`` (case-insensitive, ``-`` read as ``_``), or an error listing choices."""
    entry = registry.get(name.strip().lower().replace("-", "_"))
    if entry is None:
        raise ConventionError(f"unknown {what} {name!r}; choose one of {', '.join(choices)}")
    return entry
