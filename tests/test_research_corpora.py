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


def test_cjk_loco_recounts_lengths_and_ranks_bigrams_as_the_cjk_eval_does() -> None:
    import numpy as np
    from research.cjk_loco import LENGTHS, bigram_ranker, score, with_lengths
    from research.pools import QueryPool

    from dualmem.read.pool import FEATURES

    texts = ("我家的猫叫年糕，今年三岁了。", "ok")
    pool = QueryPool(
        conversation="zh-01",
        index=0,
        category="single",
        evidence=("m1",),
        turn_ids=("m1", "m2"),
        features=np.zeros((2, len(FEATURES))),
        labels=np.array([1.0, 0.0]),
        neighbour_only=np.zeros(2, dtype=bool),
        baselines={},
        pool_ms=0.0,
        contents=texts,
    )
    spaces = with_lengths([pool], LENGTHS["spaces"])[0].features
    chars = with_lengths([pool], LENGTHS["chars"])[0].features
    short, log_len = FEATURES.index("short"), FEATURES.index("log_len")
    assert spaces[0, short] == 1.0  # one whitespace word: "short", as a content-free turn
    assert chars[0, short] == 0.0  # 12 characters: 4 + 4 words
    assert chars[0, log_len] > spaces[0, log_len]
    assert spaces[1].tolist() == chars[1].tolist()  # English counts alike
    assert not pool.features.any()  # the pool itself is left as it was

    ranked = bigram_ranker({"m1": texts[0], "m2": "今天天气很好", "m3": "猫粮买好了"})("我家的猫叫什么？")
    assert ranked[0] == "m1"
    assert "m2" not in ranked
    assert score(("m1", "m3"), ["m1", "m2", "m3"]) == {"R@5": 1.0, "R@n": 0.0, "first": 1.0}


def test_cjk_words_counts_han_and_kana_runs_by_characters_and_the_rest_by_spaces() -> None:
    from research.cjk_loco import cjk_words

    assert cjk_words("我已经从杭州滨江搬走了，现在住在深圳南山的科技园附近。") == 18  # 11 + 14 characters
    assert cjk_words("你还记得我家的猫叫什么吗？") == 8
    assert cjk_words("我用 uv 管理 Python 包") == 7
    assert cjk_words("東京に引っ越しました") == 7
    assert cjk_words("지금은 서울 강남에 살고 있어요") == 5  # Hangul is spaced: its words
    assert cjk_words("I moved - to Shenzhen") == 5  # English: every whitespace word, as the pool counts
