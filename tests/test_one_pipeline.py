"""One read pipeline for every backend (issue 27): System One's answers decide what is returned.

The candidate pool (vector, lexical, context, session neighbours; graph expansion adds more) is
scored by System One, the final ranking is eq. 23-25 over those answers, and System One's
assessment stops the loop. The builtin decider answers candidate relevance from its learned scorer
through the FeatureSource; an LLM backend answers the same questions over the same pool.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from control_support import with_views
from dualmem import Memory, OpenOptions, Profile
from dualmem.config import Lambdas
from dualmem.control.builtin import BuiltinController
from dualmem.control.scripted import AutoController
from dualmem.embed import Embedder
from dualmem.learn import LinearRanker
from dualmem.plane import SQLiteStore
from dualmem.read.pool import FEATURES, PoolSettings, build_pool
from dualmem.types import Observation, Tenant
from fakes.openai_server import FakeOpenAIServer, position_biased

AT = dt.datetime(2023, 5, 8, 13, 0, tzinfo=dt.UTC)
PEOPLE = ("Mira", "Jon")
TOPICS = ("Pepper the dog", "the Alps", "salmon sushi", "the bicycle", "the pottery class", "Lisbon")
#: 42 turns in 6 sessions, each naming a topic shared with turns of other sessions (entity edges)
TURNS = [
    (PEOPLE[i % 2], f"In session {s} we talked about {TOPICS[(s + i) % len(TOPICS)]} and {TOPICS[i % 3]}.")
    for s in range(6)
    for i in range(7)
]
RANKER = LinearRanker(("lex_q", "speaker", "nb_lex", "vec"), (3.0, 0.5, 0.5, 1.0), -3.0, {"data": "test"})
RELEVANCE = Lambdas(similarity=0.0, relevance=1.0, relation=0.0, novelty=0.0, support=0.0)
QUERIES = ("What did Mira say about Pepper the dog?", "When did Jon talk about Lisbon and the Alps?")


def _open(path: Path, embedder: Embedder, profile: Profile, controller: object = None) -> Memory:
    ctl = controller if controller is not None else BuiltinController(ranker=RANKER)
    return Memory(SQLiteStore.open(path), embedder, ctl, answerer=None, profile=profile)  # type: ignore[arg-type]


@pytest.fixture
def db(hashing: Embedder, tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with _open(path, hashing, with_views()) as m:  # with the views' edges, for the expansion tests
        m.add_many(
            [
                Observation(t, at=AT + dt.timedelta(days=n // 7), speaker=p, session=f"s{n // 7}",
                            turn_id=f"D{n // 7}:{n % 7}")
                for n, (p, t) in enumerate(TURNS)
            ],
            user="u",
        )  # fmt: skip
    return path


def _ids(mem: Memory, query: str, k: int = 10) -> list[str]:
    return [e.node.id for e in mem.search(query, user="u", k=k).evidence]


@pytest.mark.parametrize("query", QUERIES)
def test_the_ranking_is_system_ones_relevance(db: Path, hashing: Embedder, query: str) -> None:
    """With eq. 25's recency term and the versions rule off, the builtin profile's final score is its
    relevance answer (λ = (0, 1, 0, 0, 0)): the evidence comes in the order of the learned scorer
    over the pool."""
    profile = Profile.builtin().with_(read__recency_weight=0.0, read__prefer_current=False)
    with _open(db, hashing, profile) as mem:
        pool = build_pool(mem.store, mem.embedder, query, Tenant("u"), PoolSettings(50, 2))
        scores = RANKER.score_each(pool.features, FEATURES)
        order = [pool.ids[i] for i in sorted(range(len(pool.ids)), key=lambda i: (-scores[i], pool.ids[i]))]
        assert len(order) == len(TURNS)
        for k in (1, 5, 10, 30):
            found = mem.search(query, user="u", k=k)
            assert [e.node.id for e in found.evidence] == order[:k]
            assert [e.score for e in found.evidence] == pytest.approx(sorted(scores, reverse=True)[:k])
        assert found.trace.calls_by_purpose["scoring"] >= 1


def test_a_random_system_one_changes_the_results(db: Path, hashing: Embedder) -> None:
    with _open(db, hashing, Profile.builtin()) as mem:
        learned = {q: _ids(mem, q) for q in QUERIES}
    for seed in (1, 2):
        with _open(db, hashing, Profile.builtin(), AutoController(seed)) as mem:
            random = {q: _ids(mem, q) for q in QUERIES}
        assert all(random[q] != learned[q] for q in QUERIES), seed


def test_other_relevance_answers_reorder_the_same_pool(db: Path, hashing: Embedder) -> None:
    """Two scorers over the same pool: each one's favourite comes first (the answers are used)."""
    by_lex = LinearRanker(("lex_q",), (6.0,), -3.0)
    by_short = LinearRanker(("log_len",), (-6.0,), 0.0)
    profile = Profile.builtin().with_(read__recency_weight=0.0)
    tops = []
    for ranker in (by_lex, by_short):
        with _open(db, hashing, profile, BuiltinController(ranker=ranker)) as mem:
            tops.append(_ids(mem, QUERIES[0], k=5))
    assert tops[0] != tops[1]


