"""research.large: a held-out user's memory merged with distractors, on small synthetic stores."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import numpy as np
import pytest
from research.large import (
    Source,
    measure,
    merge,
    name_map,
    pool_recall,
    renamer,
    report,
    settings,
    subsample,
    summarize,
    time_delta,
)
from research.pools import QueryPool

from dualmem import Memory
from dualmem.config import Profile
from dualmem.conversations import QA, Conversation
from dualmem.embed import HashingEmbedder
from dualmem.plane import open_store
from dualmem.types import Node, Observation, Tenant

HELD_START = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)
OTHER_START = dt.datetime(2021, 1, 4, 9, 0, tzinfo=dt.UTC)

HELD = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful."),
    ("Melanie", "That is wonderful, Caroline! I painted a lake sunrise last week."),
    ("Caroline", "I am researching adoption agencies because I want a family."),
    ("Melanie", "Melanie here: we camped in the mountains with the kids."),
    ("Caroline", "My friends gave me a hand-painted bowl for my birthday."),
    ("Melanie", "I signed up for a pottery class on Saturday."),
]
OTHER = [
    ("Jon", "Hey Gina! I lost my job as a banker yesterday."),
    ("Gina", "Sorry Jon, I lost my job at Door Dash this month."),
    ("Jon", "I am opening a dance studio downtown, Gina."),
    ("Gina", "Jon, my clothing store opened online last week."),
    ("Jon", "I went to Paris and watched a dance show."),
    ("Gina", "I got a new trophy at the dance contest."),
    ("Jon", "The studio floor is finally finished."),
    ("Gina", "I talked to investors about the store."),
]


def _build(path: Path, user: str, turns: list[tuple[str, str]], start: dt.datetime, days: int) -> Source:
    obs = [
        Observation(
            text, at=start + dt.timedelta(days=days * i), speaker=who, session=f"s{i // 3}", turn_id=f"D1:{i}"
        )
        for i, (who, text) in enumerate(turns)
    ]
    profile = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(path, embedder=HashingEmbedder(64), answerer=None, profile=profile) as mem:
        mem.add_many(obs, user=user)
    return Source("test", user, path)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Source, Source]:
    held = _build(tmp_path / "held.db", "alice", HELD, HELD_START, 10)  # 50 days
    other = _build(tmp_path / "other.db", "bob", OTHER, OTHER_START, 2)  # 14 days
    return held, other


def _nodes(path: Path, user: str) -> dict[str, Node]:
    store = open_store(path, read_only=True)
    try:
        return {n.id: n for n in store.iter_nodes(Tenant(user))}
    finally:
        store.close()


def test_merged_store_keeps_the_held_users_gold_and_adds_distractors(
    stores: tuple[Source, Source], tmp_path: Path
) -> None:
    held, other = stores
    merged = merge(held, [held, other], tmp_path / "large", size=11)  # held itself is never a distractor
    assert (merged.own, merged.distractors, merged.sources) == (6, 5, ("test/bob",))
    got = _nodes(merged.path, "alice")
    own = _nodes(held.path, "alice")
    assert len(got) == 11
    for node_id, node in own.items():  # the held user's memories, unchanged: turn ids, text, vectors
        assert got[node_id] == node
    distractors = [n for i, n in got.items() if i not in own]
    assert {n.turn_id for n in own.values()}.isdisjoint(n.turn_id for n in distractors)
    assert all(n.turn_id and n.turn_id.startswith("~0:") for n in distractors)
    assert all(n.session and n.session.startswith("~0:") for n in distractors)
    source = _nodes(other.path, "bob")
    first = sorted(source.values(), key=lambda n: n.at or HELD_START)[:5]  # the first memories in time
    assert {n.id for n in distractors} == {n.id for n in first}
    for n in distractors:  # the stored embedding travels as is
        assert np.array_equal(n.embedding, source[n.id].embedding)
    assert _nodes(merged.path, "bob") == {}


def test_distractor_speakers_are_renamed_in_speaker_text_and_entities(
    stores: tuple[Source, Source], tmp_path: Path
) -> None:
    held, other = stores
    merged = merge(held, [other], tmp_path / "large", size=100)
    own = _nodes(held.path, "alice")
    distractors = [n for i, n in _nodes(merged.path, "alice").items() if i not in own]
    assert len(distractors) == len(OTHER)
    assert {n.speaker for n in distractors} == {"Caroline", "Melanie"}
    for n in distractors:
        assert "Jon" not in n.content
        assert "Gina" not in n.content
        assert "jon" not in n.entities
        assert "gina" not in n.entities
    swapped = next(n for n in distractors if "banker" in n.content)
    # equal turns, ties by name: Gina -> Caroline, Jon -> Melanie (the held user's order, likewise)
    assert swapped.content.startswith("Hey Caroline!")
    assert swapped.speaker == "Melanie"
    kept = merge(held, [other], tmp_path / "plain", size=100, rename=False)
    plain = [n for i, n in _nodes(kept.path, "alice").items() if i not in own]
    assert {n.speaker for n in plain} == {"Jon", "Gina"}


def test_distractor_times_move_inside_the_held_span_by_whole_weeks(
    stores: tuple[Source, Source], tmp_path: Path
) -> None:
    held, other = stores
    merged = merge(held, [other], tmp_path / "large", size=100, seed=3)
    own = _nodes(held.path, "alice")
    source = _nodes(other.path, "bob")
    got = _nodes(merged.path, "alice")
    lo = min(n.at for n in own.values())
    hi = max(n.at for n in own.values())
    deltas = set()
    for node_id, n in source.items():
        moved = got[node_id]
        deltas.add(moved.at - n.at)
        assert lo - dt.timedelta(days=7) < moved.at <= hi
        for a, b in zip(n.temporal_refs, moved.temporal_refs, strict=True):
            assert b.start - a.start == moved.at - n.at
    (delta,) = deltas
    assert delta.days % 7 == 0
    assert delta.seconds == 0
    assert delta != dt.timedelta(0)
    unmoved = merge(held, [other], tmp_path / "plain", size=100, shift=False)
    assert all(_nodes(unmoved.path, "alice")[i].at == n.at for i, n in source.items())


def test_merge_is_cached_and_keyed_by_its_settings(stores: tuple[Source, Source], tmp_path: Path) -> None:
    held, other = stores
    first = merge(held, [other], tmp_path / "large", size=9)
    stamp = first.path.stat().st_mtime_ns
    again = merge(held, [other], tmp_path / "large", size=9)
    assert again == first
    assert first.path.stat().st_mtime_ns == stamp
    assert merge(held, [other], tmp_path / "large", size=10).path != first.path
    with pytest.raises(ValueError, match="size"):
        merge(held, [other], tmp_path / "large", size=0)


def test_time_delta_fits_or_ends_on_the_last_day() -> None:
    rng = random.Random(0)
    held = (HELD_START, HELD_START + dt.timedelta(days=200))
    short = (OTHER_START, OTHER_START + dt.timedelta(days=30))
    for _ in range(20):
        d = time_delta(held, short, rng)
        assert d.days % 7 == 0
        assert held[0] - dt.timedelta(days=7) < short[0] + d
        assert short[1] + d <= held[1]
    long = (OTHER_START, OTHER_START + dt.timedelta(days=400))
    d = time_delta(held, long, rng)
    assert held[1] - dt.timedelta(days=7) < long[1] + d <= held[1]


def test_renamer_swaps_names_at_once_and_never_writes_a_role() -> None:
    rename = renamer({"John": "Tim", "Maria": "John", "Alex Chen": "Sam Lee"})
    assert (
        rename("John met Maria; Johnny did not. Alex Chen and Alex")
        == "Tim met John; Johnny did not. Sam Lee and Sam"
    )
    assert renamer({"Jon": "user"})("Hey Jon") == "Hey Jon"
    assert renamer({"user": "Caroline"})("the user said") == "the user said"
    assert name_map(["Jon", "Gina", "Bob"], ["Caroline", "Melanie"]) == {
        "Jon": "Caroline",
        "Gina": "Melanie",
        "Bob": "Caroline",
    }
    assert name_map(["Jon"], []) == {}


def test_subsample_is_seeded_keeps_order_and_skips_unscored_questions() -> None:
    qs = tuple(QA(f"q{i}", "a", (f"D1:{i}",) if i % 4 else (), 5 if i % 5 == 0 else 1) for i in range(40))
    conv = Conversation("c", (), qs)
    scored = [q for q in qs if q.category != 5 and q.evidence]
    a, b = subsample(conv, 10, 1), subsample(conv, 10, 1)
    assert a.questions == b.questions
    assert len(a.questions) == 10
    assert all(q in scored for q in a.questions)
    assert [scored.index(q) for q in a.questions] == sorted(scored.index(q) for q in a.questions)
    assert subsample(conv, 10, 2).questions != a.questions
    assert subsample(conv, None).questions == tuple(scored)


def test_settings_remove_each_channel_in_turn() -> None:
    assert settings([]) == [("off", ())]
    assert settings([("temporal", 20)]) == [("off", ()), ("on", (("temporal", 20),))]
    got = dict(settings([("temporal", 20), ("entity", 10), ("causal", 5)]))
    assert got["no-entity"] == (("temporal", 20), ("causal", 5))
    assert set(got) == {"off", "on", "no-temporal", "no-entity", "no-causal"}


def test_pool_recall_counts_the_gold_the_pool_holds() -> None:
    p = QueryPool(
        conversation="c", index=0, category=1, evidence=("a", "b", "c", "d"), turn_ids=("x", "b", "d"),
        features=np.zeros((3, 1)), labels=np.zeros(3), neighbour_only=np.zeros(3, dtype=bool),
        baselines={}, pool_ms=0.0,
    )  # fmt: skip
    assert pool_recall(p) == 0.5


def test_measure_reports_pool_recall_search_and_bm25_per_setting(
    stores: tuple[Source, Source], tmp_path: Path
) -> None:
    held, other = stores
    merged = merge(held, [other], tmp_path / "large", size=100)
    conv = Conversation(
        "alice",
        (),
        (
            QA("Where did Caroline go yesterday?", "a support group", ("D1:0",), 2),
            QA("What class did Melanie sign up for?", "pottery", ("D1:5",), 4),
            QA("What is adversarial?", None, ("D1:1",), 5),
        ),
    )
    rows = measure(
        subsample(conv, None), merged, "test", [("temporal", 5), ("entity", 5)], embedder=HashingEmbedder(64)
    )
    systems = {r["system"] for r in rows}
    assert systems == {
        "bm25", "dense", "hybrid",
        *(f"{kind} {s}" for kind in ("pool", "search") for s in ("off", "on", "no-temporal", "no-entity")),
    }  # fmt: skip
    assert len(rows) == 2 * len(systems)  # the category-5 question is not scored
    pools = [r for r in rows if r["system"] == "pool off"]
    assert all(
        r["pool_recall"] == 1.0 and r["pool_size"] == 14 for r in pools
    )  # 14 memories, all in the pool
    summary = summarize(rows)["test"]
    assert summary["pool off"]["pool recall by category"] == {"2": 1.0, "4": 1.0}
    assert summary["bm25"]["memories"] == 14
    assert "pool recall" not in summary["search on"]
    text = report(summarize(rows))
    assert "| pool on | 1.000 | 14 cand. |" in text
    assert "| bm25 |" in text


def test_measure_without_search_gives_pools_and_baselines_only(
    stores: tuple[Source, Source], tmp_path: Path
) -> None:
    held, other = stores
    merged = merge(held, [other], tmp_path / "large", size=9)
    conv = Conversation("alice", (), (QA("What did Melanie paint?", "a lake sunrise", ("D1:1",), 4),))
    rows = measure(conv, merged, "test", [("entity", 5)], embedder=HashingEmbedder(64), search=False)
    assert {r["system"] for r in rows} == {"bm25", "dense", "hybrid", "pool off", "pool on"}
    assert all(r["size"] == 9 for r in rows)
