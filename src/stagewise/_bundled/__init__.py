"""Data shipped inside the package (with the notices their licences require)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def sample_path(name: str) -> Path:
    """Path of a bundled trec_eval sample file: ``qrels.test``, ``results.test`` or ``results.trunc``."""
    return Path(str(files(__name__).joinpath("trec_eval_sample", name)))


def clapnq_path() -> Path:
    """Folder of the bundled CLAP NQ dev data (``corpus.jsonl.gz``, ``questions.jsonl.gz``, ``qrels.txt``, and
    ``NOTICE.md`` with its licences and attribution)."""
    return Path(str(files(__name__).joinpath("clapnq")))
