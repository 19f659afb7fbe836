"""The summary ``stagewise demo`` prints and writes to ``summary.md``: each stage's numbers, what each stage
changed, where the questions were lost, and what to fix first. Markdown, readable as plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stagewise.demo.pipeline import DemoResult

_HEADERS = {"ndcg@10": "nDCG@10 linear", "ndcg@10(gain=exp)": "nDCG@10 exp"}


def _fmt(value: float) -> str:
    return f"{value:.4f}"


def gain_note(result: DemoResult, linear: str = "ndcg@10", exp: str = "ndcg@10(gain=exp)") -> str:
    """Whether the two gains agree here, and why; and the lesson's example where they do not."""
    from stagewise.engines import evaluate

    means = result.evaluation.means
    agree = all(abs(m[linear] - m[exp]) < 1e-12 for m in means.values())
    lesson = evaluate(
        {"q": {"a": 1, "b": 0, "c": 2}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, ["ndcg@3", "ndcg@3(gain=exp)"]
    )
    lin, ex = lesson.means["run"]["ndcg@3"], lesson.means["run"]["ndcg@3(gain=exp)"]
    where = (
        "They agree here because every judged passage has label 1, and 2^1 - 1 = 1"
        if agree
        else "They differ here because the labels are graded"
    )
    return (
        f"Gain: linear uses the label, exp uses 2^label - 1 (ideal: the qrels sorted). {where}; on graded labels "
        f"they part, as in the lesson's ranking [1, 0, 2]: nDCG {lin:.4f} linear, {ex:.4f} exp."
    )


def render_summary(result: DemoResult) -> str:
    from stagewise.demo.pipeline import CONTEXT_K, CORRECT, METRICS, SEED, TEST
    from stagewise.demo.verdict import RULE

    verdict = result.verdict
    means = result.evaluation.means
    lines = [
        f"# stagewise demo: {len(result.evaluation.runs)} retrieval stages and a generator on CLAP NQ dev",
        "",
        "## Each stage on its own",
        "",
        "| stage | " + " | ".join(_HEADERS.get(m, m) for m in METRICS) + " |",
        "|:---|" + "---:|" * len(METRICS),
    ]
    best = {m: max(_fmt(v[m]) for v in means.values()) for m in METRICS}  # as shown: equal to 4 places, both bold
    for stage, values in means.items():
        cells = [f"**{_fmt(values[m])}**" if _fmt(values[m]) == best[m] else _fmt(values[m]) for m in METRICS]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    judged = len(result.evaluation.runs[0].query_ids)
    unjudged = verdict.samples - judged
    lines += [
        "",
        f"Means over the {judged} questions with judgements (qrels.txt); the {unjudged} without (CLAP NQ's "
        "unanswerable questions) are not in them. Best value (to 4 places) in bold. The evaluation's conventions:",
        "",
        *(f"- {note}" for note in result.evaluation.notes()),
        "",
        gain_note(result),
    ]
    for stage, why in result.skipped.items():
        lines += ["", f"Skipped: {stage}: {why}."]
    family = result.comparison.conventions.get("family_size")
    lines += [
        "",
        f"## What each stage changed ({verdict.changes[0].metric if verdict.changes else 'ndcg@10'}, paired "
        f"{TEST} test, seed {SEED}, Holm-corrected over the {family} pairs of each metric)",
        "",
        "Each stage against the run it is compared with: a second first-stage run against the first, fusion against "
        "its best input, reranking against fusion. Every pair is in comparison.json and the report.",
        "",
        "| stage | against | before | after | change | adjusted p |",
        "|:---|:---|---:|---:|---:|---:|",
    ]
    for c in verdict.changes:
        mark = "" if c.significant else " (n.s.)"
        cells = [c.stage, c.against, _fmt(c.before), _fmt(c.after), f"{c.diff:+.4f}{mark}", f"{c.p_adjusted:.3g}"]
        lines.append("| " + " | ".join(cells) + " |")
    drops = [c for c in verdict.changes if c.significant and c.diff < 0]
    if drops:
        worst = min(drops, key=lambda c: c.diff)
        lines += ["", f"{worst.stage} loses ranking quality: {worst.diff:+.4f} against {worst.against}."]
    lines += [
        "",
        f"## Where the {verdict.samples} questions were lost",
        "",
        f"RAG diagnosis of {result.diagnosed}, {result.diagnosed_why or 'the final stage'}: the answerer reads "
        f"its top {CONTEXT_K}; an answer is correct "
        f"at {CORRECT.replace('f1:', 'token F1 >= ')} with a gold answer, and for an unanswerable question only an "
        "abstention is correct.",
        "",
        "| stage | questions lost | what happened | reasons |",
        "|:---|---:|:---|:---|",
    ]
    for stage, lost, what, reasons in verdict.loss_rows():
        lines.append(f"| {stage} | {lost} | {what} | {reasons} |")
    lines += [
        "",
        f"ok {verdict.ok}, lucky {verdict.lucky} (right answer without the evidence).",
        "",
        f"**{verdict.headline()}** {verdict.why()}",
        "",
        f"(Verdict by {RULE}.)",
    ]
    if result.report is not None:
        lines += ["", f"Report: {result.report}"]
    lines += ["", f"Every run, the RAG records and their labels: {result.out}/"]
    return "\n".join(lines) + "\n"
