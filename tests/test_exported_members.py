"""The public API is exactly what the docs list (httpx's test_exported_members, one table for every package).

The table is the "The public API" section of docs/architecture.md: add a public name in both places, or this
fails. Every listed name must resolve, and every public class or function a package holds must be listed."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def documented() -> dict[str, list[str]]:
    """``{module: [names]}`` from the table under '## The public API'."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The public API", 1)[1].split("\n## ", 1)[0]
    table: dict[str, list[str]] = {}
    for line in section.splitlines():
        row = re.fullmatch(r"\| `([\w.]+)` \| (.+) \|", line.strip())
        if row:
            table[row.group(1)] = re.findall(r"`([\w.]+)`", row.group(2))
    return table


TABLE = documented()


def test_the_table_is_there() -> None:
    assert {"stagewise", "stagewise.metrics", "stagewise.rag", "stagewise.errors"} <= set(TABLE)
    assert "evaluate" in TABLE["stagewise"]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_all_is_the_documented_list(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    assert sorted(exported) == sorted(TABLE[name]), (
        f"{name}.__all__ and docs/architecture.md differ: "
        f"only in __all__ {sorted(set(exported) - set(TABLE[name]))}, "
        f"only in the docs {sorted(set(TABLE[name]) - set(exported))}"
    )


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_exported_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    for member in module.__all__:
        assert getattr(module, member) is not None, f"{name}.{member}"
    assert sorted(dir(module)) == sorted(set(dir(module)))  # a lazy package's __dir__ lists each name once


@pytest.mark.parametrize("name", sorted(TABLE))
def test_no_public_class_or_function_is_left_out(name: str) -> None:
    module = importlib.import_module(name)
    for member in module.__all__:
        getattr(module, member)  # load the lazy ones
    held = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and not inspect.ismodule(value)
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("stagewise")
        and getattr(value, "__module__", "") != "stagewise._lazy"  # the packages' own lazy-loading tools
    }
    assert held <= set(module.__all__), (
        f"{name} holds public names it does not export: {sorted(held - set(module.__all__))}"
    )


def test_the_root_exports_the_error_family_and_a_retriever() -> None:
    import stagewise
    from stagewise.errors import ConventionError, InputError, MetricError, StagewiseError

    assert stagewise.MetricError is MetricError and stagewise.ConventionError is ConventionError
    assert all(issubclass(error, StagewiseError) for error in (InputError, MetricError, ConventionError))
    assert stagewise.BM25Index.__name__ == "BM25Index"
