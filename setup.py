"""Build the C extensions (a TREC file parser; per-query joins and ordering of result lists; BM25 tokenising, indexing and search); everything else is declared in
pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "stagewise._native._trecparse",
            sources=["src/stagewise/_native/trecparse.c"],
            extra_compile_args=["-O3", "-std=c11"],
        ),
        Extension(
            "stagewise._native._rows",
            sources=["src/stagewise/_native/rows.c"],
            extra_compile_args=["-O3", "-std=c11"],
        ),
        Extension(
            "stagewise._native._bm25",
            sources=["src/stagewise/_native/bm25.c"],
            extra_compile_args=["-O3", "-std=c11"],
        ),
    ]
)
