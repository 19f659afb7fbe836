# ruff: noqa: E501  (the CSS keeps its natural line lengths)
"""Server-rendered pages; their scripts are served from /static/ (:mod:`stagewise.app.page_scripts`), never
inline, under a Content-Security-Policy (:data:`APP_HEADERS`); a page's data travels in a JSON blob."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from stagewise.app.audits import AUDITED_FIELDS, JudgeAudits, no_audit_sentence, same_judge
from stagewise.report.judge_audit import as_json, html_block

__all__ = [
    "APP_HEADERS",
    "CSS",
    "STRICT_HEADERS",
    "audit_page",
    "error_page",
    "playground_page",
    "queries_page",
    "query_page",
    "rag_list_page",
    "rag_page",
    "report_headers",
]

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1a1a1a}
nav a{margin-right:1rem} table{border-collapse:collapse;margin:.6rem 0} td,th{border:1px solid #ccc;padding:.2rem .5rem;
text-align:right} th{background:#f3f3f3} td.l,th.l{text-align:left} .num{font-variant-numeric:tabular-nums}
button{font:inherit;cursor:pointer} .result{display:inline-block;width:5.5rem;margin:.2rem;padding:.5rem;border:2px solid
#555;border-radius:.4rem;text-align:center;cursor:pointer;user-select:none} .l0{background:#fff}.l1{background:#dbeafe}
.l2{background:#93c5fd}.l3{background:#3b82f6;color:#fff} .cols{display:flex;gap:1rem;align-items:flex-start;overflow-x:auto}
.col{min-width:20rem} .doc{border-bottom:1px solid #eee;padding:.15rem 0} .doc button{padding:0 .35rem;margin-left:.1rem}
.doc button.on{background:#1d4ed8;color:#fff} .gold{background:#fef3c7} .muted{color:#666} #answer{margin-top:.5rem}
.judge-audit{border-left:3px solid #94a3b8;padding-left:.6rem} .no-audit{color:#92400e}
"""


def _page(title: str, body: str, script: str = "", data: Any = None, extra: dict[str, Any] | None = None) -> str:
    """A page whose script is ``/static/common.js`` then ``/static/<script>`` (:mod:`stagewise.app.page_scripts`),
    served with :data:`APP_HEADERS`; ``data`` (and each of ``extra``, by id) travels as a JSON blob the script
    parses, never as script."""
    blobs = "".join(_blob(name, value) for name, value in [("data", data), *(extra or {}).items()] if value is not None)
    scripts = f"<script src='/static/common.js'></script><script src='/static/{script}'></script>" if script else ""
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · stagewise</title>"
        "<meta name=viewport content='width=device-width,initial-scale=1'><link rel=stylesheet href='/static/app.css'>"
        f"</head><body>{_NAV}<h1>{escape(title)}</h1>{body}{blobs}{scripts}</body></html>"
    )


def _blob(name: str, value: Any) -> str:
    # "</" cannot close the script element inside JSON once "<" is escaped
    text = json.dumps(value).replace("<", "\\u003c")
    return f'<script type="application/json" id="{name}">{text}</script>'


_NAV = (
    "<nav><a href='/playground'>Playground</a><a href='/queries'>Queries</a><a href='/rag'>RAG samples</a>"
    "<a href='/report'>Report (current labels)</a></nav>"
)

#: the headers of a page that runs no script: its style comes from /static/app.css (:data:`CSS`), so the
#: Content-Security-Policy allows no inline script or style, and nothing from any other origin
STRICT_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "referrer-policy": "no-referrer",
}
#: the headers of every other answer of the app (the server adds them where a route set no policy of its own):
#: scripts and style from this server only (``/static/...``), none inline; requests to this server only
APP_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "referrer-policy": "no-referrer",
}
CSS = _CSS


