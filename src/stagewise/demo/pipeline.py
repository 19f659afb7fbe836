"""The demo pipeline: every stage of a search and RAG pipeline on the bundled CLAP NQ dev data, each measured on
its own, ending in a verdict on what to fix first.

Stages, in order (each reports one progress step):

1. ``bm25-stem``: BM25 (Lucene, k1=1.2, b=0.75) with Snowball English stemming and Lucene's 33 stopwords.
2. ``bm25-plain``: the same BM25 with another analyser: no stemming, no stopwords.
3. ``dense``: the packaged all-MiniLM-L6-v2, exact cosine search; only with the dense extra (else a stated skip).
4. ``rrf``: reciprocal rank fusion (rrf_k=60) of the first-stage runs.
5. ``reranked``: the fused top 100 reranked by BM25 with a term-proximity bonus (no model needed).
6. evaluation of every stage, nDCG@10 with linear and exponential gain side by side;
7. paired randomization tests between the stages, Holm-corrected, seeded;
8. an extractive answerer (:class:`~stagewise.rag.extractive.ExtractiveAnswerer`) reads the top 3 of the best
   stage by nDCG@10 (the last one on a tie: a stage that loses ranking quality would have the diagnosis blame
   generation for it) and cites the passage it quotes;
9. the RAG diagnosis (:func:`stagewise.evaluate_rag`): a stage label and its reason for every question;
10. the HTML report.

Everything is written to one folder, replaced as a whole (see :mod:`stagewise.folders`): the inputs as files the
CLI reads (``corpus.jsonl``, ``queries.jsonl``, ``qrels.txt``), one run per stage, the RAG records and labels,
the evaluation and comparison as JSON, ``summary.md`` and ``report.html``. Labels edited in ``stagewise demo
--serve`` (``labels.sqlite``) survive a rerun.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stagewise import folders
from stagewise.demo.data import SOURCE, DemoData, load
from stagewise.demo.folder import MADE_BY, OWNED_FILES, check_folder, copy_labels
from stagewise.demo.verdict import Verdict, verdict

__all__ = ["DEPTH", "METRICS", "DemoResult", "Step", "run_demo"]

DEPTH = 100  # results per query at every retrieval stage, and the reranker's depth
CONTEXT_K = 3  # passages the answerer reads
RRF_K = 60
CORRECT = "f1:0.5"
TEST = "randomization"
SEED = 0
PRIMARY = "ndcg@10"
FINAL = "reranked"  # the pipeline's last stage; the answerer reads the best stage's ranking (diagnosed_stage)
#: Texts the packaged MiniLM encodes per second per CPU thread (measured: 1,192 texts in about 98 s on 2
#: threads), for the estimate said before the dense stage starts.
ENCODE_RATE_PER_THREAD = 6.0
METRICS: tuple[str, ...] = (PRIMARY, "ndcg@10(gain=exp)", "mrr@10", f"recall@{CONTEXT_K}", f"recall@{DEPTH}")


@dataclass(frozen=True)
class Step:
    """A step starting (``done`` False, no detail yet) or finished: its number, of how many, a name, what it did,
    and how long it took."""

    number: int
    total: int
    name: str
    detail: str
    seconds: float
    done: bool = True


@dataclass
class DemoResult:
    """What the demo made: the runs of every stage, their evaluation and comparison, the RAG diagnosis, the
    verdict, and where the files are."""

    out: Path
    runs: dict[str, Any]
    stages: dict[str, str]
    skipped: dict[str, str]
    evaluation: Any
    comparison: Any
    rag: Any
    verdict: Verdict
    report: Path | None
    seconds: dict[str, float] = field(default_factory=dict)
    diagnosed: str = FINAL
    diagnosed_why: str = ""
    answers: dict[str, str] = field(default_factory=dict)  # the answerer's text of each question, by id

    def summary(self) -> str:
        """The summary the demo prints (markdown), also written to ``summary.md``."""
        from stagewise.demo.summary import render_summary

        return render_summary(self)


def _dense_encoder(dense: str, encoder: Any) -> tuple[Any, str | None]:
    """(encoder or None, why dense retrieval is skipped or None)."""
    if encoder is not None:
        return encoder, None
    if dense == "off":
        return None, "turned off (--no-dense)"
    from stagewise.dense._deps import DENSE_EXTRA, packaged_model_path, require
    from stagewise.errors import StagewiseError

    try:
        require("sentence_transformers")  # imports torch too: a broken install shows here, not mid-pipeline
    except StagewiseError:
        why = f"the dense extra is not installed ({DENSE_EXTRA})"
    else:
        try:
            packaged_model_path()
            return "packaged", None
        except StagewiseError as exc:
            why = str(exc)
    if dense == "on":
        raise StagewiseError(f"--dense: {why}")
    return None, why


def dense_notice(texts: int, packaged: bool = True) -> str:
    """What the dense stage will cost, said before it starts: encoding ``texts`` texts on this machine's CPU
    threads (estimated from ENCODE_RATE_PER_THREAD for the packaged model), and how to skip it."""
    if not packaged:
        return f"dense retrieval with the encoder given: {texts} texts to encode; --no-dense skips it"
    threads = max(os.cpu_count() or 1, 1)
    try:
        import torch

        threads = max(int(torch.get_num_threads()), 1)
        on_gpu = bool(torch.cuda.is_available())
    except Exception:  # an estimate must never stop the demo
        on_gpu = False
    seconds = max(1, round(texts / (ENCODE_RATE_PER_THREAD * threads)))
    where = "a few seconds on the GPU" if on_gpu else f"about {seconds} s on {threads} CPU thread(s)"
    return (
        f"the dense extra is installed: encoding {texts} texts with the packaged MiniLM takes {where}; "
        "--no-dense skips it"
    )


def _write_jsonl(path: Path, rows: Any) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_inputs(data: DemoData, folder: Path) -> None:
    """The inputs as files the CLI reads, so every stage can be rerun by hand."""
    _write_jsonl(
        folder / "corpus.jsonl", ({"_id": p.id, "title": p.title, "text": p.text} for p in data.passages.values())
    )
    _write_jsonl(folder / "queries.jsonl", ({"_id": q.id, "text": q.text} for q in data.questions))
    shutil.copyfile(data.qrels_path, folder / "qrels.txt")
    shutil.copyfile(data.notice_path, folder / "NOTICE.md")
    shutil.copyfile(data.notice_path.with_name("LICENSE-Apache-2.0.txt"), folder / "LICENSE-Apache-2.0.txt")


class _Steps:
    """Times each step and tells ``progress`` when it ends."""

    def __init__(self, total: int, progress: Callable[[Step], None] | None) -> None:
        self.total, self.progress, self.done = total, progress, 0
        self.seconds: dict[str, float] = {}
        self._started = time.perf_counter()

    def start(self, name: str) -> None:
        """Say that a long step (one that may take minutes) begins, so a terminal can show it is working."""
        self._started = time.perf_counter()
        if self.progress is not None:
            self.progress(Step(self.done + 1, self.total, name, "", 0.0, done=False))

    def finish(self, name: str, detail: str) -> None:
        now = time.perf_counter()
        self.done += 1
        self.seconds[name] = round(now - self._started, 3)
        if self.progress is not None:
            self.progress(Step(self.done, self.total, name, detail, now - self._started))
        self._started = time.perf_counter()


def run_demo(
    out: str | os.PathLike[str],
    *,
    dense: str = "auto",
    encoder: Any = None,
    report: bool = True,
    force: bool = False,
    progress: Callable[[Step], None] | None = None,
    generator: str | None = None,
    generator_model: str = "default",
) -> DemoResult:
    """Run the whole pipeline on the bundled data and write every output to the folder ``out``.

    Parameters
    ----------
    out
        The output folder (its parent must exist). It is created, or replaced when it is a previous demo's
        (its ``pipeline.json`` says so); another folder of files needs ``force``, and a folder holding a folder
        is never replaced. Labels kept there by ``--serve`` are carried over.
    dense : {"auto", "on", "off"}
        Dense retrieval: ``auto`` runs it when the dense extra is installed and says why not otherwise.
    encoder
        An encoder for the dense stage (see :class:`stagewise.dense.Encoder`) instead of the packaged MiniLM.
    report
        Write ``report.html`` (needs matplotlib, the report extra; without it the report is skipped, with a
        statement why).
    progress
        Called with a :class:`Step` as a long step begins and as each step ends.
    generator, generator_model
        An OpenAI-compatible endpoint (its base URL, ending in ``/v1``) and the model it serves, to answer the
        questions instead of the extractive answerer (:class:`stagewise.rag.generator.EndpointGenerator`):
        ``pipeline.json`` then states the endpoint, model, prompt and counts.
    """
    if dense not in ("auto", "on", "off"):
        from stagewise.errors import ConventionError

        raise ConventionError(f"dense must be auto, on or off, not {dense!r}")
    target = Path(out)
    check_folder(target, force=force)
    result: dict[str, DemoResult] = {}

    def write(folder: Path) -> None:
        if target.is_dir():  # a person's relabelling outlives a rerun
            copy_labels(target, folder)
        result["demo"] = _run(folder, target, dense=dense, encoder=encoder, report=report, progress=progress,
                              generator=(generator, generator_model))  # fmt: skip

    folders.replace_folder(target, write, owned=OWNED_FILES)
    return result["demo"]


def _run(
    folder: Path,
    target: Path,
    *,
    dense: str,
    encoder: Any,
    report: bool,
    progress: Callable[[Step], None] | None,
    generator: tuple[str | None, str] = (None, "default"),
) -> DemoResult:
    from stagewise.data.writers import write_run
    from stagewise.report import render

    encoder, dense_skip = _dense_encoder(dense, encoder)
    steps = _Steps(10, progress)
    data = load()
    _write_inputs(data, folder)
    documents = data.documents
    if encoder is not None and progress is not None:  # said first: the dense stage is most of the demo's time
        texts = len(documents) + len(data.questions)
        progress(Step(0, steps.total, "dense", dense_notice(texts, packaged=encoder == "packaged"), 0.0))
    runs, stages, skipped = _retrieval_stages(data, encoder, dense_skip, steps)
    for name, run in runs.items():
        write_run(run, folder / f"{name}.run")

    evaluation, comparison = _measure(data, runs, steps)
    (folder / "evaluation.json").write_text(render(evaluation, "json", per_query=True), encoding="utf-8")
    (folder / "comparison.json").write_text(render(comparison, "json"), encoding="utf-8")

    diagnosed, why = diagnosed_stage(evaluation.means, list(runs))
    rag, answerer, answers = _answer_and_diagnose(data, runs[diagnosed], diagnosed, folder, steps, generator)

    verdict_ = verdict(rag, comparison, list(runs), primary=PRIMARY, depth=DEPTH, context_k=CONTEXT_K)
    demo = DemoResult(target, runs, stages, skipped, evaluation, comparison, rag, verdict_, None)
    demo.diagnosed, demo.diagnosed_why = diagnosed, why
    demo.answers = answers
    demo.report = _report(data, demo, folder, report, steps)
    _write_json(
        folder / "pipeline.json",
        {
            "made_by": MADE_BY,
            "data": SOURCE,
            "stages": stages,
            "skipped": skipped,
            "generator": answerer.describe(),
            "rag": {
                "context_k": CONTEXT_K,
                "correct": CORRECT,
                "final_run": FINAL,
                "diagnosed_run": diagnosed,
                "diagnosed_because": why,
            },
            "tests": {"test": TEST, "family": "every pair of stages, Holm within each metric", "seed": SEED},
            "reproduce": {
                "evaluation": f"stagewise eval qrels.txt {' '.join(f'{n}.run' for n in runs)} "
                + " ".join(f"-m '{m}'" for m in METRICS),
                "significance": f"stagewise compare qrels.txt {' '.join(f'{n}.run' for n in runs)} "
                + f"-m '{','.join(METRICS)}' --test {TEST} --seed {SEED}",
                "diagnosis": f"stagewise rag rag.jsonl --context-k {CONTEXT_K} --correct {CORRECT} --judge lexical",
            },
            "verdict": verdict_.to_dict(),
        },
    )
    demo.seconds = steps.seconds
    (folder / "summary.md").write_text(demo.summary(), encoding="utf-8")
    return demo


def _retrieval_stages(
    data: DemoData, encoder: Any, dense_skip: str | None, steps: _Steps
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The search stages as one :class:`~stagewise.pipeline.Pipeline` (two BM25 analysers, dense when there is
    an encoder, RRF of them, the proximity reranker over the fused top DEPTH); each index is built when its stage
    runs, so its progress step counts the build. Returns (runs, what each stage is, skipped stages and why)."""
    from functools import partial

    from stagewise.pipeline import Fuse, Fusion, Pipeline, Rerank, Retrieve, StageEvent
    from stagewise.rerank.rerankers import make_reranker
    from stagewise.retrieval import BM25Index
    from stagewise.retrieval.analysis import Analyser

    documents = data.documents
    analysers = {
        "bm25-stem": (Analyser(stemmer="english", stopwords="english"), "Snowball English stemmer, 33 stopwords"),
        "bm25-plain": (Analyser(stemmer="none", stopwords="none"), "no stemmer, no stopwords"),
    }
    retrieve = [
        Retrieve(name, partial(BM25Index.build, documents, analyser=analyser), k=DEPTH, run_name=name)
        for name, (analyser, _) in analysers.items()
    ]
    if encoder is not None:
        from stagewise.dense.index import DenseIndex

        given = None if encoder == "packaged" else encoder
        build = partial(DenseIndex.build, documents, given)
        retrieve.append(Retrieve("dense", build, k=DEPTH, run_name="dense", options={"encoder": given}))
    pipeline = Pipeline(
        retrieve,
        Fuse("rrf", Fusion("rrf", rrf_k=RRF_K, name="rrf")),
        Rerank("reranked", make_reranker("bm25-proximity"), DEPTH, run_name="reranked"),
    )
    stages: dict[str, str] = {}
    skipped: dict[str, str] = {}

    def told(event: StageEvent) -> None:
        name, made = event.label, event.component
        if not event.done:
            if name in ("dense", "reranked"):  # the long ones: a terminal shows they are working
                steps.start(name)
            return
        if name in analysers:
            stages[name] = repr(made)
            detail = f"BM25 (Lucene, k1=1.2, b=0.75), {analysers[name][1]}: top {DEPTH} of {len(documents)} passages"
        elif name == "dense":
            stages[name] = repr(made)
            detail = f"{made.meta['model']}, {made.dimension} dims, exact search: top {DEPTH}"
        elif name == "rrf":
            detail = stages[name] = f"reciprocal rank fusion (rrf_k={RRF_K}) of {', '.join(pipeline.fuse_inputs())}"
        else:
            detail = stages[name] = f"{made.name} (BM25 plus a term-proximity bonus) over the rrf top {DEPTH}"
        steps.finish(name, detail)
        if name == "bm25-plain" and encoder is None:
            skipped["dense"] = dense_skip or "not run"
            steps.finish("dense", f"skipped: {skipped['dense']}")

    result = pipeline.run(data.queries, docs=documents, progress=told)
    return dict(result.runs), stages, skipped


