"""Issue 12, finding 3: bounded prompts. A scoring state of 10 evidence + 20 candidates no longer fails.

Against a local fake server that refuses prompts longer than its context like llama.cpp does.
"""

from __future__ import annotations

from typing import Any

import pytest

from dualmem.control import catalog
from dualmem.control.llm import LLMController, classify_reply
from dualmem.control.llm_fit import TRUNCATION_MARKER, fit_batch, reindex, truncate_texts
from dualmem.control.questions import Batch, Question
from dualmem.http import RetryPolicy
from dualmem.types import JSONValue
from fakes.openai_server import FakeOpenAIServer, LlamaCpp, prompt_text, prompt_tokens

LONG = "Mira talked about her new bicycle, the route along the river and the weather that day. " * 6


def _memory(i: int) -> dict[str, JSONValue]:
    return {"id": f"n{i}", "content": f"memory {i}: {LONG}", "timestamp": None, "entities": ["mira"]}


def scoring_batch(evidence: int = 10, candidates: int = 20) -> Batch:
    """A B.4 traversal state of the size that broke the real server (~4,700 tokens and more)."""
    state: dict[str, JSONValue] = {
        "query": "Why did Mira buy a new bicycle?",
        "evidence": [{"memory": _memory(100 + i), "similarity": 0.9 - i / 100} for i in range(evidence)],
        "candidates": [
            {
                "memory": _memory(i),
                "view": "semantic",
                "label": "related",
                "source": "n100",
                "target": f"n{i}",
                "edge_weight": 0.5,
                "similarity": round(0.2 + i / 50, 4),
            }
            for i in range(candidates)
        ],
    }
    questions: dict[str, Question] = {}
    for i in range(candidates):
        questions.update(catalog.traversal_questions(i))
    return Batch(state=state, questions=questions, purpose="scoring")


def _measure(state: Any, q: Question) -> int:
    return len(str(state)) // 3 + len(q.instructions) // 3


def test_fit_is_identity_when_it_fits() -> None:
    batch = scoring_batch(2, 2)
    (group,) = fit_batch(batch.state, batch.questions, budget=10**6, measure=_measure)
    assert group.state is batch.state
    assert group.questions is batch.questions


def test_fit_splits_candidates_reindexes_questions_and_is_deterministic() -> None:
    batch = scoring_batch()
    groups = fit_batch(batch.state, batch.questions, budget=1200, measure=_measure)
    again = fit_batch(batch.state, batch.questions, budget=1200, measure=_measure)
    assert groups == again
    assert len(groups) > 1
    assert sorted(n for g in groups for n in g.questions) == sorted(batch.questions)  # every question, once
    for g in groups:
        cands = g.state["candidates"]
        assert isinstance(cands, list)
        for name, q in g.questions.items():
            original = batch.questions[name]
            assert q.key == original.key
            assert q.target is not None
            assert q.target < len(cands)
            # the re-indexed question is about the same candidate it was about
            same = batch.state["candidates"][original.target]  # type: ignore[index]
            assert cands[q.target]["target"] == same["target"]  # type: ignore[index]
            assert f"candidates[{q.target}]" in q.instructions
            assert all(_measure(g.state, q) <= 1200 for q in g.questions.values())
    # ranked by current score: the first group holds the highest-similarity candidate
    first = groups[0].state["candidates"]
    assert first[0]["target"] == "n19"  # type: ignore[index]


def test_long_contents_are_truncated_with_a_marker_and_evidence_dropped_lowest_first() -> None:
    batch = scoring_batch()
    groups = fit_batch(batch.state, batch.questions, budget=450, measure=_measure)
    text = str(groups[0].state)
    assert TRUNCATION_MARKER in text
    ev = groups[0].state["evidence"]
    assert isinstance(ev, list)
    assert len(ev) < 10
    kept = [e["memory"]["id"] for e in ev]  # type: ignore[index]
    assert kept == [f"n{100 + i}" for i in range(len(kept))]  # the best-ranked evidence stays
    assert truncate_texts({"content": "short"}, 10) == {"content": "short"}


