"""Tests that pin the wiring of the paper's maths through the real read and write paths.

The pure formulas are golden-tested in ``test_scoring.py``; these check that the evidence loop,
candidate discovery, relation construction and consolidation actually apply them (each test here
kills a hand-made mutant of issue 9: see docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.config import WriteProfile
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch
from dualmem.control.scripted import AutoController, ScriptedController
from dualmem.embed import Embedder, HashingEmbedder
from dualmem.plane.sqlite import SQLiteStore
from dualmem.read.loop import Retriever
from dualmem.read.trace import Retrieval
from dualmem.text.temporal import query_time_focus
from dualmem.types import Node, Tenant
from dualmem.write.candidates import discover
from dualmem.write.consolidate import Consolidator

TURNS = [
    ("Mira", "My old bicycle broke on the way to work."),
    ("Jon", "Was it the blue bicycle you bought in Lisbon?"),
    ("Mira", "Yes, the chain of the bicycle snapped."),
    ("Jon", "You could take the tram until you get a new bicycle."),
    ("Mira", "I adopted a dog last month, her name is Pepper."),
    ("Mira", "I bought a new bicycle yesterday because my old one broke."),
    ("Jon", "Great, now you can ride the bicycle to work again."),
    ("Mira", "Pepper runs next to my bicycle in the park."),
]
U = Tenant("u")
WRITE = {"relation.semantic": 0.9, "relation.time": "unknown", "consolidate.representation": "uncertain"}


def build(path: Path, embedder: Embedder, controller: object, profile: Profile) -> Memory:
    mem = Memory(SQLiteStore.open(path), embedder, controller, profile=profile)  # type: ignore[arg-type]
    mem.add_many(
        [
            {"text": t, "speaker": s, "at": f"2024-05-{10 + i:02d}T10:00:00Z", "session": f"s{i // 4}"}
            for i, (s, t) in enumerate(TURNS)
        ],
        user="u",
    )
    return mem


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    profile = Profile.dualmem().with_(write__consolidation="off")
    m = build(
        tmp_path / "m.db",
        HashingEmbedder(128),
        ScriptedController(WRITE, default=0.2),
        profile,
    )
    yield m
    m.close()


def recompute(mem: Memory, retriever: Retriever, query: str, seed: int) -> Retrieval:
    """Every anchor's score in the trace equals eq. 23-25 recomputed by hand; the final evidence
    applies the versions rule (the demotion of a superseded fact, its current version lifted)."""
    found = retriever.search(query, U, k=10)
    t = found.trace
    profile = retriever.profile
    anchors = dict(t.anchors)
    top = t.anchors[0][1]
    nodes = mem.store.get_nodes(list(anchors), U)
    now = max(n.at for n in nodes.values() if n.at is not None)
    best_need = max(t.route[g] for g in t.active)
    assert t.rounds
    assert t.rounds[0].round == 0
    for sc in t.rounds[0].candidates:
        node = nodes[sc.node_id]
        pi_e = anchors[sc.node_id] / top
        lam = profile.lambdas
        s = (
            lam.similarity * sc.similarity
            + lam.relevance * sc.relevance
            + lam.relation * best_need * sc.relation_usefulness
            + lam.novelty * sc.new_information
            + lam.support * (pi_e + sc.support) / 2
        ) / lam.total()  # eq. 23
        rho = 1.0 / (1.0 + max(0.0, (now - node.at).total_seconds()) / 86_400.0)  # eq. 24
        r = t.route["recency_importance"]
        w = profile.recency_weight * r
        s = (s + w * rho) / (1 + w)  # eq. 25
        assert sc.score == pytest.approx(s, abs=1e-9), (seed, sc)
    # the versions rule at the end (read.versions): a superseded fact's current version scores at
    # least what the superseded one scored before, and the superseded one comes right after it
    final = {e.node.id: e for e in found.evidence}
    scored = {sc.node_id: sc.score for rnd in t.rounds for sc in rnd.candidates}
    for node_id, e in final.items():
        if e.node.valid_to is not None and profile.prefer_current and query_time_focus(query) != "past":
            newer = [x for x in mem.store.edges_of(node_id, ["temporal"]) if x.label == "superseded_by"]
            newer = [x for x in newer if x.source == node_id]
            assert newer
            assert all(x.target in final and final[x.target].score >= scored[node_id] - 1e-12 for x in newer)
            above = [o.score for i, o in final.items() if i != node_id and o.score > e.score]
            assert all(final[x.target].score > e.score for x in newer)
            assert min(above) == max(final[x.target].score for x in newer)  # nothing in between
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_anchor_scores_are_eq_23_to_25_with_the_demotion(mem: Memory, seed: int) -> None:
    old = next(n for n in mem.store.iter_nodes(U) if "chain" in n.content)
    mem.update(old.id, "Yes, the chain of the bicycle snapped and the frame bent.", user="u")
    assert mem.store.get_node(old.id).valid_to is not None  # type: ignore[union-attr]
    meter = Meter(AutoController(seed))
    r = Retriever(mem.store, mem.embedder, meter, Profile.dualmem().read)
    found = recompute(mem, r, "What happened to the chain of Mira's bicycle?", seed)
    assert old.id in {e.node.id for e in found.evidence}  # the demotion was checked on it


def test_recency_importance_moves_scores(mem: Memory) -> None:
    base = {"stop.evidence_sufficient": 1.0, "stop.missing_evidence": 0.0, "stop.contradiction": 0.0}
    scores = []
    for r in (0.0, 1.0):
        meter = Meter(ScriptedController({**base, "route.recency_importance": r}, default=0.5))
        trace = (
            Retriever(mem.store, mem.embedder, meter, Profile.dualmem().read).search("bicycle", U, k=5).trace
        )
        scores.append({sc.node_id: sc.score for sc in trace.rounds[0].candidates})
    # eq. 25 with r(q) = 1 lifts the newest memory relative to the oldest one
    newest = max(scores[0], key=lambda i: mem.store.get_node(i).at)  # type: ignore[union-attr,return-value]
    oldest = min(scores[0], key=lambda i: mem.store.get_node(i).at)  # type: ignore[union-attr,return-value]
    assert scores[1][newest] - scores[1][oldest] > scores[0][newest] - scores[0][oldest]


def test_expansion_spends_the_per_view_budgets(mem: Memory) -> None:
    table = {
        "route.semantic": 0.9, "route.temporal": 0.0, "route.causal": 0.0, "route.entity": 0.0,
        "route.multi_hop_need": 1.0, "stop.evidence_sufficient": 0.0, "stop.continue_useful": 1.0,
        "stop.missing_evidence": 1.0,
    }  # fmt: skip
    meter = Meter(ScriptedController(table, default=0.5))
    profile = replace(Profile.dualmem().read, budget=3, anchors=2)
    trace = Retriever(mem.store, mem.embedder, meter, profile).search("bicycle", U, k=5).trace
    assert trace.budgets == {"semantic": 3}
    expanded = [sc for rnd in trace.rounds for sc in rnd.candidates if sc.view != "anchor"]
    assert 0 < len(expanded) <= 3  # never more neighbours than b_semantic


def test_temporal_queries_send_the_b5_fields(mem: Memory) -> None:
    for temporal, expected in ((0.9, True), (0.0, False)):
        ctl = ScriptedController({"route.temporal": temporal, "stop.continue_useful": 0.0}, default=0.5)
        Retriever(mem.store, mem.embedder, Meter(ctl), Profile.dualmem().read).search(
            "When did it break?", U, k=5
        )
        sent = [b for b in ctl.batches if b.purpose in ("scoring", "assessment")]
        assert sent
        for batch in sent:
            items = [*batch.state.get("evidence", []), *batch.state.get("candidates", [])]  # type: ignore[misc]
            assert items
            for item in items:
                assert ("temporal_references" in item) is expected, batch.purpose
                assert ("timestamp_role" in item) is expected


def test_lexical_signal_counts_in_candidate_discovery(tmp_path: Path) -> None:
    """A memory that shares only words (no vector, entity or time signal) is still a candidate."""
    store = SQLiteStore.open(tmp_path / "c.db")
    emb = HashingEmbedder(64)
    store.bind_embedder(emb.name, emb.dim)
    texts = ["zebra quantum harmonica", "completely unrelated words here"]
    nodes = [
        Node(id=f"n{i}", tenant=U, content=t, at=None, embedding=emb.embed([t])[0])
        for i, t in enumerate(texts)
    ]
    store.put_nodes(nodes)
    new = Node(id="new", tenant=U, content="zebra quantum harmonica", at=None, embedding=None)
    only_lexical = WriteProfile(cand_vector=0.0, cand_entity=0.0, cand_time=0.0, cand_lexical=0.5)
    found = discover(store, new, profile=only_lexical)
    assert [c.node.id for c in found][:1] == ["n0"]
    assert found[0].score == pytest.approx(0.5)  # rank 0: cand_lexical / (1 + 0) ** 0.5


def test_relation_score_at_theta_rel_creates_the_edge(tmp_path: Path) -> None:
    """Eq. 9: P(g | v, u) >= θ_rel -- a score of exactly θ_rel creates the edge."""
    ctl = ScriptedController({"relation.semantic": 0.60, "relation.time": "unknown"}, default=0.1)
    profile = Profile.dualmem().with_(write__consolidation="off")
    mem = Memory(SQLiteStore.open(tmp_path / "r.db"), HashingEmbedder(64), ctl, profile=profile)
    a = mem.add("My old bicycle broke.", user="u")
    b = mem.add("I bought a new bicycle.", user="u")
    semantic = [e for e in mem.store.edges_of(b, ["semantic"]) if e.label == "related"]
    assert [(e.source, e.target, e.weight) for e in semantic] == [(b, a, 0.60)]
    mem.close()


@pytest.mark.parametrize(("contradiction", "obsolescence"), [(0.9, 0.1), (0.1, 0.9)])
def test_consolidation_supersedes_on_contradiction_or_obsolescence(
    tmp_path: Path, contradiction: float, obsolescence: float
) -> None:
    table = {
        "consolidate.contradiction": contradiction,
        "consolidate.obsolescence": obsolescence,
        "consolidate.representation": "keep_separate",
        "relation.time": "unknown",
    }
    ctl = ScriptedController(table, default=0.1)
    # a pass supersedes only when the write path asks no relation questions (else the write does)
    profile = Profile.dualmem().with_(write__consolidation="off", write__relations_enabled=False)
    mem = Memory(SQLiteStore.open(tmp_path / "s.db"), HashingEmbedder(64), ctl, profile=profile)
    old = mem.add("I love sushi.", user="u", at="2024-01-01T10:00:00Z")
    new = mem.add("I no longer eat sushi.", user="u", at="2024-06-01T10:00:00Z")
    report = Consolidator(mem.store, mem.embedder, mem.meter, profile.write).run(U)
    assert report.superseded == ((old, new),)
    with_relations = Consolidator(mem.store, mem.embedder, mem.meter, Profile.dualmem().write)
    assert with_relations.run(U, [new]).superseded == ()  # already judged, and never by a pass
    paper = Consolidator(mem.store, mem.embedder, mem.meter, Profile.paper().write)
    assert paper.run(U, [new]).superseded == ()  # the paper never supersedes
    mem.close()


def test_update_clears_the_answer_cache(tmp_path: Path) -> None:
    """After ``update`` no cached System-One answer survives: the same query is asked again."""
    ctl = ScriptedController(
        {"relation.time": "unknown", "consolidate.representation": "uncertain"}, default=0.5
    )
    profile = Profile.dualmem().with_(controller_cache=64, write__consolidation="off")
    mem = Memory(SQLiteStore.open(tmp_path / "u.db"), HashingEmbedder(64), ctl, profile=profile)
    node = mem.add("My bicycle is blue.", user="u")
    mem.search("What colour is the bicycle?", user="u")
    routed = sum(1 for b in ctl.batches if b.purpose == "routing")
    mem.search("What colour is the bicycle?", user="u")
    assert sum(1 for b in ctl.batches if b.purpose == "routing") == routed  # cached
    mem.update(node, "My bicycle is red.", user="u")
    mem.search("What colour is the bicycle?", user="u")
    assert sum(1 for b in ctl.batches if b.purpose == "routing") == routed + 1
    mem.close()


def test_the_answer_cache_key_includes_the_state() -> None:
    """Two batches with the same questions but different states are two requests, two answers."""
    ctl = AutoController(seed=4)
    meter = Meter(ctl, cache_size=16)
    from dualmem.control import catalog

    a = Batch({"query": "first"}, catalog.routing_questions(), "routing")
    b = Batch({"query": "second"}, catalog.routing_questions(), "routing")
    ra, rb = meter.ask(a), meter.ask(b)
    assert not rb.cached
    assert ra.result.answers != rb.result.answers
    assert meter.ask(a).cached
    assert meter.stats.by_purpose["routing"].calls == 2


def test_fill_uses_runners_up_before_anchors(mem: Memory) -> None:
    """With W smaller than K, the K returned are the admitted beam, then scored runners-up."""
    table = {"stop.evidence_sufficient": 1.0, "stop.missing_evidence": 0.0, "stop.contradiction": 0.0}
    profile = replace(Profile.dualmem().read, beam=2)
    meter = Meter(ScriptedController(table, default=0.5))
    found = Retriever(mem.store, mem.embedder, meter, profile).search("bicycle", U, k=6)
    scored = {sc.node_id: sc.score for sc in found.trace.rounds[0].candidates}
    assert len(scored) >= 6
    expected = sorted(scored, key=lambda i: (-scored[i], i))[:6]
    assert [e.node.id for e in found.evidence] == expected
    assert [e.score for e in found.evidence] == pytest.approx([scored[i] for i in expected])


def test_expanded_candidates_carry_pi_e_times_reach(mem: Memory) -> None:
    """A neighbour's π_e is the edge weight times its source's score over the best score (reach)."""
    table = {"route.multi_hop_need": 1.0, "stop.evidence_sufficient": 0.0, "stop.continue_useful": 1.0}
    ctl = ScriptedController({**table, "stop.missing_evidence": 1.0}, default=0.5)
    profile = replace(Profile.dualmem().read, anchors=1, beam=2)
    found = Retriever(mem.store, mem.embedder, Meter(ctl), profile).search("bicycle", U, k=5)
    rounds = [r for r in found.trace.rounds if r.candidates]
    batches = [b for b in ctl.batches if b.purpose == "scoring"]
    assert len(batches) == len(rounds) >= 3
    evidence: dict[str, float] = {}
    checked = 0
    for prev, batch in zip(rounds, batches[1:], strict=False):
        beam = {sc.node_id: sc.score for sc in prev.candidates if sc.admitted}
        evidence |= beam
        top = max(evidence.values())
        for cand in batch.state["candidates"]:  # type: ignore[union-attr]
            src, dst = cand["source"], cand["target"]  # type: ignore[index]
            source = src if src in beam else dst
            edge = next(
                e
                for e in mem.store.edges_of(source, [cand["view"]])  # type: ignore[index, list-item]
                if {e.source, e.target} == {src, dst} and e.label == cand["label"]  # type: ignore[index]
            )
            expected = edge.weight * beam[source] / top
            assert cand["edge_weight"] == pytest.approx(expected, abs=1e-4)  # type: ignore[index]
            checked += beam[source] < top - 1e-3
    assert checked  # some neighbours of a weaker source (reach < 1) were checked


def test_the_paper_profile_passes_only_admitted_evidence(mem: Memory) -> None:
    table = {"stop.evidence_sufficient": 1.0, "stop.missing_evidence": 0.0, "stop.contradiction": 0.0}
    profile = replace(Profile.paper().read, beam=2)
    meter = Meter(ScriptedController(table, default=0.5))
    found = Retriever(mem.store, mem.embedder, meter, profile).search("bicycle", U, k=6)
    admitted = [sc.node_id for sc in found.trace.rounds[0].candidates if sc.admitted]
    assert sorted(e.node.id for e in found.evidence) == sorted(admitted)
    assert len(found.evidence) == 2
