"""The HTTP API's developer-experience guarantees (issue 28): times default to now, filters and the
list route, one k limit everywhere, idempotent adds under a locked key file, and bad bodies as
problem JSON (never a 500)."""

from __future__ import annotations

import argparse
import datetime as dt
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from dualmem import Filter, InvalidInput, Memory
from dualmem.cli.commands import k_value
from dualmem.client import Client
from dualmem.embed import HashingEmbedder
from dualmem.server import ServerSettings, create_app
from dualmem.server.bodies import MAX_BODY_DEPTH, nesting_depth
from dualmem.server.keys import KeyStore
from dualmem.types import MAX_K
from dualmem.wire.schemas import QueryRequest
from server_support import QUIET, client, keys, live_server, memory  # noqa: F401 - fixtures
from test_server import add, assert_problem, auth


# -- 1. at defaults to now ---------------------------------------------------------------------
def test_add_without_at_is_stamped_now_and_an_explicit_at_is_kept(
    client: TestClient, keys: KeyStore, memory: Memory
) -> None:
    h = auth(keys, "alice")
    before = dt.datetime.now(dt.UTC)
    (stamped,) = add(client, h, "no time given")
    (kept,) = add(client, h, "an old fact", at="2023-05-08T10:00:00Z")
    batch = add(client, h, "batch one", "batch two")
    after = dt.datetime.now(dt.UTC)
    for node_id in (stamped, *batch):
        at = memory.get(node_id, user="alice").at
        assert at is not None
        assert before - dt.timedelta(seconds=1) <= at <= after + dt.timedelta(seconds=1)
    assert memory.get(kept, user="alice").at == dt.datetime(2023, 5, 8, 10, tzinfo=dt.UTC)
    # time features see the stamped memories: forget-since removes them, not the old one
    since = before - dt.timedelta(seconds=1)
    r = client.post("/v1/forget", json={"since": since.isoformat()}, headers=h)
    assert r.json() == {"forgotten": 3}
    assert [n.id for n in memory.nodes(user="alice")] == [kept]


