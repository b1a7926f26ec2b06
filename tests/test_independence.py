"""Batch independence, for every System-One backend (ARCHITECTURE.md, "The System-One contract").

An answer may depend on the shared state and on its own question only: never on the other questions
of the batch, their order, or the names (ids) they are asked under. Hypothesis draws sub-batches
(random subsets, random order, fresh names, a question asked twice) and every answer must equal the
answer the same question got in the full batch. The negative controls show the check can fail: the
jevcompat mock with its leak faults switched on is caught.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from control_support import BOUGHT, BROKE, QUESTION, T1, T2, wire_memory
from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController, LinearWeights
from dualmem.control.jev import JevController
from dualmem.control.llm import LLMController
from dualmem.control.questions import Answer, Batch, Choice, Controller, Noul, Question, Score
from dualmem.control.retry import RetryPolicy
from dualmem.control.scripted import ScriptedController
from dualmem.learn.heads import LearnedHeads, learned_weights
from dualmem.types import JSONValue
from fakes.jev_mock import JevMock, MockConfig
from fakes.openai_server import FakeOpenAIServer

M1 = wire_memory("m1", f"Mira: {BROKE}", T1, ["Mira", "bicycle"])
M2 = wire_memory("m2", f"Mira: {BOUGHT}", T2, ["Mira", "bicycle"])
M3 = wire_memory("m3", "Jon: I prefer tea over coffee in the morning.", None, ["Jon", "tea", "coffee"], "Jon")
QUERY = QUESTION


def _pair(m: dict[str, JSONValue], sim: float, overlap: float, delta: float | None) -> dict[str, JSONValue]:
    return {
        **m,
        "similarity": sim,
        "lexical_overlap": overlap,
        "shared_entities": ["Mira", "bicycle"] if m["id"] == "m1" else [],
        "time_delta_days": delta,
        "same_session": m["id"] == "m1",
    }


def _evidence(m: dict[str, JSONValue], sim: float) -> dict[str, JSONValue]:
    refs: list[JSONValue] = [
        {"expression": "yesterday", "start": "2024-05-15", "end": "2024-05-15", "precision": "day"}
    ]
    return {
        **m,
        "similarity": sim,
        "lexical_overlap": 0.3,
        "timestamp_role": "observation_time",
        "temporal_references": refs,
    }


def _candidate(m: dict[str, JSONValue], view: str, label: str, sim: float) -> dict[str, JSONValue]:
    return {
        **m,
        "view": view,
        "label": label,
        "source": "m2",
        "target": str(m["id"]),
        "edge_weight": 0.8,
        "similarity": sim,
        "lexical_overlap": 0.2,
    }


def _merge(*parts: Mapping[str, Question]) -> dict[str, Question]:
    out: dict[str, Question] = {}
    for part in parts:
        out.update(part)
    return out


PAIR_STATE: dict[str, JSONValue] = {
    "new_memory": M2,
    "candidates": [_pair(M1, 0.72, 0.4, 2.0), _pair(M3, 0.05, 0.0, None)],
}
BATCHES: dict[str, Batch] = {
    "typing": Batch(
        state={"observation": M2["content"], "speaker": "Mira", "timestamp": M2["timestamp"]},
        questions=catalog.typing_questions(),
    ),
    "relations": Batch(
        state=PAIR_STATE,
        questions=_merge(
            catalog.relation_questions(0, alias=False, implicit_time=False),
            catalog.relation_questions(1, alias=True, implicit_time=True),
        ),
    ),
    "routing": Batch(state={"query": QUERY}, questions=catalog.routing_questions()),
    "traversal": Batch(
        state={
            "query": QUERY,
            "evidence": [_evidence(M2, 0.8)],
            "candidates": [
                _candidate(M1, "causal", "causes", 0.6),
                _candidate(M3, "semantic", "related", 0.1),
            ],
        },
        questions=_merge(catalog.traversal_questions(0), catalog.traversal_questions(1)),
    ),
    "stopping": Batch(
        state={
            "query": QUERY,
            "evidence": [_evidence(M2, 0.8), _evidence(M1, 0.6)],
            "depth": 1,
            "max_depth": 8,
        },
        questions=catalog.stopping_questions(),
    ),
    "consolidation": Batch(
        state={"pairs": [{"new_memory": M2, "candidate": c} for c in PAIR_STATE["candidates"]]},  # type: ignore[union-attr]
        questions=_merge(catalog.consolidation_questions(0), catalog.consolidation_questions(1)),
    ),
    # not a catalog batch: all three kinds, with a Score (the builtin backend knows catalog keys only)
    "mixed": Batch(
        state={"query": QUERY, "note": "synthetic"},
        questions={
            "a": Noul("x.noul", "Does query ask about a purchase?", "It does.", "It does not."),
            "b": Choice(
                "x.choice",
                "What does query ask for?",
                (("time", "a date"), ("reason", "a cause"), ("both", "both")),
            ),
            "c": Score("x.score", "How specific is query?", ("vague", "somewhat", "precise", "exact")),
            "d": Noul("x.noul2", "Is query polite?", "Yes.", "No."),
        },
    ),
}
CATALOG_BATCHES = [name for name in BATCHES if name != "mixed"]


def _hashed(state: Mapping[str, JSONValue], question: Question) -> float:
    """A scripted answer that depends on the state and the question's content only."""
    text = json.dumps(
        [state, question.key, question.target, question.instructions], sort_keys=True, default=str
    )
    unit = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") / 2**32
    return unit * (len(question.levels) - 1) if isinstance(question, Score) else unit


