"""The pool's feature matrix against a per-candidate reference built here from the documented
definitions (``dualmem.read.pool``'s docstring), on real memories: a small conversation (hashing
embedder, both stores) and, when the data is present, a LoCoMo dev conversation with MiniLM.

The reference re-runs the four searches and the context reads itself and computes every feature of
one candidate at a time; only cosines are compared with a float32 tolerance (the vectors are float32,
the reference sums in float64), every other column exactly.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from dualmem import Memory
from dualmem.control.builtin import BuiltinController
from dualmem.conversations import load_conversations
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore
from dualmem.read.channels import channel_hits
from dualmem.read.pool import FEATURES, Pool, PoolSettings, build_pool, extend_pool
from dualmem.read.ppr import seed_memories
from dualmem.types import Node, Observation, Tenant
from store_support import AT, PEPPER, STORE_KINDS, filled_memory

TURNS = [
    *PEPPER,
    ("Jon", "I went hiking in the Alps with my sister last week."),
    ("Mira", "My old bicycle broke on the way to work on 2 May 2023."),
    ("Jon", "I love ramen from the shop near the station, I eat it every Friday."),
    ("Mira", "I sold the bicycle because the repair cost more than a new one."),
]
QUERIES = (
    "Which dog did Mira adopt?",
    "Where did Jon go hiking and with whom?",
    "What broke in May 2023?",
    "ramen station",
    "What happened at the weekend?",
    "Did Jon and Mira talk about bicycles?",
    "Why did Mira sell her bicycle?",
    "What did Jon do right after the hiking trip in the Alps?",  # an ordering question: the walk
)
COSINES = frozenset({"vec", "ctx_vec", "nb_vec", "coherence"})
ALL_CHANNELS = (("temporal", 3), ("entity", 3), ("causal", 3), ("semantic", 3))
SETTINGS = (PoolSettings(50, 2), PoolSettings(2, 1), PoolSettings(2, 1, ALL_CHANNELS))


def _observations() -> list[Observation]:
    out = [
        Observation(t, at=AT + dt.timedelta(minutes=i), speaker=s, session="s1", turn_id=f"D1:{i + 1}")
        for i, (s, t) in enumerate(TURNS)
    ]
    later = AT + dt.timedelta(days=40)
    out += [
        Observation(
            "We moved to Porto on 3 June 2023.", at=later, speaker="Mira", session="s2", turn_id="D2:1"
        ),
        Observation("Porto sounds great!", at=later, speaker="Jon", session="s2", turn_id="D2:2"),
    ]
    return out


@pytest.fixture(params=STORE_KINDS)
def small(request: pytest.FixtureRequest, hashing: Embedder, tmp_path: Path) -> Iterator[Memory]:
    with filled_memory(request.param, hashing, tmp_path, _observations()) as m:
        yield m


def _ranks(hits: Sequence[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    return {node_id: (rank, score) for rank, (node_id, score) in enumerate(hits)}


def _cos(a: npt.NDArray[np.float32] | None, b: npt.NDArray[np.float32]) -> float:
    if a is None:
        return 0.0
    return float(np.dot(a.astype(np.float64), b.astype(np.float64)))


def _reference(mem: Memory, pool: Pool, settings: PoolSettings, extra: Sequence[Node] = ()) -> np.ndarray:
    """Every feature of every candidate (``pool.ids``, then ``extra`` as edge-reached candidates),
    one candidate at a time, from the searches and stored context read here."""
    store, tenant, n, q = mem.store, Tenant("u"), settings.n, pool.analysis
    lists = {
        "vec": _ranks(store.vector_search(tenant, pool.qvec, n)),
        "lex": _ranks(store.lexical_search(tenant, pool.query, n)),
        "lex_q": _ranks(store.lexical_search(tenant, q.stripped, n)),
        "ctx_lex": _ranks(store.context_search(tenant, q.stripped, n)),
    }
    best = {name: max((s for _, s in r.values()), default=0.0) or 1.0 for name, r in lists.items()}
    speakers = {c.speaker for c in pool.rows.values() if c.speaker}
    embed = mem.embedder.embed
    seeds = seed_memories(
        [list(store.vector_search(tenant, pool.qvec, n)), list(store.lexical_search(tenant, q.stripped, n))]
    )
    ran = channel_hits(
        store, tenant, q, pool.qvec, dict(settings.channels), {}, speakers, embed=embed, seeds=seeds
    )
    channels = {r.name: _ranks(r.hits) for r in ran}
    found = set().union(*lists.values(), *channels.values())
    top_idf = max(
        (s for s in dict(channels.get("entity", {})).values()), key=lambda v: v[1], default=(0, 1.0)
    )

    def channel_rank(name: str, node_id: str) -> float:
        return 10.0 / (10.0 + channels.get(name, {}).get(node_id, (4 * n, 0.0))[0])

    ids = [*pool.ids, *(nd.id for nd in extra)]
    nodes = {**pool.nodes, **{nd.id: nd for nd in extra}}
    contexts = store.node_context(ids, tenant)

    def neighbours(node_id: str) -> list[str]:
        ctx = contexts.get(node_id)
        return [] if ctx is None else [j for j, off in ctx.neighbours if abs(off) <= settings.window]

    def vec(node_id: str) -> float:
        return _cos(nodes[node_id].embedding, pool.qvec)

    def lex_q(node_id: str) -> float:
        return lists["lex_q"][node_id][1] / best["lex_q"] if node_id in lists["lex_q"] else 0.0

    def rank(name: str, node_id: str) -> float:
        return 10.0 / (10.0 + lists[name].get(node_id, (4 * n, 0.0))[0])

    rows = []
    for node_id in ids:
        node, nbs = nodes[node_id], neighbours(node_id)
        held = [vec(j) for j in nbs if j in nodes]
        ctx = contexts.get(node_id)
        words = len(node.content.split())
        named = q.mentions(node.speaker)
        day = node.at.date() if node.at is not None else None
        spans = [(r.start, r.end) for r in node.temporal_refs] + ([(day, day)] if day else [])
        row = {
            "vec": vec(node_id),
            "vec_rank": rank("vec", node_id),
            "ctx_vec": _cos(ctx.vector, pool.qvec)
            if ctx is not None and ctx.vector is not None
            else vec(node_id),
            "nb_vec": max(held) if held else 0.0,
            "lex": lists["lex"][node_id][1] / best["lex"] if node_id in lists["lex"] else 0.0,
            "lex_rank": rank("lex", node_id),
            "lex_q": lex_q(node_id),
            "lex_q_rank": rank("lex_q", node_id),
            "nb_lex": max((lex_q(j) for j in nbs), default=0.0),
            "ctx_lex": lists["ctx_lex"][node_id][1] / best["ctx_lex"] if node_id in lists["ctx_lex"] else 0.0,
            "speaker": float(named),
            "other_speaker": float(q.about and not named),
            "log_len": math.log1p(words) / 5.0,
            "short": float(words <= 8),
            "time": float(bool(q.times) and any(q.time_overlap(a, b) for a, b in spans)),
            "neighbour": float(node_id in pool.ids and node_id not in found),
            "question": float(
                node.content.strip().strip("\"'*_)\u201d\u2019\u300d\u300f ").endswith(("?", "？"))
            ),
            "pref": node.types.preference if q.preference and node.types is not None else 0.0,
            "coherence": max(
                (
                    _cos(nodes[j].embedding, nodes[node_id].embedding)  # type: ignore[arg-type]
                    for j, off in (ctx.neighbours if ctx is not None else ())
                    if abs(off) == 1 and j in nodes
                ),
                default=0.0,
            ),
        }
        row["time_rank"] = channel_rank("temporal", node_id)
        row["entity_rank"] = channel_rank("entity", node_id)
        row["walk_rank"] = channel_rank("walk", node_id)
        row["ppr_rank"] = channel_rank("ppr", node_id)
        idf = channels.get("entity", {}).get(node_id)
        row["entity_idf"] = 0.0 if idf is None else idf[1] / (top_idf[1] or 1.0)
        row["causal_rank"] = channel_rank("causal", node_id)
        row["semantic_rank"] = channel_rank("semantic", node_id)
        near = channels.get("semantic", {}).get(node_id)
        row["semantic_cos"] = 0.0 if near is None else near[1]
        rows.append([row[name] for name in FEATURES])
    return np.asarray(rows, dtype=np.float64).reshape(len(ids), len(FEATURES))


def _check(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    for j, name in enumerate(FEATURES):
        tol = 1e-6 if name in COSINES else 1e-12
        np.testing.assert_allclose(got[:, j], want[:, j], rtol=0, atol=tol, err_msg=name)


def _check_memory(mem: Memory, queries: Sequence[str]) -> None:
    tenant = Tenant("u")
    for settings in SETTINGS:
        for query in queries:
            pool = build_pool(mem.store, mem.embedder, query, tenant, settings)
            _check(pool.features, _reference(mem, pool, settings))
            # candidates reached over an edge: the rest of the memory, three at a time
            rest = [nd for nd in mem.nodes(user="u") if nd.id not in set(pool.ids)][:3]
            grown = extend_pool(mem.store, tenant, pool, rest, settings)
            # the pool's rows stay as they were; the new rows see the pool and each other
            want = np.vstack([pool.features, _reference(mem, pool, settings, rest)[len(pool.ids) :]])
            want[len(pool.ids) :, FEATURES.index("neighbour")] = 0.0
            _check(grown.features, want)


def test_features_match_the_per_candidate_definitions(small: Memory) -> None:
    _check_memory(small, QUERIES)
    pool = build_pool(small.store, small.embedder, QUERIES[0], Tenant("u"), SETTINGS[0])
    assert pool.analysis.persons  # the speaker columns are exercised
    assert build_pool(small.store, small.embedder, QUERIES[2], Tenant("u"), SETTINGS[0]).analysis.times
    walked = build_pool(small.store, small.embedder, QUERIES[-1], Tenant("u"), SETTINGS[2])
    assert (walked.features[:, FEATURES.index("walk_rank")] > 10.0 / (10.0 + 4 * 2)).any()  # the walk ran


def test_features_match_on_a_locomo_conversation(locomo_dir: Path, minilm: Embedder, tmp_path: Path) -> None:
    conv = load_conversations(locomo_dir)[0]
    sessions = list(dict.fromkeys(o.session for o in conv.observations))[:3]
    observations = [o for o in conv.observations if o.session in sessions]
    with Memory(SQLiteStore.open(tmp_path / "locomo.db"), minilm, BuiltinController()) as mem:
        mem.add_many(observations, user="u")
        queries = [qa.question for qa in conv.questions][:12]
        _check_memory(mem, queries)


def test_a_full_width_question_mark_marks_a_cjk_question(tmp_path: Path) -> None:
    """A Chinese or Japanese question ends with "？" (a closing 」 aside): it asks, as an English
    turn ending with "?" does. Lengths stay whitespace words (a Chinese message is one: counting
    its characters lost under cross-validation, ``research.cjk_loco``)."""
    from dualmem.embed import HashingEmbedder

    texts = {
        "我已经从杭州滨江搬走了，现在住在深圳南山的科技园附近。": 0.0,
        "你还记得我家的猫叫什么吗？": 1.0,
        "「明日は何時に起きる？」": 1.0,
        "지금 어디 살아?": 1.0,
        "I moved to Shenzhen last month, near the science park": 0.0,
    }
    with Memory.open(tmp_path / "c.db", embedder=HashingEmbedder(64), answerer=None) as mem:
        for text in texts:
            mem.add(text, user="u", speaker="user", session="s1")
        pool = build_pool(
            mem.store, mem.embedder, "我住在哪里？ where do I live", Tenant("u"), PoolSettings(10, 2)
        )
        seen = set()
        for node_id in pool.ids:
            content, row = pool.rows[node_id].content, pool.row(node_id)
            assert row["question"] == texts[content], content
            assert row["log_len"] == math.log1p(len(content.split())) / 5.0, content
            seen.add(content)
        assert seen == set(texts)


def test_role_speakers_and_question_shaped_turns(tmp_path: Path) -> None:
    """User-assistant chats: the role a question asks about drives the speaker columns, and a turn
    that only asks a question is marked (so a learned scorer can rank answers above it)."""
    from dualmem.embed import HashingEmbedder

    turns = [
        ("assistant", "What kind of music do you usually play?"),
        ("user", "Mostly jazz piano, and some bossa nova on weekends."),
        ("assistant", "For jazz piano I suggest starting with Bill Evans voicings."),
    ]
    with Memory.open(tmp_path / "r.db", embedder=HashingEmbedder(64), answerer=None) as mem:
        for speaker, text in turns:
            mem.add(text, user="u", speaker=speaker, session="s1")
        asked = (("What music do I play?", "user"), ("What did you suggest for jazz?", "assistant"))
        for query, role in asked:
            pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(10, 2))
            for node_id in pool.ids:
                row, speaker = pool.row(node_id), pool.rows[node_id].speaker
                assert row["speaker"] == float(speaker == role), (query, speaker)
                assert row["other_speaker"] == float(speaker != role)
                assert row["question"] == float(pool.rows[node_id].content.endswith("?"))


def test_a_preference_question_reads_the_write_paths_preference_type(tmp_path: Path) -> None:
    from dualmem.embed import HashingEmbedder

    with Memory.open(tmp_path / "p.db", embedder=HashingEmbedder(64), answerer=None) as mem:
        liked = mem.add("I love dark roast coffee, the bitterer the better.", user="u", speaker="user")
        mem.add("The espresso machine needs descaling every month.", user="u", speaker="assistant")
        typed = mem.get(liked, user="u").types
        assert typed is not None
        assert typed.preference > 0.5
        for query, asks in (
            ("What coffee should you recommend for me?", True),
            ("When did I buy coffee?", False),
        ):
            pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(10, 2))
            assert pool.analysis.preference is asks
            for node_id in pool.ids:
                types = pool.rows[node_id].types
                want = types.preference if asks and types is not None else 0.0
                assert pool.row(node_id)["pref"] == want
            assert not asks or pool.row(liked)["pref"] > 0.5
