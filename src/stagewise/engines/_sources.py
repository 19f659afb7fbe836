"""Run arguments as ``(name, source)`` pairs: paths (globs expanded), objects, lists and ``{name: run}`` maps,
named as :func:`stagewise.read_runs` names them."""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stagewise.data.readers import _format_of, _is_single_nested_run, is_record, object_name, path_labels
from stagewise.data.run import Run
from stagewise.errors import InputError, StagewiseError

_MAGIC = ("*", "?", "[")


def expand_globs(paths: list[str]) -> list[str]:
    """Each path as given, except a pattern (``runs/*.trec``) that names no file: the files it matches, sorted,
    so a cluster can be handed more run files than a shell's command line holds."""
    out: list[str] = []
    for path in paths:
        if isinstance(path, str) and any(c in path for c in _MAGIC) and not os.path.exists(path):
            matches = sorted(glob.glob(path))
            if not matches:
                raise InputError(path, "matches no file", hint="check the pattern, or quote it for the shell")
            out.extend(matches)
        else:
            out.append(path)
    return out


def _default_name(source: Any) -> str:
    if isinstance(source, Run):
        return source.name
    if isinstance(source, str | os.PathLike):
        return "stdin" if str(source) == "-" else Path(source).name
    return object_name(source)


def run_sources(runs: Any) -> list[tuple[str, Any]]:
    """``(name, source)`` of every run, named as read_runs names them (files by :func:`path_labels`; a name
    still given twice becomes ``name#2``)."""
    if isinstance(runs, Mapping) and runs and not _is_single_nested_run(runs):
        named = [(str(k), v) for k, v in runs.items()]
    elif isinstance(runs, list | tuple) and runs and is_record(runs[0]):
        named = [(_default_name(runs), runs)]  # one run as namedtuples (ir_measures' ScoredDoc)
    elif isinstance(runs, list | tuple) or (
        isinstance(runs, str) and any(c in runs for c in _MAGIC) and not os.path.exists(runs)
    ):
        if isinstance(runs, list | tuple) and not runs:
            raise StagewiseError("no runs given: pass a run, or a list or {name: run} mapping of runs")
        items = expand_globs(list(runs) if isinstance(runs, list | tuple) else [runs])
        paths = [i for i, item in enumerate(items) if is_path(item)]
        labels = dict(zip(paths, path_labels([os.fspath(items[i]) for i in paths]), strict=True))
        named = [(labels.get(i) or _default_name(item), item) for i, item in enumerate(items)]
    else:
        named = [(_default_name(runs), runs)]
    seen: dict[str, int] = {}
    out = []
    for name, source in named:
        count = seen.get(name, 0)
        seen[name] = count + 1
        out.append((f"{name}#{count + 1}" if count else name, source))
    return out


def is_path(source: Any) -> bool:
    return isinstance(source, str | os.PathLike) and not isinstance(source, Run)


def trec_file(source: Any) -> bool:
    """A path read as a TREC run (by its extension, as read_run decides)."""
    return is_path(source) and _format_of(source, None) == "trec"
