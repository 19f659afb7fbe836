"""What to fix first: where a pipeline's samples are lost, in the lesson's words.

The lesson's rule: *if the evidence was not retrieved, fix retrieval; if it was retrieved and the answer is still
wrong, fix generation.* The RAG diagnosis gives every sample a label and a reason; here they are counted per
stage:

- ``retrieval``: the gold passage is nowhere in the final ranking (reason ``not_retrieved``);
- ``ranking``: it was retrieved, but below the context the generator reads (every other retrieval reason);
- ``generation``: the evidence was in the context and the answer is still wrong (``generation_failure``).

Retrieval and ranking together are the lesson's retrieval failures; the verdict is "fix retrieval" when they are
at least as many as the generation failures, else "fix generation" (a tie goes to retrieval, the earlier stage: a
generator cannot be judged on evidence it never saw), and the side that loses the most is named by the same rule.
The advice names the most frequent reason on that side (a tie goes to the reason earlier in the pipeline). The
stage changes say what each retrieval stage did to the primary metric against the run it is compared with (a
second first-stage run against the first, fusion against its best input, reranking against fusion), with the
paired test's Holm-adjusted p-value.

>>> from types import SimpleNamespace as Sample
>>> rows = [Sample(label="generation_failure", reason="hallucinated_answer")] * 3
>>> rows += [Sample(label="retrieval_failure", reason="ranked_too_low"), Sample(label="ok", reason="correct_answer")]
>>> v = verdict(Sample(rows=rows), None, [], primary="ndcg@10", depth=100, context_k=3)
>>> v.losses, v.fix_first
({'retrieval': 0, 'ranking': 1, 'generation': 3}, 'fix generation')
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.rag.diagnose import RagSample
    from stagewise.rag.report import RagReport

__all__ = ["LOSS_WHAT", "RULE", "STAGES", "StageChange", "Verdict", "verdict"]

STAGES: tuple[str, ...] = ("retrieval", "ranking", "generation")
#: What a loss at each stage means, for tables (``depth``: the ranking's length, ``context_k``: the context's).
LOSS_WHAT = {
    "retrieval": "gold passage not in the top {depth}",
    "ranking": "retrieved, but below the top {context_k} the answerer reads",
    "generation": "nothing missing from the context, answer still wrong (an unanswerable question answered "
    "instead of declined counts here)",
}
#: The rule behind the verdict, stated beside it.
RULE = (
    "the lesson's rule: retrieval and ranking losses together are retrieval failures; fix retrieval when they are "
    "at least as many as the generation failures, else fix generation"
)

_WHY = {
    "not_retrieved": "the gold passage is not in the top {depth}: raise first-stage recall (another analyser, "
    "dense retrieval, fusion)",
    "ranked_too_low": "the gold passage was retrieved but ranked below the top {context_k} the generator reads: "
    "improve ranking (fusion, a reranker) or give the generator more passages",
    "dropped_from_context": "the gold passage was in the top {context_k} but left out of the context: check "
    "how the context is built",
    "partial_evidence": "only part of the evidence reached the context: retrieve the passages that are needed together",
    "hallucinated_answer": "it answers questions the passages cannot answer: teach it to abstain",
    "wrong_answer": "it reads the passage that holds the answer and quotes the wrong sentence",
    "partial_answer": "its answers hold part of the gold answer: answer more fully",
    "false_abstention": "it declines although the evidence is in its context: lower its abstention threshold",
}


@dataclass(frozen=True)
class StageChange:
    """What ``stage`` did to ``metric`` against ``against`` (the stage before it): both means, the difference
    (stage minus against), and the paired test's p-value after the multiple-comparison correction."""

    stage: str
    against: str
    metric: str
    before: float
    after: float
    diff: float
    p_adjusted: float
    significant: bool