def test_expanded_nodes_are_scored_by_system_one(db: Path, hashing: Embedder) -> None:
    """A pool smaller than the memory: expansion over the views adds candidates, System One scores
    them in later rounds, and they compete on that score (kept with the edge that reached them)."""
    profile = with_views().with_(
        read__pool=2, read__pool_window=0, read__theta_suff=1.01, read__theta_cont=0.0
    )
    with _open(db, hashing, profile) as mem:
        found = mem.search(QUERIES[1], user="u", k=len(TURNS))
    reached = [e for e in found.evidence if e.round > 0]
    assert reached, found.trace.stop_reason
    assert all(e.via is not None and e.view == e.via.view for e in reached)
    later = [c for rnd in found.trace.rounds[1:] for c in rnd.candidates]
    assert {e.node.id for e in reached} <= {c.node_id for c in later}
    scores = [e.score for e in found.evidence]
    assert scores == sorted(scores, reverse=True)


def test_expansion_reads_only_the_strongest_edges_per_node(db: Path, hashing: Embedder) -> None:
    counts = {}
    for per_node in (None, 2):
        profile = with_views().with_(
            read__pool=2, read__pool_window=0, read__edges_per_node=per_node, read__theta_suff=1.01
        )
        with _open(db, hashing, profile) as mem:
            counts[per_node] = mem.search(QUERIES[1], user="u", k=10).trace.edges_inspected
    assert 0 < counts[2] < counts[None]


def test_zero_weight_terms_are_not_asked(db: Path, hashing: Embedder) -> None:
    """The builtin profile weighs only relevance (λ2): the scoring request asks only that question."""
    from dualmem.control.questions import Batch, BatchResult

    seen: list[set[str]] = []

    class Spy(BuiltinController):
        def decide(self, batch: Batch) -> BatchResult:
            if batch.purpose == "scoring":
                seen.append({q.key for q in batch.questions.values()})
            return super().decide(batch)

    with _open(db, hashing, Profile.builtin(), Spy(ranker=RANKER)) as mem:
        mem.search(QUERIES[0], user="u", k=5)
    with _open(db, hashing, Profile.dualmem(), Spy(ranker=RANKER)) as mem:
        mem.search(QUERIES[0], user="u", k=5)
    assert seen[0] == {"traverse.relevance"}
    assert seen[-1] == {
        "traverse.relevance",
        "traverse.relation_usefulness",
        "traverse.new_information",
        "traverse.supports_current_evidence",
    }


# -- an LLM backend answers the same questions over the same pool ----------------------------------

