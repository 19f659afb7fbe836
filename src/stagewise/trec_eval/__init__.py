"""A drop-in for trec_eval 10: its flags, its measure names and its exact output, on stagewise's kernels."""

from stagewise.trec_eval.command import main, run_trec_eval

__all__ = ["main", "run_trec_eval"]
