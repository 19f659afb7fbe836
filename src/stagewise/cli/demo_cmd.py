"""``stagewise demo``: the main job on the bundled trec_eval sample files."""

from __future__ import annotations

from stagewise.cli.common import show_table, user_errors


def demo_command() -> None:
    """Evaluate the bundled sample data and print the table.

    The sample is trec_eval's own (TREC-6 topics 301-303, two runs, courtesy of NIST); the lesson's worked
    nDCG example follows.
    """
    with user_errors():
        from rich.console import Console

        from stagewise import lesson
        from stagewise._bundled import sample_path
        from stagewise.metrics.evaluate import evaluate
        from stagewise.report import eval as report

        console = Console()
        qrels = sample_path("qrels.test")
        runs = [sample_path("results.test"), sample_path("results.trunc")]
        result = evaluate(
            qrels, runs, ["map", "ndcg@10", "ndcg@10(gain=exp)", "P@10", "recall@100", "mrr@10", "bpref", "judged@10"]
        )
        show_table(lambda width: report.rich(result, width=width), lambda: report.render(result, "table"))
        console.print(
            "\nThe lesson's example, relevances [1, 0, 2] in rank order: "
            f"DCG (exp gain) = {lesson.dcg([1, 0, 2]):.4g}, ideal = {lesson.dcg([2, 1, 0]):.4f}, "
            f"nDCG = {lesson.ndcg([1, 0, 2]):.4f} (exp) vs {lesson.ndcg([1, 0, 2], gain='linear'):.4f} (linear): "
            "state your gain convention."
        )
        console.print(f"\nSample data: {qrels.parent} (see NOTICE.md there).", style="dim")
