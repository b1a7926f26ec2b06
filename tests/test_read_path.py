"""The read path (paper §3.3, B.4-B.5): control-call bounds, stop rules and every hard limit."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import InvalidInput, Memory, Profile
from dualmem.config import Limits, ReadProfile
from dualmem.control.meter import Meter
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder
from dualmem.read.loop import Retriever
from dualmem.types import Tenant

TURNS = [
    ("Mira", "My old bicycle broke on the way to work."),
    ("Jon", "Oh no, was it the blue one you bought in Lisbon?"),
    ("Mira", "Yes, the chain snapped and the frame is bent."),
    ("Jon", "You could take the tram until you get a new one."),
    ("Mira", "I adopted a dog last month, her name is Pepper."),
    ("Jon", "Pepper is a lovely name. What breed is she?"),
    ("Mira", "She is a border collie and loves running in the park."),
    ("Jon", "I went hiking in the Alps with my sister in July."),
    ("Mira", "I love sushi, especially salmon nigiri."),
    ("Jon", "My favourite food is ramen from the shop near the station."),
    ("Mira", "I bought a new bicycle yesterday because my old one broke."),
    ("Jon", "Great, now you can ride to work again."),
]

WRITE_TABLE = {"relation.semantic": 0.9, "relation.same_episode": 0.8}


@pytest.fixture
def mem(minilm: Embedder, tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(
        tmp_path / "m.db", embedder=minilm, controller=ScriptedController(WRITE_TABLE, default=0.3)
    ) as m:
        m.add_many(
            [
                {
                    "text": t,
                    "speaker": s,
                    "at": f"2024-05-{10 + i // 6:02d}T10:{i:02d}:00Z",
                    "session": f"s{i // 6}",
                }
                for i, (s, t) in enumerate(TURNS)
            ],
            user="u",
        )
        yield m


def retriever(mem: Memory, table: dict[str, float], **read: object) -> tuple[Retriever, Meter, list[float]]:
    # a small pool and few anchors, so the memory holds more than the first round scores and the
    # loop has neighbours left to expand (the pool of 12 turns would otherwise be all of them)
    read = {"pool": 3, "pool_window": 0, "anchors": 3, **read}
    profile = ReadProfile(**read)  # type: ignore[arg-type]
    meter = Meter(ScriptedController(table, default=0.5))
    ticks: list[float] = [0.0]
    return Retriever(mem.store, mem.embedder, meter, profile, clock=lambda: ticks[0]), meter, ticks


KEEP_GOING = {
    "route.multi_hop_need": 1.0,
    "stop.evidence_sufficient": 0.0,
    "stop.continue_useful": 1.0,
    "stop.missing_evidence": 1.0,
}


def test_control_call_bounds(mem: Memory) -> None:
    r, meter, _ = retriever(mem, KEEP_GOING)
    found = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5)
    t = found.trace
    assert t.calls_by_purpose["routing"] == 1
    scoring_rounds = [rnd for rnd in t.rounds if rnd.candidates]
    assert t.calls_by_purpose.get("assessment", 0) <= len(t.rounds)
    assert t.calls_by_purpose["scoring"] == len(scoring_rounds)
    # one routing request, then per round at most one assessment and one scoring request
    assert t.controller_calls <= 1 + 2 * len(t.rounds)
    assert t.controller_calls == meter.stats.calls
    assert sum(t.budgets.values()) == 80  # the allocation of eq. 13-14, not what expansion left over
    assert set(t.budgets) == set(t.active)


def test_stop_sufficient(mem: Memory) -> None:
    table = {"stop.evidence_sufficient": 0.99, "stop.missing_evidence": 0.0, "stop.contradiction": 0.0}
    r, _, _ = retriever(mem, table)
    found = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5)
    assert found.trace.stop_reason == "sufficient"
    assert found.trace.calls_by_purpose == {"routing": 1, "scoring": 1, "assessment": 1}


def test_sufficiency_needs_no_missing_evidence(mem: Memory) -> None:
    table = {"stop.evidence_sufficient": 0.99, "stop.missing_evidence": 0.5, "stop.continue_useful": 0.1}
    r, _, _ = retriever(mem, table)
    assert r.search("bicycle", Tenant("u"), k=5).trace.stop_reason == "no_gain"


def test_stop_no_gain(mem: Memory) -> None:
    r, _, _ = retriever(mem, {"stop.evidence_sufficient": 0.2, "stop.continue_useful": 0.05})
    assert r.search("bicycle", Tenant("u"), k=5).trace.stop_reason == "no_gain"


def test_limit_depth(mem: Memory) -> None:
    table = dict(KEEP_GOING, **{"route.multi_hop_need": 0.0})  # D(q) = 1
    r, _, _ = retriever(mem, table)
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.depth == 1
    assert t.stop_reason == "depth"


def test_limit_visited(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING, limits=Limits(max_visited=6))
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.stop_reason == "visited_limit"
    assert t.visited >= 6


def test_limit_edges(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING, limits=Limits(max_edges=3))
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.stop_reason == "edge_limit"
    assert t.edges_inspected == 3


def test_limit_controller_calls(mem: Memory) -> None:
    r, meter, _ = retriever(mem, KEEP_GOING, limits=Limits(max_controller_calls=4))
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.stop_reason == "controller_limit"
    assert meter.stats.calls <= 4


def test_limit_time(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING, limits=Limits(time_budget_s=1.0))
    calls = itertools.count()

    def clock() -> float:  # the start is read at 0 s, every later reading is 0.6 s further
        return 0.6 * next(calls)

    r.clock = clock
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.stop_reason == "time_limit"


def test_exhausted_when_nothing_to_expand(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "one.db", embedder=minilm, controller=ScriptedController(default=0.1)) as m:
        m.add("A single lonely memory about a bicycle.", user="u")
        r, _, _ = retriever(m, KEEP_GOING)
        assert r.search("bicycle", Tenant("u"), k=5).trace.stop_reason == "exhausted"


def test_fixed_depth_ablation_skips_assessment(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING, fixed_depth=2)
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.stop_reason in {"fixed_depth", "exhausted"}
    assert "assessment" not in t.calls_by_purpose


def test_controller_off_is_plain_rrf(mem: Memory) -> None:
    r, meter, _ = retriever(mem, {}, controller_enabled=False)
    found = r.search("bicycle", Tenant("u"), k=3)
    assert found.trace.stop_reason == "controller_off"
    assert meter.stats.calls == 0
    fused = r.prior_ranking(r.pool("bicycle", Tenant("u")))  # RRF of the pool's rankings (eq. 16)
    assert found.ids == [i for i, _ in fused[:3]]


def test_view_switch_limits_expansion(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING, views=("entity",))
    t = r.search("bicycle", Tenant("u"), k=5).trace
    assert t.active == ("entity",)
    for rnd in t.rounds[1:]:
        assert all(c.view == "entity" for c in rnd.candidates)


def test_expansion_reaches_neighbours_through_edges(mem: Memory) -> None:
    r, _, _ = retriever(mem, KEEP_GOING)
    found = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=10)
    expanded = [e for e in found.evidence if e.via is not None]
    assert expanded, "graph expansion admitted no neighbour"
    for e in expanded:
        assert e.view == e.via.view  # type: ignore[union-attr]
        assert e.round >= 1


def test_tenant_isolation_in_search(mem: Memory) -> None:
    mem.add("Zed's secret: the vault code is 1234.", user="other")
    found = mem.search("vault code", user="u", k=10)
    assert all(e.node.tenant.user == "u" for e in found.evidence)
    assert mem.search("vault code", user="other", k=3).evidence[0].node.content.startswith("Zed")


def test_bad_queries(mem: Memory) -> None:
    with pytest.raises(InvalidInput):
        mem.search("   ", user="u")
    with pytest.raises(InvalidInput):
        mem.search("bicycle", user="u", k=0)


def test_empty_tenant_returns_no_evidence(mem: Memory) -> None:
    found = mem.search("bicycle", user="nobody")
    assert found.evidence == ()
    assert found.trace.stop_reason == "empty"


def test_profiles_carry_paper_numbers() -> None:
    p = Profile.paper()
    assert (p.write.k_candidates, p.write.theta_rel, p.write.consolidate_every) == (10, 0.60, 20)
    assert (p.read.budget, p.read.theta_act, p.read.gamma, p.read.beam) == (80, 0.10, 1.0, 10)
    assert (p.read.theta_suff, p.read.theta_cont) == (0.95, 0.15)
    lim = p.read.limits
    assert (lim.max_depth, lim.max_visited, lim.max_edges, lim.max_controller_calls, lim.time_budget_s) == (
        8,
        60,
        2400,
        16,
        15.0,
    )


def test_k_is_filled_when_the_loop_stops_early(mem: Memory) -> None:
    table = {"stop.evidence_sufficient": 0.99, "stop.missing_evidence": 0.0, "stop.contradiction": 0.0}
    r, _, _ = retriever(mem, table, beam=3, anchors=5, pool=len(TURNS))
    found = r.search("bicycle", Tenant("u"), k=len(TURNS))
    assert found.trace.stop_reason == "sufficient"
    ids = found.ids
    assert len(ids) == len(TURNS)  # every scored candidate first, then the pool's others by RRF
    assert len(set(ids)) == len(ids)
    scored = {c.node_id for rnd in found.trace.rounds for c in rnd.candidates}
    assert len(scored) == 5
    assert set(ids[: len(scored)]) == scored
    prior = [i for i, _ in r.prior_ranking(r.pool("bicycle", Tenant("u"))) if i not in scored]
    assert ids[len(scored) :] == prior[: len(TURNS) - len(scored)]


class _Recording:
    """A real embedder that also keeps every text it was asked to embed (what the read path sends)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.texts = inner, []  # type: ignore[var-annotated]
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts: object) -> object:
        self.texts.extend(texts)  # type: ignore[arg-type]
        return self.inner.embed(texts)  # type: ignore[arg-type]


