"""Build the one C extension (a TREC file parser); everything else is declared in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "stagewise._native._trecparse",
            sources=["src/stagewise/_native/trecparse.c"],
            extra_compile_args=["-O3", "-std=c11"],
        )
    ]
)
