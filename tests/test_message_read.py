"""A long query understood before it is searched (issue 47): clauses, their labels, per-need search."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder
from dualmem.errors import InvalidInput
from dualmem.plane import SQLiteStore
from dualmem.read.message import WEIGHTS, MessagePlan, MessageWeights, understand
from dualmem.read.pool import PoolSettings, build_pool
from dualmem.read.sessions import add_up, diversify, group_sessions
from dualmem.read.trace import ClauseDecision, render_trace
from dualmem.text.clauses import cues, split
from dualmem.types import Evidence, Node, Observation, Tenant

AT = dt.datetime(2024, 3, 2, 10, 0, tzinfo=dt.UTC)
TURNS = [
    ("user", "We finally moved to Utrecht, the flat in Lombok has a balcony."),
    ("assistant", "Congratulations on the move to Lombok!"),
    ("user", "My cat Biscuit loves sitting on the balcony in the sun."),
    ("assistant", "Biscuit sounds like a happy cat."),
    ("user", "For the sourdough I feed the starter twice a day with rye flour."),
    ("assistant", "Rye flour keeps a starter lively."),
    ("user", "The marathon is in October, I run four times a week."),
    ("assistant", "Four runs a week is a solid base for October."),
]


# -- splitting and cues ------------------------------------------------------------------------------


def test_split_cuts_sentences_in_english_and_chinese() -> None:
    assert split("When did I move to Utrecht?") == ("When did I move to Utrecht?",)
    assert split("Hi! When did I move? Thanks.") == ("Hi!", "When did I move?", "Thanks.")
    assert split("你好呀！今天很忙。When did I move? 谢谢啦！") == (
        "你好呀！",
        "今天很忙。",
        "When did I move?",
        "谢谢啦！",
    )
    assert split("Priya loved it, can you make a shopping list?") == (
        "Priya loved it",
        "can you make a shopping list?",
    )


def test_split_keeps_abbreviations_and_initials() -> None:
    assert len(split("Would Tim enjoy books by C. S. Lewis?")) == 1
    assert len(split("What areas of the U.S. has John been to?")) == 1
    assert len(split("Dr. Smith said so.")) == 1
    assert split("   ") == ()


def test_cues_tell_needs_from_chatter() -> None:
    assert cues("When did Caroline go to the support group?").question == 1.0
    assert cues("Can you turn it into a shopping list").request == 1.0
    assert cues("Make it like last time").past_ref == 1.0
    assert cues("上次你说的那个方法").past_ref == 1.0
    assert cues("Thanks a lot, no rush!").chatter > 0.5
    assert cues("谢谢啦！").chatter > 0.5
    assert cues("When did Caroline go to the support group?").chatter == 0.0
    assert cues("We moved to Utrecht in May 2023.").named == 1.0
    assert cues("We moved to Utrecht in May 2023.").time == 1.0


# -- the System-One decision ---------------------------------------------------------------------------


def _asked(ctl: BuiltinController) -> tuple[list[Batch], object]:
    seen: list[Batch] = []

    def ask(batch: Batch) -> BatchResult:
        seen.append(batch)
        return ctl.decide(batch)

    return seen, ask


def test_a_one_clause_query_is_not_asked_about() -> None:
    seen, ask = _asked(BuiltinController())
    assert understand("Where did I move to?", ask) is None  # type: ignore[arg-type]
    assert seen == []


def test_chatter_is_dropped_and_the_need_searched() -> None:
    seen, ask = _asked(BuiltinController())
    message = "Morning! Coffee is finally kicking in. Where did I move to last year? Thanks a lot!"
    plan = understand(message, ask)  # type: ignore[arg-type]
    assert plan is not None
    assert len(seen) == 1
    assert seen[0].purpose == "message"
    assert seen[0].state == {"message": message, "clauses": list(split(message))}
    assert [c.label for c in plan.clauses] == ["chatter", "chatter", "need", "chatter"]
    assert plan.focus == "Where did I move to last year?"
    assert plan.extra == ((message, WEIGHTS.whole),)


def test_several_needs_get_their_own_lists_within_the_budget() -> None:
    _, ask = _asked(BuiltinController())
    plan = understand("Hi! What is my cat called? Also, when is my marathon?", ask)  # type: ignore[arg-type]
    assert plan is not None
    assert plan.needs == ("What is my cat called?", "Also, when is my marathon?")
    assert [t for t, w in plan.extra if w == 1.0] == list(plan.needs)
    clauses = tuple(ClauseDecision(f"Need {i}?", "need", {"need": 1.0}) for i in range(6))
    assert len(MessagePlan("m", clauses).extra) == 1 + 4  # the whole message, then 4 of 6 needs


def test_a_model_backend_decides_the_labels() -> None:
    """The labels are System One's: a backend that calls every clause a need searches them all."""
    ctl = ScriptedController({"message.clause": "need"})
    plan = understand("Hi! Where did I move to? Thanks!", ctl.decide)
    assert plan is not None
    assert plan.focus == "Hi! Where did I move to? Thanks!"
    assert len(plan.extra) == 3  # three needs (the focus is the whole message: no whole list)
    ctl = ScriptedController({"message.clause": "chatter", "message.clause@1": "need"})
    plan = understand("Hi! Where did I move to? Thanks!", ctl.decide)
    assert plan is not None
    assert plan.focus == "Where did I move to?"


