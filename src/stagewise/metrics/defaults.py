"""The metrics measured when none are named, and the conventions' vocabularies: one tuple each for
``evaluate``, ``compare`` and the CLI's choices and help.

It lives in a module of its own, importing nothing, so the command line can print them in ``--help`` without
loading numpy and polars (``stagewise.metrics.evaluate`` re-exports ``DEFAULT_METRICS``,
``stagewise.metrics.context`` the policies).
"""

DEFAULT_METRICS: tuple[str, ...] = ("map", "ndcg@10", "recall@100", "mrr@10", "P@10")

#: What happens to a judged query absent from a run (:class:`stagewise.metrics.context.Conventions`'s ``missing``).
MISSING_QUERY_POLICIES: tuple[str, ...] = ("zero", "skip", "error")
#: How results with equal scores are ordered (``Conventions.ties``).
TIE_POLICIES: tuple[str, ...] = ("docid", "docid-double", "input", "rank")