# -- 3. filters, the list route, one k limit ---------------------------------------------------
def test_search_answer_and_list_take_the_same_filters(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    (old,) = add(client, h, "Mira: my bike broke.", speaker="Mira", at="2024-05-01", session="s1")
    (leo,) = add(client, h, "Leo: my bike is red.", speaker="Leo", at="2024-05-02", session="s1")
    (new,) = add(
        client, h, "Mira: I bought a new bike.", speaker="Mira", at="2024-06-01", session="s2",
        metadata={"topic": "bikes", "n": 3},
    )  # fmt: skip

    def search(route: str, **where: object) -> list[str]:
        r = client.post(route, json={"query": "bike", **where}, headers=h)
        assert r.status_code == 200, r.text
        return [e["node"]["id"] for e in r.json()["evidence"]]

    for route in ("/v1/search", "/v1/answer"):
        assert set(search(route)) == {old, leo, new}
        assert set(search(route, speaker="mira")) == {old, new}
        assert set(search(route, session="s1")) == {old, leo}
        assert search(route, since="2024-05-15") == [new]
        assert set(search(route, until="2024-05-15", speaker="Mira")) == {old}
        assert search(route, metadata={"topic": "bikes"}) == [new]
        assert search(route, metadata={"topic": "cars"}) == []

    def listed(**body: object) -> dict:
        r = client.post("/v1/list", json=body, headers=h)
        assert r.status_code == 200, r.text
        return dict(r.json())

    assert [n["id"] for n in listed()["items"]] == [old, leo, new]  # time order
    assert [n["id"] for n in listed(metadata={"n": 3})["items"]] == [new]
    assert [n["id"] for n in listed(speaker="Mira", since="2024-04-01")["items"]] == [old, new]
    first = listed(limit=2)
    assert [n["id"] for n in first["items"]] == [old, leo]
    assert first["next_offset"] == 2
    rest = listed(limit=2, offset=2)
    assert [n["id"] for n in rest["items"]] == [new]
    assert rest["next_offset"] is None
    far = listed(limit=1, offset=2**63 - 2)  # schemathesis found this one: a 500 before
    assert far["items"] == []
    assert far["next_offset"] is None
    assert_problem(client.post("/v1/list", json={"since": "not a time"}, headers=h), 422, "invalid-input")
    assert_problem(client.post("/v1/list", json={"limit": 0}, headers=h), 422, "invalid-input")
    assert_problem(client.post("/v1/search", json={"query": "x", "at": 1}, headers=h), 422, "invalid-input")


def test_client_filters_and_lists_like_the_embedded_scope(memory: Memory, keys: KeyStore) -> None:
    app = create_app(memory, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
    _, token = keys.create(user="alice")
    with live_server(app) as url, Client(url, token) as remote:
        ids = [
            remote.add(
                f"Mira fact {i} about bikes", speaker="Mira" if i % 2 else "Leo", at=f"2024-05-0{i + 1}"
            )
            for i in range(5)
        ]
        local = memory.scope("alice")
        where = Filter(speaker="Mira")
        assert [n.id for n in remote.list_memories(where=where)] == [
            n.id for n in local.list_memories(where=where)
        ]
        assert [n.id for n in remote.list_memories(limit=2, offset=1)] == ids[1:3]
        assert [n.id for n in remote.list_memories(limit=None)] == ids
        found = remote.search("bikes", where=Filter(since="2024-05-04"))
        assert {e.node.id for e in found.evidence} == set(ids[3:])
        assert remote.answer("bikes", where=where).evidence
        with pytest.raises(InvalidInput):
            remote.search("bikes", k=MAX_K + 1)


def test_one_k_limit_in_every_adapter(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    add(client, h, "one fact")
    for route in ("/v1/search", "/v1/answer"):
        assert client.post(route, json={"query": "fact", "k": MAX_K}, headers=h).status_code == 200
        r = client.post(route, json={"query": "fact", "k": MAX_K + 1}, headers=h)
        assert_problem(r, 422, "invalid-input")
    assert QueryRequest.model_json_schema()["properties"]["k"]["maximum"] == MAX_K
    assert k_value(str(MAX_K)) == MAX_K
    for bad in (str(MAX_K + 1), "0", "ten"):
        with pytest.raises(argparse.ArgumentTypeError):
            k_value(bad)
    # the MCP tool's limit is asserted in test_mcp_dx (it needs the mcp extra)


# -- 5. defects --------------------------------------------------------------------------------
class LockingEmbedder(HashingEmbedder):
    """A real embedder that, on its first call (inside an add), lets "another process" take the key
    file's write lock and keep it until ``released()`` says so (or ``hold_s`` at most): the add
    commits, then recording its key meets the lock. Releasing on a condition, not after a fixed
    time, keeps the test independent of how fast the machine is."""

    def __init__(self, keys_path: Path, hold_s: float) -> None:
        super().__init__()
        self.other = sqlite3.connect(keys_path, isolation_level=None, check_same_thread=False)
        self.hold_s = hold_s
        self.released: Any = lambda: False
        self.timer: threading.Thread | None = None

    def _hold(self) -> None:
        deadline = time.monotonic() + self.hold_s
        while not self.released() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.other.execute("COMMIT")

    def embed(self, texts: Sequence[str]) -> Any:
        if self.timer is None:
            self.other.execute("BEGIN IMMEDIATE")
            self.timer = threading.Thread(target=self._hold, daemon=True)
            self.timer.start()
        return super().embed(texts)


def test_idempotent_add_is_stored_once_while_the_key_file_is_locked(tmp_path: Path) -> None:
    """Only the recording of the key is retried (the old code re-ran recall, add and record, and
    stored the observation twice)."""
    path = tmp_path / "m.keys.db"
    keys = KeyStore.open(path, timeout=0.05)  # every locked attempt fails fast and is retried
    embedder = LockingEmbedder(path, hold_s=5.0)
    settings = ServerSettings(rate_limit=None, consolidate_every=0, lock_wait_s=10)
    body = {"observations": [{"text": "Mira adopted a dog named Biscuit."}]}
    with Memory.open(tmp_path / "m.db", embedder=embedder, profile=QUIET) as memory:
        app = create_app(memory, keys=keys, settings=settings)
        embedder.released = lambda: app.state.service.metrics.locked_retries._value.get() >= 1
        h = {**auth(keys, "alice"), "Idempotency-Key": "req-1"}
        with TestClient(app) as c:
            first = c.post("/v1/memories", json=body, headers=h)
            assert embedder.timer is not None
            embedder.timer.join()
            again = c.post("/v1/memories", json=body, headers=h)
        assert first.status_code == 201, first.text
        assert memory.count(user="alice") == 1
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()
        retries = app.state.service.metrics.locked_retries._value.get()
        assert retries >= 1  # the lock was met, and waited out
    embedder.other.close()
    keys.close()


def test_non_time_values_for_at_are_422(client: TestClient, keys: KeyStore, memory: Memory) -> None:
    h = auth(keys, "alice")
    for bad in (True, False, [2024], {"year": 2024}, "x" * 101):
        r = client.post("/v1/memories", json={"observations": [{"text": "t", "at": bad}]}, headers=h)
        doc = assert_problem(r, 422, "invalid-input")
        assert doc["errors"][0]["loc"][-1] == "at"
    (node,) = add(client, h, "t")
    assert_problem(client.patch(f"/v1/memories/{node}", json={"text": "u", "at": True}, headers=h), 422,
                   "invalid-input")  # fmt: skip
    assert_problem(client.post("/v1/forget", json={"since": True}, headers=h), 422, "invalid-input")
    assert memory.count(user="alice") == 1
    assert add(client, h, "epoch seconds", at=1_700_000_000)


def test_bad_bodies_get_the_right_problem_and_never_a_500(
    client: TestClient, keys: KeyStore, memory: Memory
) -> None:
    h, admin = auth(keys, "alice"), auth(keys, admin=True)
    j = {**h, "content-type": "application/json"}
    deep = b"[" * 100_000 + b"]" * 100_000
    deep_meta = b'{"observations": [{"text": "x", "metadata": {"a": ' + deep + b"}}]}"
    for route in ("/v1/memories", "/v1/search", "/v1/answer", "/v1/list", "/v1/forget", "/v1/keys"):
        assert_problem(client.post(route, content=b'{"query": ', headers=j), 400, "malformed-json")
        assert_problem(client.post(route, content=deep, headers=j), 400, "too-deep")
        assert_problem(client.post(route, content=b"{}", headers={**h, "content-type": "text/plain"}), 415,
                       "unsupported-media-type")  # fmt: skip
        shape = {**(admin if route == "/v1/keys" else h), "content-type": "application/json"}
        assert_problem(client.post(route, content=b"[1, 2]", headers=shape), 422, "invalid-input")
    assert_problem(client.post("/v1/memories", content=deep_meta, headers=j), 400, "too-deep")
    assert_problem(client.post("/v1/memories", content=b"{}", headers=h), 415, "unsupported-media-type")
    bad_utf8 = b'{"observations": [{"text": "\xff"}]}'
    assert_problem(client.post("/v1/memories", content=bad_utf8, headers=j), 400, "malformed-json")
    (node,) = add(client, h, "fine")
    assert_problem(client.patch(f"/v1/memories/{node}", content=deep, headers=j), 400, "too-deep")
    # a JSON subtype is JSON; brackets inside strings are not nesting
    brackets = {"observations": [{"text": "[" * 5000 + "{" * 5000}]}
    plus = {**h, "content-type": "application/merge-patch+json"}
    assert client.post("/v1/memories", json=brackets, headers=plus).status_code == 201
    assert memory.count(user="alice") == 2


def test_problem_documents_carry_no_pydantic_links(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    bodies = [
        {"observations": [{"text": ""}]},
        {"observations": [{"text": "x", "at": True, "extra": 1}]},
        {"observations": "x"},
    ]
    for body in bodies:
        r = client.post("/v1/memories", json=body, headers=h)
        assert r.status_code == 422
        assert "pydantic" not in r.text
        assert r.json()["detail"].startswith("invalid request: observations")
    r = client.post("/v1/search", json={"query": "x", "k": 0}, headers=h)
    assert r.json()["detail"] == "invalid request: k: Input should be greater than or equal to 1"


def test_nesting_depth_scan() -> None:
    assert nesting_depth(b'{"a": [1, {"b": "[[[["}]}') == 3
    assert nesting_depth(b'"\\"[[[" ') == 0
    assert nesting_depth(b"[" * 1000, stop_at=MAX_BODY_DEPTH) == MAX_BODY_DEPTH + 1
