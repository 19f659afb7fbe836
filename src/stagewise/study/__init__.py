"""A study: everything a report shows, computed by the library in one call, then rendered.

>>> import stagewise
>>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
>>> s = stagewise.study(qrels, {"A": {"q1": {"d1": 2.0}, "q2": {"x": 1.0}}, "B": {"q1": {"x": 1.0}, "q2": {"x": 1.0}}},
...                     ["P@1"], cutoffs=(1,), test="sign")
>>> s.runs, s.comparison.conventions["test"] == "sign"
(['A', 'B'], True)
>>> from stagewise.report.html import render
>>> page = render(s)  # the HTML report of it (needs matplotlib)

:func:`~stagewise.study.build.study` (also ``stagewise.study(...)``: this package is callable) computes the
:class:`~stagewise.study.value.Study`; :func:`stagewise.report.html.render` only renders it. The value and the
names both sides share are in :mod:`stagewise.study.value`, which the report may import; the computations are in
:mod:`stagewise.study.build`, which it may not (pyproject.toml's ``report-renders`` contract).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from stagewise.study.build import fusion_statements, study
from stagewise.study.value import CUTOFFS, QrelsSummary, Study, curve_metrics, input_paths

__all__ = ["CUTOFFS", "QrelsSummary", "Study", "curve_metrics", "fusion_statements", "input_paths", "study"]


class _CallableModule(types.ModuleType):
    """``stagewise.study(...)`` is :func:`study`, while ``stagewise.study.Study`` and the rest stay a package's
    names (the package and the function share the name, as ``stagewise.report`` does)."""

    def __call__(self, *args: Any, **options: Any) -> Study:
        return study(*args, **options)


sys.modules[__name__].__class__ = _CallableModule