# -- the read path -------------------------------------------------------------------------------------


@pytest.fixture
def mem(hashing: Embedder, tmp_path: Path) -> Iterator[Memory]:
    with Memory(
        SQLiteStore.open(tmp_path / "m.db"),
        hashing,
        BuiltinController(),
        answerer=None,
        profile=Profile.builtin(),
    ) as m:
        m.add_many(
            [
                Observation(t, at=AT, speaker=s, session="s1", turn_id=f"s1:{i}")
                for i, (s, t) in enumerate(TURNS)
            ],
            user="u",
        )
        yield m


def test_search_shows_the_clauses_in_the_trace(mem: Memory) -> None:
    found = mem.search("Hey, hope you're well! What is my cat called? Thanks a lot!", user="u", k=3)
    t = found.trace
    assert t.calls_by_purpose["message"] == 1
    assert [c.label for c in t.message] == ["chatter", "need", "chatter"]
    assert t.focus == "What is my cat called?"
    assert t.query == "Hey, hope you're well! What is my cat called? Thanks a lot!"
    assert t.to_json()["focus"] == "What is my cat called?"
    assert "[need" in render_trace(t)
    clean = mem.search("What is my cat called?", user="u", k=3)
    assert "message" not in clean.trace.calls_by_purpose
    assert clean.trace.message == ()
    assert "message" not in clean.trace.to_json()
    assert [e.node.id for e in found.evidence] == [e.node.id for e in clean.evidence]


def test_each_need_of_a_message_reaches_the_pool(mem: Memory) -> None:
    """The whole message's lists are led by its chatter; each need's own lists (``more``) bring
    that need's memory in, and the fused lists stay cut to the pool's depth."""
    store, emb, tenant = mem.store, mem.embedder, Tenant("u")
    ids = {n.turn_id: n.id for n in mem.nodes(user="u")}
    message = (
        "Congratulations to me, a happy sunny balcony day in Utrecht, Lombok, Biscuit and the cat! "
        "What flour for the sourdough starter? How often to run for the marathon?"
    )
    settings = PoolSettings(2, 0)
    plain = build_pool(store, emb, message, tenant, settings)
    more = (("What flour for the sourdough starter?", 1.0), ("How often to run for the marathon?", 1.0))
    fused = build_pool(store, emb, message, tenant, settings, more)
    assert not {ids["s1:4"], ids["s1:6"]} <= set(plain.ids)
    assert {ids["s1:4"], ids["s1:6"]} <= set(fused.ids)
    assert fused.context is not None
    assert all(len(r) <= 2 for r in fused.context.ranks)
    assert fused.context.qvecs is not None
    assert len(fused.context.qvecs) == 3


