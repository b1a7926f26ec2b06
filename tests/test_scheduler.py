"""One consolidation scheduler per memory: the library and a server drive the same ``Periodic``.

Serving a default-opened memory (background passes every 20 writes) through ``create_app`` runs one
pass per cadence, not one from the library and another from the server; a second app cannot drive
the same memory; passes by time (the server's interval) cover what a tenant has waiting, and the
tenants waiting survive a restart in the store.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dualmem import Memory, Profile
from dualmem.errors import ConfigError
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.service import Service
from dualmem.types import Tenant
from dualmem.write.background import Periodic, Trigger
from dualmem.write.consolidate import ConsolidationReport, Consolidator
from dualmem.write.durable import WorkQueue

Passes = list[tuple[str, tuple[str, ...] | None]]


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Passes:
    """Every consolidation pass any scheduler runs (whatever calls ``Consolidator.run``)."""
    seen: Passes = []
    original = Consolidator.run

    def counted(
        self: Consolidator, tenant: Tenant, node_ids: Sequence[str] | None = None
    ) -> ConsolidationReport:
        seen.append((tenant.user, None if node_ids is None else tuple(node_ids)))
        return original(self, tenant, node_ids)

    monkeypatch.setattr(Consolidator, "run", counted)
    return seen


def _settings(**fields: object) -> ServerSettings:
    return ServerSettings(auth=False, tenant=Tenant("u"), rate_limit=None, **fields)  # type: ignore[arg-type]


def test_serving_a_default_opened_memory_runs_one_pass_per_cadence(tmp_path: Path, passes: Passes) -> None:
    with Memory.open(tmp_path / "m.db", embedder="hashing") as mem:
        assert (mem.scheduler.mode, mem.profile.write.consolidate_every) == ("background", 20)
        app = create_app(mem, settings=_settings(consolidate_interval_s=3600))
        ids: list[str] = []
        with TestClient(app) as client:
            for i in range(40):
                body = {"observations": [{"text": f"Mira's bike fact number {i}"}]}
                ids += client.post("/v1/memories", json=body).json()["ids"]
            mem.wait_for_consolidation(timeout=30)
        # the app has stopped: a scheduler of its own, if it had one, has run its passes
        assert app.state.service.metrics.consolidations.labels("count")._value.get() == 2
        assert passes == [("u", tuple(ids[:20])), ("u", tuple(ids[20:]))]
        assert mem.scheduler.mode == "background"  # the library's own cadence once the app stopped
        mem.add_many([f"later fact {i}" for i in range(20)], user="u")
        mem.wait_for_consolidation(timeout=30)
        assert len(passes) == 3


def test_a_second_app_cannot_drive_the_same_memory(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder="hashing") as mem:
        first, second = create_app(mem, settings=_settings()), create_app(mem, settings=_settings())
        with TestClient(first):
            with pytest.raises(ConfigError, match="driven by another server"), TestClient(second):
                pass
            assert first.state.service.worker_alive()
        with TestClient(second):  # once the first stopped
            assert second.state.service.worker_alive()


def test_a_pass_by_time_covers_the_writes_waiting(tmp_path: Path, passes: Passes) -> None:
    quiet = Profile.builtin().with_(write__consolidation="off")
    keys = KeyStore.open(":memory:")
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=quiet) as mem:
        service = Service(mem, keys, consolidate_every=5, consolidate_interval_s=0.2)
        service.start()
        scope = service.scope(Tenant("alice"))
        ids = service.add(scope, [{"text": "Mira bought a bike"}, {"text": "Mira sold the old bike"}])
        deadline = time.monotonic() + 15
        while service.metrics.consolidations.labels("interval")._value.get() < 1:
            assert time.monotonic() < deadline, "no pass by time ran"
            time.sleep(0.05)
        service.stop()
        assert passes == [("alice", tuple(ids))]
        assert service.backlog() == {}
        assert mem.store.get_meta("consolidation:queue") == []
    keys.close()


def test_the_tenants_waiting_survive_a_restart(tmp_path: Path, passes: Passes) -> None:
    quiet = Profile.builtin().with_(write__consolidation="off")
    keys = KeyStore.open(tmp_path / "k.db")
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=quiet) as mem:
        service = Service(mem, keys, consolidate_every=5, consolidate_interval_s=3600)
        service.start()
        ids = service.add(service.scope(Tenant("alice")), [{"text": "one"}, {"text": "two"}])
        service.stop()
    assert passes == []
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=quiet) as mem:
        service = Service(mem, keys, consolidate_every=5, consolidate_interval_s=0.2)
        service.start()
        assert service.backlog() == {Tenant("alice"): 2}
        deadline = time.monotonic() + 15
        while not passes:
            assert time.monotonic() < deadline, "the restarted service forgot the waiting writes"
            time.sleep(0.05)
        service.stop()
    assert passes == [("alice", tuple(ids))]
    keys.close()


def test_a_trigger_is_checked() -> None:
    with pytest.raises(ConfigError, match="interval"):
        Trigger(5, interval_s=0)
    with pytest.raises(ConfigError, match="integer"):
        Trigger(2.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a count"):
        Trigger(0, interval_s=1.0)
    assert not Trigger(0).active
    assert Trigger(3, interval_s=1.0).active


def test_drive_and_release_switch_the_trigger_and_the_guard() -> None:
    ran: list[tuple[str, ...]] = []
    guarded: list[str] = []
    periodic = Periodic(lambda _tenant, ids: ran.append(tuple(ids)), mode="inline", every=3)
    owner = object()

    def guard(fn: object) -> object:
        guarded.append("pass")
        return fn()  # type: ignore[operator]

    periodic.drive(owner, Trigger(2), guard=guard)
    assert periodic.mode == "background"
    periodic.wrote(Tenant("a"), ["1", "2", "3"])
    periodic.join(timeout=10)
    assert ran == [("1", "2")]
    assert guarded == ["pass"]
    assert periodic.waiting() == {Tenant("a"): 1}
    with pytest.raises(ConfigError):
        periodic.drive(object(), Trigger(2))
    periodic.release(owner)
    assert (periodic.mode, periodic.trigger) == ("inline", Trigger(3))
    periodic.wrote(Tenant("a"), ["4", "5"])  # 3, 4, 5: the library's window of three, inline
    assert ran == [("1", "2"), ("3", "4", "5")]
    periodic.close()


@pytest.mark.parametrize("own_mode", ["off", "background"])
def test_passes_left_queued_run_once_whoever_resumes_them(
    tmp_path: Path, passes: Passes, own_mode: str
) -> None:
    quiet = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=quiet) as mem:
        ids = mem.add_many(["Mira bought a bike", "Mira sold the old bike"], user="u")
        WorkQueue(mem.store).push(Tenant("u"), ids)  # as a process that died would leave it
    keys = KeyStore.open(":memory:")
    profile = Profile.builtin().with_(write__consolidation=own_mode)
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=profile) as mem:
        service = Service(mem, keys, consolidate_every=5, consolidate_interval_s=3600)
        service.start()  # "off": nothing resumed at open, the server does; "background": already resumed
        service.start()  # again: a no-op
        mem.wait_for_consolidation(timeout=30)
        service.stop()
        assert passes == [("u", tuple(ids))]
        assert mem.store.get_meta("consolidation:queue") == []
    keys.close()
