"""Judges' audits in the web app (``stagewise serve --rag R --judge-audit AUDIT.json``, issue 27): beside every
label of a RAG page that came from a judge, the judge and its audit (the figures of the audit file, escaped, on
pages without script); a plain sentence where no audit of that judge was given; a page per audit with its
confusion matrix and calibration bins; a bad audit file refused by the command line with its name.

Oracles: the audit file's own numbers (read here with ``json``) and hand-worked citation scores: the lexical
judge finds "Jane Austen wrote Emma" supported by "Jane Austen wrote Emma in 1815." (every content word is
there; ALCE recall and precision 1) and "Charles Dickens wrote Emma" not supported by "Paris is the capital of
France." (no word shared; 0 and 0); the gold judge finds a citation supported exactly when it is gold evidence.
"""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the app extra is not installed (make test installs it)")
pytest.importorskip("httpx", reason="the app extra is not installed (make test installs it)")

from starlette.testclient import TestClient
from typer.testing import CliRunner

from stagewise.app.audits import JudgeAudits, no_audit_sentence, same_judge
from stagewise.app.ids import to_segment
from stagewise.app.open import open_rag
from stagewise.app.server import create_app
from stagewise.cli import app as cli

WORDS = ["austen", "emma", "novel", "published", "dickens", "london", "paris", "wrote", "year", "letters", "sister"]
TEXTS = {"p1": "Jane Austen wrote Emma in 1815.", "p2": "Paris is the capital of France."}
RECORDS = [
    {  # passage texts: the auto judge is lexical; the claim is all in p1
        "id": "good",
        "question": "who wrote Emma?",
        "retrieved": ["p1", "p2"],
        "passages": TEXTS,
        "answer": "Jane Austen wrote Emma [p1].",
        "gold_answers": ["Jane Austen"],
        "gold_evidence": ["p1"],
    },
    {  # lexical again; the cited passage shares no word with the claim
        "id": "bad",
        "retrieved": ["p1", "p2"],
        "passages": TEXTS,
        "answer": "Charles Dickens wrote Emma [p2].",
        "gold_answers": ["Jane Austen"],
        "gold_evidence": ["p1"],
    },
    {  # no passage texts: the auto judge is gold (supported = a cited passage is gold evidence); q2 is not gold
        "id": "no texts",
        "retrieved": ["q1", "q2"],
        "answer": "It was Austen [q2].",
        "gold_answers": ["Austen"],
        "gold_evidence": ["q1"],
    },
]


def _invoke(args: list[str], code: int = 0):
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == code, done.output
    return done


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The RAG records, and an audit of the lexical judge written by stagewise judge audit on 60 labelled claims."""
    folder = tmp_path_factory.mktemp("audit")
    rng = random.Random(4)
    lines = []
    for i in range(60):
        claim = " ".join(rng.sample(WORDS, 4))
        passage = " ".join(rng.sample(claim.split(), rng.randint(0, 4)) + rng.sample(WORDS, 2))
        label = rng.choice(["supported", "partial", "not", True, False])
        lines.append(json.dumps({"id": f"c{i}", "claim": claim, "passages": [passage], "label": label}))
    labelled = folder / "labelled.jsonl"
    labelled.write_text("\n".join(lines) + "\n")
    audit = folder / "lexical.json"
    _invoke(["judge", "audit", str(labelled), "--judge", "lexical", "-B", "100", "-f", "json", "-o", str(audit)])
    records = folder / "rag.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    # an audit of a judge no sample used, whose texts try to inject markup
    hostile = json.loads(audit.read_text())
    hostile["judge"] = "my<b>judge</b>"
    hostile["data"] = "<script>alert(1)</script>.jsonl"
    other = folder / "other.json"
    other.write_text(json.dumps(hostile))
    return {"records": records, "audit": audit, "other": other, "folder": folder}


def _client(files: dict[str, Path], tmp_path: Path, audits: list[Path]) -> tuple[TestClient, object]:
    samples = open_rag(str(files["records"]), tmp_path / "labels.sqlite")
    samples.audits = JudgeAudits.read(audits)
    return TestClient(create_app(None, rag=samples), base_url="http://127.0.0.1:8765"), samples


class _Text(HTMLParser):
    """The text of every element carrying a data-testid, by test id, and every script element seen."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str | None] = []
        self.by_id: dict[str, list[str]] = {}
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs)
        if tag in ("meta", "link", "br", "input"):
            return
        testid = attrs.get("data-testid")
        self.stack.append(testid)
        if testid:
            self.by_id.setdefault(testid, []).append("")

    def handle_endtag(self, tag):
        if tag not in ("meta", "link", "br", "input") and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for testid in {t for t in self.stack if t}:
            self.by_id[testid][-1] += data


