"""Fixtures shared by the Store contract files that run on every backend (memory, sqlite, postgres).

``test_store_contract.py`` keeps its own ``store`` fixture (it also builds stores by factory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dualmem.plane import InMemoryStore, SQLiteStore, Store

BACKENDS: dict[str, Callable[[Path], Store]] = {
    "memory": lambda _path: InMemoryStore(),
    "sqlite": lambda path: SQLiteStore.open(path / "store.db", timeout=1.0),
}


@pytest.fixture(params=[*sorted(BACKENDS), "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "postgres":
        made = request.getfixturevalue("pg_store_factory")()
    else:
        made = BACKENDS[request.param](tmp_path)
    yield made
    made.close()
