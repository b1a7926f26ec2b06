"""The cheaper pieces of one add (issue 13, round seven): each gives what the plain version gave."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dualmem.control import builtin_cues as bc
from dualmem.control import builtin_features as bf
from dualmem.control import catalog
from dualmem.control.states import MemoryState
from dualmem.plane import SQLiteStore
from dualmem.plane.sqlite import _scale as scale
from dualmem.text.lexical import fts_or, tokenize
from dualmem.types import Node, Tenant, TypeScores
from dualmem.write.candidates import Candidate
from dualmem.write.relations import relation_batch
from store_support import tenant_where

USER = Tenant("u")
T0 = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)

_TEXTS = [
    "I no longer eat meat, not anymore",
    "no more than once, no",
    "We used to go there every weekend and every sunday",
    "last week I went hiking; next month I will not",
    "how to bake: first mix, then stir, finally bake",
    "I can't stand it and I don't like it",
    "longer no anymore",  # the words of a phrase, not the phrase
    "step by step, step-by-step",
    "",
    "every",
]


def _plain_count(lexicon: bc._Lexicon, tokens: frozenset[str], padded: str) -> int:
    """The scan before round seven: every word, then every phrase searched for."""
    return len(tokens & lexicon.words) + sum(1 for p in lexicon.phrases if p in padded)


def _lexicons() -> list[bc._Lexicon]:
    return [v for v in vars(bc).values() if isinstance(v, bc._Lexicon)]


def test_phrases_are_searched_only_after_their_first_word() -> None:
    habit = bc._HABIT
    assert habit.openers.keys() == {p.split()[0] for p in habit.phrases}
    assert sum(len(group) for group in habit.openers.values()) == len(habit.phrases)
    assert " every weekend " in habit.openers["every"]


def test_lexicon_counts_and_hits_equal_the_plain_scan() -> None:
    rng = random.Random(3)
    vocabulary = sorted({w for lx in _lexicons() for p in (*lx.words, *lx.phrases) for w in p.split()})
    texts = [*_TEXTS, *(" ".join(rng.choices(vocabulary, k=rng.randint(1, 12))) for _ in range(300))]
    checked = 0
    for text in texts:
        words = tokenize(text.lower())
        tokens, padded = frozenset(words), " " + " ".join(words) + " "
        for lexicon in _lexicons():
            plain = _plain_count(lexicon, tokens, padded)
            assert lexicon.count(tokens, padded) == plain, (text, lexicon.phrases[:3])
            assert lexicon.hit(tokens, padded) is (plain > 0)
            checked += plain > 0
    assert checked > 300  # the random texts hit words and phrases


def test_a_repeated_phrase_still_counts_twice() -> None:
    lexicon = bc._lexicon("tend to|tend to|often")
    words = tokenize("i tend to rest often")
    tokens, padded = frozenset(words), " " + " ".join(words) + " "
    assert lexicon.count(tokens, padded) == _plain_count(lexicon, tokens, padded) == 3


def _plain_alias(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    x_set, y_set = bf._lower(a), bf._lower(b)
    best = 0.0
    for x in sorted(x_set - y_set)[:8]:
        for y in sorted(y_set - x_set)[:8]:
            if x[:1] == y[:1] or " " in x or " " in y or "-" in x or "-" in y:
                best = max(best, bc.variant(x, y))
    return best


def test_alias_equals_the_plain_pair_loop() -> None:
    rng = random.Random(7)
    names = ["jon", "jonathan", "j.s.", "john smith", "mary-ann", "ann", "mar", "melanie", "mel", "caroline"]
    names += ["carol", "new york", "ny", "york", "bob", "robert", "rob", "zoe", "zoey", "ice-cream"]
    for _ in range(400):
        a = tuple(rng.sample(names, rng.randint(0, 6)))
        b = tuple(rng.sample(names, rng.randint(0, 6)))
        left = MemoryState(id="a", content="x", timestamp=None, entities=a)
        right = MemoryState(id="b", content="y", timestamp=None, entities=b)
        assert bf._alias(left, right) == _plain_alias(a, b), (a, b)


@pytest.mark.parametrize("k", [0, 1, 3, 10, 50])
def test_top_shared_is_the_sorted_prefix(k: int) -> None:
    rng = random.Random(k)
    for _ in range(50):
        shared = Counter(
            {f"{rng.randrange(10**6):012d}": rng.randint(1, 4) for _ in range(rng.randint(1, 40))}
        )
        expected = sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        assert scale.top_shared(shared, k) == expected


def _node(i: int, *, session: str | None = "s1", entities: tuple[str, ...] = ()) -> Node:
    v = np.zeros(4, dtype=np.float32)
    v[i % 4] = 1.0
    return Node(
        id=f"n{i:03d}",
        tenant=USER,
        content=f"turn {i} about gardens",
        at=T0 + dt.timedelta(minutes=i),
        speaker="Ann",
        session=session,
        metadata={"k": i},
        entities=entities,
        embedding=v,
        status="pending",
    )


def _row(store: SQLiteStore, node_id: str) -> tuple[object, ...]:
    return tuple(store._conn.execute("SELECT * FROM nodes WHERE id = ?", (node_id,)).fetchone())


def test_completing_a_node_updates_only_its_types_and_status(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path / "m.db")
    try:
        store.put_nodes([_node(0), _node(1)])
        seen: list[str] = []
        store._conn.set_trace_callback(seen.append)
        done = TypeScores(episodic=0.9, semantic=0.2, procedural=0.0, preference=0.1)
        for node_id in ("n000", "n001"):
            node = store.get_node(node_id)
            assert node is not None
            store.update_node(_replace(node, types=done, status="complete"))
        store._conn.set_trace_callback(None)
        updates = [s for s in seen if s.lstrip().upper().startswith("UPDATE NODES")]
        assert len(updates) == 2  # the trace shows the bound values: the SET list is types, status
        assert all(
            re.fullmatch(r"UPDATE nodes SET types = '[^']*', status = 'complete' WHERE id = 'n00\d'", s)
            for s in updates
        )
        got = store.get_node("n001")
        assert got is not None
        assert got.status == "complete"
        assert got.types == done
        # the same row as the wide UPDATE stores (a second store completes through it)
        other = SQLiteStore.open(tmp_path / "o.db")
        try:
            other.put_nodes([_node(0), _node(1)])
            wide = other.get_node("n001")
            assert wide is not None
            moved = _replace(wide, types=done, status="complete", session="s2")
            other.update_node(moved)
            other.update_node(_replace(moved, session="s1"))  # back: a wide update each time
            a, b = _row(store, "n001"), _row(other, "n001")
            skip = {15, 16}  # created_at, created_ts (+1 for seq): the clock of each put
            assert [x for i, x in enumerate(a) if i - 1 not in skip] == [
                x for i, x in enumerate(b) if i - 1 not in skip
            ]
        finally:
            other.close()
    finally:
        store.close()


def test_a_changed_field_still_takes_the_wide_update(tmp_path: Path) -> None:
    store = SQLiteStore.open(tmp_path / "m.db")
    try:
        store.put_nodes([_node(0)])
        node = store.get_node("n000")
        assert node is not None
        seen: list[str] = []
        store._conn.set_trace_callback(seen.append)
        store.update_node(_replace(node, status="complete", session="s9", metadata={"k": 5}))
        store._conn.set_trace_callback(None)
        assert any("session = 's9'" in s for s in seen if s.upper().startswith("UPDATE NODES"))
        got = store.get_node("n000")
        assert got is not None
        assert got.session == "s9"
        assert dict(got.metadata) == {"k": 5}
        assert store.session_neighbours(USER, ["n000"], 2)["n000"] == ()
    finally:
        store.close()


def _replace(node: Node, **changes: object) -> Node:
    return dataclasses.replace(node, **changes)  # type: ignore[arg-type]


def test_relation_questions_are_built_once_per_index_and_flags() -> None:
    new = _node(10, entities=("ann", "garden"))
    cands = [
        Candidate(_node(i, entities=("garden",) if i % 2 else ("bob",)), 1.0, 0.5, ("garden",) * (i % 2))
        for i in range(4)
    ]
    first, second = relation_batch(new, cands), relation_batch(new, cands)
    expected: dict[str, object] = {}
    for i, cand in enumerate(cands):
        expected |= catalog.relation_questions(i, alias=not cand.shared_entities, implicit_time=False)
    assert dict(first.questions) == expected
    assert all(first.questions[name] is second.questions[name] for name in expected)


def _plain_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def test_a_bounded_edit_distance_is_exact_up_to_its_bound() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        a = "".join(rng.choices("abcde", k=rng.randint(0, 12)))
        b = "".join(rng.choices("abcde", k=rng.randint(0, 12)))
        exact, bound = _plain_distance(a, b), rng.randint(0, 6)
        got = bc._edit_distance(a, b, bound)
        assert got == exact if exact <= bound else got > bound, (a, b, bound)
        assert bc._edit_distance(a, b) == exact


def test_variant_scores_equal_the_unbounded_ratio() -> None:
    rng = random.Random(13)
    words = ["melanie", "melany", "mel", "caroline", "carolyn", "karolina", "jonathan", "johnathan", "jon"]
    for _ in range(500):
        a = rng.choice(words) + "".join(rng.choices("aeiny", k=rng.randint(0, 3)))
        b = rng.choice(words) + "".join(rng.choices("aeiny", k=rng.randint(0, 3)))
        short, long_ = sorted((a, b), key=len)
        got = bc.variant.__wrapped__(a, b)
        if a == b or long_.startswith(short) or a[0] != b[0] or len(long_) - len(short) > 0.3 * len(long_):
            continue  # decided before the distance
        ratio = 1.0 - _plain_distance(a, b) / len(long_)
        assert got == (ratio if ratio >= 0.7 else 0.0), (a, b)


def _plain_probe(store: SQLiteStore, tenant: Tenant, rare: list[str], k: int) -> list[tuple[str, float]]:
    """The probe's ranking before round seven: every match joined to ``nodes``."""
    clause, params = tenant_where(tenant)
    statement = (
        "SELECT n.id, -bm25(nodes_fts) AS score FROM nodes_fts CROSS JOIN nodes n "
        f"ON n.seq = nodes_fts.rowid WHERE nodes_fts MATCH ? AND {clause} "
        "ORDER BY score DESC, n.seq LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in store._conn.execute(statement, [fts_or(rare), *params, k])]


def test_the_probe_joins_only_a_window_of_fts5_ranked_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(17)
    words = ["garden", "bike", "paint", "violin", "hike", "camp", "lake", "dog", "cake", "book"]
    tenants = [USER, Tenant("other"), Tenant("u", "agent")]
    store = SQLiteStore.open(tmp_path / "m.db")
    try:
        nodes = []
        for i in range(300):
            v = np.zeros(4, dtype=np.float32)
            v[i % 4] = 1.0
            text = " ".join(rng.choices(words, k=rng.randint(2, 9)))
            nodes.append(Node(id=f"n{i:04d}", tenant=tenants[i % 7 % 3], content=text, at=T0, embedding=v))
        store.put_nodes(nodes)
        monkeypatch.setattr(scale, "PROBE_FROM", 50)
        monkeypatch.setattr(scale, "PROBE_DOCS", 400)  # every word stays "rare": many rows ranked
        seen: list[str] = []
        for tenant in (*tenants, Tenant("u", "agent", "run"), Tenant("nobody")):
            for _ in range(10):
                text = " ".join(rng.sample(words, 3))
                terms = list(dict.fromkeys(text.split()))
                rare = scale.rare_terms(store._conn, terms, max_docs=400, max_terms=scale.PROBE_TERMS)
                for k in (1, 5, 30, 200):
                    traced = tenant == USER and k <= 30  # a window the user's share can fill
                    store._conn.set_trace_callback(seen.append if traced else None)
                    got = store.lexical_probe(tenant, text, k)
                    store._conn.set_trace_callback(None)
                    assert got == _plain_probe(store, tenant, rare, k), (tenant, text, k)
        # the user's probes never joined every match to nodes (a tenant too small to fill a window
        # of the FTS5 order falls back to that join, and still gets the same answer)
        assert not any("CROSS JOIN nodes n ON n.seq = nodes_fts.rowid" in s for s in seen)
        assert any("ORDER BY rank, rowid LIMIT" in s for s in seen)
    finally:
        store.close()