def report_headers() -> dict[str, str]:
    """The policy of ``/report``, the HTML report as ``stagewise report`` writes it: a self-contained page with
    its style inline and one inline script (sorting and filtering its tables). That script alone may run (by its
    SHA-256); inline style and ``data:`` images are allowed, nothing may be fetched, and the page is sandboxed
    (``sandbox allow-scripts``: an opaque origin, so even a script that got in could not call this server's API
    with the user's cookie)."""
    import base64
    import hashlib

    from stagewise.report.html.page import JS

    digest = base64.b64encode(hashlib.sha256(JS.encode()).digest()).decode()
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "connect-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox allow-scripts"
    )
    return {"content-security-policy": policy, "referrer-policy": "no-referrer"}


def _strict_page(title: str, body: str) -> str:
    """A page without any script (served with :data:`STRICT_HEADERS`); every text in ``body`` already escaped."""
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · stagewise</title>"
        "<meta name=viewport content='width=device-width,initial-scale=1'><link rel=stylesheet href='/static/app.css'>"
        f"</head><body>{_NAV}<h1>{escape(title)}</h1>{body}</body></html>"
    )


def error_page(status: int, message: str) -> str:
    """What a person sees following a link to a page this server cannot show (the API answers JSON)."""
    body = f'<p data-testid="error">{escape(message)}</p><p class=muted>HTTP {status}</p>'
    return _strict_page("Not available", body)


def playground_page(initial: dict[str, Any]) -> str:
    body = """
<p>Click a result to cycle its relevance label 0 → 1 → 2 → 3 → 0. The numbers are computed by
<code>stagewise.lesson</code> on the server.</p>
<p><button data-testid="gain-toggle" id="gain">gain: exponential (2^label − 1)</button>
<button id="add" data-testid="add-result">add a result</button>
<button id="remove" data-testid="remove-result">remove the last result</button></p>
<div id="results"></div>
<h2>DCG, term by term</h2><table id="terms"></table>
<p>DCG = <b data-testid="dcg" id="dcg" class="num"></b></p>
<h2>Ideal order</h2><p id="ideal"></p><table id="ideal-terms"></table>
<p>Ideal DCG = <b data-testid="ideal-dcg" id="idcg" class="num"></b></p>
<h2>nDCG and reciprocal rank</h2>
<table><tr><th class=l>nDCG, exponential gain</th><td data-testid="ndcg-exp" id="nexp" class="num"></td></tr>
<tr><th class=l>nDCG, linear gain</th><td data-testid="ndcg-linear" id="nlin" class="num"></td></tr>
<tr><th class=l>reciprocal rank (label ≥ 1)</th><td data-testid="rr" id="rr" class="num"></td></tr></table>
<h2>Predict first</h2>
<p>Can two nDCG implementations give different numbers for the same ranking when one uses raw relevance and the
other exponential gain?</p>
<p><button data-testid="quiz-yes" class="quiz">yes</button> <button data-testid="quiz-no" class="quiz">no</button></p>
<p id="answer" data-testid="quiz-answer" hidden></p>
"""
    return _page("nDCG playground", body, "playground.js", initial)


def queries_page(runs: Sequence[str], metrics: Sequence[str]) -> str:
    opts = "".join(f"<option>{escape(r)}</option>" for r in runs)
    mopts = "".join(f"<option>{escape(m)}</option>" for m in metrics)
    body = f"""
<p>Search <input id="q" data-testid="search" placeholder="query id or text"> metric <select id="metric">{mopts}</select>
run A <select id="a">{opts}</select> run B <select id="b">{opts}</select>
sort <select id="sort" data-testid="sort"><option value="worst">worst first (run A)</option>
<option value="diff">largest difference |A − B|</option><option value="unjudged">unjudged share of A's top 10</option>
<option value="id">query id</option></select></p>
<p id="status" class="muted"></p><table id="means"></table><ul id="conventions" class="muted"></ul>
<table id="list"></table>
"""
    return _page("Queries", body, "queries.js")