def test_reindex_rewrites_every_reference() -> None:
    (q,) = [
        q
        for q in catalog.relation_questions(7, alias=True, implicit_time=True).values()
        if q.kind == "choice"
    ]
    moved = reindex(q, {7: 0})
    assert moved.target == 0
    assert "candidates[7]" not in str(moved)
    assert "candidates[0]" in moved.instructions


@pytest.mark.parametrize("style", ["llama-cpp-python", "llama.cpp"])
def test_context_refusals_are_recognised(style: str) -> None:
    from fakes.openai_server import _context_error

    body = _context_error(LlamaCpp(n_ctx=2048, ctx_error=style), {"messages": [], "max_tokens": 1})
    import json

    err = classify_reply(400, json.dumps(body))
    assert err is not None
    assert err.n_ctx == 2048
    assert classify_reply(400, '{"error": {"message": "bad model"}}') is None


@pytest.mark.parametrize("style", ["llama-cpp-python", "llama.cpp"])
def test_a_context_length_reply_is_split_and_retried_never_a_failed_search(style: str) -> None:
    with FakeOpenAIServer(llama=LlamaCpp(n_ctx=1024, ctx_error=style)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1), debias="none")
        result = ctl.decide(
            scoring_batch()
        )  # the server does not say its n_ctx up front: learnt from the 400
    assert set(result.answers) == set(scoring_batch().questions)
    assert server.refused  # the first, unfitted prompts were refused ...
    sent = [r for r in server.chat_requests() if r not in server.refused]
    assert all(prompt_tokens(r.json) + 1 <= 1024 for r in sent)  # ... and everything answered fits
    assert ctl.context_tokens == 1024


def test_the_context_size_is_read_from_the_server_when_it_says() -> None:
    with FakeOpenAIServer(llama=LlamaCpp(n_ctx=1024, advertise_ctx=True)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1), debias="none")
        ctl.decide(scoring_batch())
    assert ctl.context_tokens == 1024
    assert not server.refused  # fitted before sending: not one refusal
    assert any(r.path == "/props" for r in server.requests)
    assert any(TRUNCATION_MARKER in prompt_text(r.json) for r in server.chat_requests())


def test_small_prompts_do_not_ask_for_the_context() -> None:
    with FakeOpenAIServer(llama=LlamaCpp(advertise_ctx=True)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1))
        ctl.decide(scoring_batch(1, 1))
    assert [r.path for r in server.requests if r.method == "GET"] == []


def test_a_search_over_a_small_context_server_does_not_fail(minilm: Any) -> None:
    from dualmem import LLMConfig, Memory, OpenOptions
    from dualmem.config import Profile
    from fakes.openai_server import hashed_logprobs

    turns = [f"Mira: day {i}, {LONG}" for i in range(7)]
    profile = Profile.dualmem().with_(write__consolidation="off")
    chat = lambda r: hashed_logprobs(r, tokens=["A", "B", "C", "D", "E", "F", "G", "The"])  # noqa: E731
    with FakeOpenAIServer(chat=chat, llama=LlamaCpp(n_ctx=700, serial=False)) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", retries=0, debias="none", max_concurrency=4)
        with Memory.open(":memory:", embedder=minilm, controller="llm", profile=profile,
                         options=OpenOptions(controller=cfg)) as mem:  # fmt: skip
            mem.add_many(turns, user="u")
            assert mem.stats(user="u")["pending"] == 0  # long relation states were split, not failed
            found = mem.search("What did Mira say about the river and her bicycle?", user="u", k=5)
    assert found.trace.stop_reason != "time_limit"
    assert len(found.evidence) == 5
    assert server.refused  # the server did refuse the unfitted prompts
