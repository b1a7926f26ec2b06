"""A whole memory (write, search, answer) driven by remote System-One backends over real local HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from dualmem import Memory, Profile
from dualmem.control.jev import JevController
from dualmem.control.llm import LLMController
from dualmem.control.questions import Controller
from dualmem.control.retry import RetryPolicy
from dualmem.embed import Embedder
from fakes.jev_mock import JevMock, MockConfig
from fakes.openai_server import FakeOpenAIServer, hashed_logprobs, prompt_text

TURNS = [
    ("Mira: My old bicycle broke.", "2024-05-14T10:00:00Z"),
    ("Mira: I bought a new bicycle yesterday because my old one broke.", "2024-05-16T10:00:00Z"),
    ("Jon: I went hiking in the Alps in July.", "2024-07-20T10:00:00Z"),
]


def obedient(request: dict[str, Any]) -> dict[str, Any]:
    """A model that follows the prompt: its top tokens are the offered options (scores from a hash)."""
    offered = re.search(r"Answer with a single [^:]*: ([^.]*)\.", prompt_text(request))
    tokens = [t.strip() for t in offered.group(1).split(",")] if offered else []
    return hashed_logprobs(request, tokens=[*tokens, "The"])


@pytest.fixture(params=["llm", "jev"])
def remote(request: pytest.FixtureRequest) -> Iterator[tuple[Controller, object]]:
    if request.param == "llm":
        with FakeOpenAIServer() as server:
            server.chat = obedient
            ctl = LLMController(base_url=server.base_url, model="fake", retry=RetryPolicy(attempts=1))
            yield ctl, server
            ctl.close()
    else:
        with JevMock(MockConfig()) as mock, JevController(api_key="k", base_url=mock.url) as ctl:
            yield ctl, mock


def test_memory_over_a_remote_controller(minilm: Embedder, remote: tuple[Controller, object]) -> None:
    ctl, server = remote
    profile = Profile.paper().with_(write__consolidation="off")
    with Memory.open(":memory:", embedder=minilm, controller=ctl, profile=profile) as mem:
        ids = [mem.add(text, user="u", at=at) for text, at in TURNS]
        assert mem.stats(user="u")["pending"] == 0
        assert mem.meter.stats.calls_for("typing") == 3
        assert mem.meter.stats.calls_for("relations") == 2
        assert all(mem.inspect(i, user="u").node.types is not None for i in ids)
        found = mem.search("Why did Mira buy a new bicycle?", user="u", k=3)
        assert found.trace.calls_by_purpose["routing"] == 1
        assert len(found.evidence) == 3
        assert found.trace.controller_calls <= 1 + 2 * len(found.trace.rounds)
        answer = mem.answer("Why did Mira buy a new bicycle?", user="u")
        assert answer.evidence
    if isinstance(server, FakeOpenAIServer):
        sent = len(server.chat_requests())
        asked = sum(c.questions for c in mem.meter.stats.by_purpose.values())
        assert sent == 2 * asked  # two forward passes per question: both option orders (debiased)
