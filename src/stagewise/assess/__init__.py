"""The assess stage: agreement between assessors and qrels, qrels diffs, rank correlations of system orderings
and merge policies (issue 22's library; its CLI and report sections wait for issue 20)."""
