"""The lexical index's one rule (``dualmem.text.lexical``) and its sharing by every backend.

The rule's split and fold are FTS5's ``unicode61 remove_diacritics 2`` (its tables, read from the
running SQLite), its stem FTS5's ``porter``; every store indexes and queries through ``lexindex``.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dualmem.plane
from dualmem.plane import InMemoryStore, SQLiteStore, lexindex
from dualmem.text import _unicode61
from dualmem.text.lexical import (
    fts5_tokens,
    fts_query,
    has_cjk,
    index_terms,
    index_text,
    index_words,
    porter,
    query_terms,
)
from dualmem.types import Node, Tenant

_PLANE = Path(dualmem.plane.__file__).parent
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


def _fts5(texts: list[str], tokenizer: str) -> list[list[str]]:
    """Each text's tokens as SQLite FTS5 with ``tokenizer`` indexes them, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='{tokenizer}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
    found: dict[int, list[str]] = {}
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        found.setdefault(int(doc), []).append(term)
    return [found.get(i, []) for i in range(1, len(texts) + 1)]


def _code_points() -> list[int]:
    """Every code point the tables name, every one below U+3000, and a seeded sample of the rest."""
    listed = {int(pair.split(":")[0], 16) for pair in _unicode61.FOLDS.split()}
    for part in _unicode61.SEPARATORS.split():
        lo, _, hi = part.partition("-")
        listed.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    rng = random.Random(61)
    sample = {rng.randrange(0x3000, 0x110000) for _ in range(20_000)}
    points = listed | set(range(1, 0x3000)) | sample
    return sorted(p for p in points if p and not 0xD800 <= p < 0xE000)


def test_the_split_and_fold_tables_are_the_running_sqlites() -> None:
    points = _code_points()
    texts = [f"a{chr(p)}b" for p in points]
    for p, text, want in zip(points, texts, _fts5(texts, "unicode61 remove_diacritics 2"), strict=True):
        assert fts5_tokens(text) == want, hex(p)


_SCRIPTS = st.text(
    alphabet=st.sampled_from("abcdeilnorstuyz ÉéüßñøÆ'’-.,!?019 \u0301\u0308²ıİ中文日本語한국어ー😀\t\n"),
    max_size=60,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_SCRIPTS, st.text(max_size=30)), min_size=1, max_size=8))
def test_fts5_given_the_rules_text_holds_the_rules_terms(texts: list[str]) -> None:
    """What the SQLite triggers give FTS5 (``index_text``) is tokenised by FTS5 into the rule's terms;
    a text without CJK is given as it is, and FTS5's own split and stem are then the rule's."""
    texts = [t.replace("\x00", "") for t in texts]
    given_ = [index_text(t) for t in texts]
    assert [index_terms(t) for t in texts] == _fts5(given_, "porter unicode61 remove_diacritics 2")
    for text, seen in zip(texts, given_, strict=True):
        if not has_cjk(text):
            assert seen is text


def test_cjk_runs_are_bigrams_and_han_characters_and_the_rest_stays_words() -> None:
    assert index_words("咖啡店") == ["咖", "咖啡", "啡", "啡店", "店"]
    assert index_words("包") == ["包"]
    assert index_words("にゃ") == ["にゃ"]  # kana and Hangul syllables are terms only as a run of one
    # mixed text keeps its English words (stemmed as before), split from the CJK runs
    mixed = ["我", "我用", "用", "uv", "管", "管理", "理", "python"]
    assert index_terms("我用 uv 管理 Python packages") == [*mixed, "packag"]
    assert index_terms("我用uv管理Python包") == [*mixed, "包"]
    assert index_words("東京に行きました") == [
        "東",
        "東京",
        "京",
        "京に",
        "に行",
        "行",
        "行き",
        "きま",
        "まし",
        "した",
    ]
    assert index_words("서울에서 일해요") == ["서울", "울에", "에서", "일해", "해요"]
    # full-width Latin is case-folded as FTS5 folds it (not to ASCII); a CJK full stop separates
    assert index_words("ＡＢＣ。咖啡") == ["ａｂｃ", "咖", "咖啡", "啡"]


def test_english_text_has_the_same_terms_as_rule_1() -> None:
    text = "Zoë's café: we're running 3 marathons in 2024, don't stop! — naïve ÉCOLE ² ß"
    assert index_text(text) is text
    assert index_terms(text) == [porter(w) for w in fts5_tokens(text)]
    assert query_terms("What did Zoë say about running marathons?") == ["zoe", "say", "running", "marathons"]


def test_a_cjk_query_is_its_terms_each_a_term() -> None:
    # its particles, and the bigrams that hold one, are left out as English stopwords are
    assert query_terms("周三吃饭了吗？") == ["周", "周三", "三", "三吃", "吃", "吃饭", "饭"]
    # an English phrase stays one term; repeated terms are asked once
    assert query_terms("Zoë'd 咖啡 咖啡店") == ["zoe d", "咖", "咖啡", "啡", "啡店", "店"]
    assert fts_query("周三") == '"周" OR "周三" OR "三"'


