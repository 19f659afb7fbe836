"""The Python API in a notebook (issue 24): a short repr and a small HTML table instead of every per-query array,
to_json() as JSON text and to_dict() as the dict, per_query(run) flat, .to_pandas() on a core install with its
install hint, and a NaN score in a DataFrame named by its row."""

from __future__ import annotations

import builtins
import json

import pytest

import stagewise

QRELS = {f"q{i}": {f"d{i}": 1} for i in range(300)}
RUNS = {
    "a.run": {f"q{i}": {f"d{i}": 2.0, "x": 1.0} for i in range(300)},
    "b.run": {f"q{i}": {"x": 2.0, f"d{i}": 1.0} for i in range(300)},
}


@pytest.fixture(scope="module")
def result():
    return stagewise.evaluate(QRELS, RUNS, ["map", "ndcg@10"])


def test_repr_is_short_means_queries_and_conventions(result) -> None:
    text = repr(result)
    assert len(text.splitlines()) <= 6 and len(text) < 600, text
    assert "2 runs x 2 metrics" in text and "300 queries" in text
    assert "a.run" in text and "1.0000" in text and "0.5000" in text
    assert "conventions:" in text and "relevance level 1" in text
    assert "array" not in text and "q299" not in text


def test_repr_html_is_a_small_table(result) -> None:
    from tests.report_helpers import header, parse, rows

    table = parse(result._repr_html_()).first("table")
    assert header(table) == ["run", "map", "ndcg@10"]
    assert rows(table) == [["a.run", "1.0000", "1.0000"], ["b.run", "0.5000", "0.6309"]]


def test_to_json_is_text_and_to_dict_the_dict(result) -> None:
    text = result.to_json(per_query=True)
    assert isinstance(text, str)
    assert json.loads(text) == result.to_dict(per_query=True)
    assert result.to_dict()["runs"]["b.run"]["map"] == pytest.approx(0.5)


def test_per_query_of_one_run_is_flat(result) -> None:
    one = result.per_query("a.run")
    assert set(one) == {"map", "ndcg@10"} and one["map"]["q7"] == 1.0
    assert one == result.per_query()["a.run"]
    with pytest.raises(KeyError, match=r"no run 'c\.run'"):
        result.per_query("c.run")


def test_to_pandas_without_pyarrow_says_what_to_install(result, monkeypatch) -> None:
    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.split(".")[0] == "pyarrow":
            raise ModuleNotFoundError("No module named 'pyarrow'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(stagewise.StagewiseError, match=r"pip install 'stagewise\[pandas\]'"):
        result.to_pandas()


def test_nan_score_in_a_dataframe_names_its_row() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"], "score": [1.0, float("nan"), 2.0]}
    )
    with pytest.raises(stagewise.InputError) as info:
        stagewise.evaluate({"q1": {"d1": 1}}, {"a": frame}, ["map"])
    message = str(info.value)
    assert "None" not in message and "NaN" in message
    assert "row 1" in message and "'d2'" in message
