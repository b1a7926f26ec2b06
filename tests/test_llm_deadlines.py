"""Issue 12, findings 2, 4 and 6: deadlines everywhere, degraded reads, per-node pending writes.

Against a local fake server that answers one request at a time, slowly, like llama.cpp on a CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from dualmem import LLMConfig, Memory, OpenOptions
from dualmem.config import Limits, Profile
from dualmem.control.llm import LLMController
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch, Noul
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder
from dualmem.errors import ControllerError, ControllerTimeout
from dualmem.http import RetryPolicy
from fakes.openai_server import FakeOpenAIServer, LlamaCpp, Reply, hashed_logprobs, prompt_text

TURNS = [
    ("Mira: My old bicycle broke on the way to work.", "2024-05-14T10:00:00Z"),
    ("Mira: I bought a new bicycle because the old one broke.", "2024-05-15T10:00:00Z"),
    ("Mira: The new bike is blue and has a basket.", "2024-05-16T10:00:00Z"),
    ("Mira: I ride the new bicycle along the river every morning.", "2024-05-17T10:00:00Z"),
]
NOUL = Noul("typing.episodic", "Does observation describe an event?", "An event.", "No event.")


def obedient(request: dict[str, Any]) -> dict[str, Any]:
    return hashed_logprobs(request, tokens=["A", "B", "C", "D", "E", "F", "G", "The"])


def test_every_request_gets_the_remaining_time_as_its_deadline() -> None:
    with FakeOpenAIServer(chat=obedient, llama=LlamaCpp(latency=0.4)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", timeout=30.0, retry=RetryPolicy(attempts=3))
        batch = Batch(state={"observation": "x"}, questions={f"q{i}": NOUL for i in range(6)})
        (outcome,) = ctl.decide_each([batch], timeout=0.6)
    assert isinstance(outcome, ControllerTimeout)  # not 30 s x 3 tries x 12 queued requests
    assert len(server.chat_requests()) <= 3  # requests after the deadline are never sent


def test_the_meter_passes_the_callers_budget_to_a_backend_that_cannot_bound_itself() -> None:
    import time

    def slow(_state: object, _question: object) -> float:
        time.sleep(0.5)
        return 0.5

    meter = Meter(ScriptedController(fn=slow))  # no timeout of its own
    with pytest.raises(ControllerTimeout):
        meter.ask(Batch(state={}, questions={"q": NOUL}), timeout=0.05)


@contextmanager
def budgeted(minilm: Embedder, budget_s: float) -> Iterator[tuple[FakeOpenAIServer, Memory]]:
    """A memory on the llm backend (the obedient fake server) holding ``TURNS``, whose reads have
    ``budget_s`` seconds."""
    profile = Profile.dualmem().with_(write__consolidation="off", read__limits=Limits(time_budget_s=budget_s))
    with FakeOpenAIServer(chat=obedient) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", retries=0, debias="none")
        with Memory.open(":memory:", embedder=minilm, controller="llm", profile=profile,
                         options=OpenOptions(controller=cfg)) as mem:  # fmt: skip
            for text, at in TURNS:
                mem.add(text, user="u", at=at)
            yield server, mem


def test_a_read_that_runs_out_returns_the_best_evidence_so_far(minilm: Embedder) -> None:
    with budgeted(minilm, 1.5) as (server, mem):
        server.llama = LlamaCpp(latency=0.5)  # now the server is slow and serial
        found = mem.search("Why did Mira buy a new bicycle?", user="u", k=3)
    assert found.trace.stop_reason == "time_limit"  # degraded, not ControllerTimeout
    assert len(found.evidence) == 3  # K-filled from the anchors and what was scored


def test_a_read_whose_routing_times_out_still_answers_from_the_anchors(minilm: Embedder) -> None:
    with budgeted(minilm, 0.3) as (server, mem):
        server.queue(Reply({}, delay=2.0))
        found = mem.search("bicycle", user="u", k=2)
    assert found.trace.stop_reason == "time_limit"
    assert [e.view for e in found.evidence] == ["anchor", "anchor"]


def test_only_the_nodes_whose_questions_failed_become_pending(minilm: Embedder) -> None:
    def picky(request: dict[str, Any]) -> dict[str, Any] | Reply:
        if "basket" in prompt_text(request) and '"observation"' in prompt_text(request):
            return Reply({"error": {"message": "boom"}}, status=500)
        return obedient(request)

    profile = Profile.dualmem().with_(write__consolidation="off")
    with FakeOpenAIServer(chat=picky) as server:
        cfg = LLMConfig(base_url=server.base_url, model="m", retries=0, debias="none", max_concurrency=2)
        with Memory.open(":memory:", embedder=minilm, controller="llm", profile=profile,
                         options=OpenOptions(controller=cfg)) as mem:  # fmt: skip
            ids = mem.add_many([{"text": t, "at": at} for t, at in TURNS], user="u")
            status = {mem.get(i, user="u").content: mem.get(i, user="u").status for i in ids}
            assert status == {t: ("pending" if "basket" in t else "complete") for t, _ in TURNS}
            assert mem.stats(user="u")["pending"] == 1
            server.chat = obedient  # the outage is over
            report = mem.repair(user="u")
            assert report.pending == ()
            assert mem.stats(user="u")["pending"] == 0


def test_a_failed_batch_voids_no_other_in_ask_each() -> None:
    def fails_on_b(state: Any, _question: object) -> float:
        if state.get("observation") == "b":
            raise ControllerError("b failed")
        return 0.7

    meter = Meter(ScriptedController(fn=fails_on_b))
    out = meter.ask_each([Batch(state={"observation": o}, questions={"q": NOUL}) for o in "abc"])
    assert [type(o).__name__ for o in out] == ["Decided", "ControllerError", "Decided"]
    assert meter.stats.by_purpose["other"].failures == 1
