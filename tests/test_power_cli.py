"""``stagewise power topics`` and ``stagewise power discriminative``: the numbers are the library's, every format,
the inputs stated, clean one-line errors, and help that imports nothing heavy."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app
from stagewise.stats import discriminative as D
from stagewise.stats import power as P

runner = CliRunner()
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))


def invoke(*args: str):
    return runner.invoke(app, ["power", *args], env={"COLUMNS": "200"})


@pytest.fixture
def runs(tmp_path: Path) -> list[str]:
    """Three runs over the bundled sample: the NIST sample, its truncation and a reversed copy."""
    reversed_run = tmp_path / "reversed.run"
    with reversed_run.open("w") as fh:
        for line in Path(RUN).read_text().splitlines():
            qid, q0, doc, rank, score, _tag = line.split()
            fh.write(f"{qid} {q0} {doc} {rank} {-float(score)} rev\n")
    return [RUN, TRUNC, str(reversed_run)]


# ---------------------------------------------------------------------------------------------------- topics
def test_topics_from_a_stated_variance_prints_the_size_and_every_input() -> None:
    done = invoke("topics", "--test", "t", "--min-diff", "0.05", "--variance", "0.01")
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == f"topics needed: {P.topic_set_size('t', 0.05, 0.01).topics}"
    assert "inputs: alpha 0.05, beta 0.2 (power 0.8), minD 0.05" in lines
    assert "variance V: 0.01 (stated)" in lines
    assert any(line.startswith("power at 65 topics: ") for line in lines)


@pytest.mark.parametrize(("design", "extra"), [("t", []), ("anova", ["--systems", "7"]), ("ci", [])])
def test_topics_json_is_the_library_result(design: str, extra: list[str]) -> None:
    done = invoke("topics", "-t", design, "--min-diff", "0.1", "--variance", "0.04", "--format", "json", *extra)
    assert done.exit_code == 0, done.output
    expected = P.topic_set_size(design, 0.1, 0.04, systems=7 if extra else None).to_dict()
    assert json.loads(done.stdout) == expected


def test_topics_csv_is_one_row_with_its_inputs(tmp_path: Path) -> None:
    out = tmp_path / "size.csv"
    done = invoke("topics", "--test", "ci", "--min-diff", "0.1", "--variance", "0.05", "-o", str(out))
    assert done.exit_code == 0, done.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 1 and rows[0]["design"] == "ci" and rows[0]["beta"] == ""
    assert int(rows[0]["topics"]) == P.topic_set_size("ci", 0.1, 0.05).topics
    assert rows[0]["variance_source"] == "stated"


def test_topics_from_runs_estimates_v_e_and_takes_the_systems_from_them(runs: list[str]) -> None:
    done = invoke("topics", QRELS, *runs, "-m", "map", "--test", "anova", "--min-diff", "0.1", "-f", "json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    estimate = P.estimate_variance(QRELS, runs, "map")
    assert data["variance"]["value"] == estimate.value and data["systems"] == 3
    assert data["topics"] == P.topic_set_size("anova", 0.1, estimate).topics
    assert "two-way ANOVA" in data["variance"]["source"] and data["variance"]["metric"] == "map"
    table = invoke("topics", QRELS, *runs, "-m", "ndcg@10", "--min-diff", "0.1", "--relevance-level", "0")
    assert table.exit_code == 0, table.output
    assert "evaluated: qrels qrels.test; relevance level 0; ties: " in table.stdout
    flat = invoke("topics", QRELS, RUN, RUN, "-m", "map", "--min-diff", "0.1")  # two copies: nothing varies
    assert flat.exit_code == 2 and "have no residual variance (V_E = 0" in flat.stderr, flat.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variance", "0.01"], "no --min-diff was given"),
        (["--min-diff", "0.1"], "neither --variance nor runs"),
        (["--min-diff", "0.1", "--variance", "0.01", "--test", "z"], "unknown design 'z'; choose one of t, anova, ci"),
        (["--min-diff", "0.1", "--variance", "0.01", "--test", "anova"], "needs the number of systems"),
        (["--min-diff", "0", "--variance", "0.01"], "the minimum difference 0.0 is not a positive finite number"),
        (["--min-diff", "0.1", "--variance", "0.01", "--alpha", "2"], "alpha 2.0 is outside (0, 1)"),
        (["--min-diff", "0.1", "--variance", "0.01", "--systems", "1"], "--systems must be an integer from 2"),
    ],
)
def test_topics_errors_are_one_line(args: list[str], message: str) -> None:
    done = invoke("topics", *args)
    assert done.exit_code == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_topics_refuses_runs_and_a_variance_together_or_two_metrics(runs: list[str]) -> None:
    both = invoke("topics", QRELS, *runs, "-m", "map", "--min-diff", "0.1", "--variance", "0.01")
    assert both.exit_code == 2 and "both --variance and runs were given" in both.stderr
    two = invoke("topics", QRELS, *runs, "-m", "map,P@10", "--min-diff", "0.1")
    assert two.exit_code == 2 and "2 metric(s) were given" in two.stderr


# -------------------------------------------------------------------------------------------- discriminative
def test_discriminative_json_is_the_library_result(runs: list[str]) -> None:
    done = invoke("discriminative", QRELS, *runs, "-m", "map", "-m", "P@10", "-B", "300", "--seed", "2", "-f", "json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    expected = D.discriminative_power(QRELS, runs, ["map", "P@10"], resamples=300, seed=2)
    assert [m["pair_asl"] for m in data["measures"]] == [m.to_dict()["pair_asl"] for m in expected.measures]
    assert data["ranking"] == expected.ranking() and data["resamples"] == 300 and data["seed"] == 2
    assert data["conventions"]["relevance_level"] == 1


def test_discriminative_table_and_csv(runs: list[str], tmp_path: Path) -> None:
    table = invoke("discriminative", QRELS, *runs, "-m", "map,ndcg@10", "-B", "200")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].startswith("discriminative power; 3 runs; 3 pairs;") and "B = 200; seed 0; alpha 0.05" in lines[0]
    assert lines[1].split()[:3] == ["measure", "significant", "share"]
    assert any(line.startswith("ranking: ") for line in lines)
    assert any(line.startswith("method: paired bootstrap test (Sakai, SIGIR 2006)") for line in lines)
    out = tmp_path / "asl.csv"
    written = invoke("discriminative", QRELS, *runs, "-m", "map,ndcg@10", "-B", "200", "-o", str(out))
    assert written.exit_code == 0, written.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 6 and {r["metric"] for r in rows} == {"map", "ndcg@10"}
    assert all(r["significant"] == str(float(r["asl"]) < 0.05) for r in rows)


def test_discriminative_is_the_same_for_the_same_seed(runs: list[str]) -> None:
    first = invoke("discriminative", QRELS, *runs, "-m", "map", "-B", "250", "--seed", "7", "-f", "json")
    again = invoke("discriminative", QRELS, *runs, "-m", "map", "-B", "250", "--seed", "7", "-f", "json")
    assert first.exit_code == 0 and first.stdout == again.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "map"], "1 run(s) were given"),
        (["-m", "nosuchmetric", TRUNC], "nosuchmetric"),
        (["-B", "0", TRUNC], "--resamples must be an integer from 1"),
        (["--alpha", "1.5", TRUNC], "'alpha' parameter"),
        (["-f", "latex", TRUNC], "unknown format 'latex'; choose one of table, json, csv"),
    ],
)
def test_discriminative_errors_are_one_line(args: list[str], message: str) -> None:
    done = invoke("discriminative", QRELS, RUN, *args)
    assert done.exit_code == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_power_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\nfrom typer.testing import CliRunner\nimport stagewise.cli\n"
        "for args in (['power', '--help'], ['power', 'topics', '--help'], ['power', 'discriminative', '--help']):\n"
        "    done = CliRunner().invoke(stagewise.cli.app, args)\n"
        "    assert done.exit_code == 0, done.output\n"
        "print(sorted(m for m in ('numpy', 'polars', 'scipy') if m in sys.modules))\n"
        "print(CliRunner().invoke(stagewise.cli.app, ['power', 'topics', '--help'], env={'COLUMNS': '400'}).output)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    first, _, rest = done.stdout.partition("\n")
    assert first == "[]"
    assert "anova (power 1 - beta for a one-way ANOVA" in " ".join(rest.split())  # the registry's entries
