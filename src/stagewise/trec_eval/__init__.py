"""A drop-in for trec_eval: its flags, its measure names and its exact output, on stagewise's kernels.

trec_eval 10.0's measures; scores compared as trec_eval 9 stores them (C floats) unless ``--ties docid-double``.
"""

from stagewise.trec_eval.command import main, run_trec_eval

__all__ = ["main", "run_trec_eval"]
