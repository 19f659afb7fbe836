"""The package version, in the base layer so that any layer may name it without importing the package root
(whose lazy exports point at every layer)."""

__version__ = "0.1.0"
