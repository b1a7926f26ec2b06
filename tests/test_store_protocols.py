"""The Store protocol's shape: ``MemoryStore``, a record store of at most 20 members with its
components, the primitives a backend writes, and the facade asking for a capability (never for a
backend class or a controller class)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from dualmem.config import Profile
from dualmem.control.base import BaseController
from dualmem.control.scripted import ScriptedController
from dualmem.embed import HashingEmbedder
from dualmem.memory import Memory
from dualmem.plane import InMemoryStore, SQLiteStore, base, lexindex
from test_storage_writes import Flaky


def _methods(protocol: type) -> set[str]:
    own = {name for name, _ in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")}
    return own - {"read_only"}


def _members(protocol: type) -> set[str]:
    """Every public member a protocol declares, its bases' too: methods and properties alike."""
    names: set[str] = set()
    for klass in protocol.__mro__:
        if klass.__module__ in ("typing", "builtins"):
            continue
        names |= {
            name
            for name, value in vars(klass).items()
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))
        }
    return names


#: the record store ``Memory`` asks for: the core's nodes, edges, transactions and snapshots, and
#: six components (each a property)
RECORD_STORE = {
    "read_only", "close", "transaction", "snapshot",
    "put_nodes", "update_node", "get_node", "get_nodes", "delete_nodes", "iter_nodes", "recent_nodes",
    "count",
    "put_edges", "edges_of",
    "lexical", "vectors", "links", "context", "log", "meta",
}  # fmt: skip


def test_the_memory_store_is_a_record_store_of_at_most_20_members() -> None:
    """Counted honestly: every method and property ``MemoryStore`` declares or inherits."""
    assert _members(base.MemoryStore) == RECORD_STORE
    assert len(RECORD_STORE) <= 20
    components = [
        base.VectorComponent, base.LinkComponent, base.ContextComponent, base.LogComponent,
        base.MetaComponent, lexindex.LexicalComponent,
    ]  # fmt: skip
    assert all(len(_members(c)) <= 7 for c in components)
    assert base.SearchStore is base.MemoryStore
    assert base.WriteStore is base.MemoryStore


def test_a_backend_writes_the_primitives_its_components_are_composed_of() -> None:
    """``Backend``: the core (``delete_edges`` beside it) and the nine capability protocols, each small."""
    assert len(_methods(base.Store)) <= 15
    capabilities = [
        base.Meta, base.VectorIndex, base.LexicalIndex, base.ContextWindow, base.LinkIndex,
        base.DecisionLog, base.WriteKeys, base.TenantAdmin, base.Health,
    ]  # fmt: skip
    assert all(len(_methods(c)) <= 5 for c in capabilities)
    covered = set().union(*(_methods(c) for c in [base.Store, *capabilities]))
    assert covered | {"delete_edges"} == _methods(base.Backend)
    for backend in (InMemoryStore, SQLiteStore):
        assert isinstance(backend.__new__(backend), base.Backend)


def test_optional_capabilities_are_the_sqlite_stores(tmp_path: Path) -> None:
    with SQLiteStore.open(tmp_path / "m.db") as sqlite, InMemoryStore() as memory:
        for capability in (base.ApproximateSearch, base.LexicalIndexAdmin, base.Erasable, base.StagedNodes):
            assert isinstance(sqlite, capability)
            assert not isinstance(memory, capability)


class _AnnMemory(InMemoryStore):
    """An in-memory store that also offers approximate search (as a new backend could)."""

    def __init__(self) -> None:
        super().__init__()
        self.thresholds: list[int] = []

    def use_ann(self, threshold: int, *, folder: str | Path | None = None) -> None:
        self.thresholds.append(threshold)


def test_the_facade_asks_for_the_capability_not_the_backend() -> None:
    store = _AnnMemory()
    with Memory(store, HashingEmbedder(32), ScriptedController(), profile=None) as mem:
        assert store.thresholds == [mem.profile.ann_threshold]


_Switched = Flaky  # the builtin decider behind a switch; not marked ``runs_inline``


class _Inline(_Switched):
    runs_inline = True  # in-process, bounded, no I/O: what may run at open


def _open(db: Path, controller: BaseController) -> Memory:
    prof = Profile.named("builtin").with_(write__consolidation="off")
    return Memory.open(db, embedder=HashingEmbedder(64), controller=controller, answerer=None, profile=prof)


@pytest.mark.parametrize(("controller", "repaired"), [(_Inline, True), (_Switched, False)])
def test_repair_at_open_follows_the_controllers_runs_inline_flag(
    tmp_path: Path, controller: type[Flaky], repaired: bool
) -> None:
    """Not the builtin's class: any controller flagged ``runs_inline`` completes pending nodes at a
    writable open; one that is not (a remote one) is never called then."""
    db = tmp_path / "m.db"
    down = Flaky()
    down.down = True
    with _open(db, down) as mem:
        node_id = mem.add("the meeting moved to Friday", user="u")
        assert mem.get(node_id, user="u").status == "pending"
    with _open(db, controller()) as mem:
        status = mem.get(node_id, user="u").status
    assert (status == "complete") is repaired
