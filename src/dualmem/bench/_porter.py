"""The benchmark's Porter stemmer (NLTK's variant); it lives in :mod:`dualmem.text.porter`."""

from __future__ import annotations

from dualmem.text.porter import stem

__all__ = ["stem"]