def test_the_hand_set_path_embeds_the_query_without_the_named_speaker(tmp_path: Path) -> None:
    from dualmem.embed import HashingEmbedder

    spy = _Recording(HashingEmbedder(64))
    with Memory.open(tmp_path / "m.db", embedder=spy, answerer=None, profile=Profile.paper()) as m:  # type: ignore[arg-type]
        m.add("I painted a sunrise over the lake.", user="u", speaker="Caroline", session="s1")
        m.add("Nice! I went hiking instead.", user="u", speaker="Melanie", session="s1")
        spy.texts.clear()
        found = m.search("What did Caroline paint?", user="u", k=2)
    assert found.evidence
    assert spy.texts
    assert all("Caroline" not in t for t in spy.texts), spy.texts


# -- the loop's wiring: each test below fails when one line of ``Retriever`` is changed ----------------


def scripted_retriever(
    mem: Memory, table: dict[str, float], **read: object
) -> tuple[Retriever, ScriptedController]:
    """``retriever`` with the scripted controller returned too, so a test can read the batches it saw."""
    read = {"pool": 3, "pool_window": 0, "anchors": 3, **read}
    controller = ScriptedController(table, default=0.5)
    r = Retriever(mem.store, mem.embedder, Meter(controller), ReadProfile(**read))  # type: ignore[arg-type]
    return r, controller


