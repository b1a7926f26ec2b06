"""The System-One Controller contract, run against every implementation.

builtin, scripted, auto (seeded), llm (on the local fake OpenAI server) and jev (on the jevcompat
reference mock). A new backend is done when this suite passes on it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from control_support import BOUGHT, BROKE, QUESTION, T1, T2, mira_node
from dualmem.control import catalog
from dualmem.control.base import BaseController
from dualmem.control.builtin import BuiltinController
from dualmem.control.jev import JevController
from dualmem.control.llm import LLMController
from dualmem.control.questions import Answer, Batch, Controller, Question, validate_result
from dualmem.control.retry import RetryPolicy
from dualmem.control.scripted import AutoController, ScriptedController
from dualmem.control.states import (
    QUERY,
    ConsolidationPair,
    ConsolidationState,
    EmbeddingFeatures,
    EvidenceItem,
    MemoryState,
    MessageState,
    RelationCandidate,
    RelationState,
    RoutingState,
    StoppingState,
    TraversalCandidate,
    TraversalState,
    TypingState,
)
from fakes.jev_mock import JevMock
from fakes.openai_server import FakeOpenAIServer

Q = QUESTION
M1 = mira_node("m1", BROKE, T1, (1.0, 0.2, 0.0))
M2 = mira_node("m2", BOUGHT, T2, (0.6, 0.8, 0.1))


def catalog_batches() -> list[Batch]:
    """One batch per purpose with every catalog decision, each on a complete typed state."""
    src = EmbeddingFeatures.of([M1, M2], query=Q, qvec=np.array([0.0, 1.0, 0.0], dtype=np.float32))
    pair = RelationCandidate.of(M2, M1, ("bicycle", "mira"), src)
    ev = (EvidenceItem(MemoryState.of(M1), src.cosine(QUERY, "m1"), src.lexical(QUERY, "m1")),)
    cand = TraversalCandidate(
        MemoryState.of(M2),
        "causal",
        "causes",
        "m1",
        "m2",
        0.9,
        src.cosine(QUERY, "m2"),
        src.lexical(QUERY, "m2"),
    )
    rel_qs = catalog.relation_questions(0, alias=True, implicit_time=True)
    return [
        Batch.of(TypingState.of(M2), catalog.typing_questions(), "typing"),
        Batch.of(RelationState(MemoryState.of(M2), (pair,)), rel_qs, "relations", features=src),
        Batch.of(
            ConsolidationState((ConsolidationPair(MemoryState.of(M2), pair),)),
            catalog.consolidation_questions(0),
            "consolidation",
            features=src,
        ),
        Batch.of(RoutingState(Q), catalog.routing_questions(), "routing"),
        Batch.of(TraversalState(Q, ev, (cand,)), catalog.traversal_questions(0), "scoring", features=src),
        Batch.of(StoppingState(Q, ev, 1, 4), catalog.stopping_questions(), "assessment", features=src),
        Batch.of(
            MessageState(f"Hi! {Q} Thanks!", ("Hi!", Q, "Thanks!")), catalog.message_questions(3), "message"
        ),
    ]


FAST = RetryPolicy(attempts=2, backoff_s=0.0, max_backoff_s=0.0)
SCRIPT = {"relation.time": "unknown", "consolidate.representation": "uncertain", "message.clause": "need"}

Factory = Callable[[], Iterator[Controller]]


def _builtin() -> Iterator[Controller]:
    yield BuiltinController()


def _scripted() -> Iterator[Controller]:
    yield ScriptedController(SCRIPT, default=0.4)


def _auto() -> Iterator[Controller]:
    yield AutoController(seed=11)


def _llm() -> Iterator[Controller]:
    with FakeOpenAIServer() as server, LLMController(base_url=server.base_url, model="fake", retry=FAST) as c:
        yield c


def _jev() -> Iterator[Controller]:
    with JevMock() as mock, JevController(api_key="k", base_url=mock.url, retry=FAST) as c:
        yield c


@pytest.fixture(
    params=[_builtin, _scripted, _auto, _llm, _jev], ids=["builtin", "scripted", "auto", "llm", "jev"]
)
def controller(request: pytest.FixtureRequest) -> Iterator[Controller]:
    factory: Factory = request.param
    yield from factory()


def by_key(ctl: Controller, batch: Batch) -> dict[tuple[str, int | None], Answer]:
    result = ctl.decide(batch)
    return {(q.key, q.target): result.answers[name] for name, q in batch.questions.items()}


def test_is_a_named_controller_on_the_base_class(controller: Controller) -> None:
    assert isinstance(controller, Controller)
    assert isinstance(controller, BaseController)
    assert isinstance(controller.name, str)
    assert controller.name


def test_answers_every_catalog_decision_validly(controller: Controller) -> None:
    keys: set[str] = set()
    for batch in catalog_batches():
        result = validate_result(batch, controller.decide(batch), controller.name)
        assert set(result.answers) == set(batch.questions)
        keys |= {q.key for q in batch.questions.values()}
    assert keys == catalog.DECISION_KEYS


def test_answers_do_not_depend_on_names_order_or_other_questions(controller: Controller) -> None:
    rng = random.Random(5)
    for batch in catalog_batches():
        reference = by_key(controller, batch)
        items = list(batch.questions.items())
        rng.shuffle(items)
        renamed: dict[str, Question] = {f"q{rng.randrange(10**6)}_{i}": q for i, (_, q) in enumerate(items)}
        assert by_key(controller, Batch(batch.state, renamed, batch.purpose, typed=batch.typed)) == reference
        name, question = items[0]
        alone = controller.decide(Batch(batch.state, {"only": question}, batch.purpose, typed=batch.typed))
        assert alone.answers["only"] == reference[(question.key, question.target)], name


def test_decide_many_equals_decide_each(controller: Controller) -> None:
    batches = catalog_batches()[:3]
    many = controller.decide_many(batches)  # type: ignore[attr-defined]
    assert [r.answers for r in many] == [controller.decide(b).answers for b in batches]


def test_close_is_safe_and_it_is_a_context_manager(controller: Controller) -> None:
    assert isinstance(controller, BaseController)
    with controller as same:
        assert same is controller
