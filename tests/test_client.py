"""``dualmem.client.Client`` against a real uvicorn on 127.0.0.1: parity with the embedded scope,
errors as dualmem's own classes, concurrency, graceful shutdown, and the real default embedder."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from dualmem import AuthError, ConfigError, InvalidInput, Memory, NotFound, Profile, RuntimeFailure, Tenant
from dualmem.client import Client
from dualmem.embed import Embedder
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.write.lifecycle import Filter
from server_support import live_server, served_memory
from threads import run_threads

QUIET = Profile.builtin().with_(write__consolidation="off")
TURNS = [
    {
        "text": "Mira: My old bicycle broke on the way to work.",
        "speaker": "Mira",
        "at": "2024-05-14T10:00:00Z",
    },
    {
        "text": "Leo: Sorry to hear that! Are you getting a new one?",
        "speaker": "Leo",
        "at": "2024-05-14T10:01:00Z",
    },
    {
        "text": "Mira: Yes, I bought a new bicycle on Saturday.",
        "speaker": "Mira",
        "at": "2024-05-18T09:00:00Z",
    },
    {"text": "Mira: My dog Biscuit ate a sock yesterday.", "speaker": "Mira", "at": "2024-06-02T18:00:00Z"},
    {"text": "Leo: Is Biscuit okay?", "speaker": "Leo", "at": "2024-06-02T18:05:00Z"},
    {"text": "Mira: He is fine, the vet said so.", "speaker": "Mira", "at": "2024-06-03T08:00:00Z"},
]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    with served_memory(tmp_path) as running:
        yield running


def scenario(m: Any, tmp: Path) -> dict[str, Any]:
    """The same calls on an embedded scope or a client; returns what a caller would look at."""
    ids = m.add_many(TURNS)
    extra = m.add("Mira: I moved to Porto.", speaker="Mira", at="2024-07-01", metadata={"topic": "home"})
    found = m.search("Why did Mira buy a new bicycle?", k=3)
    dated = m.search("What did the dog eat two days ago?", k=3, now="2024-06-04T12:00:00Z")  # the asker's now
    ans = m.answer("What is the name of Mira's dog?", k=3)
    got = m.get(ids[2])
    new = m.update(extra, "Mira: I moved to Lisbon.")
    versions = m.history(new)
    info = m.inspect(ids[0])
    exported = m.export_jsonl(tmp / "export.jsonl")
    forgotten = m.forget(where=Filter(speaker="Leo"))
    return {
        "ids": len(ids),
        "evidence": [(e.node.content, e.view, e.round, round(e.score, 6)) for e in found.evidence],
        "dated": [(e.node.content, round(e.score, 6)) for e in dated.evidence],
        "stop": (found.trace.stop_reason, found.trace.depth, found.trace.active, len(found.trace.rounds)),
        "answer": (ans.text, ans.abstained, ans.answerer, [e.node.content for e in ans.evidence]),
        "got": (got.content, got.speaker, got.at, got.tenant, got.types, got.entities, got.temporal_refs),
        "versions": [(n.content, n.valid_to is None) for n in versions],
        "inspect": (info.node.content, len(info.edges) > 0, sorted({d.purpose for d in info.decisions})),
        "exported": exported,
        "forgotten": forgotten,
        "count": m.count(),
        "contents": sorted(n.content for n in m.nodes()),
        "stats": {k: v for k, v in m.stats().items() if k in ("nodes", "pending", "embedder", "dim")},
        "metadata": m.get(new).metadata,
    }


def test_client_and_embedded_scope_give_the_same_results(
    served: tuple[str, KeyStore, Memory], tmp_path: Path
) -> None:
    url, keys, _ = served
    _, token = keys.create(user="mira")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with Memory.open(tmp_path / "embedded.db", embedder="hashing", profile=QUIET) as mem:
        embedded = scenario(mem.scope("mira"), tmp_path / "a")
    with Client(url, token) as client:
        remote = scenario(client, tmp_path / "b")
        assert client.tenant == Tenant("mira")
    assert remote == embedded
    assert embedded["forgotten"] == 2
    assert embedded["versions"] == [("Mira: I moved to Porto.", False), ("Mira: I moved to Lisbon.", True)]


def test_client_errors_are_dualmem_errors(served: tuple[str, KeyStore, Memory], tmp_path: Path) -> None:
    url, keys, mem = served
    _, token = keys.create(user="mira")
    with Client(url, token) as client:
        with pytest.raises(NotFound):
            client.get("0123456789abcdef01234567")
        with pytest.raises(InvalidInput):
            client.add("   ")
        with pytest.raises(InvalidInput):
            client.search("bike", k=0)
        with pytest.raises(InvalidInput):
            client.forget()
        with pytest.raises(InvalidInput):
            client.import_jsonl(tmp_path / "missing.jsonl")
    with Client(url, token) as client:
        for blank in ("", "  "):  # the core's own words, as embedded and in the CLI
            with pytest.raises(InvalidInput, match=r"^the query is empty$") as empty:
                client.search(blank)
            assert empty.value.hint == "pass a non-blank question"
    for bad_key in ("dmk_wrong", None):  # unknown, or none at all: an auth error, not a configuration one
        with Client(url, bad_key) as bad, pytest.raises(AuthError) as refused:
            bad.count()
        assert not isinstance(refused.value, ConfigError)
    _, admin = keys.create(admin=True)
    with Client(url, admin) as wrong_kind:
        with pytest.raises(AuthError, match="admin key"):
            wrong_kind.search("bike")
        with pytest.raises(AuthError, match="admin key"):
            _ = wrong_kind.tenant
    with (
        Client("http://127.0.0.1:9", token, retries=0) as down,
        pytest.raises(RuntimeFailure, match="cannot reach"),
    ):
        down.count()
    assert mem.count(user="mira") == 0


def test_export_import_round_trip_through_the_client(
    served: tuple[str, KeyStore, Memory], tmp_path: Path
) -> None:
    url, keys, _ = served
    _, a = keys.create(user="ann")
    _, b = keys.create(user="ben")
    with Client(url, a) as ann, Client(url, b) as ben:
        ann.add_many(TURNS)
        lines = ann.export_jsonl(tmp_path / "ann.jsonl")
        assert lines > len(TURNS)
        assert ann.forget_all() == len(TURNS)
        with pytest.raises(InvalidInput):
            ben.import_jsonl(tmp_path / "ann.jsonl")  # another tenant's file
        assert ben.count() == 0
        report = ann.import_jsonl(tmp_path / "ann.jsonl")
        assert report.nodes == len(TURNS)
        assert ann.count() == len(TURNS)
        assert {n.tenant for n in ann.nodes()} == {Tenant("ann")}


def test_concurrent_clients_lose_no_acknowledged_write(served: tuple[str, KeyStore, Memory]) -> None:
    url, keys, mem = served
    tokens = [keys.create(user=f"user{i % 2}")[1] for i in range(6)]
    acked: list[tuple[str, str]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            with Client(url, tokens[n]) as c:
                for i in range(8):
                    node = c.add(f"client {n} says fact {i} about bicycles")
                    with lock:
                        acked.append((f"user{n % 2}", node))
                    c.search("bicycles", k=3)
        except BaseException as exc:  # collected and asserted below
            failures.append(exc)

    run_threads(worker, 6)
    assert failures == []
    assert len(acked) == 48
    for user, node in acked:
        assert mem.get(node, user=user).id == node


def test_graceful_shutdown_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    keys = KeyStore.open(tmp_path / "g.keys.db")
    _, token = keys.create(user="mira")
    with Memory.open(tmp_path / "g.db", embedder="hashing", profile=QUIET) as mem:
        app = create_app(
            mem, keys=keys, settings=ServerSettings(consolidate_every=5, consolidate_interval_s=3600)
        )
        with live_server(app) as url, Client(url, token) as client:
            ids = client.add_many([f"fact {i}" for i in range(7)])
    keys.close()
    with Memory.open(tmp_path / "g.db", embedder="hashing", profile=QUIET) as reopened:
        assert {n.id for n in reopened.nodes(user="mira")} == set(ids)


@pytest.mark.slow
def test_served_memory_with_the_real_default_embedder(tmp_path: Path, minilm: Embedder) -> None:
    keys = KeyStore.open(":memory:")
    _, token = keys.create(user="mira")
    with Memory.open(tmp_path / "real.db", embedder=minilm, profile=QUIET) as mem:
        app = create_app(mem, keys=keys, settings=ServerSettings(consolidate_every=0))
        with live_server(app) as url, Client(url, token) as client:
            client.add_many(TURNS)
            found = client.search("What happened to Mira's pet?", k=3)
            assert any("Biscuit" in e.node.content for e in found.evidence)
            assert client.stats()["embedder"] == minilm.name
    keys.close()