@pytest.mark.parametrize("max_calls", [4, 5, 6, 7])
def test_a_step_starts_only_while_two_controller_requests_are_left(mem: Memory, max_calls: int) -> None:
    """Before an assessment and before a scoring round the loop keeps two requests in reserve (one
    round's assessment and scoring): with a controller that always asks for more, the search stops at
    ``max_controller_calls - 1`` requests, never at the limit and never past it."""
    r, meter, _ = retriever(mem, KEEP_GOING, limits=Limits(max_controller_calls=max_calls, max_visited=1000))
    t = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5).trace
    assert t.stop_reason == "controller_limit"
    assert t.controller_calls == meter.stats.calls == max_calls - 1
    assert t.calls_by_purpose["routing"] == 1
    assert t.calls_by_purpose["scoring"] == len([rnd for rnd in t.rounds if rnd.candidates])


def test_no_view_above_the_threshold_routes_to_the_most_needed_one(mem: Memory) -> None:
    """Every view's need below ``theta_act`` (eq. 12 would leave none active): the most needed view is
    used alone, with the whole expansion budget, so the loop can still expand."""
    route = {"route.semantic": 0.05, "route.temporal": 0.02, "route.causal": 0.01, "route.entity": 0.07}
    r, _, _ = retriever(mem, {**KEEP_GOING, **route})
    t = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5).trace
    assert t.active == ("entity",)
    assert t.budgets == {"entity": 80}
    expanded = [c for rnd in t.rounds[1:] for c in rnd.candidates]
    assert expanded
    assert {c.view for c in expanded} == {"entity"}


def test_every_active_view_gets_at_least_min_per_view(mem: Memory) -> None:
    """Eq. 13-14 with the profile's m: 30 each first, the other 20 of 80 by need (1.0 : 0.2)."""
    route = {"route.semantic": 1.0, "route.temporal": 0.0, "route.causal": 0.0, "route.entity": 0.2}
    r, _, _ = retriever(mem, {**KEEP_GOING, **route}, min_per_view=30, budget=80, gamma=1.0)
    t = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5).trace
    assert t.active == ("semantic", "entity")
    assert t.budgets == {"semantic": 47, "entity": 33}  # 30 + 16.67 -> 17, 30 + 3.33 -> 3


def test_system_one_is_shown_the_top_k_evidence_only(mem: Memory) -> None:
    """Assessment and scoring requests carry the K best evidence so far (``top_k``), best first; the
    beam admits more than K, so a missing cap would show more."""
    r, controller = scripted_retriever(mem, KEEP_GOING, top_k=2, beam=3)
    t = r.search("Why did Mira buy a new bicycle?", Tenant("u"), k=5).trace
    shown = [b for b in controller.batches if b.purpose in {"assessment", "scoring"}]
    assert [b.purpose for b in shown][:3] == ["scoring", "assessment", "scoring"]
    assert all(len(b.state["evidence"]) <= 2 for b in shown)  # type: ignore[arg-type]
    first_round = sorted(
        (c for c in t.rounds[0].candidates if c.admitted), key=lambda c: (-c.score, c.node_id)
    )
    assert len(first_round) == 3
    evidence = shown[1].state["evidence"]  # the first assessment: after round 0 admitted three
    assert [e["id"] for e in evidence] == [c.node_id for c in first_round[:2]]  # type: ignore[index,union-attr]
    assert shown[2].state["evidence"] == evidence  # the next scoring round is shown the same two