def _measure(data: DemoData, runs: dict[str, Any], steps: _Steps) -> tuple[Any, Any]:
    from stagewise.engines import evaluate
    from stagewise.stats.compare import compare_scores

    evaluation = evaluate(data.qrels_path, runs, list(METRICS))
    steps.finish(
        "evaluation",
        f"{len(METRICS)} metrics x {len(runs)} stages on {sum(q.answerable for q in data.questions)} judged "
        "questions; "
        "nDCG@10 with linear and exponential gain",
    )
    comparison = compare_scores(evaluation, list(METRICS), test=TEST, correction="holm", seed=SEED)
    steps.finish(
        "significance", f"{len(comparison.pairs)} paired {TEST} tests between the stages, Holm-corrected, seed {SEED}"
    )
    return evaluation, comparison


def diagnosed_stage(means: dict[str, dict[str, float]], order: list[str], metric: str = PRIMARY) -> tuple[str, str]:
    """The stage whose ranking the answerer reads, and why: the best by ``metric`` (nDCG@10), the later one in
    pipeline ``order`` on a tie (equal to 12 places). Diagnosing a last stage that lost ranking quality would
    count its losses against the generator, and the verdict would be computed on the pipeline's worst part."""
    top = max(round(means[s][metric], 12) for s in order)
    best = [s for s in order if round(means[s][metric], 12) == top][-1]
    last = order[-1]
    why = f"the best stage by {metric} ({means[best][metric]:.4f})"
    if best != last:
        why += f"; the last stage, {last}, scores {means[last][metric]:.4f}"
    elif len([s for s in order if round(means[s][metric], 12) == top]) > 1:
        why += ", tied with an earlier stage: the last of them"
    return best, why


