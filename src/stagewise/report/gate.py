"""A regression gate's result (:class:`~stagewise.gate.GateResult`) for CI: a plain table, JSON, JUnit XML (one
testcase per check, the conventions as properties) or a GitHub Actions step summary in markdown."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from stagewise.report import FORMATS as REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.gate.result import GateResult

# the formats this module writes: the registry's entries that name GateResult among their kinds
FORMATS = tuple(name for name in REGISTRY.names() if "GateResult" in REGISTRY[name].kinds)

#: The name of the suite (and of the JUnit ``testsuites`` element) CI shows.
SUITE = "stagewise gate"


def render(result: GateResult, fmt: str = "table") -> str:
    """``result`` as ``table``, ``json``, ``junit`` or ``github``."""
    writers = {"table": _table, "json": lambda r: r.to_json() + "\n", "junit": _junit, "github": _github}
    if fmt not in writers:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return writers[fmt](result)


def flat(conventions: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every convention as ``(dotted.key, text)``, nested mappings flattened, None as ``none``."""
    for key, value in conventions.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flat(value, name + ".")
        elif isinstance(value, list | tuple):
            yield name, ", ".join(str(v) for v in value)
        else:
            yield name, "none" if value is None else str(value)


def _status(passed: bool) -> str:
    return "pass" if passed else "FAIL"


def _table(result: GateResult) -> str:
    width = max((len(c.id) for c in result.checks), default=0)
    total = len(result.checks)
    kept = total - len(result.failures)
    verdict = f"{_status(result.passed)} ({kept} of {total} checks passed)"
    head = f"{result.run} against baseline {result.baseline}: {verdict}"
    lines = [head, ""]
    lines += [f"  {_status(c.passed):4}  {c.id:{width}}  {c.statement}" for c in result.checks]
    lines += ["", "conventions:"]
    lines += [f"  {key}: {text}" for key, text in flat(result.conventions)]
    return "\n".join(lines) + "\n"


def _junit(result: GateResult) -> str:
    """JUnit XML as CI tools read it (the shape of Jenkins' junit-10.xsd, which GitLab and the GitHub test
    reporters read too): ``testsuites`` (``name``, ``tests``, ``failures``, ``errors``, ``time``) > one
    ``testsuite`` (those and ``skipped``) > ``properties`` (the conventions), one ``testcase`` per check (a
    ``failure`` with ``message`` and ``type`` when it fails), then ``system-out`` holding the verdict. No
    timestamp or host (both optional there): the same gate writes the same bytes."""
    import xml.etree.ElementTree as ET

    counts = {
        "tests": str(len(result.checks)),
        "failures": str(len(result.failures)),
        "errors": "0",
        "skipped": "0",
        "time": "0",
    }
    root = ET.Element("testsuites", {"name": SUITE, **{k: v for k, v in counts.items() if k != "skipped"}})
    suite = ET.SubElement(root, "testsuite", {"name": f"{SUITE}: {result.run} against {result.baseline}", **counts})
    properties = ET.SubElement(suite, "properties")
    for key, text in flat(result.conventions):
        ET.SubElement(properties, "property", {"name": key, "value": text})
    for check in result.checks:
        case = ET.SubElement(suite, "testcase", {"name": check.id, "classname": f"stagewise.gate.{check.kind}"})
        case.set("time", "0")
        if not check.passed:
            failure = ET.SubElement(case, "failure", {"message": check.statement, "type": check.kind})
            failure.text = f"{check.id}: {check.statement}"
    ET.SubElement(suite, "system-out").text = result.verdict()
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _github(result: GateResult) -> str:
    """A GitHub Actions step summary: the verdict as a heading, a table of the checks, the conventions folded."""
    mark = {True: ":white_check_mark:", False: ":x:"}
    total = len(result.checks)
    lines = [
        f"### {mark[result.passed]} {SUITE}: {'pass' if result.passed else 'FAIL'}",
        "",
        f"`{_cell(result.run)}` against baseline `{_cell(result.baseline)}`: "
        f"{total - len(result.failures)} of {total} checks passed.",
        "",
        "| | check | observed | threshold | what was found |",
        "|---|---|---:|---:|---|",
    ]
    lines += [
        f"| {mark[c.passed]} | {_cell(c.id)} | {c.observed:.4f} | {c.threshold:.4f} | {_cell(c.statement)} |"
        for c in result.checks
    ]
    lines += ["", "<details><summary>Conventions</summary>", ""]
    lines += [f"- **{_cell(key)}**: {_cell(text)}" for key, text in flat(result.conventions)]
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
