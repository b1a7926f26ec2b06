"""The inspector's page, assets and read-only routes, in process against a real SQLite memory."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from dualmem import Memory, Profile
from dualmem.control.scripted import ScriptedController
from dualmem.embed import HashingEmbedder
from dualmem.server.keys import KeyStore
from dualmem.server.routes_inspector import inspector_router
from dualmem.server.ui.growth import growth
from dualmem.types import VIEWS, Tenant
from server_support import app_client, free_port, keys, wait_ready  # noqa: F401 - fixtures

SUPERSEDE = {
    "relation.time": "unknown",
    "relation.supersedes": 0.0,  # no update among these texts at write time
    "consolidate.contradiction": 0.9,
    "consolidate.obsolescence": 0.9,
    "consolidate.link_usefulness": 0.8,
    "consolidate.representation": "keep_separate",
}
LOVE = "I love sushi, I eat it every week."
NO_LONGER = "I no longer eat sushi since I became vegetarian."


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    ctl = ScriptedController(SUPERSEDE, default=0.7)  # type: ignore[arg-type]
    prof = Profile.dualmem().with_(write__consolidation="off")
    with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(256), controller=ctl, profile=prof) as mem:
        yield mem


@pytest.fixture
def client(memory: Memory, keys: KeyStore) -> Iterator[TestClient]:
    with app_client(memory, keys, [inspector_router()]) as c:
        yield c


def bearer(keys: KeyStore, user: str, agent: str | None = None) -> dict[str, str]:
    _, token = keys.create(user=user, agent=agent)
    return {"Authorization": f"Bearer {token}"}


def test_page_and_assets_need_no_key_and_hold_no_data(client: TestClient) -> None:
    page = client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for asset, media in [
        ("app.js", "text/javascript"),
        ("graph.js", "text/javascript"),
        ("style.css", "text/css"),
    ]:
        assert f"/ui/static/{asset}" in page.text
        r = client.get(f"/ui/static/{asset}")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith(media)
        assert len(r.content) > 500
    assert client.get("/ui/static/../keys.py").status_code == 404
    assert client.get("/ui/static/index.py").status_code == 404
    assert client.get("/ui/", follow_redirects=False).headers["location"] == "/ui"
    # the JSON routes are behind the same auth as the API
    for path in ("/v1/inspector/growth", "/v1/inspector/consolidation", "/v1/inspector/briefs?ids=x"):
        assert client.get(path).status_code == 401


def test_node_view_has_versions_neighbours_and_decisions(client: TestClient, keys: KeyStore) -> None:
    me = bearer(keys, "u")
    body = {"observations": [{"text": LOVE, "at": "2024-01-10"}, {"text": NO_LONGER, "at": "2024-06-02"}]}
    old, new = client.post("/v1/memories", json=body, headers=me).json()["ids"]
    fixed = client.patch(f"/v1/memories/{new}", json={"text": NO_LONGER + " Fish too."}, headers=me).json()[
        "new"
    ]
    view = client.get(f"/v1/inspector/nodes/{new}", headers=me)
    assert view.status_code == 200, view.text
    doc = view.json()
    assert doc["inspection"]["node"]["id"] == new
    assert [v["id"] for v in doc["versions"]] == [new, fixed]
    assert doc["versions"][0]["valid_to"] is not None
    neighbours = {b["id"]: b for b in doc["neighbours"]}
    assert {old, fixed} <= set(neighbours)
    assert neighbours[old]["text"] == LOVE
    assert neighbours[new if new in neighbours else fixed]["current"] is True
    assert {d["purpose"] for d in doc["inspection"]["decisions"]} >= {"typing", "relations"}
    other = bearer(keys, "someone-else")
    assert client.get(f"/v1/inspector/nodes/{new}", headers=other).status_code == 404


def test_briefs_leave_out_other_tenants(client: TestClient, keys: KeyStore) -> None:
    a, b = bearer(keys, "a"), bearer(keys, "b")
    mine = client.post("/v1/memories", json={"observations": [{"text": "x " * 200}]}, headers=a).json()["ids"]
    theirs = client.post("/v1/memories", json={"observations": [{"text": "theirs"}]}, headers=b).json()["ids"]
    r = client.get("/v1/inspector/briefs", params={"ids": [*theirs, *mine, "nope", *mine]}, headers=a)
    assert r.status_code == 200
    out = r.json()
    assert [x["id"] for x in out] == mine
    assert len(out[0]["text"]) == 160
    assert out[0]["text"].endswith("…")


def test_consolidation_log_lists_each_judged_pair(client: TestClient, keys: KeyStore, memory: Memory) -> None:
    me = bearer(keys, "u")
    body = {"observations": [{"text": LOVE, "at": "2024-01-10"}, {"text": NO_LONGER, "at": "2024-06-02"}]}
    old, new = client.post("/v1/memories", json=body, headers=me).json()["ids"]
    empty = client.get("/v1/inspector/consolidation", headers=me).json()
    assert empty == {"pairs": [], "total": 0}
    report = client.post("/v1/consolidate", headers=me).json()
    # the pass judges and links; an update supersedes when it is written (not here: scripted 0.0)
    assert report["superseded"] == []
    log = client.get("/v1/inspector/consolidation", headers=me).json()
    assert log["total"] == report["pairs"] == 1
    pair = log["pairs"][0]
    assert (pair["new"]["id"], pair["old"]["id"]) == (new, old)
    assert pair["superseded"] is False
    assert pair["linked"] is True
    got = {d["key"]: (d["value"], d["label"]) for d in pair["decisions"]}
    assert got["consolidate.obsolescence"] == (0.9, None)
    assert got["consolidate.representation"][1] == "keep_separate"
    recorded = [d for d in memory.inspect(new, user="u").decisions if d.purpose == "consolidation"]
    assert len(pair["decisions"]) == len(recorded)
    assert client.get("/v1/inspector/consolidation", headers=bearer(keys, "v")).json()["total"] == 0


def test_growth_ends_at_the_stats_totals(client: TestClient, keys: KeyStore, memory: Memory) -> None:
    me = bearer(keys, "u")
    texts = [
        ("Mira moved to Utrecht with her dog Biscuit.", "2024-05-02"),
        (LOVE, "2024-05-03"),
        ("Biscuit ate a sock, so Mira went to the vet.", "2024-06-03"),
        (NO_LONGER, "2024-06-20"),
    ]
    body = {"observations": [{"text": t, "at": at} for t, at in texts]}
    ids = client.post("/v1/memories", json=body, headers=me).json()["ids"]
    client.post("/v1/consolidate", headers=me)
    # a corrected text is a new version: the old one stays, superseded
    client.patch(f"/v1/memories/{ids[1]}", json={"text": LOVE + " Twice, actually."}, headers=me)
    stats = client.get("/v1/stats", headers=me).json()
    for by in ("observed", "written"):
        doc = client.get("/v1/inspector/growth", params={"by": by, "buckets": 10}, headers=me).json()
        assert doc["views"] == list(VIEWS)
        points = doc["points"]
        assert 1 < len(points) <= 10
        last = points[-1]
        assert last["nodes"] == stats["nodes"] == 5
        assert last["current"] == 5 - len([n for n in memory.nodes(user="u") if n.valid_to is not None]) < 5
        assert last["edges"] == stats["edges_by_view"]
        for before, after in itertools.pairwise(points):
            assert before["at"] <= after["at"]
            assert before["nodes"] <= after["nodes"]
            assert all(before["edges"][v] <= after["edges"][v] for v in VIEWS)
    observed = growth(memory.store, Tenant("u"), by="observed", buckets=4).points
    assert observed[0].at.date().isoformat() >= "2024-05-02"
    assert observed[-1].at.date().isoformat() == "2024-06-20"
    assert growth(memory.store, Tenant("nobody")).points == ()


def test_dualmem_serve_mounts_the_inspector(tmp_path: Path) -> None:
    port = free_port()
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    db = str(tmp_path / "m.db")
    cmd = [sys.executable, "-m", "dualmem.cli.main", "--db", db, "--embedder", "hashing", "--user", "mira",
           "serve", "--no-auth", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, proc.stderr)
        page = httpx.get(f"{url}/ui")
        assert page.status_code == 200
        assert "dualmem inspector" in page.text
        httpx.post(f"{url}/v1/memories", json={"observations": [{"text": "Mira: my bike broke."}]})
        assert httpx.get(f"{url}/v1/inspector/growth").json()["points"][-1]["nodes"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "inspector at /ui" in err
