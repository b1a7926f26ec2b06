"""BM25 on PostgreSQL against SQLite FTS5: same stems, same scores, same LoCoMo rankings."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dualmem.conversations import load_conversations
from dualmem.plane import SQLiteStore
from dualmem.text.lexical import fts5_tokens
from dualmem.text.stem import stemmer
from dualmem.types import Node, Tenant

stem_fts5 = stemmer("fts5")

USER = Tenant("u")
SAMPLE = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"
TINY = Path(__file__).resolve().parent / "fixtures" / "locomo_tiny.json"


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _fts5_stems(words: list[str]) -> dict[int, list[str]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(words, 1)))
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    found: dict[int, list[str]] = {}
    for term, doc, _col, _offset in conn.execute("SELECT term, doc, col, offset FROM v ORDER BY doc, offset"):
        found.setdefault(doc, []).append(term)
    conn.close()
    return found


_EDGE_WORDS = (
    "caresses ponies ties cats feed agreed plastered motoring sing hopping falling filing happy sky "
    "relational conditional rational digitizer vietnamization hopefulness triplicate electrical "
    "adjustment adoption controll roll dying generously radically sses ies eed ing ed s ss y by day "
    "days enjoyed flying beautifully emotionally ages age eyes probably biology logical Ünïcode café "
    "naïve résumé 2023 20friday x1y2 " + "a" * 70 + " " + "abcdefghij" * 7 + "ing"
)


def _check_against_fts5(sources: list[Path], minimum: int) -> None:
    words: set[str] = set(fts5_tokens(_EDGE_WORDS))
    for source in sources:
        for text in _strings(json.loads(source.read_text(encoding="utf-8"))):
            words.update(fts5_tokens(text))
    ordered = sorted(words)
    fts5 = _fts5_stems(ordered)
    mismatches = [
        (w, fts5.get(i), [stem_fts5(t) for t in fts5_tokens(w)])
        for i, w in enumerate(ordered, 1)
        if fts5.get(i, []) != [stem_fts5(t) for t in fts5_tokens(w)]
    ]
    assert len(ordered) > minimum
    assert mismatches == []


def test_stemmer_matches_fts5_porter_token_for_token() -> None:
    _check_against_fts5([SAMPLE, TINY], 300)


@pytest.mark.locomo
def test_stemmer_matches_fts5_porter_on_locomo(locomo_dir: Path) -> None:
    _check_against_fts5(sorted(locomo_dir.glob("*.json")), 5000)


def _node(i: int, text: str, speaker: str | None = None, tenant: Tenant = USER) -> Node:
    vec = np.zeros(8, dtype=np.float32)
    vec[i % 8] = 1.0
    return Node(id=f"d{i:05d}", tenant=tenant, content=text, at=None, speaker=speaker, embedding=vec)


CORPUS = [
    ("Melanie went camping with her kids near the mountains last summer", "Melanie"),
    ("camping camping camping trip gear list for the mountains", None),
    ("Caroline signed up for a pottery class; she loves pottery", "Caroline"),
    ("a note about the weather today: rainy, then sunny", None),
    ("O'Neill painted the lake at sunrise and the painting was sold", "Jon"),
    ("We talked about adoption agencies and the adoption process", "Caroline"),
    ("Running and runners: she runs every morning before work", "Melanie"),
]
QUERIES = [
    "When did Melanie go camping?",
    "pottery class",
    "O'Neill painting",
    "adoption agencies",
    "who runs in the morning",
    "sunrise lake mountains",
    "nothing matches zzz",
]


def test_scores_equal_sqlite_fts5(pg_store_factory: Callable[..., Any], tmp_path: Path) -> None:
    nodes = [_node(i, text, speaker) for i, (text, speaker) in enumerate(CORPUS)]
    lite = SQLiteStore.open(tmp_path / "lite.db")
    pg = pg_store_factory()
    lite.put_nodes(nodes)
    pg.put_nodes(nodes)
    try:
        for query in QUERIES:
            want = lite.lexical_search(USER, query, 10)
            got = pg.lexical_search(USER, query, 10)
            assert [i for i, _ in got] == [i for i, _ in want], query
            np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-9)
    finally:
        lite.close()


def test_statistics_are_per_user(pg_store_factory: Callable[..., Any]) -> None:
    """Another user's documents change neither the hits nor the scores (no cross-tenant leak)."""
    pg = pg_store_factory()
    mine = [_node(i, text, speaker) for i, (text, speaker) in enumerate(CORPUS)]
    pg.put_nodes(mine)
    before = pg.lexical_search(USER, "pottery camping", 10)
    theirs = [_node(100 + i, "pottery pottery pottery", tenant=Tenant("other")) for i in range(20)]
    pg.put_nodes(theirs)
    assert pg.lexical_search(USER, "pottery camping", 10) == before
    pg.delete_nodes([n.id for n in theirs[:5]])
    assert pg.lexical_search(USER, "pottery camping", 10) == before
    assert len(pg.lexical_search(Tenant("other"), "pottery", 100)) == 15


@pytest.mark.locomo
def test_locomo_rankings_match_sqlite(
    locomo_dir: Path, pg_store_factory: Callable[..., Any], tmp_path: Path
) -> None:
    """On the five dev conversations: top-10 overlap >= 0.9 and evidence recall@10 within 0.01."""
    overlaps: list[float] = []
    recall = {"sqlite": [], "postgres": []}  # type: dict[str, list[float]]
    pg = pg_store_factory()
    for index, conv in enumerate(load_conversations(locomo_dir)):
        tenant = Tenant(f"conv-{index}")  # per-user statistics == one SQLite store per conversation
        nodes = [
            Node(
                id=f"c{index}-{o.turn_id}",
                tenant=tenant,
                content=o.content,
                at=o.at,
                speaker=o.speaker,
                turn_id=o.turn_id,
                embedding=np.ones(4, dtype=np.float32) / 2,
            )
            for o in conv.observations
        ]
        lite = SQLiteStore.open(tmp_path / f"conv{index}.db")
        try:
            lite.put_nodes(nodes)
            pg.put_nodes(nodes)
            turn_of = {n.id: n.turn_id for n in nodes}
            for qa in conv.questions:
                if not qa.evidence:
                    continue
                hits = {
                    "sqlite": [i for i, _ in lite.lexical_search(tenant, qa.question, 10)],
                    "postgres": [i for i, _ in pg.lexical_search(tenant, qa.question, 10)],
                }
                if hits["sqlite"] or hits["postgres"]:
                    shared = len(set(hits["sqlite"]) & set(hits["postgres"]))
                    overlaps.append(shared / max(len(hits["sqlite"]), len(hits["postgres"])))
                for name, ids in hits.items():
                    found = {turn_of[i] for i in ids}
                    recall[name].append(sum(e in found for e in qa.evidence) / len(qa.evidence))
        finally:
            lite.close()
    assert len(overlaps) > 500
    assert float(np.mean(overlaps)) >= 0.9
    assert abs(float(np.mean(recall["sqlite"])) - float(np.mean(recall["postgres"]))) <= 0.01
