"""The package version (one place: the wheel and ``dualmem --version`` read it)."""

__version__ = "0.1.0"
