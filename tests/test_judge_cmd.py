"""``stagewise judge support|relevance|audit``: outputs that name their judge, the same bytes on a rerun, figures
equal to the library's and to scikit-learn's, and one-line errors naming the file and line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.data.readers import read_qrels
from stagewise.rag.judges import LexicalJudge, Passage
from stagewise.report.judge_audit import html_block

EXPERTQA_TEST = Path(__file__).resolve().parents[2] / "shared" / "data" / "expertqa" / "rand_test.jsonl"
WORDS = ["austen", "emma", "novel", "published", "dickens", "london", "paris", "wrote", "year", "letters", "sister"]


def _invoke(args: list[str], code: int = 0):
    done = CliRunner().invoke(app, args)
    assert done.exit_code == code, done.output
    return done


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """Sixty claims with passages, labelled; some passages repeat the claim's words, some do not."""
    rng = random.Random(4)
    lines = []
    for i in range(60):
        claim = " ".join(rng.sample(WORDS, 4))
        shared = rng.sample(claim.split(), rng.randint(0, 4))
        passage = " ".join(shared + rng.sample(WORDS, 2))
        label = rng.choice(["supported", "partial", "not", True, False])
        passages = [passage] if i % 2 else [{"id": f"doc{i}", "text": passage}]
        lines.append(json.dumps({"id": f"c{i}", "claim": claim, "passages": passages, "label": label}))
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_support_writes_one_line_per_claim_in_order_naming_the_judge_and_again_the_same_bytes(
    tmp_path: Path, labelled: Path
) -> None:
    out = tmp_path / "v.jsonl"
    _invoke(["judge", "support", str(labelled), "--judge", "lexical(threshold=0.5)", "-o", str(out)])
    first = out.read_bytes()
    _invoke(["judge", "support", str(labelled), "--judge", "lexical(threshold=0.5)", "-o", str(out)])
    assert out.read_bytes() == first
    rows = [json.loads(line) for line in first.decode().splitlines()]
    inputs = [json.loads(line) for line in labelled.read_text().splitlines()]
    assert [r["id"] for r in rows] == [i["id"] for i in inputs]
    judge = LexicalJudge(0.5)
    for row, item in zip(rows, inputs, strict=True):
        passages = [Passage("p", p if isinstance(p, str) else p["text"]) for p in item["passages"]]
        assert row["supported"] is judge.supports(passages, item["claim"])
        assert row["score"] == pytest.approx(judge.coverage(passages, item["claim"]))
        assert row["label"] == ("supported" if row["supported"] else "not")
        assert (row["judge"], row["judge_version"]) == ("lexical(threshold=0.5)", None)


def test_relevance_writes_qrels_that_read_back_and_jsonl(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"qid": "1", "query": "boundary layer flow", "docid": "d1", "passage": "flow in a boundary layer"},
        {"qid": "1", "query": "boundary layer flow", "passage": {"id": "d2", "text": "supersonic wings"}},
        {"qid": 2, "query": "heat transfer", "docid": "d1", "passage": "heat shields"},
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "judged.qrels"
    _invoke(["judge", "relevance", str(pairs), "-o", str(out)])
    text = out.read_text()
    _invoke(["judge", "relevance", str(pairs), "-o", str(out)])
    assert out.read_text() == text  # the same bytes on a rerun
    assert (
        text.splitlines()[0]
        == "# stagewise judge relevance: judge query-coverage version 1; 0 unjudged pair(s) left out"
    )
    qrels = read_qrels(str(out))
    queries = qrels.query_ids[qrels.query_codes].tolist()
    got = {(q, d): int(x) for q, d, x in zip(queries, qrels.docs.values(), qrels.labels.tolist(), strict=True)}
    assert got == {("1", "d1"): 3, ("1", "d2"): 0, ("2", "d1"): 2}  # coverage 1, 0, 1/2
    jsonl = tmp_path / "v.jsonl"
    _invoke(["judge", "relevance", str(pairs), "-o", str(jsonl)])
    first = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [(r["qid"], r["docid"], r["label"], r["judge"]) for r in first][1] == ("1", "d2", "0", "query-coverage")