def query_page(qid: str, data: dict[str, Any], metrics: Sequence[str]) -> str:
    body = """
<p id="qtext" data-testid="query-text"></p>
<p><a href="/queries">all queries</a> · click 0–3 to set a label, × to clear it.
<button id="undo" data-testid="undo">undo the last change</button> <span id="status" class="muted"></span></p>
<h2>This query</h2><table id="metrics" data-testid="query-metrics"></table>
<h2>Every run's mean</h2><table id="means" data-testid="means"></table><ul id="conventions" class="muted"></ul>
<h2>Ranked lists</h2><div class="cols" id="cols"></div>
"""
    return _page(f"Query {qid}", body, "query.js", data, {"metric-names": list(metrics)})


def rag_list_page(records: list[dict[str, Any]], audits: JudgeAudits | None = None) -> str:
    """Every sample with its stage label and the judges of its labels; above them, each judge those labels came
    from with its audit (or the sentence that none was given), and each audit of a judge that gave none."""
    rows = "".join(
        f"<tr data-testid='sample-row'><td class=l><a href='/rag/{escape(r['key'])}'>{escape(str(r['id']))}</a></td>"
        f"<td class=l>{escape(str(r.get('label', '')))}</td>"
        f"<td class=l>{escape(', '.join(sorted({j['name'] for j in r.get('judges', {}).values()})) or 'none')}</td>"
        f"<td class=l>{escape(str(r.get('question', ''))[:120])}</td></tr>"
        for r in records
    )
    table = (
        "<table><tr><th class=l>sample</th><th class=l>stage label</th><th class=l>judges of its labels</th>"
        f"<th class=l>question</th></tr>{rows}</table>"
    )
    return _strict_page("RAG samples", _judges_overview(records, audits or JudgeAudits()) + table)


def _judges_overview(records: list[dict[str, Any]], audits: JudgeAudits) -> str:
    """The judges of the samples' labels, each with how many samples' labels it gave and its audits."""
    used: dict[str, dict[str, int]] = {}
    for r in records:
        for role, info in r.get("judges", {}).items():
            used.setdefault(info["name"], {}).setdefault(role, 0)
            used[info["name"]][role] += 1
    parts = []
    for name, roles in used.items():
        gave = " and ".join(f"the {role} labels of {n:,} sample(s)" for role, n in roles.items())
        note = f"this judge gave {gave}"
        parts.append(
            f"<div data-testid='judge' data-judge='{escape(name, quote=True)}'><p>Judge <code>{escape(name)}</code> "
            f"gave {escape(gave)}.</p>{_audits_of(name, audits, note)}</div>"
        )
    for number, _path, audit in audits.all():
        if not any(same_judge(name, audit.judge) for name in used):
            theirs = ", ".join(used) or "none"
            note = f"not a judge of these samples (their judges: {theirs})"
            parts.append(_audit_summary(number, audit, note))
    if not parts:
        return ""
    intro = (
        "<p class=muted>Labels that came from a judge, and how far that judge agrees with people (stagewise judge "
        "audit; give each audit with stagewise serve --judge-audit AUDIT.json).</p>"
    )
    return "<h2>Judges</h2>" + intro + "".join(parts) + "<h2>Samples</h2>"


def _audit_summary(number: int, audit: Any, note: str | None) -> str:
    """The report's audit block (figures with intervals, n, the data, gullibility), and a link to its page."""
    return (
        f"<div data-testid='audit-summary' data-audit='{number}'>{html_block(audit, note)}"
        f"<p><a href='/audits/{number}' data-testid='audit-link'>audit {number} in full: every figure, the "
        "confusion matrix, calibration by score bin</a></p></div>"
    )


def _audits_of(judge: str, audits: JudgeAudits, note: str) -> str:
    """The audits of ``judge``, or the plain sentence that none was given."""
    found = audits.of(judge)
    if not found:
        return f"<p data-testid='no-audit' class='no-audit'>{escape(no_audit_sentence(judge))}</p>"
    return "".join(_audit_summary(number, audit, note) for number, audit in found)


