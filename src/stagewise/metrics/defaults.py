"""The metrics measured when none are named: one tuple for ``evaluate``, ``compare`` and the CLI's help.

It lives in a module of its own, importing nothing, so the command line can print it in ``--help`` without
loading numpy and polars (``stagewise.metrics.evaluate`` re-exports it as ``DEFAULT_METRICS``).
"""

DEFAULT_METRICS: tuple[str, ...] = ("map", "ndcg@10", "recall@100", "mrr@10", "P@10")
