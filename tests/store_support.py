"""Shared test parts for tests run on both stores: the store kinds and a filled builtin memory."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dualmem import Memory
from dualmem.control.builtin import BuiltinController
from dualmem.embed import Embedder
from dualmem.plane import InMemoryStore, SQLiteStore, Store
from dualmem.types import Observation, Tenant

#: when the pool tests' conversation starts, and how it starts (speaker, text)
AT = dt.datetime(2023, 5, 8, 13, 0, tzinfo=dt.UTC)
PEPPER = [
    ("Mira", "Guess what happened at the weekend?"),
    ("Jon", "Tell me!"),
    ("Mira", "I adopted a border collie called Pepper."),
    ("Jon", "Lovely. Where is it?"),
    ("Mira", "Where is what?"),
]

#: the params of a fixture run on each store
STORE_KINDS = ["memory", "sqlite"]


def new_store(kind: str, tmp_path: Path) -> Store:
    """An empty store: in memory, or a SQLite file under ``tmp_path``."""
    return InMemoryStore() if kind == "memory" else SQLiteStore.open(tmp_path / "m.db")


@contextmanager
def filled_memory(
    kind: str, embedder: Embedder, tmp_path: Path, observations: Iterable[Observation]
) -> Iterator[Memory]:
    """A memory on a new store of ``kind`` with the builtin decider, holding ``observations`` of user u."""
    with Memory(new_store(kind, tmp_path), embedder, BuiltinController()) as m:
        m.add_many(observations, user="u")
        yield m


def tenant_where(tenant: Tenant | None, alias: str = "n") -> tuple[str, list[object]]:
    """A test's own SQL condition selecting ``tenant``'s rows of a SQLite file's ``nodes`` table
    (``alias``) and its parameters: the columns as the schema names them, no store module used."""
    if tenant is None:
        return "1", []
    parts, params = [f"{alias}.user_id = ?"], [tenant.user]
    for column, value in (("agent_id", tenant.agent), ("run_id", tenant.run)):
        if value is not None:
            parts.append(f"{alias}.{column} = ?")
            params.append(value)
    return " AND ".join(parts), params


#: the user the filled memories hold
USER = Tenant("u")


def turn_ids(mem: Memory, ids: list[str], tenant: Tenant = USER) -> list[str]:
    """The turn ids of the memories ``ids`` of ``tenant`` (what a channel test compares), in order."""
    nodes = mem.store.get_nodes(ids, tenant)
    return [nodes[i].turn_id or "" for i in ids]