def _judged_section(record: dict[str, Any], audits: JudgeAudits) -> str:
    """For each judge of the sample's labels: the labels it gave (filled in by the page's script, as they change
    with the gold marks) and its audit, or the sentence that none was given."""
    judges = record.get("judges", {})
    if not judges:
        return "<p class=muted data-testid='no-judge'>No label on this page came from a judge.</p>"
    out = []
    for role, info in judges.items():
        name = info["name"]
        version = f" (version {escape(str(info['version']))})" if info.get("version") else ""
        items = "".join(
            f"<li>{escape(label)}: <span class=num data-testid='judged-value' data-field='{escape(field)}'></span></li>"
            for field, label in AUDITED_FIELDS.get(role, ())
        )
        note = f"the audit of the judge that gave this sample's {role} labels"
        out.append(
            f"<div data-testid='judged-role' data-role='{escape(role, quote=True)}' "
            f"data-judge='{escape(name, quote=True)}'><p>{escape(role.capitalize())} labels, by judge "
            f"<code>{escape(name)}</code>{version}:</p><ul>{items}</ul>{_audits_of(name, audits, note)}</div>"
        )
    return "".join(out)


def rag_page(record: dict[str, Any], audits: JudgeAudits | None = None) -> str:
    """One sample: its stage label, the labels its judges gave with their audits, its passages and answer."""
    body = (
        """
<p><a href="/rag">all samples</a> · mark or unmark a passage as gold evidence: the stage label is recomputed.
<span id="status" class="muted"></span></p>
<p><b>Stage label:</b> <span data-testid="rag-label" id="label"></span> — <span id="reason"></span></p>
<p><b>Question:</b> <span id="question"></span></p>
<h2>Labels from judges</h2>"""
        + _judged_section(record, audits or JudgeAudits())
        + """
<h2>Passages</h2><p class=muted>The context the answer was written from, the rest of the retrieved list, and every gold
passage wherever it stands; each says where it is.</p><ol id="passages"></ol>
<h2>Answer</h2><p id="answer"></p><p><b>Citations:</b> <span id="cited"></span></p>
"""
    )
    return _page(f"RAG sample {record['id']}", body, "rag.js", record)


_FIGURES = {
    "accuracy": "accuracy",
    "macro_f1": "macro-F1",
    "kappa": "Cohen's kappa",
    "kappa_linear": "Cohen's kappa, linear weights",
    "kappa_quadratic": "Cohen's kappa, quadratic weights",
}


def _n3(value: Any) -> str:
    """A figure as the report prints it: three decimals, n/a when undefined (null in the audit's JSON)."""
    return "n/a" if value is None else f"{value:.3f}"


def audit_page(number: int, path: str, audit: Any) -> str:
    """One audit in full (the numbers of :func:`stagewise.report.judge_audit.as_json`): every figure with its
    interval, the confusion matrix, calibration by score bin, gullibility, the bootstrap and the conventions."""
    doc = as_json(audit)
    version = f", version {escape(str(doc['judge_version']))}" if doc["judge_version"] else ""
    left = "".join(f"<li>left out of the input: {escape(k)} {v:,}</li>" for k, v in doc["left_out"].items())
    head = (
        f"<ul><li>judge <code data-testid='audit-judge'>{escape(doc['judge'])}</code>{version}, task "
        f"{escape(doc['task'])}</li><li>measured on <code data-testid='audit-data'>{escape(doc['data'])}</code>"
        f" (audit file <code>{escape(path)}</code>)</li><li>judged <b data-testid='audit-n'>{doc['n']:,}</b>; "
        f"unjudged {doc['unjudged']:,} (left out of every figure)</li>{left}</ul>"
    )
    figures = "".join(
        f"<tr data-testid='figure' data-figure='{escape(key, quote=True)}'><td class=l>{escape(_FIGURES.get(key, key))}"
        f"</td><td class=num>{_n3(v[0])}</td><td class=num>{_n3(v[1])}</td><td class=num>{_n3(v[2])}</td></tr>"
        for key, v in doc["figures"].items()
    )
    boot = doc["bootstrap"]
    body = (
        head + "<h2>Agreement with people</h2><table><tr><th class=l>figure</th><th>value</th><th>95% low</th>"
        f"<th>95% high</th></tr>{figures}</table><p class=muted>{escape(boot['interval'])} bootstrap interval, "
        f"{boot['resamples']:,} resamples, seed {boot['seed']}</p>"
        + _confusion_table(doc["confusion"])
        + _calibration_table(doc["calibration"], doc["task"])
        + _gullibility_table(doc["gullibility"])
        + "<h2>Conventions</h2><ul>"
        + "".join(f"<li>{escape(n)}</li>" for n in doc["notes"])
        + "</ul><p><a href='/rag'>back to the RAG samples</a></p>"
    )
    return _strict_page(f"Judge audit {number}: {audit.judge}", body)