# -- sessions ------------------------------------------------------------------------------------------


def _ev(node_id: str, session: str | None, score: float) -> Evidence:
    return Evidence(Node(node_id, Tenant("u"), f"text {node_id}", AT, session=session), score, "anchor")


def test_several_turns_of_a_session_add_up() -> None:
    found = [
        _ev("a1", "A", 0.9),
        _ev("b1", "B", 0.8),
        _ev("b2", "B", 0.7),
        _ev("b3", "B", 0.6),
        _ev("x", None, 0.5),
    ]
    hits = group_sessions(found, 3)
    assert [h.session for h in hits] == ["B", "A", "memory:x"]
    assert hits[0].score == pytest.approx(0.8 + 0.5 * 0.7 + 0.25 * 0.6)
    assert [e.node.id for e in hits[0].evidence] == ["b1", "b2", "b3"]
    assert len(group_sessions(found, 1)) == 1
    assert group_sessions(found, 3, per_session=1)[0].evidence == (found[1],)
    with pytest.raises(ValueError, match="at least 1"):
        group_sessions(found, 0)


def test_search_grouped_by_session(mem: Memory) -> None:
    found = mem.search("Where do Biscuit and I live now?", user="u", k=2, group="session")
    assert len(found.sessions) == 1  # every turn of the fixture is in session s1
    assert found.sessions[0].session == "s1"
    assert found.evidence == found.sessions[0].evidence
    assert len(found.evidence) == 3
    assert mem.search("Where do I live?", user="u", k=2).sessions == ()
    with pytest.raises(InvalidInput):
        mem.search("Where do I live?", user="u", group="day")  # type: ignore[arg-type]


def test_context_joins_the_focus_when_the_need_says_too_little() -> None:
    ctl = BuiltinController()
    vague = understand(
        "Thinking about a half marathon since the 10k went so well. Is spring too soon?", ctl.decide
    )
    assert vague is not None
    assert not vague.self_contained
    assert vague.focus == "Thinking about a half marathon since the 10k went so well. Is spring too soon?"
    news = understand(
        "Back from the gym, my legs are jelly. When did Caroline go to the LGBTQ support group?", ctl.decide
    )
    assert news is not None
    assert news.focus == "When did Caroline go to the LGBTQ support group?"
    assert ("Back from the gym, my legs are jelly.", WEIGHTS.context) in news.extra or [
        c.label for c in news.clauses
    ] == ["chatter", "need"]


def test_the_server_takes_the_whole_message(tmp_path: Path) -> None:
    """HTTP (and MCP, over the same service) searches the whole message: one message request."""
    from dualmem.client import Client
    from server_support import served_memory

    with served_memory(tmp_path) as (url, keys, served):
        _, token = keys.create(user="mira")
        scope = served.scope("mira")
        for _, text in TURNS[::2]:
            scope.add(text, speaker="user")
        with Client(url, token) as client:
            found = client.search("Morning! Coffee is kicking in. Where did we move to? Thanks a lot!", k=3)
            clean = client.search("Where did we move to?", k=3)
    assert found.trace.calls_by_purpose.get("message") == 1
    assert "message" not in clean.trace.calls_by_purpose
    assert "Utrecht" in found.evidence[0].node.content


def test_the_client_groups_by_session_as_the_library_does(tmp_path: Path) -> None:
    from dualmem.client import Client
    from server_support import served_memory

    with served_memory(tmp_path) as (url, keys, served):
        _, token = keys.create(user="mira")
        scope = served.scope("mira")
        for i, (_, text) in enumerate(TURNS):
            scope.add(text, speaker="user", session=f"s{i // 4}")
        with Client(url, token) as client:
            remote = client.search("Where do Biscuit and I live now?", k=2, group="session")
        local = scope.search("Where do Biscuit and I live now?", k=2, group="session")
    assert [h.session for h in remote.sessions] == [h.session for h in local.sessions]
    assert len(remote.sessions) == 2
    assert [[e.node.id for e in h.evidence] for h in remote.sessions] == [
        [e.node.id for e in h.evidence] for h in local.sessions
    ]