_CANDIDATE = re.compile(r"Does candidates\[(\d+)\]\.content contain a fact needed")


def _favouring(word: str):  # type: ignore[no-untyped-def]
    """A fake model that finds a candidate relevant exactly when its content has ``word``."""

    def truth(prompt: str, option: str) -> float:
        state_text, _, question = prompt.partition("\n\nQuestion: ")
        found = _CANDIDATE.search(question)
        if found is None:
            return 0.0
        state = json.loads(state_text.partition("State (JSON):\n")[2])
        holds = word in state["candidates"][int(found.group(1))]["content"]
        sign = 1.0 if option.startswith("Yes:") else -1.0
        return 4.0 * sign * (1.0 if holds else -1.0)

    return truth


def test_an_llm_backends_answers_reorder_the_results(db: Path) -> None:
    from dualmem.embed import HashingEmbedder

    tops = {}
    for word in ("sushi", "pottery"):
        with FakeOpenAIServer(chat=position_biased(_favouring(word), bias=0.0)) as server:
            opts = OpenOptions(controller={"base_url": server.base_url, "model": "m"})
            # the whole pool scored once by its relevance answers (as the builtin profile does)
            profile = Profile.dualmem().with_(
                read__expansion=False, read__anchors=None, read__lambdas=RELEVANCE
            )
            with Memory.open(
                db, embedder=HashingEmbedder(), controller="llm", answerer=None, profile=profile, options=opts
            ) as mem:
                found = mem.search("Where did they travel together?", user="u", k=5)
        tops[word] = [e.node.content for e in found.evidence]
        assert found.trace.calls_by_purpose["scoring"] == 1
    assert all("sushi" in c for c in tops["sushi"][:2]), tops["sushi"]
    assert all("pottery" in c for c in tops["pottery"][:2]), tops["pottery"]


def test_a_random_system_one_lowers_dev_recall(locomo_dir: Path, tmp_path: Path) -> None:
    """On a LoCoMo dev conversation, the builtin System One's answers are worth >= 0.2 R@10 over
    random answers to the same questions on the same memory (the hashing embedder keeps it fast)."""
    from dualmem.bench.metrics import recall_at_k
    from dualmem.conversations import load_conversations
    from dualmem.embed import HashingEmbedder

    (conv,) = [c for c in load_conversations(locomo_dir) if c.id == "conv-30"]
    path = tmp_path / "c.db"
    profile = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(path, embedder=HashingEmbedder(), answerer=None, profile=profile) as mem:
        mem.add_many(list(conv.observations), user="c")
    questions = [q for q in conv.questions if q.category != 5 and q.evidence][:60]

    def recall(controller: object) -> float:
        with Memory.open(path, embedder=HashingEmbedder(), controller=controller, answerer=None) as mem:  # type: ignore[arg-type]
            hits = []
            for q in questions:
                turns = [e.node.turn_id for e in mem.search(q.question, user="c", k=10).evidence]
                hits.append(recall_at_k(turns, q.evidence, 10) or 0.0)  # type: ignore[arg-type]
        return sum(hits) / len(hits)

    learned, random = recall("builtin"), recall(AutoController(3))
    assert learned - random >= 0.2, (learned, random)


def test_a_whole_pool_round_still_assesses_and_may_expand(db: Path, hashing: Embedder) -> None:
    """max_visited bounds what expansion adds: a first round that scores more candidates than the
    limit (the builtin profile scores the whole pool) still asks System One whether to go on."""
    from dualmem.config import Limits

    profile = Profile.builtin().with_(read__limits=Limits(max_visited=10), read__theta_suff=1.01)
    with _open(db, hashing, profile) as mem:
        t = mem.search(QUERIES[1], user="u", k=10).trace
    assert t.calls_by_purpose.get("assessment", 0) >= 1, t.stop_reason
    assert len(t.rounds[0].candidates) > 10
    assert t.visited - len(t.rounds[0].candidates) <= 10