def _confusion_table(confusion: dict[str, Any]) -> str:
    cats = confusion["categories"]
    head = "".join(f"<th>judge: {escape(str(c))}</th>" for c in cats)
    rows = "".join(
        f"<tr><th class=l>people: {escape(str(c))}</th>"
        + "".join(
            f"<td class=num data-testid='confusion-cell' data-people='{escape(str(c), quote=True)}' "
            f"data-judge='{escape(str(j), quote=True)}'>{v:,}</td>"
            for j, v in zip(cats, row, strict=True)
        )
        + "</tr>"
        for c, row in zip(cats, confusion["counts"], strict=True)
    )
    return f"<h2>Confusion matrix</h2><p class=muted>rows: people, columns: the judge</p><table><tr><th></th>{head}</tr>{rows}</table>"


def _calibration_table(calibration: dict[str, Any], task: str) -> str:
    observed = "people: supported" if task == "support" else "people: grade ≥ 1"
    rows = "".join(
        f"<tr data-testid='calibration-bin'><td class=l>[{b['low']:.2f}, {b['high']:.2f}{']' if b['high'] >= 1 else ')'}"
        f"</td><td class=num>{b['count']:,}</td><td class=num>{_n3(b['mean_score'])}</td>"
        f"<td class=num>{_n3(b['observed'])}</td></tr>"
        for b in calibration["bins"]
    )
    if not rows:
        return "<h2>Calibration by score bin</h2><p class=muted>the judge gave no scores: no calibration</p>"
    return (
        f"<h2>Calibration by score bin</h2><p>expected calibration error (ECE) <b data-testid='ece'>"
        f"{_n3(calibration['ece'])}</b></p><table><tr><th class=l>scores</th><th>count</th><th>mean score</th>"
        f"<th>{escape(observed)}</th></tr>{rows}</table>"
    )


def _gullibility_table(gullibility: list[dict[str, Any]]) -> str:
    if not gullibility:
        return "<h2>Gullibility</h2><p class=muted>not tested in this audit</p>"
    rows = "".join(
        f"<tr data-testid='gullibility'><td class=l>{escape(str(g['attack']))}</td><td class=num>{g['n']:,}</td>"
        f"<td class=num>{g['fooled']:,}</td><td class=num>{_n3(g['rate'][0])} [{_n3(g['rate'][1])}, "
        f"{_n3(g['rate'][2])}]</td><td class=num>{g.get('unjudged', 0):,}</td><td class=l>{escape(str(g['help']))}</td></tr>"
        for g in gullibility
    )
    return (
        "<h2>Gullibility</h2><p class=muted>claims people and the judge call not supported, attacked: the rate at "
        "which the judge is fooled</p><table><tr><th class=l>attack</th><th>n</th><th>fooled</th>"
        f"<th>rate [95% interval]</th><th>unjudged</th><th class=l>what</th></tr>{rows}</table>"
    )