def test_an_exchange_adds_up() -> None:
    """``add_up``: a turn gains its scored neighbour's (normalised) score; far neighbours do not count."""
    found = [_ev("u1", "A", 0.9), _ev("x", "B", 0.6), _ev("a1", "A", 0.5), _ev("y", "C", 0.1)]
    near = {"a1": (("u1", -1),), "u1": (("a1", 1),), "y": (("x", 2),)}
    assert add_up(found, near, 0.0) == found
    up = add_up(found, near, 0.5)
    assert [e.node.id for e in up] == ["u1", "a1", "x", "y"]
    by = {e.node.id: e.score for e in up}
    assert by["u1"] == pytest.approx(1.0 + 0.5 * 0.5)
    assert by["a1"] == pytest.approx(0.5 + 0.5 * 1.0)
    assert by["y"] == pytest.approx(0.0)  # two turns away: not its exchange
    with pytest.raises(ValueError, match="negative"):
        add_up(found, near, -0.1)
    with pytest.raises(ValueError, match="negative"):
        MessageWeights(whole=-1.0)


def test_one_session_cannot_fill_the_top() -> None:
    found = [
        _ev("a1", "A", 0.9),
        _ev("a2", "A", 0.8),
        _ev("a3", "A", 0.7),
        _ev("b1", "B", 0.6),
        _ev("x", None, 0.5),
    ]
    assert diversify(found, 0) == found
    assert [e.node.id for e in diversify(found, 2)] == ["a1", "a2", "b1", "x", "a3"]
    assert [e.node.id for e in diversify(found, 1)] == ["a1", "b1", "x", "a2", "a3"]
    with pytest.raises(ValueError, match="negative"):
        diversify(found, -1)
    with pytest.raises(ValueError, match="negative"):
        MessageWeights(per_session=-1)


def test_the_weights_shape_the_plan() -> None:
    ctl = BuiltinController()
    message = "Back from the gym, my legs are jelly. When did Caroline go to the LGBTQ support group?"
    none = understand(message, ctl.decide, MessageWeights(whole=0.0, context=0.0))
    assert none is not None
    assert none.extra == ()
    more = understand(message, ctl.decide, MessageWeights(whole=0.5, context=1.0))
    assert more is not None
    assert (message, 0.5) in more.extra
    assert understand(message, ctl.decide).weights == WEIGHTS  # type: ignore[union-attr]


def test_a_long_message_adds_up_its_exchanges(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search of a long message re-sorts by ``add_up`` at ``WEIGHTS.adjacent``; a one-clause
    query never does."""
    from dualmem.read import loop, message

    seen: list[float] = []

    def spy(ranked: list[Evidence], near: object, adjacent: float) -> list[Evidence]:
        seen.append(adjacent)
        return add_up(ranked, near, adjacent)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "add_up", spy)
    monkeypatch.setattr(message, "WEIGHTS", MessageWeights(adjacent=0.5))
    mem.search("Where do I live now?", user="u", k=3)
    assert seen == []
    found = mem.search(
        "Morning, coffee is kicking in. Where do Biscuit and I live now? Thanks!", user="u", k=3
    )
    assert seen == [0.5]
    assert found.evidence


def test_the_whole_message_can_stay_the_focus() -> None:
    """``whole_focus``: the message is searched as it is, each need adding its own lists."""
    ctl = BuiltinController()
    message = "Back from the gym, my legs are jelly. When did Caroline go to the LGBTQ support group?"
    plan = understand(message, ctl.decide, MessageWeights(context=0.0, whole_focus=True))
    assert plan is not None
    assert plan.focus == message
    assert plan.extra == (("When did Caroline go to the LGBTQ support group?", 1.0),)
