"""The HTTP API in process: httpx (Starlette's TestClient and httpx.ASGITransport) against the real app
over a real SQLite memory with the hashing embedder."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from dualmem import ConfigError, InvalidInput, Memory, Tenant
from dualmem.control import create_controller
from dualmem.control.questions import Controller
from dualmem.embed import create_embedder
from dualmem.plane import open_store
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.service import Service
from server_support import QUIET, client, keys, memory  # noqa: F401 - fixtures

PROBLEM = "application/problem+json"


def auth(keys: KeyStore, user: str | None = None, *, agent: str | None = None, admin: bool = False) -> dict:
    _, token = keys.create(user=user, agent=agent, admin=admin)
    return {"Authorization": f"Bearer {token}"}


def add(client: TestClient, headers: dict, *texts: str, **fields: object) -> list[str]:
    body = {"observations": [{"text": t, **fields} for t in texts]}
    r = client.post("/v1/memories", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return list(r.json()["ids"])


def assert_problem(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    doc = r.json()
    assert doc["status"] == status
    assert doc["code"] == code
    assert doc["type"] == f"urn:dualmem:problem:{code}"
    assert doc["detail"]
    return dict(doc)


# -- memories ----------------------------------------------------------------------------------
def test_add_get_and_list_with_cursor_and_filters(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    ids = [
        *add(client, h, "Mira: my bike broke.", speaker="Mira", at="2024-05-01T10:00:00Z", session="s1"),
        *add(client, h, "Leo: I fixed it.", speaker="Leo", at="2024-05-02T10:00:00Z", session="s1"),
        *add(client, h, "Mira: I bought a helmet.", speaker="Mira", at="2024-06-01T10:00:00Z", session="s2"),
    ]
    got = client.get(f"/v1/memories/{ids[0]}", headers=h).json()
    assert got["content"] == "Mira: my bike broke."
    assert got["tenant"] == {"user": "alice", "agent": None, "run": None}
    assert got["speaker"] == "Mira"
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/memories", params=params, headers=h).json()
        seen += [n["id"] for n in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids  # oldest first, every memory once
    mira = client.get("/v1/memories", params={"speaker": "mira"}, headers=h).json()["items"]
    assert [n["id"] for n in mira] == [ids[0], ids[2]]
    s1 = client.get("/v1/memories", params={"session": "s1", "until": "2024-05-02"}, headers=h).json()[
        "items"
    ]
    assert [n["id"] for n in s1] == [ids[0]]
    since = client.get("/v1/memories", params={"since": "2024-05-15"}, headers=h).json()["items"]
    assert [n["id"] for n in since] == [ids[2]]
    assert_problem(client.get("/v1/memories", params={"cursor": "%%%"}, headers=h), 400, "invalid-cursor")


def test_idempotency_key_replays_and_conflicts(client: TestClient, keys: KeyStore, memory: Memory) -> None:
    h = {**auth(keys, "alice"), "Idempotency-Key": "req-1"}
    body = {"observations": [{"text": "Mira adopted a dog named Biscuit."}]}
    first = client.post("/v1/memories", json=body, headers=h)
    again = client.post("/v1/memories", json=body, headers=h)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    other = client.post("/v1/memories", json={"observations": [{"text": "something else"}]}, headers=h)
    assert_problem(other, 409, "idempotency-conflict")
    assert memory.count(user="alice") == 1
    # the key belongs to the API key that used it: another key may reuse the same string
    h2 = {**auth(keys, "alice"), "Idempotency-Key": "req-1"}
    assert client.post("/v1/memories", json=body, headers=h2).json() != first.json()


def test_update_history_inspect_delete(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    (old,) = add(client, h, "Mira lives in Lisbon.", at="2024-01-01")
    r = client.patch(f"/v1/memories/{old}", json={"text": "Mira lives in Porto."}, headers=h)
    assert r.status_code == 200, r.text
    new = r.json()["new"]
    assert r.json()["node"]["content"] == "Mira lives in Porto."
    versions = client.get(f"/v1/memories/{new}/history", headers=h).json()["versions"]
    assert [v["id"] for v in versions] == [old, new]
    assert versions[0]["valid_to"] is not None
    assert client.get("/v1/memories", params={"status": "current"}, headers=h).json()["items"][0]["id"] == new
    info = client.get(f"/v1/memories/{new}/inspect", headers=h).json()
    assert info["node"]["id"] == new
    assert any(e["label"] == "superseded_by" for e in info["edges"])
    assert {d["purpose"] for d in info["decisions"]} >= {"typing"}
    assert_problem(
        client.patch(f"/v1/memories/{old}", json={"text": "x"}, headers=h), 409, "conflict"
    )  # a superseded version
    assert client.delete(f"/v1/memories/{new}", headers=h).json()["forgotten"] == 2  # the whole chain
    assert_problem(client.get(f"/v1/memories/{new}", headers=h), 404, "not-found")
    assert_problem(client.delete(f"/v1/memories/{new}", headers=h), 404, "not-found")


def test_search_answer_and_trace(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    add(
        client, h, "Mira: my old bicycle broke last week.", "Mira: so I bought a new bicycle.", speaker="Mira"
    )
    r = client.post("/v1/search", json={"query": "Why did Mira buy a bicycle?", "k": 2}, headers=h)
    assert r.status_code == 200, r.text
    found = r.json()
    assert 1 <= len(found["evidence"]) <= 2
    assert found["trace"] is None
    assert found["summary"]["stop_reason"]
    full = client.post("/v1/search", json={"query": "bicycle", "trace": True}, headers=h).json()
    assert full["trace"]["query"] == "bicycle"
    assert full["trace"]["stop_reason"] == full["summary"]["stop_reason"]
    ans = client.post("/v1/answer", json={"query": "What did Mira buy?", "trace": True}, headers=h).json()
    assert ans["answerer"] == "extractive"
    assert ans["text"]
    assert ans["evidence"]
    assert ans["trace"]["query"] == "What did Mira buy?"
    empty = client.post("/v1/answer", json={"query": "What did Mira buy?"}, headers=auth(keys, "nobody"))
    assert empty.json()["abstained"] is True
    assert empty.json()["summary"]["stop_reason"] == "empty"


def test_forget_by_filter_and_all(client: TestClient, keys: KeyStore, memory: Memory) -> None:
    h = auth(keys, "alice")
    add(client, h, "Mira likes tea.", "Mira likes green tea.", speaker="Mira")
    add(client, h, "Leo likes coffee.", speaker="Leo")
    assert client.post("/v1/forget", json={"speaker": "Mira"}, headers=h).json() == {"forgotten": 2}
    assert memory.count(user="alice") == 1
    assert_problem(client.post("/v1/forget", json={}, headers=h), 422, "invalid-input")
    assert_problem(
        client.post("/v1/forget", json={"all": True, "speaker": "Leo"}, headers=h), 422, "invalid-input"
    )
    assert client.post("/v1/forget", json={"all": True}, headers=h).json() == {"forgotten": 1}
    assert memory.count(user="alice") == 0


def test_export_streams_jsonl_and_import_takes_only_the_callers_tenant(
    client: TestClient, keys: KeyStore, memory: Memory
) -> None:
    alice, bob = auth(keys, "alice"), auth(keys, "bob")
    add(client, alice, "Mira: my dog Biscuit ate a sock.", "Mira: the vet said he is fine.", speaker="Mira")
    r = client.get("/v1/export", headers=alice)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = r.text.splitlines()
    assert len(lines) >= 3  # header + 2 nodes (+ edges, decisions)
    client.post("/v1/forget", json={"all": True}, headers=alice)
    # the file names alice: bob's key cannot load it (the tenant comes from the key, never the file)
    assert_problem(client.post("/v1/import", content=r.content, headers=bob), 422, "invalid-input")
    assert memory.count(user="bob") == 0
    imported = client.post("/v1/import", content=r.content, headers=alice)
    assert imported.status_code == 200, imported.text
    assert imported.json()["nodes"] == 2
    assert memory.count(user="alice") == 2
    again = client.post("/v1/import", content=r.content, headers=alice)
    assert_problem(again, 409, "conflict")  # same ids exist already: nothing written
    assert memory.count(user="alice") == 2
    assert_problem(client.post("/v1/import", content=b"not json\n", headers=alice), 422, "invalid-input")


def test_stats_whoami_health(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice", agent="planner")
    add(client, h, "one fact")
    stats = client.get("/v1/stats", headers=h).json()
    assert stats["nodes"] == 1
    assert "consolidation_backlog" in stats
    me = client.get("/v1/whoami", headers=h).json()
    assert me["tenant"] == {"user": "alice", "agent": "planner", "run": None}
    assert client.get("/healthz").json()["status"] == "ok"
    assert client.get("/readyz").status_code == 200


# -- auth, tenants, keys -----------------------------------------------------------------------
def test_missing_bad_and_revoked_keys_are_401(client: TestClient, keys: KeyStore) -> None:
    r = client.get("/v1/memories")
    assert_problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert_problem(
        client.get("/v1/memories", headers={"Authorization": "Bearer dmk_nope"}), 401, "unauthorized"
    )
    key, token = keys.create(user="alice")
    assert client.get("/v1/memories", headers={"X-API-Key": token}).status_code == 200
    keys.revoke(key.id)
    assert_problem(client.get("/v1/memories", headers={"X-API-Key": token}), 401, "unauthorized")


def test_admin_key_manages_keys_and_nothing_else(client: TestClient, keys: KeyStore) -> None:
    admin, alice = auth(keys, admin=True), auth(keys, "alice")
    assert_problem(client.get("/v1/memories", headers=admin), 403, "forbidden")
    assert_problem(client.get("/v1/keys", headers=alice), 403, "forbidden")
    made = client.post("/v1/keys", json={"user": "carol", "label": "ci"}, headers=admin)
    assert made.status_code == 201, made.text
    token, key_id = made.json()["token"], made.json()["key"]["id"]
    listed = client.get("/v1/keys", headers=admin).json()
    assert key_id in [k["id"] for k in listed]
    assert all("token" not in k and "hash" not in k for k in listed)
    carol = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/whoami", headers=carol).json()["tenant"]["user"] == "carol"
    assert client.delete(f"/v1/keys/{key_id}", headers=admin).json()["revoked_at"] is not None
    assert_problem(client.get("/v1/whoami", headers=carol), 401, "unauthorized")
    assert_problem(client.delete("/v1/keys/00000000", headers=admin), 404, "not-found")
    assert_problem(
        client.post("/v1/keys", json={"admin": True, "user": "x"}, headers=admin), 422, "invalid-input"
    )


def test_key_a_never_sees_changes_or_deletes_bs_data(
    client: TestClient, keys: KeyStore, memory: Memory
) -> None:
    a, b = auth(keys, "alice"), auth(keys, "bob")
    (secret,) = add(client, b, "Bob's locker code is 4711.", speaker="Bob")
    for r in (
        client.get(f"/v1/memories/{secret}", headers=a),
        client.get(f"/v1/memories/{secret}/history", headers=a),
        client.get(f"/v1/memories/{secret}/inspect", headers=a),
        client.patch(f"/v1/memories/{secret}", json={"text": "hacked"}, headers=a),
        client.delete(f"/v1/memories/{secret}", headers=a),
    ):
        assert_problem(r, 404, "not-found")
    assert client.get("/v1/memories", headers=a).json()["items"] == []
    found = client.post("/v1/search", json={"query": "Bob locker code 4711"}, headers=a).json()
    assert found["evidence"] == []
    assert client.post("/v1/forget", json={"speaker": "Bob"}, headers=a).json()["forgotten"] == 0
    assert client.post("/v1/forget", json={"all": True}, headers=a).json()["forgotten"] == 0
    assert "4711" not in client.get("/v1/export", headers=a).text
    # the body cannot name a tenant: unknown fields are refused, nothing stored
    sneaky = {"observations": [{"text": "x", "user": "bob"}]}
    assert_problem(client.post("/v1/memories", json=sneaky, headers=a), 422, "invalid-input")
    assert memory.get(secret, user="bob").content == "Bob's locker code is 4711."
    assert memory.count(user="bob") == 1


def test_agent_key_sees_only_its_agent(client: TestClient, keys: KeyStore) -> None:
    user, planner, coder = (
        auth(keys, "alice"),
        auth(keys, "alice", agent="planner"),
        auth(keys, "alice", agent="coder"),
    )
    (p,) = add(client, planner, "the plan is to ship on Friday")
    (c,) = add(client, coder, "the code uses SQLite")
    assert client.get(f"/v1/memories/{p}", headers=planner).json()["tenant"]["agent"] == "planner"
    assert_problem(client.get(f"/v1/memories/{p}", headers=coder), 404, "not-found")
    assert {n["id"] for n in client.get("/v1/memories", headers=user).json()["items"]} == {p, c}


# -- bad input ---------------------------------------------------------------------------------
def test_malformed_wrong_huge_and_unknown_give_problems_and_store_nothing(
    client: TestClient, keys: KeyStore, memory: Memory
) -> None:
    h = auth(keys, "alice")
    json_h = {**h, "content-type": "application/json"}
    assert_problem(
        client.post("/v1/memories", content=b'{"observations": [', headers=json_h), 400, "malformed-json"
    )
    doc = assert_problem(
        client.post("/v1/memories", json={"observations": [{"text": 5}]}, headers=h), 422, "invalid-input"
    )
    assert doc["errors"][0]["loc"][-1] == "text"
    for bad in ({"observations": []}, {"observations": [{"text": ""}]}, {"observations": "x"}, {}):
        assert_problem(client.post("/v1/memories", json=bad, headers=h), 422, "invalid-input")
    mixed = {"observations": [{"text": "fine"}, {"text": "bad time", "at": "not a time"}]}
    assert_problem(client.post("/v1/memories", json=mixed, headers=h), 422, "invalid-input")
    huge = {"observations": [{"text": "x" * 10_000}] * 200}  # ~2 MB > the 1 MiB limit
    assert_problem(client.post("/v1/memories", json=huge, headers=h), 413, "too-large")

    def chunks() -> Iterator[bytes]:
        yield b'{"observations": [{"text": "'
        for _ in range(300):
            yield b"y" * 4096
        yield b'"}]}'

    assert_problem(client.post("/v1/memories", content=chunks(), headers=json_h), 413, "too-large")
    assert_problem(client.post("/v1/search", json={"query": "a", "k": 0}, headers=h), 422, "invalid-input")
    bad_now = {"query": "what did I do two days ago?", "now": "not a time"}  # the caller's present
    assert_problem(client.post("/v1/search", json=bad_now, headers=h), 422, "invalid-input")
    surrogate = b'{"query": "\\ud800"}'  # a lone surrogate SQLite cannot store
    assert_problem(client.post("/v1/search", content=surrogate, headers=json_h), 422, "invalid-input")
    assert_problem(client.get("/v1/memories/0123456789abcdef01234567", headers=h), 404, "not-found")
    assert_problem(client.get("/v1/memories/bad%20id", headers=h), 422, "invalid-input")
    assert_problem(client.get("/v1/nowhere", headers=h), 404, "not-found")
    assert memory.count(user="alice") == 0


def test_rate_limit_per_key(memory: Memory, keys: KeyStore) -> None:
    app = create_app(memory, keys=keys, settings=ServerSettings(rate_limit=1.0, burst=3, consolidate_every=0))
    a, b = auth(keys, "alice"), auth(keys, "bob")
    with TestClient(app) as c:
        codes = [c.get("/v1/stats", headers=a).status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200]
        r = c.get("/v1/stats", headers=a)
        assert_problem(r, 429, "rate-limited")
        assert int(r.headers["retry-after"]) >= 1
        assert c.get("/v1/stats", headers=b).status_code == 200  # another key has its own bucket


def test_no_auth_uses_the_configured_tenant(memory: Memory) -> None:
    app = create_app(memory, settings=ServerSettings(auth=False, tenant=Tenant("local")))
    with TestClient(app) as c:
        assert c.post("/v1/memories", json={"observations": [{"text": "hi"}]}).status_code == 201
    assert memory.count(user="local") == 1
    with pytest.raises(ConfigError):
        create_app(memory, settings=ServerSettings(auth=False))


def test_metrics_by_route_and_purpose(client: TestClient, keys: KeyStore) -> None:
    h = auth(keys, "alice")
    (node,) = add(client, h, "Mira: my bike broke.")
    client.post("/v1/search", json={"query": "bike"}, headers=h)
    client.get(f"/v1/memories/{node}", headers=h)
    assert_problem(client.get("/metrics"), 401, "unauthorized")  # any valid key, never none
    text = client.get("/metrics", headers=h).text
    assert 'dualmem_http_requests_total{method="POST",route="/v1/memories",status="201"} 1.0' in text
    assert 'route="/v1/memories/{node_id}"' in text  # the template, never the raw id
    assert node not in text
    assert 'dualmem_controller_calls_per_query_count{purpose="routing"} 1.0' in text
    assert 'dualmem_controller_calls_per_write_count{purpose="typing"} 1.0' in text
    assert "dualmem_store_nodes 1.0" in text
    assert "dualmem_http_request_seconds_bucket" in text
    assert "dualmem_consolidation_backlog" in text
    assert client.get("/metrics", headers=auth(keys, admin=True)).status_code == 200


def test_metrics_public_opt_out(memory: Memory, keys: KeyStore) -> None:
    app = create_app(memory, keys=keys, settings=ServerSettings(rate_limit=None, metrics_public=True))
    with TestClient(app) as c:
        r = c.get("/metrics")
        assert r.status_code == 200
        assert "dualmem_http_requests_total" in r.text


@pytest.mark.anyio
async def test_httpx_asgi_transport_with_lifespan(memory: Memory, keys: KeyStore) -> None:
    app = create_app(memory, keys=keys)
    h = auth(keys, "alice")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            r = await c.post("/v1/memories", json={"observations": [{"text": "async hello"}]}, headers=h)
            assert r.status_code == 201
            assert (await c.get(f"/v1/memories/{r.json()['ids'][0]}", headers=h)).json()[
                "content"
            ] == "async hello"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- concurrency and consolidation -------------------------------------------------------------
def test_writes_wait_out_another_process_holding_the_database(tmp_path: Path, keys: KeyStore) -> None:
    path = tmp_path / "locked.db"
    store = open_store(path, timeout=0.05)  # the store alone would give up after 50 ms
    with Memory(store, create_embedder("hashing"), _builtin(), profile=QUIET) as mem:
        app = create_app(
            mem, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0, lock_wait_s=10)
        )
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        releaser = threading.Timer(0.6, lambda: other.execute("COMMIT"))
        releaser.start()
        h = auth(keys, "alice")
        started = time.monotonic()
        with TestClient(app) as c:
            r = c.post("/v1/memories", json={"observations": [{"text": "written after the lock"}]}, headers=h)
        releaser.join()
        other.close()
        assert r.status_code == 201, r.text
        assert time.monotonic() - started >= 0.5
        assert mem.count(user="alice") == 1
        assert "dualmem_database_locked_retries_total" in app.state.service.metrics.render().decode()


def _builtin() -> Controller:
    return create_controller("builtin")


def test_consolidation_runs_on_the_memorys_scheduler_and_keeps_the_backlog(
    memory: Memory, keys: KeyStore
) -> None:
    service = Service(memory, keys, consolidate_every=3, consolidate_interval_s=3600)
    service.start()
    scope = service.scope(Tenant("alice"))
    service.add(scope, [{"text": f"Mira fact number {i} about bikes"} for i in range(3)])
    deadline = time.monotonic() + 10
    while service.metrics.consolidations.labels("count")._value.get() < 1:
        assert time.monotonic() < deadline, "no consolidation pass ran"
        time.sleep(0.05)
    service.add(scope, [{"text": "one more"}, {"text": "and another"}])
    assert service.backlog() == {Tenant("alice"): 2}
    service.stop()
    assert memory.scheduler.mode == "off"  # the memory's own profile again
    assert memory.store.get_meta("consolidation:waiting") == [["alice", None, None]]  # in the store
    again = Service(memory, keys, consolidate_every=3, consolidate_interval_s=3600)
    again.start()
    assert again.backlog() == {Tenant("alice"): 2}
    again.stop()


def test_concurrent_adds_commit_together_and_a_bad_one_fails_alone(memory: Memory, keys: KeyStore) -> None:
    service = Service(memory, keys, consolidate_every=0)
    alice, bob = service.scope(Tenant("alice")), service.scope(Tenant("bob"))
    jobs = [(alice, {"text": f"alice fact {i}"}) for i in range(4)]
    jobs += [(bob, {"text": "bob fact"}), (alice, {"text": "bad", "at": "not a time"})]
    results: dict[int, object] = {}

    def run(n: int) -> None:
        scope, obs = jobs[n]
        try:
            results[n] = service.add(scope, [obs])
        except InvalidInput as exc:
            results[n] = exc

    with service._writer:  # hold the writer so that every add queues behind it
        threads = [threading.Thread(target=run, args=(n,)) for n in range(len(jobs))]
        for t in threads:
            t.start()
        while len(service._queue) < len(jobs):
            time.sleep(0.01)
    for t in threads:
        t.join()
    assert isinstance(results[5], InvalidInput)
    for n in range(5):
        scope, obs = jobs[n]
        (node_id,) = results[n]  # type: ignore[misc]
        assert scope.get(node_id).content == obs["text"]
    assert memory.count(user="alice") == 4
    assert memory.count(user="bob") == 1
    text = service.metrics.render().decode()
    assert "dualmem_write_batch_requests_sum" in text
    assert "dualmem_observations_written_total 5.0" in text