def test_audit_json_equals_scikit_learn_and_is_the_same_bytes_on_a_rerun(tmp_path: Path, labelled: Path) -> None:
    out = tmp_path / "audit.json"
    args = ["judge", "audit", str(labelled), "--judge", "lexical(threshold=0.5)", "-B", "200", "--seed", "3"]
    _invoke([*args, "-o", str(out)])
    first = out.read_bytes()
    _invoke([*args, "-o", str(out)])
    assert out.read_bytes() == first
    audit = json.loads(first)
    judge = LexicalJudge(0.5)
    items = [json.loads(line) for line in labelled.read_text().splitlines()]
    people = [i["label"] in ("supported", True) for i in items]
    texts = [[Passage("p", p if isinstance(p, str) else p["text"]) for p in i["passages"]] for i in items]
    said = [judge.supports(passages, i["claim"]) for passages, i in zip(texts, items, strict=True)]
    assert audit["n"] == 60 and audit["unjudged"] == 0 and audit["judge"] == "lexical(threshold=0.5)"
    assert audit["figures"]["kappa"][0] == pytest.approx(cohen_kappa_score(people, said), abs=1e-6)
    assert audit["figures"]["macro_f1"][0] == pytest.approx(f1_score(people, said, average="macro"), abs=1e-6)
    low, value, high = audit["figures"]["kappa"][1], audit["figures"]["kappa"][0], audit["figures"]["kappa"][2]
    assert low <= value <= high
    counts = audit["confusion"]["counts"]
    assert counts[1][1] == sum(p and s for p, s in zip(people, said, strict=True))
    assert sum(b["count"] for b in audit["calibration"]["bins"]) == 60
    assert [g["attack"] for g in audit["gullibility"]] == ["keyword-stuffing", "instruction"]
    assert audit["bootstrap"] == {"resamples": 200, "seed": 3, "interval": "95% percentile"}
    table = _invoke(args).stdout
    assert "Cohen's kappa" in table and "gullibility" in table and "ECE" in table


