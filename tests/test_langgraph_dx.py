"""``DualmemStore`` with LangGraph's ``("memories", user_id)`` namespaces, over a local memory and over
a real ``dualmem serve`` (uvicorn on 127.0.0.1) through :class:`~dualmem.client.Client`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("fastapi")
from langgraph.store.base import InvalidNamespaceError

from dualmem import Memory, Profile, Tenant
from dualmem.client import Client
from dualmem.integrations.langgraph import MARK, BadNamespace, DualmemStore, tenant_of
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from server_support import live_server

QUIET = Profile.builtin().with_(write__consolidation="off")
ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("memories", "alice"), "bike", {"text": "Alice bought a blue Gazelle bicycle in May.", "n": 1}),
    (("memories", "alice"), "food", {"text": "Alice stopped eating sushi.", "n": 2}),
    (("memories", "alice", "coder"), "style", {"text": "Alice wants type hints.", "n": 3}),
    (("memories", "alice", "coder", "r7", "scratch"), "todo", {"text": "Finish the parser tests.", "n": 4}),
    (("notes", "alice"), "bike", {"text": "A note about a bicycle shop.", "n": 5}),
]


def view(items: Any) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(x.namespace, x.key, x.value) for x in items]


def exercise(store: DualmemStore) -> dict[str, Any]:
    """The same operations on any backend; returns what they gave back."""
    for ns, key, value in ITEMS:
        store.put(ns, key, value)
    out: dict[str, Any] = {
        "namespaces": store.list_namespaces(),
        "alice": view(store.search(("memories", "alice"), limit=20)),
        "coder": view(store.search(("memories", "alice", "coder"), limit=20)),
        "notes": view(store.search(("notes",), limit=20)),
        "depth2": store.list_namespaces(prefix=("memories",), max_depth=2),
        "filtered": view(store.search(("memories", "alice"), filter={"n": {"$gte": 3}})),
    }
    hits = store.search(("memories", "alice"), query="Which bicycle did Alice buy?", limit=2)
    out["query"] = hits[0].key, hits[0].namespace
    assert hits[0].score is not None
    store.put(("memories", "alice"), "bike", {"text": "Alice sold the Gazelle.", "n": 9})
    got = store.get(("memories", "alice"), "bike")
    assert got is not None
    out["updated"] = got.value
    assert store.get(("notes", "alice"), "bike").value == ITEMS[4][2]  # type: ignore[union-attr]
    store.delete(("memories", "alice"), "food")
    out["after_delete"] = sorted(x.key for x in store.search(("memories", "alice"), limit=20))
    return out


EXPECTED = {
    "namespaces": sorted({ns for ns, _, _ in ITEMS}),
    "alice": [(ns, k, v) for ns, k, v in ITEMS if ns[0] == "memories"],
    "coder": [(ns, k, v) for ns, k, v in ITEMS if ns[:3] == ("memories", "alice", "coder")],
    "notes": [ITEMS[4]],
    "depth2": [("memories", "alice")],
    "filtered": [ITEMS[2], ITEMS[3]],
    "query": ("bike", ("memories", "alice")),
    "updated": {"text": "Alice sold the Gazelle.", "n": 9},
    "after_delete": ["bike", "style", "todo"],
}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=QUIET) as mem:
        yield mem


def test_memories_user_namespaces_map_to_the_users_tenant(memory: Memory) -> None:
    assert tenant_of(("memories", "alice")) == Tenant("alice")
    assert tenant_of(("memories", "alice", "coder", "r7", "scratch")) == Tenant("alice", "coder", "r7")
    assert tenant_of(("alice", "coder"), user_at=0) == Tenant("alice", "coder")
    store = DualmemStore(memory)
    assert exercise(store) == EXPECTED
    assert {n.content for n in memory.nodes(user="alice", agent="coder")} == {
        "Alice wants type hints.",
        "Finish the parser tests.",
    }
    (todo,) = memory.nodes(user="alice", agent="coder", run="r7")
    assert todo.metadata[MARK]["namespace"] == ["memories", "alice", "coder", "r7", "scratch"]  # type: ignore[index]
    assert memory.count(user="memories") == 0  # the collection label is never a user
    current = [
        n for n in memory.nodes(user="alice") if n.valid_to is None and n.content.startswith("Alice sold")
    ]
    assert len(memory.history(current[0].id, user="alice")) == 2  # the overwrite kept the old version
    with pytest.raises(BadNamespace) as info:
        store.put(("memories",), "k", {"text": "no user"})
    assert isinstance(info.value, InvalidNamespaceError)


def test_the_store_over_a_real_server_gives_the_same_answers(memory: Memory, tmp_path: Path) -> None:
    keys = KeyStore.open(tmp_path / "m.keys.db")
    app = create_app(memory, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
    _, alice = keys.create(user="alice")
    try:
        with live_server(app) as url, Client(url, api_key=alice) as client:
            store = DualmemStore(client)
            assert exercise(store) == EXPECTED
            with pytest.raises(BadNamespace, match="serves user 'alice'"):
                store.put(("memories", "bob"), "k", {"text": "not alice's"})
            assert store.list_namespaces() == EXPECTED["namespaces"]
    finally:
        keys.close()
    # over HTTP every item lives in the key's tenant; the namespace rides in the metadata
    assert memory.count(user="bob") == 0
    assert {n.tenant for n in memory.nodes(user="alice")} == {Tenant("alice")}
    current = [
        n for n in memory.nodes(user="alice") if n.valid_to is None and n.content.startswith("Alice sold")
    ]
    assert len(memory.history(current[0].id, user="alice")) == 2
