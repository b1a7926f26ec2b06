"""The periodic-consolidation cadence owned by ``write/``: every N writes of a tenant, one window."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from dualmem.errors import ConfigError
from dualmem.types import Tenant
from dualmem.write.cadence import Cadence
from threads import run_threads


def test_windows_of_exactly_every_writes_per_tenant() -> None:
    cadence = Cadence(3)
    a, b = Tenant("a"), Tenant("b", "x")
    assert cadence.record(a, ["1", "2"]) == []
    assert cadence.record(b, ["x1"]) == []
    assert cadence.record(a, ["3", "4", "5", "6", "7"]) == [("1", "2", "3"), ("4", "5", "6")]
    assert cadence.waiting(a) == ("7",)
    assert cadence.waiting(b) == ("x1",)
    assert cadence.record(b, []) == []


def test_off_and_bad_settings() -> None:
    assert Cadence(0).record(Tenant("a"), ["1"] * 50) == []
    with pytest.raises(ConfigError):
        Cadence(2.5)  # type: ignore[arg-type]


class DictBacklog:
    """A backlog kept elsewhere (as a store would): the cadence only loads and saves it."""

    def __init__(self) -> None:
        self.saved: dict[Tenant, list[str]] = {}

    def load(self, tenant: Tenant) -> list[str]:
        return list(self.saved.get(tenant, []))

    def save(self, tenant: Tenant, node_ids: Sequence[str]) -> None:
        self.saved[tenant] = list(node_ids)


def test_backlog_survives_a_new_cadence() -> None:
    backlog = DictBacklog()
    Cadence(4, backlog=backlog).record(Tenant("a"), ["1", "2", "3"])
    assert Cadence(4, backlog=backlog).record(Tenant("a"), ["4"]) == [("1", "2", "3", "4")]
    assert backlog.saved[Tenant("a")] == []


def test_concurrent_writers_lose_no_write() -> None:
    cadence = Cadence(5)
    due: list[tuple[str, ...]] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        for i in range(200):
            windows = cadence.record(Tenant("a"), [f"{w}-{i}"])
            with lock:
                due.extend(windows)

    run_threads(writer, 4)
    seen = [i for window in due for i in window] + list(cadence.waiting(Tenant("a")))
    assert sorted(seen) == sorted(f"{w}-{i}" for w in range(4) for i in range(200))
    assert all(len(window) == 5 for window in due)


def test_periodic_runs_due_windows_inline_in_the_background_or_not_at_all(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from dualmem.errors import ControllerError
    from dualmem.write.background import Periodic

    ran: list[tuple[str, tuple[str, ...]]] = []
    worker: list[str] = []

    def run(tenant: Tenant, ids: Sequence[str]) -> None:
        worker.append(threading.current_thread().name)
        ran.append((tenant.user, tuple(ids)))
        if "boom" in ids:
            raise ControllerError("controller down")

    inline = Periodic(run, mode="inline", every=2)
    inline.wrote(Tenant("a"), ["1", "2", "3"])
    assert ran == [("a", ("1", "2"))]
    assert worker == [threading.current_thread().name]  # on the writer's thread
    with caplog.at_level("WARNING", logger="dualmem"):
        inline.wrote(Tenant("a"), ["boom"])  # inline: the write has committed, the failure is logged
    assert "controller down" in caplog.text
    caplog.clear()
    ran.clear()
    worker.clear()

    background = Periodic(run, mode="background", every=2)
    background.wrote(Tenant("b"), ["x", "boom", "y", "z"])
    background.join(timeout=10)
    background.close()
    assert ran == [("b", ("x", "boom")), ("b", ("y", "z"))]
    assert set(worker) == {"dualmem-consolidate"}
    assert "background consolidation for b failed" in caplog.text  # logged, never raised into a write
    ran.clear()

    off = Periodic(run, mode="off", every=2)
    off.wrote(Tenant("c"), ["1", "2", "3", "4"])
    off.close()
    assert ran == []
    assert off.cadence.waiting(Tenant("c")) == ()
