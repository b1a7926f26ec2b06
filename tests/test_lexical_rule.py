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
from dualmem.text.lexical import fts5_tokens, index_terms, porter, query_terms
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
def test_the_rule_is_fts5s_porter_unicode61_for_any_text(texts: list[str]) -> None:
    texts = [t.replace("\x00", "") for t in texts]
    assert [index_terms(t) for t in texts] == _fts5(texts, "porter unicode61 remove_diacritics 2")


def test_english_query_terms() -> None:
    assert query_terms("What did Zoë say about running marathons?") == ["zoe", "say", "running", "marathons"]
    assert query_terms("Zoë'd") == ["zoe d"]


def test_the_stem_counts_bytes_as_fts5s_porter_does() -> None:
    # "øs" is three bytes: FTS5 strips its s (a two-letter ASCII word is left alone)
    assert porter("øs") == "ø"
    assert porter("is") == "is"
    assert porter("caresses") == "caress"
    words = ["größes", "søs", "ærings", "ελληνικάs", "жизнь", "ßs", "øing", "nações", "cafés"]
    assert [index_terms(w) for w in words] == _fts5(words, "porter unicode61 remove_diacritics 2")


# -- one implementation ---------------------------------------------------------------------------
def _source(name: str) -> str:
    return (_PLANE / name).read_text(encoding="utf-8")


def test_no_store_tokenizes_stems_or_scores_on_its_own() -> None:
    """The rule and BM25 are written once (``lexindex``): no other plane module stems, splits words,
    runs a tokenizer of its own or computes an idf."""
    own = re.compile(r"stemmer\(|fts5_tokens|index_terms|index_words|math\.log\(|unicode61|K1 = 1")
    for path in sorted(_PLANE.glob("*.py")):
        if path.name == "lexindex.py":
            continue
        text = path.read_text(encoding="utf-8")
        found = own.findall(text)
        if path.name in ("_sqlite_schema.py", "_sqlite_context.py"):
            # the FTS5 tables' declared tokenizer: the rule's split and stem (tests above)
            assert found == ["unicode61"], (path.name, found)
        else:
            assert not found, (path.name, found)


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
