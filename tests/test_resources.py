"""Resources: a memory closes what it created (not what it was given), typed ConfigErrors from every
factory, backend options through Memory.open, and no network at construction."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from dualmem import ConfigError, Memory, OpenOptions, Profile
from dualmem.control import create_controller
from dualmem.control.llm import LLMController
from dualmem.embed import CachedEmbedder, HashingEmbedder, OpenAIEmbedder
from dualmem.reason import create_answerer
from dualmem.reason.openai_chat import ChatAnswerer
from fakes.openai_server import FakeOpenAIServer

OFF = Profile.paper().with_(write__consolidation="off")


def _is_closed(part: object) -> bool:
    """Whether the ``httpx.Client`` a part holds (possibly through its own client objects) is closed."""
    seen: object = part
    for _ in range(4):
        if isinstance(seen, httpx.Client):
            return seen.is_closed
        seen = next(getattr(seen, a) for a in ("_http", "client", "_client") if hasattr(seen, a))
    raise AssertionError(f"no HTTP client found in {part!r}")


def _remote_options(server: FakeOpenAIServer) -> OpenOptions:
    return OpenOptions(
        controller={"base_url": server.base_url, "model": "fake-model"},
        answerer={"base_url": server.base_url, "model": "fake-model"},
    )


def test_close_closes_every_part_it_built(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    mem = Memory.open(
        tmp_path / "m.db",
        embedder=HashingEmbedder(64),
        controller="llm",
        answerer="chat",
        profile=OFF,
        options=_remote_options(openai_server),
    )
    ctl, ans = mem.controller, mem.answerer
    assert isinstance(ctl, LLMController)
    assert isinstance(ans, ChatAnswerer)
    mem.add("Mira: my bike is blue.", user="u")  # the llm controller is really used
    assert not _is_closed(ctl)
    mem.close()
    assert _is_closed(ctl)
    assert _is_closed(ans)
    mem.close()  # idempotent


def test_parts_passed_in_stay_open(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    ctl = LLMController(base_url=openai_server.base_url, model="fake-model")
    ans = ChatAnswerer(base_url=openai_server.base_url, model="fake-model")
    emb = OpenAIEmbedder(model="fake-embed", base_url=openai_server.base_url, dim=8)
    with Memory.open(tmp_path / "m.db", embedder=emb, controller=ctl, answerer=ans, profile=OFF) as mem:
        mem.add("Mira: my bike is blue.", user="u")
    assert not _is_closed(ctl)
    assert not _is_closed(ans)
    assert emb.embed(["still usable"]).shape == (1, 8)
    for part in (ctl, ans, emb):
        part.close()


def test_a_failed_open_closes_what_it_built(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    built: list[LLMController] = []
    original = LLMController.__init__

    def spy(self: LLMController, **kw: object) -> None:
        original(self, **kw)  # type: ignore[arg-type]
        built.append(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LLMController, "__init__", spy)
        with pytest.raises(ConfigError, match="no profile preset"):
            Memory.open(
                tmp_path / "m.db",
                embedder=HashingEmbedder(64),
                controller="llm",
                profile="no-such-profile",
                options=OpenOptions(controller={"base_url": openai_server.base_url, "model": "fake-model"}),
            )
    assert len(built) == 1
    assert _is_closed(built[0])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: create_controller("llm"), "needs option"),
        (lambda: create_controller("llm", base_url="http://127.0.0.1:9"), "needs option\\(s\\) model"),
        (lambda: create_controller("builtin", colour="red"), "does not take"),
        (lambda: create_controller("nope"), "unknown controller"),
        (lambda: create_answerer("chat"), "needs option"),
        (lambda: create_answerer("extractive", temperature=0), "does not take"),
        (lambda: create_answerer("nope"), "unknown answerer"),
        (lambda: Memory.open(embedder=HashingEmbedder(8), controller="llm"), "needs option"),
        (lambda: Memory.open(embedder=HashingEmbedder(8), answerer="chat"), "needs option"),
        (
            lambda: Memory.open(embedder=HashingEmbedder(8), options=OpenOptions(embedder={"dim": 3})),
            "passed as an object",
        ),
        (lambda: OpenOptions(lock_timeout=-1), "lock_timeout"),
        (lambda: OpenOptions(controller=["x"]), "mapping"),  # type: ignore[arg-type]
    ],
)
def test_factories_raise_config_errors_with_hints(build: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        build()  # type: ignore[operator]
    assert info.value.hint


def test_the_hint_names_where_settings_come_from() -> None:
    with pytest.raises(ConfigError) as info:
        Memory.open(embedder=HashingEmbedder(8), controller="llm")
    assert "controller_options" in (info.value.hint or "") or "OpenOptions" in (info.value.hint or "")


def test_no_network_at_construction(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    emb = OpenAIEmbedder(model="fake-embed", base_url=openai_server.base_url)  # dim unknown until a reply
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=emb, profile=OFF) as mem:
        assert openai_server.requests == []  # nothing sent while opening
        assert mem.stats(user="u")["embedder"] is None  # bound on first use, not at open
        mem.add("Mira: my bike is blue.", user="u")
        assert openai_server.requests
        assert mem.stats(user="u")["dim"] == 8
        assert mem.search("bike", user="u").evidence
    emb.close()
    wrapped = CachedEmbedder(OpenAIEmbedder(model="fake-embed", base_url=openai_server.base_url), size=8)
    sent = len(openai_server.requests)
    with Memory.open(db, embedder=wrapped, profile=OFF) as mem:
        assert len(openai_server.requests) == sent
        assert mem.count(user="u") == 1


def test_lock_timeout_reaches_the_store(tmp_path: Path) -> None:
    with Memory.open(
        tmp_path / "m.db", embedder=HashingEmbedder(8), options=OpenOptions(lock_timeout=0.25)
    ) as mem:
        assert mem.count(user="u") == 0