def _answerer(data: DemoData, generator: tuple[str | None, str]) -> Any:
    """The demo's generation stage: a model behind an endpoint when one is given, else the extractive answerer."""
    url, model = generator
    if url is not None:
        from stagewise.rag.generator import EndpointGenerator

        return EndpointGenerator(url, model, retries=2, backoff=0.5)
    from stagewise.rag.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer({pid: p.sentences for pid, p in data.passages.items()})


def _answers(
    data: DemoData, answerer: Any, contexts: list[list[str]], name: str
) -> tuple[list[str], list[str | None], str]:
    """Each question's answer, why it has none (None when it has one), and the step's line."""
    if hasattr(answerer, "answer_many"):  # a model behind an endpoint: asked in one batch, failures kept
        items = [(q.text, [(pid, data.passages[pid].text) for pid in ctx]) for q, ctx in zip(data.questions, contexts,
                                                                                             strict=True)]  # fmt: skip
        made = answerer.answer_many(items)
        failed = sum(g.error is not None for g in made)
        said = answerer.describe()
        line = (
            f"{said['model']} at {said['url']} ({said['prompt']}) reads the top {CONTEXT_K} of {name}: answered "
            f"{len(made) - failed} of {len(made)}" + (f"; {failed} failed, their answers empty" if failed else "")
        )
        return [g.text for g in made], [g.error for g in made], line
    answers = [answerer.answer(q.text, ctx) for q, ctx in zip(data.questions, contexts, strict=True)]
    line = f"extractive answerer reads the top {CONTEXT_K} of {name} and cites [passage id]"
    return answers, [None] * len(answers), line