def test_relevance_audit_from_qrels_and_texts(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"id": "1", "text": "boundary layer flow"}\n')
    corpus = ["flow in a boundary layer", "supersonic wings", "layer of paint", "boundary flow layer"]
    (tmp_path / "c.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(corpus))
    )
    (tmp_path / "t.qrels").write_text("1 0 d0 3\n1 0 d1 0\n1 0 d2 2\n1 0 d3 1\n")
    args = ["judge", "audit", "--qrels", str(tmp_path / "t.qrels"), "--queries", str(tmp_path / "q.jsonl")]
    audit = json.loads(
        _invoke([*args, "--corpus", str(tmp_path / "c.jsonl"), "--judge", "query-coverage", "-f", "json"]).stdout
    )
    assert audit["task"] == "relevance" and audit["n"] == 4
    people, said = [3, 0, 2, 1], [3, 0, 1, 3]  # coverage 1, 0, 1/3, 1
    for key, w in (("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")):
        assert audit["figures"][key][0] == pytest.approx(cohen_kappa_score(people, said, weights=w), abs=1e-6)


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ('{"id": 1, "claim": "x", "passages": []}\nnot json\n', ["support"], "in.jsonl:2: is not JSON"),
        ('{"id": 1, "passages": []}\n', ["support"], "in.jsonl:1: has no 'claim'"),
        ('{"id": 1, "claim": "x", "passages": []}\n', ["audit"], "in.jsonl:1: has no 'label'"),
        ('{"id": 1, "claim": "x", "passages": []}\n', ["support", "--judge", "query-coverage"],
         "cannot answer support"),
        ('{"qid": 1, "query": "x", "docid": "d", "passage": "t"}\n', ["relevance", "--judge", "lexical"],
         "judge 'lexical' cannot answer relevance; judges that can: query-coverage"),
        ('{"id": 1, "claim": "x", "passages": []}\n', ["support", "--judge", "lexical", "--max-calls", "5"],
         "takes no max_calls"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_naming_file_and_line(
    tmp_path: Path, content: str, args: list[str], message: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(content)
    done = _invoke(["judge", args[0], str(path), *args[1:]], code=2)
    assert message in done.output and "Traceback" not in done.output
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_output_that_is_the_input_is_refused_before_any_work(labelled: Path) -> None:
    before = labelled.read_bytes()
    _invoke(["judge", "support", str(labelled), "--judge", "lexical", "-o", str(labelled)], code=2)
    assert labelled.read_bytes() == before


def test_the_report_block_names_judge_version_kappa_n_and_data(labelled: Path) -> None:
    from stagewise.rag.audit import audit_support
    from stagewise.rag.judge_inputs import read_claims

    claims, _ = read_claims(labelled, labelled=True)
    audit = audit_support(LexicalJudge(0.5), claims, data="labelled.jsonl", resamples=50)
    block = html_block(audit)
    kappa = audit.figures["kappa"]
    assert "lexical(threshold=0.5)" in block and "labelled.jsonl" in block and "n = 60" in block
    assert f"{kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}]" in block


@pytest.mark.skipif(not EXPERTQA_TEST.is_file(), reason=f"ExpertQA's rand_test is not at {EXPERTQA_TEST}")
def test_audit_on_expertqa_reads_its_own_file() -> None:
    audit = json.loads(
        _invoke(["judge", "audit", str(EXPERTQA_TEST), "--judge", "lexical", "-B", "100", "-f", "json"]).stdout
    )
    assert (audit["n"], audit["figures"]["kappa"][0]) == (793, pytest.approx(0.082, abs=5e-4))
    assert audit["left_out"]["evidence without passage text"] == 210


def test_the_html_report_shows_an_audit_in_the_rag_section(tmp_path: Path, labelled: Path) -> None:
    import stagewise
    from tests.report_helpers import RAG_RECORDS, parse

    out = tmp_path / "audit.json"
    _invoke(["judge", "audit", str(labelled), "--judge", "lexical", "-B", "100", "-f", "json", "-o", str(out)])
    audit = json.loads(out.read_text())
    page = stagewise.report(rag=RAG_RECORDS, rag_options={"judge": "lexical"}, judge_audit=str(out))
    rag = parse(page).by_id("rag").content()
    kappa = audit["figures"]["kappa"]
    assert "Judge audit" in rag and "lexical(threshold=0.6)" in rag and "labelled.jsonl" in rag
    assert f"{kappa[0]:.3f} [{kappa[1]:.3f}, {kappa[2]:.3f}]" in rag and "n = 60" in rag
    assert "this judge gave the report's support labels" in rag
    assert stagewise.report(rag=RAG_RECORDS, rag_options={"judge": "lexical"}, judge_audit=str(out)) == page
    other = stagewise.report(rag=RAG_RECORDS, rag_options={"judge": "gold"}, judge_audit=str(out))
    assert "not a judge of this report (its judges: support: gold" in parse(other).by_id("rag").content()
    assert "Judge audit" not in stagewise.report(rag=RAG_RECORDS)


def test_model_judge_options_reach_the_llm_judge_and_a_dry_run_calls_nothing(tmp_path: Path, labelled: Path) -> None:
    out = tmp_path / "v.jsonl"
    args = ["judge", "support", str(labelled), "--judge", "llm(model=m,url='http://127.0.0.1:9/v1')"]
    done = _invoke([*args, "--dry-run", "--cache", "off", "--max-calls", "3", "-o", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 60 and all(r["label"] == "unjudged" and r["supported"] is None for r in rows)
    assert all(r["reason"].startswith("dry run") and r["judge"].startswith("llm(model=m") for r in rows)
    assert "dry run: 60 calls to make" in done.stderr and "unjudged 60" in done.stderr


def test_stagewise_report_takes_judge_audit_files(tmp_path: Path, labelled: Path) -> None:
    from tests.report_helpers import RAG_RECORDS, parse

    audit = tmp_path / "audit.json"
    _invoke(["judge", "audit", str(labelled), "--judge", "lexical", "-B", "100", "-f", "json", "-o", str(audit)])
    records = tmp_path / "rag.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in RAG_RECORDS))
    page = tmp_path / "report.html"
    _invoke(["report", "--rag", str(records), "--judge-audit", str(audit), "-o", str(page)])
    rag = parse(page.read_text()).by_id("rag").content()
    assert "Judge audit" in rag and "labelled.jsonl" in rag
    refused = CliRunner().invoke(app, ["report", "--judge-audit", str(audit), "-o", str(tmp_path / "x.html")])
    assert refused.exit_code == 2 and "give --rag RECORDS too" in refused.stderr