def _parsed(html: str) -> _Text:
    parser = _Text()
    parser.feed(html)
    return parser


def _n3(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(figure: list[float | None]) -> str:
    return f"{_n3(figure[0])} [{_n3(figure[1])}, {_n3(figure[2])}]"


def _page_data(html: str) -> dict:
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert blob is not None
    return json.loads(blob.group(1))


def test_judge_names_match_as_the_judge_grammar_reads_them() -> None:
    assert same_judge("lexical", "lexical(threshold=0.6)") and same_judge("LEXICAL", "lexical")
    assert not same_judge("lexical", "lexical(threshold=0.5)") and not same_judge("lexical", "gold")
    assert same_judge("my-judge", "my-judge") and not same_judge("my-judge", "lexical")  # unregistered: as written


def test_a_sample_page_shows_the_judge_of_its_labels_and_the_audit_files_figures(files, tmp_path) -> None:
    client, _ = _client(files, tmp_path, [files["audit"]])
    audit = json.loads(files["audit"].read_text())
    res = client.get("/rag/good")
    assert res.status_code == 200
    data = _page_data(res.text)
    assert data["judges"] == {"support": {"name": "lexical"}}
    assert data["judged"] == {"sentence_citation_recall": 1.0, "sentence_citation_precision": 1.0}  # by hand
    shown = _parsed(res.text).by_id
    role = shown["judged-role"][0]
    assert "Support labels, by judge lexical" in role and "sentence-level citation recall (ALCE)" in role
    (summary,) = shown["audit-summary"]
    figures = audit["figures"]
    assert f"Cohen's kappa with people: {_interval(figures['kappa'])}" in summary
    assert f"(95% bootstrap, n = {audit['n']:,}; {audit['unjudged']:,} unjudged)" in summary
    assert f"accuracy {_interval(figures['accuracy'])}" in summary
    assert f"macro-F1 {_interval(figures['macro_f1'])}" in summary
    assert f"measured on {audit['data']}" in summary and audit["data"] == "labelled.jsonl"
    assert audit["judge"] in summary and "this sample's support labels" in summary
    for g in audit["gullibility"]:  # every attack's rate with its interval and n
        assert f"fooled by {g['attack']}: {_interval(g['rate'])} of {g['n']:,}" in summary
    assert shown["audit-link"] and "no-audit" not in shown
    bad = _page_data(client.get("/rag/bad").text)
    assert bad["judged"] == {"sentence_citation_recall": 0.0, "sentence_citation_precision": 0.0}  # by hand


def test_a_judge_without_an_audit_is_said_to_have_unknown_agreement(files, tmp_path) -> None:
    client, _ = _client(files, tmp_path, [files["audit"]])
    page = client.get(f"/rag/{to_segment('no texts')}").text
    shown = _parsed(page).by_id
    assert shown["no-audit"] == [no_audit_sentence("gold")]
    assert shown["no-audit"][0] == "no audit given for judge gold: its agreement with people is unknown"
    assert "audit-summary" not in shown
    # with no audit at all, the lexical sample says the same of its judge
    (tmp_path / "none").mkdir()
    client, _ = _client(files, tmp_path / "none", [])
    assert _parsed(client.get("/rag/good").text).by_id["no-audit"] == [no_audit_sentence("lexical")]


def test_marking_gold_changes_the_gold_judges_labels_the_page_shows(files, tmp_path) -> None:
    client, _ = _client(files, tmp_path, [])
    sid = to_segment("no texts")
    before = _page_data(client.get(f"/rag/{sid}").text)
    assert before["judged"] == {"sentence_citation_recall": 0.0, "sentence_citation_precision": 0.0}
    after = client.put(f"/api/rag/{sid}/evidence/q2", json={"gold": True})
    assert after.status_code == 200, after.text
    # q2, the cited passage, is now gold: the gold judge finds the sentence supported
    assert after.json()["judged"] == {"sentence_citation_recall": 1.0, "sentence_citation_precision": 1.0}
    assert after.json()["judges"] == {"support": {"name": "gold"}}


def test_the_list_page_names_each_judge_its_audits_and_an_audit_of_no_judge_here(files, tmp_path) -> None:
    client, _ = _client(files, tmp_path, [files["audit"], files["other"]])
    res = client.get("/rag")
    assert res.status_code == 200
    page = _parsed(res.text)
    judges = page.by_id["judge"]
    assert judges[0].startswith("Judge lexical gave the support labels of 2 sample(s).")
    assert judges[1].startswith("Judge gold gave the support labels of 1 sample(s).")
    assert no_audit_sentence("gold") in judges[1]
    summaries = page.by_id["audit-summary"]
    assert len(summaries) == 2 and "this judge gave the support labels of 2 sample(s)" in summaries[0]
    assert "not a judge of these samples (their judges: lexical, gold)" in summaries[1]
    # the hostile names are text, never markup, and the page runs no script at all
    assert "<b>judge</b>" not in res.text and "my&lt;b&gt;judge&lt;/b&gt;" in res.text
    assert "<script>alert" not in res.text and "&lt;script&gt;alert(1)&lt;/script&gt;.jsonl" in res.text
    assert page.scripts == []
    csp = res.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "script-src" not in csp
    css = client.get("/static/app.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css") and ".judge-audit" in css.text
    rows = page.by_id["sample-row"]
    assert ["lexical" in r for r in rows] == [True, True, False] and "gold" in rows[2]


def test_an_audit_page_shows_every_figure_the_confusion_matrix_and_the_calibration_bins(files, tmp_path) -> None:
    client, _ = _client(files, tmp_path, [files["audit"], files["other"]])
    audit = json.loads(files["audit"].read_text())
    res = client.get("/audits/1")
    assert res.status_code == 200 and "default-src 'none'" in res.headers["content-security-policy"]
    page = _parsed(res.text)
    assert page.scripts == []
    assert page.by_id["audit-judge"] == [audit["judge"]] and page.by_id["audit-n"] == [f"{audit['n']:,}"]
    rows = page.by_id["figure"]
    assert len(rows) == len(audit["figures"])
    for row, (key, (value, low, high)) in zip(rows, audit["figures"].items(), strict=True):
        assert row.endswith(f"{_n3(value)}{_n3(low)}{_n3(high)}"), (key, row)
    cells = [int(c.replace(",", "")) for c in page.by_id["confusion-cell"]]
    assert cells == [x for row in audit["confusion"]["counts"] for x in row]
    assert sum(cells) == audit["n"]
    bins = page.by_id["calibration-bin"]
    assert len(bins) == len(audit["calibration"]["bins"])
    for shown, b in zip(bins, audit["calibration"]["bins"], strict=True):
        assert shown.endswith(f"{b['count']:,}{_n3(b['mean_score'])}{_n3(b['observed'])}")
    assert sum(b["count"] for b in audit["calibration"]["bins"]) == audit["n"]
    assert page.by_id["ece"] == [_n3(audit["calibration"]["ece"])]
    assert [g.split("[")[0] for g in page.by_id["gullibility"]] == [
        f"{g['attack']}{g['n']:,}{g['fooled']:,}{_n3(g['rate'][0])} " for g in audit["gullibility"]
    ]
    hostile = client.get("/audits/2").text
    assert "<script>alert" not in hostile and "&lt;script&gt;alert(1)&lt;/script&gt;.jsonl" in hostile
    missing = client.get("/audits/3")
    assert missing.status_code == 404 and "no judge audit 3: this server was given 2" in missing.text


def test_serve_refuses_a_bad_audit_file_naming_it_and_an_audit_without_rag(files, tmp_path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"judge": "lexical"}')
    db = str(tmp_path / "labels.sqlite")
    done = _invoke(["serve", "--rag", str(files["records"]), "--judge-audit", str(broken), "--db", db], code=2)
    assert f"{broken}: is not a judge audit" in done.stderr and "stagewise judge audit --format json" in done.stderr
    assert "Traceback" not in done.output and not Path(db).exists()
    absent = tmp_path / "absent.json"
    done = _invoke(["serve", "--rag", str(files["records"]), "--judge-audit", str(absent), "--db", db], code=2)
    assert f"{absent}: cannot be read" in done.stderr
    no_figure = json.loads(files["audit"].read_text())
    del no_figure["figures"]["kappa"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(no_figure))
    done = _invoke(["serve", "--rag", str(files["records"]), "--judge-audit", str(partial), "--db", db], code=2)
    assert f"{partial}: is a judge audit without the figure(s) kappa" in done.stderr
    done = _invoke(["serve", "--qrels", str(broken), "--judge-audit", str(files["audit"])], code=2)
    assert "--judge-audit: is shown on the RAG pages (give --rag RECORDS too)" in done.stderr


def test_a_relevance_audit_has_its_page_with_every_kappa_and_the_four_grades(tmp_path) -> None:
    from sklearn.metrics import cohen_kappa_score

    from stagewise.app.pages import audit_page
    from stagewise.rag.audit import audit_relevance
    from stagewise.rag.judge_inputs import RelevancePair
    from stagewise.rag.judges import Passage
    from stagewise.rag.relevance import QueryCoverageJudge
    from stagewise.report.judge_audit import render

    query = "supersonic boundary layer transition"
    texts = ["nothing here", "a supersonic jet", "supersonic boundary", "supersonic boundary layer", query] * 3
    people = [0, 1, 1, 2, 3, 0, 0, 2, 3, 3, 1, 0, 2, 2, 3]
    pairs = [
        RelevancePair("q", query, f"d{i}", Passage(f"d{i}", t), g)
        for i, (t, g) in enumerate(zip(texts, people, strict=True))
    ]
    path = tmp_path / "relevance.json"
    path.write_text(render(audit_relevance(QueryCoverageJudge(), pairs, data="toy", resamples=50), "json"))
    audits = JudgeAudits.read([path])
    page = _parsed(audit_page(1, *audits.get(1)))
    judged = [0, 1, 2, 3, 3] * 3  # query coverage 0, 1/4, 1/2, 3/4, 1 in quarters
    figures = page.by_id["figure"]
    assert len(figures) == 5  # accuracy, macro-F1 and three kappas
    names = ("Cohen's kappa", "Cohen's kappa, linear weights", "Cohen's kappa, quadratic weights")
    for row, name, weights in zip(figures[2:], names, (None, "linear", "quadratic"), strict=True):
        assert row.startswith(f"{name}{cohen_kappa_score(people, judged, weights=weights):.3f}"), row
    cells = [int(c) for c in page.by_id["confusion-cell"]]
    assert len(cells) == 16 and cells == [sum(p == a and j == b for p, j in zip(people, judged, strict=True))
                                          for a in range(4) for b in range(4)]  # fmt: skip