def _answer_and_diagnose(
    data: DemoData, final: Any, name: str, folder: Path, steps: _Steps, generator: tuple[str | None, str]
) -> tuple[Any, Any, dict[str, str]]:
    from stagewise.rag.diagnose import evaluate_rag
    from stagewise.report import render

    answerer = _answerer(data, generator)
    rankings = final.rankings()
    contexts = [rankings.get(q.id, [])[:CONTEXT_K] for q in data.questions]
    answers, errors, line = _answers(data, answerer, contexts, name)
    records = []
    for q, context, answer, error in zip(data.questions, contexts, answers, errors, strict=True):
        record = {
            "id": q.id,
            "question": q.text,
            "answer": answer,
            "retrieved": rankings.get(q.id, []),
            "context": context,
            "gold_answers": list(q.gold_answers),
            "gold_evidence": [q.gold_passage] if q.gold_passage else [],
            "passages": {pid: data.passages[pid].text for pid in context},
        }
        if error is not None:
            record["generation_error"] = error
        records.append(record)
    _write_jsonl(folder / "rag.jsonl", records)
    steps.finish("answers", line)
    rag = evaluate_rag(records, context_k=CONTEXT_K, correct=CORRECT, judge="lexical")
    (folder / "rag-labels.jsonl").write_text(render(rag, "jsonl"), encoding="utf-8")
    steps.finish("diagnosis", ", ".join(f"{label} {n}" for label, n in rag.counts().items()))
    return rag, answerer, {rec["id"]: rec["answer"] for rec in records}