_MIXED = st.text(
    alphabet=st.sampled_from(
        "abcxyz ABC'\"*():^-+NEAR OR AND 的了是我咖啡店東京にハングル서울에 。，！？「」\t0-9"
    ),
    max_size=40,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_MIXED, st.text(max_size=40)))
def test_lexical_queries_of_any_mixed_text_never_fail_and_cjk_is_never_empty(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t (x) VALUES (?)", (index_text("我喜欢东京的咖啡店 and running"),))
    expression = fts_query(text)
    if expression:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    if any(char in "咖啡店東京" for char in text):  # a Han character of content (no stopword)
        assert expression


def test_cjk_query_stopwords_are_left_out_and_the_index_keeps_them() -> None:
    """A CJK question's function characters and question words match every message as English
    stopwords would: the query leaves them out (the index keeps every term)."""
    assert query_terms("我家的猫叫什么？") == ["家", "猫", "猫叫", "叫"]
    assert query_terms("私の猫の名前は何ですか？") == ["私", "猫", "名", "名前", "前"]
    assert "어디" not in query_terms("지금 어디 살아?")
    assert query_terms("的了吗？什么") == []  # nothing but stopwords: no lexical query, as in English
    assert query_terms("我不吃香菜") == ["不吃", "吃", "吃香", "香", "香菜", "菜"]  # 不 alone is a stopword
    assert {"我", "我的"} <= set(index_terms("我的猫"))


def test_the_stem_counts_bytes_as_fts5s_porter_does() -> None:
    # "øs" is three bytes: FTS5 strips its s (a two-letter ASCII word is left alone)
    assert porter("øs") == "ø"
    assert porter("is") == "is"
    assert porter("caresses") == "caress"
    words = ["größes", "søs", "ærings", "ελληνικάs", "жизнь", "ßs", "øing", "nações", "cafés"]
    assert [index_terms(w) for w in words] == _fts5(words, "porter unicode61 remove_diacritics 2")


# -- one implementation ---------------------------------------------------------------------------
def test_no_store_tokenizes_stems_or_scores_on_its_own() -> None:
    """The rule and BM25 are written once (``lexindex``): no other plane module stems, splits words,
    runs a tokenizer of its own or computes an idf."""
    own = re.compile(r"stemmer\(|fts5_tokens|index_terms|index_words|math\.log\(|unicode61|K1 = 1")
    paths = sorted(_PLANE.rglob("*.py"))
    assert len(paths) > 30  # every backend's modules
    assert any(p.parent.name == "postgres" for p in paths)
    for path in paths:
        name = path.relative_to(_PLANE).as_posix()
        if name == "lexindex.py":
            continue
        text = path.read_text(encoding="utf-8")
        found = own.findall(text)
        if name in ("sqlite/_schema.py", "sqlite/_context.py"):
            # the FTS5 tables' declared tokenizer: the rule's split and stem (tests above)
            assert found == ["unicode61"], (name, found)
        else:
            assert not found, (name, found)


class _Spy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[str] = Counter()
        for name in ("terms", "query_terms", "stems"):
            real = getattr(lexindex, name)

            def spy(*args: object, _real: object = real, _name: str = name, **kwargs: object) -> object:
                self.calls[_name] += 1
                return _real(*args, **kwargs)  # type: ignore[operator]

            monkeypatch.setattr(lexindex, name, spy)


def _nodes() -> list[Node]:
    texts = ["we planted tomatoes in the garden", "my gardener waters the tomato beds", "a quiet day"]
    rng = np.random.default_rng(3)
    nodes = []
    for i, text in enumerate(texts):
        vector = rng.normal(size=8).astype(np.float32)
        nodes.append(
            Node(id=f"n{i}", tenant=Tenant("u"), content=text, at=T0 + dt.timedelta(minutes=i),
                 session="s1", speaker="sam", embedding=vector / np.linalg.norm(vector))
        )  # fmt: skip
    return nodes


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_every_store_indexes_and_queries_through_lexindex(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy(monkeypatch)
    store = InMemoryStore() if backend == "memory" else SQLiteStore.open(tmp_path / "m.db")
    try:
        assert isinstance(store.lexical, lexindex.LexicalComponent)
        store.put_nodes(_nodes())
        found = store.lexical.search("nodes", Tenant("u"), "gardening tomatoes", 5)
        assert [i for i, _ in found] == ["n0", "n1"]  # stemmed: garden(ing|er), tomato(es)
        assert spy.calls["query_terms"] >= 1  # FTS5 stems them in C, the rule's stem (tests above)
        if backend == "memory":
            assert spy.calls["terms"] >= 1
            assert spy.calls["stems"] >= 1
        assert store.lexical.count("nodes", "u") == 3
        assert store.lexical.count("nodes", "v") == 0
        assert store.lexical.rule() == lexindex.RULE_VERSION
    finally:
        store.close()
