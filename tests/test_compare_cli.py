"""``stagewise compare``: the JSON contract, every format, identical output for the same seed, clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from stagewise._bundled import sample_path
from stagewise.cli import app as main_app
from stagewise.cli import compare_cmd
from stagewise.stats.result import PAIR_KEYS

runner = CliRunner()
QRELS = str(sample_path("qrels.test"))
RUN = str(sample_path("results.test"))
TRUNC = str(sample_path("results.trunc"))


def _app() -> typer.Typer:
    """The main app when ``compare`` is registered there, else a test app with the same command."""
    if any(c.name == "compare" for c in main_app.registered_commands):
        return main_app
    local = typer.Typer(add_completion=False)

    @local.callback()
    def _group() -> None:  # keeps "compare" a subcommand
        pass

    local.command("compare")(compare_cmd.compare_command)
    return local


APP = _app()


def invoke(*args: str):
    return runner.invoke(APP, ["compare", *args], env={"COLUMNS": "200"})


@pytest.fixture
def three_runs(tmp_path: Path) -> list[str]:
    """Three runs over the bundled sample: the NIST sample, its truncation and a reversed copy."""
    reversed_run = tmp_path / "reversed.run"
    lines = Path(RUN).read_text().splitlines()
    with reversed_run.open("w") as fh:
        for line in lines:
            qid, q0, doc, rank, score, _tag = line.split()
            fh.write(f"{qid} {q0} {doc} {rank} {-float(score)} rev\n")
    return [RUN, TRUNC, str(reversed_run)]


def test_json_contract(three_runs: list[str]) -> None:
    result = invoke(QRELS, *three_runs, "-m", "map,P@10", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"pairs", "means", "conventions", "labels"} == set(data)
    assert set(data["means"]) == {"results.test", "results.trunc", "reversed.run"}
    assert len(data["pairs"]) == 2 * 3
    for pair in data["pairs"]:
        assert list(pair)[: len(PAIR_KEYS)] == list(PAIR_KEYS)
        assert pair["test"] == "t" and pair["correction"] == "holm"
        diff = data["means"][pair["b"]][pair["metric"]] - data["means"][pair["a"]][pair["metric"]]
        assert pair["mean_diff"] == pytest.approx(diff)
    conv = data["conventions"]
    assert conv["family_size"] == 3 and conv["alternative"] == "two-sided"
    assert conv["evaluation"]["queries_missing_from_run"]["results.trunc"] == 1


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex", "csv"])
def test_text_formats(three_runs: list[str], fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"cmp.{fmt}"
    result = invoke(QRELS, *three_runs, "-m", "map", "-f", fmt, "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "reversed.run" in text
    if fmt == "csv":
        assert text.splitlines()[0].startswith("metric,a,b,test,statistic,p_value,p_adjusted,correction,mean_diff")
    else:
        assert "Holm" in text and "n = 3 queries" in text
        assert "1 judged query absent from the run, scored 0" in text


def test_same_seed_same_output(three_runs: list[str]) -> None:
    args = (QRELS, *three_runs, "-m", "map,ndcg@10", "-t", "randomization", "--exact", "never", "--seed", "3")
    first, second = invoke(*args), invoke(*args)
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    assert "10000 random sign flips" in first.stdout
    boot = ("-t", "bootstrap", "--ci", "bootstrap", "-f", "json")
    one, two = invoke(QRELS, *three_runs, *boot), invoke(QRELS, *three_runs, *boot)
    assert (one.exit_code, two.exit_code) == (0, 0), one.output + two.output
    assert one.stdout == two.stdout and json.loads(one.stdout)["pairs"]  # equal, and not equally empty


def test_the_old_name_of_resamples_still_works(three_runs: list[str]) -> None:
    args = (QRELS, *three_runs, "-m", "map", "-t", "randomization", "--exact", "never", "-f", "json")
    new, old = invoke(*args, "--resamples", "500"), invoke(*args, "--permutations", "500")
    assert (new.exit_code, old.exit_code) == (0, 0), new.output + old.output
    assert new.stdout == old.stdout and "500 random sign flips" in new.stdout
    assert "stagewise: --permutations for --resamples is deprecated; use --resamples" in old.stderr
    assert "deprecated" not in new.stderr


def test_baseline_by_path_or_name(three_runs: list[str]) -> None:
    results = [invoke(QRELS, *three_runs, "-m", "map", "-b", b, "-f", "json") for b in (three_runs[2], "reversed.run")]
    assert [r.exit_code for r in results] == [0, 0], [r.output for r in results]
    by_path, by_name = (json.loads(r.stdout) for r in results)
    assert by_path == by_name
    assert [(p["a"], p["b"]) for p in by_path["pairs"]] == [
        ("reversed.run", "results.test"),
        ("reversed.run", "results.trunc"),
    ]


def test_per_query_deltas(three_runs: list[str]) -> None:
    result = invoke(QRELS, RUN, three_runs[2], "-m", "map", "--per-query")
    assert result.exit_code == 0, result.output
    assert "map: reversed.run - results.test per query (n = 3:" in result.stdout
    as_json = invoke(QRELS, RUN, three_runs[2], "-m", "map", "-q", "-f", "json")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    deltas = data["per_query"][0]["deltas"]
    assert [d["delta"] for d in deltas] == sorted((d["delta"] for d in deltas), reverse=True)
    assert {d["query_id"] for d in deltas} == {"301", "302", "303"}


def test_rich_table_marks_best_and_states_conventions(three_runs: list[str]) -> None:
    result = invoke(QRELS, *three_runs, "-m", "map", "-t", "wilcoxon", "-c", "bh")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Wilcoxon signed-rank test (two-sided)" in out and "Benjamini-Hochberg" in out
    assert "zero_method='wilcox'" in out
    assert "W/T/L" in out  # 3 pairs: the pairs table is shown by default


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((QRELS, RUN), "compare needs at least two runs; got 1"),
        ((QRELS, RUN, TRUNC, "-m", "nonsense@x"), "nonsense"),
        ((QRELS, RUN, TRUNC, "-b", "nope"), "baseline 'nope' is not one of the runs"),
        ((QRELS, RUN, TRUNC, "--resamples", "0"), "--resamples must be an integer from 1 to"),
        ((QRELS, RUN, TRUNC, "--permutations", "0"), "--permutations for --resamples is deprecated; use --resamples"),
        ((QRELS, RUN, TRUNC, "-t", "kw"), "unknown statistical test 'kw'; choose one of t, wilcoxon"),
        ((QRELS, RUN, TRUNC, "-c", "sidak"), "unknown correction 'sidak'; choose one of none, bonferroni"),
        ((QRELS, RUN, "/no/such/run"), "no such file"),
    ],
)
def test_user_errors_are_one_line_exit_2(args: tuple[str, ...], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_help_teaches() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for text in ("--baseline", "--test", "randomization", "--per-query", "mean_diff", "--seed"):
        assert text in result.stdout