def _report(data: DemoData, demo: DemoResult, folder: Path, report: bool, steps: _Steps) -> Path | None:
    skipped = demo.skipped
    if not report:
        skipped["report"] = "turned off (--no-report)"
        steps.finish("report", f"skipped: {skipped['report']}")
        return None
    from stagewise.demo.report import verdict_section
    from stagewise.demo.summary import gain_note
    from stagewise.errors import StagewiseError
    from stagewise.report.html import render
    from stagewise.report.html.page import pyplot
    from stagewise.study import study

    try:
        pyplot()  # the report's own check of its extra
    except StagewiseError as exc:
        skipped["report"] = str(exc)
        steps.finish("report", f"skipped: {skipped['report']}")
        return None

    steps.start("report")
    made = study(
        data.qrels_path,
        demo.runs,
        list(METRICS),
        comparison=demo.comparison,
        rag=demo.rag,
        rag_answers=demo.answers,
        title="stagewise demo: CLAP NQ dev, every stage measured",
        sources=[f"bundled {SOURCE}"],
    )
    page = render(
        made,
        lead=[
            verdict_section(
                demo.verdict,
                demo.comparison,
                notes=[gain_note(demo), *(f"Skipped: {stage}: {why}." for stage, why in skipped.items())],
            )
        ],
    )
    (folder / "report.html").write_text(page, encoding="utf-8")
    path = demo.out / "report.html"
    steps.finish("report", f"{path} ({len(page.encode()) // 1024} KB, opens offline)")
    return path
