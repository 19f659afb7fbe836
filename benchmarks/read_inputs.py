"""How long stagewise.read_run takes on the layouts of docs/inputs.md: a 6-column TREC run (plain, gzip, LZ4)
and the same ranking as a 3-column MS MARCO ``qid docid rank`` .tsv; 1,000 queries x 1,000 results, best of 3.

    python benchmarks/read_inputs.py
"""

from __future__ import annotations

import gzip
import os
import tempfile
import time

import lz4.frame
import numpy as np

import stagewise


def main(n_queries: int = 1000, depth: int = 1000) -> None:
    rng = np.random.default_rng(0)
    three, six = [], []
    for q in range(n_queries):
        for i, d in enumerate(rng.choice(8_000_000, size=depth, replace=False)):
            three.append(f"{q}\t{d}\t{i + 1}\n")
            six.append(f"{q} Q0 {d} {i + 1} {-(i + 1)} t\n")
    plain = "".join(six).encode()
    with tempfile.TemporaryDirectory() as folder:
        files = {
            "run.tsv (3 columns)": "".join(three).encode(),
            "run.trec": plain,
            "run.trec.gz": gzip.compress(plain, 6),
            "run.trec.lz4": lz4.frame.compress(plain),
        }
        for name, data in files.items():
            path = os.path.join(folder, name.split()[0])
            with open(path, "wb") as fh:
                fh.write(data)
            times = []
            for _ in range(3):
                start = time.perf_counter()
                stagewise.read_run(path)
                times.append(time.perf_counter() - start)
            print(f"{name:22} {len(data) / 2**20:6.1f} MiB  {min(times):.2f} s")


if __name__ == "__main__":
    main()
