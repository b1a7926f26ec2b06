"""One stemmer module with three modes that differ by design (``dualmem.text.stem``)."""

from __future__ import annotations

import pytest

from dualmem.text.stem import stem, stemmer


@pytest.mark.parametrize(
    ("word", "nltk", "fts5", "light"),
    [
        ("dying", "die", "dy", "dying"),  # NLTK looks the irregular form up; FTS5 strips -ing
        ("ponies", "poni", "poni", "pony"),  # the light stem restores the y
        ("generalization", "gener", "gener", "generalization"),  # the light stem keeps long suffixes
        ("bought", "bought", "bought", "buy"),  # only the light stem maps irregular past forms
        ("is", "is", "is", "is"),
    ],
)
def test_each_mode_stems_as_its_user_needs(word: str, nltk: str, fts5: str, light: str) -> None:
    assert stem(word) == nltk  # the default: LoCoMo's F1 (NLTK's Porter)
    assert (stem(word, mode="nltk"), stem(word, mode="fts5"), stem(word, mode="light")) == (nltk, fts5, light)
    assert stemmer("fts5")(word) == fts5


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stemmer mode"):
        stem("word", mode="snowball")  # type: ignore[arg-type]