@dataclass(frozen=True)
class Verdict:
    """Where the samples were lost (per stage), which side loses the most by the lesson's rule (``retrieval``,
    counting ranking, or ``generation``; None when nothing is lost), what to fix first, and why."""

    samples: int
    losses: dict[str, int]
    reasons: dict[str, dict[str, int]]
    ok: int
    lucky: int
    worst: str | None
    fix_first: str
    advice: str
    changes: list[StageChange] = field(default_factory=list)
    depth: int = 100
    context_k: int = 3

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def headline(self) -> str:
        """The verdict in one sentence: which side loses the most, and what to fix first."""
        if self.worst is None:
            return f"No stage loses a sample ({self.samples} ok or lucky): nothing to fix."
        retrieval_side = self.losses["retrieval"] + self.losses["ranking"]
        generation = self.losses["generation"]
        if self.worst == "generation":
            lost = f"Generation loses the most: {generation} of {self.samples}, against {retrieval_side} lost to "
            lost += "retrieval and ranking."
        else:
            lost = f"Retrieval and ranking lose the most: {retrieval_side} of {self.samples} "
            lost += f"({self.losses['retrieval']} not retrieved, {self.losses['ranking']} ranked too low), against "
            lost += f"{generation} lost to generation."
        return f"{lost} What to fix first: {self.fix_first}."

    def loss_rows(self) -> list[tuple[str, int, str, str]]:
        """One row per stage for a table: stage, samples lost, what a loss there means, the reasons counted."""
        return [
            (
                stage,
                lost,
                LOSS_WHAT[stage].format(depth=self.depth, context_k=self.context_k),
                ", ".join(f"{r} {n}" for r, n in self.reasons[stage].items()) or "-",
            )
            for stage, lost in self.losses.items()
        ]

    def why(self) -> str:
        """The advice behind the verdict, as a sentence."""
        return f"{self.advice[0].upper()}{self.advice[1:]}." if self.advice else ""


def _stage_of(sample: RagSample) -> str | None:
    if sample.label == "generation_failure":
        return "generation"
    if sample.label == "retrieval_failure":
        return "retrieval" if sample.reason == "not_retrieved" else "ranking"
    return None


def _changes(comparison: Any, stages: list[str], primary: str) -> list[StageChange]:
    """Each retrieval stage against the one it builds on: a second first-stage run against the first, fusion
    against the best first-stage run, reranking against fusion."""
    if comparison is None:
        return []
    means = {run: comparison.means[run][primary] for run in stages}
    first = [s for s in stages if s not in ("rrf", "reranked")]
    steps = [(s, first[0]) for s in first[1:]]
    if "rrf" in stages:
        steps.append(("rrf", max(first, key=lambda s: (means[s], -first.index(s)))))
    if "reranked" in stages and "rrf" in stages:
        steps.append(("reranked", "rrf"))
    out = []
    for stage, against in steps:
        pair = comparison.pair(primary, against, stage)
        out.append(
            StageChange(
                stage,
                against,
                primary,
                means[against],
                means[stage],
                means[stage] - means[against],
                pair.p_adjusted,
                pair.significant,
            )
        )
    return out


def verdict(rag: RagReport, comparison: Any, stages: list[str], *, primary: str, depth: int, context_k: int) -> Verdict:
    """The verdict on a RAG diagnosis (its samples, ``rag.rows``, read by their ``label`` and ``reason``) and
    the comparison of the retrieval stages (``stages`` in pipeline order; ``comparison`` may be None)."""
    losses = dict.fromkeys(STAGES, 0)
    reasons: dict[str, Counter[str]] = {stage: Counter() for stage in STAGES}
    labels = Counter(sample.label for sample in rag.rows)
    for sample in rag.rows:
        stage = _stage_of(sample)
        if stage is not None:
            losses[stage] += 1
            reasons[stage][sample.reason] += 1
    retrieval_side = losses["retrieval"] + losses["ranking"]
    if not any(losses.values()):
        worst, fix_first, advice = None, "nothing to fix", "every sample is ok or lucky"
    else:
        worst = "retrieval" if retrieval_side >= losses["generation"] else "generation"
        fix_first = f"fix {worst}"
        side = ("retrieval", "ranking") if worst == "retrieval" else ("generation",)
        merged = Counter({r: n for s in side for r, n in reasons[s].items()})
        order = list(_WHY)
        reason, count = max(merged.items(), key=lambda item: (item[1], -order.index(item[0])))
        advice = f"{count} of {sum(merged.values())}: " + _WHY[reason].format(depth=depth, context_k=context_k)
    return Verdict(
        samples=len(rag.rows),
        losses=losses,
        reasons={s: dict(c.most_common()) for s, c in reasons.items()},
        ok=labels["ok"],
        lucky=labels["lucky"],
        worst=worst,
        fix_first=fix_first,
        advice=advice,
        changes=_changes(comparison, stages, primary),
        depth=depth,
        context_k=context_k,
    )
