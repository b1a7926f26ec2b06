"""Benchmark metrics against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from dualmem.bench.metrics import (
    bleu1,
    f1_locomo,
    f1_locomo_multi,
    f1_tokens,
    is_refusal,
    locomo_official_score,
    mean,
    mrr,
    normalize_locomo,
    percentile,
    recall_at_k,
    summarize_by_category,
)
from dualmem.reason import ABSTAIN_TEXT
from dualmem.text.stem import stem


def test_recall_at_k() -> None:
    retrieved = ["a", "b", "c", "d"]
    gold = {"b", "d", "z"}
    assert recall_at_k(retrieved, gold, 1) == 0.0
    assert recall_at_k(retrieved, gold, 2) == pytest.approx(1 / 3)
    assert recall_at_k(retrieved, gold, 4) == pytest.approx(2 / 3)
    assert recall_at_k(retrieved, gold, 100) == pytest.approx(2 / 3)
    assert recall_at_k(retrieved, (), 5) is None
    assert recall_at_k(["b", "b"], ["b"], 2) == 1.0
    with pytest.raises(ValueError, match="k must"):
        recall_at_k(retrieved, gold, 0)


def test_mrr() -> None:
    assert mrr(["x", "b", "d"], {"b", "d"}) == 0.5
    assert mrr(["b"], {"b"}) == 1.0
    assert mrr(["x", "y"], {"b"}) == 0.0
    assert mrr(["x"], []) is None


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"), ("ponies", "poni"), ("ties", "tie"), ("cats", "cat"), ("feed", "feed"),
        ("agreed", "agre"), ("plastered", "plaster"), ("motoring", "motor"), ("sing", "sing"),
        ("hopping", "hop"), ("falling", "fall"), ("filing", "file"), ("happy", "happi"), ("sky", "sky"),
        ("relational", "relat"), ("conditional", "condit"), ("rational", "ration"), ("digitizer", "digit"),
        ("vietnamization", "vietnam"), ("hopefulness", "hope"), ("sensibiliti", "sensibl"),
        ("triplicate", "triplic"), ("electrical", "electr"), ("adjustment", "adjust"), ("adoption", "adopt"),
        ("controll", "control"), ("roll", "roll"), ("dying", "die"), ("is", "is"), ("running", "run"),
        ("generously", "gener"), ("radically", "radic"),
    ],
)  # fmt: skip
def test_porter_stemmer_matches_nltk(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_normalize_locomo() -> None:
    assert normalize_locomo("The cats, and a dog!") == ["cat", "dog"]


def test_f1_locomo() -> None:
    # "cats were running" -> cat were run ; "cat runs" -> cat run : P=2/3, R=1
    assert f1_locomo("The cats were running", "cat runs") == pytest.approx(0.8)
    assert f1_locomo("Paris, France", "paris france") == 1.0
    assert f1_locomo("nothing here", "Pixel") == 0.0
    assert f1_locomo("", "Pixel") == 0.0
    # multiset: repeated tokens count once each on both sides
    assert f1_locomo("run run", "run") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_f1_locomo_multi_averages_gold_parts() -> None:
    assert f1_locomo_multi("cello, running", "running, cello, chess") == pytest.approx(2 / 3)
    assert f1_locomo_multi("cello and running", "cello") == pytest.approx(2 * 0.5 / 1.5)


def test_official_score_per_category() -> None:
    assert locomo_official_score("Paris", answer="Rome, Paris", category=1) == pytest.approx(0.5)
    assert locomo_official_score("May 2023", answer="May 2023", category=2) == 1.0
    assert locomo_official_score("likely yes", answer="likely yes; because she loves it", category=3) == 1.0
    assert locomo_official_score("Not mentioned in the conversation", answer=None, category=5) == 1.0
    assert locomo_official_score("Contemporary", answer=None, category=5) == 0.0
    with pytest.raises(ValueError, match="gold answer"):
        locomo_official_score("x", answer=None, category=4)


def test_f1_tokens_is_set_based_without_stemming() -> None:
    assert f1_tokens("The cat sat.", "the cat") == pytest.approx(0.8)
    assert f1_tokens("cats", "cat") == 0.0
    assert f1_tokens("cat cat cat", "cat") == 1.0


def test_bleu1() -> None:
    assert bleu1("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))
    assert bleu1("the the the", "the cat") == pytest.approx(1 / 3)
    assert bleu1("the cat sat", "the cat sat") == 1.0
    assert bleu1("", "x") == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ABSTAIN_TEXT, True),
        ("Not mentioned in the conversation.", True),
        ("There is no information about that.", True),
        ("Unknown", True),
        ("I cannot answer that from memory", True),
        ("", True),
        ("The unknown artist painted it.", False),
        ("Pixel", False),
        ("She has no dog named Rex but a cat", False),
    ],
)
def test_is_refusal(text: str, expected: bool) -> None:
    assert is_refusal(text) is expected


def test_percentile_and_mean() -> None:
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert percentile([1, 2, 3, 4], 0) == 1
    assert percentile([1, 2, 3, 4], 100) == 4
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError, match="q must"):
        percentile([1], 101)
    assert mean([1.0, None, 3.0]) == 2.0
    assert mean([None]) is None


def test_summarize_by_category() -> None:
    pairs = [(1, 1.0), (1, 0.0), (2, 1.0), (4, None), (5, 1.0), (9, 0.0)]
    out = summarize_by_category(pairs)
    assert out["1"].mean == 0.5
    assert out["1"].n == 2
    assert out["3"].mean is None
    assert out["3"].n == 0
    assert out["4"].n == 0
    assert out["1-4"].mean == pytest.approx(2 / 3)
    assert out["all"].mean == pytest.approx(3 / 5)
    assert out["all"].n == 5


def test_progress_line() -> None:
    import io

    from dualmem._progress import Progress

    buf = io.StringIO()
    bar = Progress("build x", 3, stream=buf, interval=0.0)
    bar.update()
    bar.set(3)
    bar.close()
    lines = buf.getvalue().split("\r")
    assert lines[1].startswith("build x [" + "#" * 10 + "." * 20 + "] 1/3 ")
    assert lines[-1].startswith("build x [" + "#" * 30 + "] 3/3 ")
    assert buf.getvalue().count("3/3") == 1
    assert buf.getvalue().endswith("\n")
    silent = io.StringIO()
    Progress("q", 1, enabled=False, stream=silent).close()
    assert silent.getvalue() == ""


def test_progress_as_an_on_progress_callback() -> None:
    import io

    from dualmem._progress import Progress

    buf = io.StringIO()
    bar = Progress("ingest f", stream=buf, interval=0.0)
    bar(2, 4)
    bar(4, 4)  # done: the line is ended once
    bar.close()
    assert buf.getvalue().count("\n") == 1
    assert "] 2/4 " in buf.getvalue()
    assert buf.getvalue().rstrip("\n").split("\r")[-1].startswith("ingest f [" + "#" * 30 + "] 4/4")
