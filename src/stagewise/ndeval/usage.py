"""The drop-in's help and version texts: light (no numpy), so that ``stagewise ndeval -help`` is instant."""

from __future__ import annotations

from stagewise._version import __version__

HELP_FLAGS = ("-help", "--help", "-h")
VERSION_FLAGS = ("-version", "--version")
VERSION = f"stagewise ndeval: stagewise {__version__}, ndeval version 4.5's measures and output\n"

USAGE = """Usage: stagewise ndeval [-alpha A] [-beta B] [-traditional] [-c] [-M DEPTH] [-baseline RUN \
[-riskAlpha A]] QRELS RUN

A drop-in for ndeval (TREC Web track diversity evaluation, version 4.5): intent-aware and diversity measures
per topic and their mean, as ndeval's CSV.
  QRELS           subtopic judgements, 'topic subtopic docno judgment' (a judgment >= 1 is relevant)
  RUN             a TREC run, 'topic Q0 docno rank score runid'
  -alpha A        redundancy intolerance, in [0, 1] (alpha-nDCG, ERR-IA, NRBP; default 0.5)
  -beta B         patience, in [0, 1] (NRBP; default 0.5)
  -traditional    order results by score, then doc id descending (default: by the run's rank column)
  -c              average over every topic of QRELS; topics missing from RUN count 0
  -M DEPTH        use only the first DEPTH results of each topic
  -baseline RUN2  print risk-sensitive differences from RUN2: RUN - RUN2 where RUN is at least as good, else
                  (1 + riskAlpha) (RUN - RUN2)
  -riskAlpha A    the risk sensitivity, >= 0 (default 0)
  -a              accepted and ignored, as ndeval does
  -version        the version;  -help, --help  this help

Columns: runid, topic, then ERR-IA, nERR-IA, alpha-DCG, alpha-nDCG at 5, 10 and 20, NRBP, nNRBP, MAP-IA,
P-IA and strec at 5, 10 and 20. Other cutoffs, in Python: stagewise.evaluate(read_subtopic_qrels(QRELS), RUN,
["alpha_ndcg@30"]), read_subtopic_qrels from stagewise.data.subtopics.

Example: stagewise ndeval -traditional qrels.diversity.txt run.txt > run.ndeval.csv
"""