def _scripted_fn(state: Mapping[str, JSONValue], question: Question) -> float | str:
    value = _hashed(state, question)
    if isinstance(question, Choice):
        return question.labels[int(value * len(question.labels)) % len(question.labels)]
    return value


#: learned stop and routing heads (as ``dualmem calibrate --heads-out`` writes them) in the builtin
_LEARNED = LearnedHeads(
    {
        "stop.evidence_sufficient": LinearWeights(
            -1.0, (("coverage", 3.0), ("top_sim_c", 2.0), ("count", 0.5))
        ),
        "route.temporal": LinearWeights(-1.5, (("temporal", 2.0), ("what", -0.5), ("two_names", 0.3))),
    }
)


@pytest.fixture(scope="module")
def controllers() -> Iterator[dict[str, Controller]]:
    with FakeOpenAIServer() as llm_server, JevMock() as jev:
        fast = RetryPolicy(attempts=2, backoff_s=0.0)
        yield {
            "scripted": ScriptedController(fn=_scripted_fn),
            "llm": LLMController(base_url=llm_server.base_url, model="fake-model", retry=fast),
            "jev": JevController(api_key="k", base_url=jev.url, retry=fast),
            "builtin": BuiltinController(),
            "builtin-learned": BuiltinController(weights=learned_weights(_LEARNED)),
        }


_full_cache: dict[tuple[str, str], Mapping[str, Answer]] = {}


def _full(controllers: dict[str, Controller], backend: str, batch_name: str) -> Mapping[str, Answer]:
    key = (backend, batch_name)
    if key not in _full_cache:
        _full_cache[key] = controllers[backend].decide(BATCHES[batch_name]).answers
    return _full_cache[key]


IDS = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,10}", fullmatch=True)


@st.composite
def sub_batches(draw: st.DrawFn, batch: Batch) -> list[tuple[str, str]]:
    """(original name, new name) pairs: a random subset in random order, renamed, maybe one repeated."""
    names = draw(st.permutations(list(batch.questions)))
    picked = names[: draw(st.integers(1, len(names)))]
    if draw(st.booleans()):
        picked = [*picked, draw(st.sampled_from(picked))]
    fresh = draw(st.lists(IDS, min_size=len(picked), max_size=len(picked), unique=True))
    return list(zip(picked, fresh, strict=True))


def mismatches(
    ctl: Controller, batch: Batch, full: Mapping[str, Answer], picks: list[tuple[str, str]]
) -> list[str]:
    sub = Batch(state=batch.state, questions={new: batch.questions[old] for old, new in picks})
    answers = ctl.decide(sub).answers
    return [f"{old} as {new}" for old, new in picks if answers[new] != full[old]]


CASES = [
    (b, n)
    for b in ("scripted", "llm", "jev", "builtin", "builtin-learned")
    for n in BATCHES
    if not (b.startswith("builtin") and n == "mixed")
]


@pytest.mark.parametrize(("backend", "batch_name"), CASES)
@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data())
def test_answers_do_not_depend_on_the_rest_of_the_batch(
    controllers: dict[str, Controller], backend: str, batch_name: str, data: st.DataObject
) -> None:
    batch = BATCHES[batch_name]
    full = _full(controllers, backend, batch_name)
    picks = data.draw(sub_batches(batch))
    assert mismatches(controllers[backend], batch, full, picks) == []


@pytest.mark.parametrize("batch_name", CATALOG_BATCHES)
def test_builtin_answers_every_catalog_batch(controllers: dict[str, Controller], batch_name: str) -> None:
    result = controllers["builtin"].decide(BATCHES[batch_name])
    assert set(result.answers) == set(BATCHES[batch_name].questions)


@pytest.mark.parametrize("fault", ["order-leaks", "id-leaks", "batch-leaks"])
def test_the_check_catches_a_leaky_server(fault: str) -> None:
    batch = BATCHES["mixed"]
    names = list(batch.questions)
    picks = [(n, f"renamed_{n}") for n in reversed(names[1:])]  # other order, other ids, fewer questions
    with JevMock(MockConfig(faults=frozenset({fault}))) as mock:
        ctl = JevController(api_key="k", base_url=mock.url, retry=RetryPolicy(attempts=1))
        full = ctl.decide(batch).answers
        assert mismatches(ctl, batch, full, picks) != []
