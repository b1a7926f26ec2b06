"""The research harness's corpora: the CJK dev corpus joins by name, with its own embedder."""

from __future__ import annotations

from research.corpora import CORPORA, ENGLISH, conversations, embedder_of, fold_of


def test_the_cjk_corpus_is_built_with_the_multilingual_embedder_and_english_with_minilm() -> None:
    assert embedder_of("cjk") == "multilingual"
    for name in ENGLISH:
        assert embedder_of(name) == "minilm"
        assert embedder_of(name + "-shuffled") == "minilm"
    assert set(CORPORA) == {*ENGLISH, "cjk"}  # a run that names no corpus takes the English four


def test_the_cjk_corpus_is_five_folds_of_whole_users() -> None:
    convs = conversations("cjk")
    ids = [c.id for c in convs]
    assert len(ids) == 14
    assert {i[:2] for i in ids} == {"zh", "ja", "ko"}
    folds = fold_of("cjk", ids)
    assert sorted(set(folds.values())) == [f"cjk/fold{i}" for i in range(5)]
    assert all(c.questions for c in convs)
