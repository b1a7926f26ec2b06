"""``MemoryStore.links.select``: a store answers a ``Filter`` by its own index exactly as the Python
scan of the tenant (``Filter.matches`` on every node) does, on every backend (memory, SQLite,
PostgreSQL), for random nodes and random filters, in the same order."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dualmem.plane import Store
from dualmem.plane.base import MemoryStore
from dualmem.types import JSONValue, Node, Tenant
from dualmem.vocab import Filter
from dualmem.write.lifecycle import scan, select

_tenants = itertools.count()
_ids = itertools.count()

T0 = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC)
#: times around the bounds a filter takes (equal, a microsecond either side), another offset, far ones
TIMES = [
    T0,
    T0 + dt.timedelta(microseconds=1),
    T0 - dt.timedelta(microseconds=1),
    T0 + dt.timedelta(days=3),
    dt.datetime(2024, 3, 1, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),  # == T0
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999998, tzinfo=dt.UTC),
    dt.datetime(1, 1, 2, tzinfo=dt.UTC),
]
#: speakers whose Python lowering differs from an ASCII one (the Kelvin sign lowers to "k")
SPEAKERS = ["alice", "Alice", "ALICE", "bob", "", "K", "\u212a", "k", "İ", "i̇", "Ærø", "ærø", "a\x01"]
SESSIONS = ["s1", "s2", "S1", "", "s\x01"]
KEYS = ["topic", "n", "a.b", 'q"k', "ключ", "$"]
VALUES: list[JSONValue] = [
    None, True, False, 0, 1, 1.0, -0.0, 2, 2**53, 2**53 + 1, 2**70, 0.1, 0.5, -3.25,
    "a", "A", "", "1", "true", "null", "\x00", "a\x01", "é", "ключ",
    [], [1], [True], {}, {"x": 1}, {"x": True}, {"x": 1.0}, [None],
]  # fmt: skip

times = st.one_of(st.none(), st.sampled_from(TIMES), st.datetimes(timezones=st.just(dt.UTC)))
metadata = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
nodes = st.lists(
    st.tuples(
        st.one_of(st.none(), st.sampled_from(SPEAKERS)),
        st.one_of(st.none(), st.sampled_from(SESSIONS)),
        times,
        metadata,
    ),
    max_size=12,
)
filters = st.builds(
    Filter,
    speaker=st.one_of(st.none(), st.sampled_from(SPEAKERS)),
    since=st.one_of(st.none(), st.sampled_from(TIMES)),
    until=st.one_of(st.none(), st.sampled_from(TIMES)),
    metadata=st.one_of(
        st.none(), st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
    ),
    session=st.one_of(st.none(), st.sampled_from(SESSIONS)),
)


def _put(
    store: Store,
    tenant: Tenant,
    rows: list[tuple[str | None, str | None, dt.datetime | None, dict[str, JSONValue]]],
) -> None:
    rng = np.random.default_rng(0)
    made = []
    for speaker, session, at, meta in rows:
        vec = rng.standard_normal(8).astype(np.float32)
        made.append(
            Node(
                id=f"f{next(_ids):07d}",
                tenant=tenant,
                content="a memory",
                at=at,
                speaker=speaker,
                session=session,
                metadata=meta,
                embedding=vec / np.linalg.norm(vec),
            )
        )
    store.put_nodes(made)


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=nodes, flts=st.lists(filters, min_size=1, max_size=4))
def test_the_store_answers_a_filter_as_the_python_scan_does(
    store: Store,
    rows: list[tuple[str | None, str | None, dt.datetime | None, dict[str, JSONValue]]],
    flts: list[Filter],
) -> None:
    assert isinstance(store, MemoryStore)
    tenant = Tenant(f"u{next(_tenants)}")
    agent = Tenant(tenant.user, "a1")
    _put(store, tenant, rows)
    _put(store, agent, rows[::2])  # the user's view covers its agent's nodes, the agent's its own only
    _put(store, Tenant(f"other{next(_tenants)}"), rows)  # another tenant's equal nodes stay out
    for flt in flts:
        assert store.links.select(tenant, flt) == scan(store, tenant, flt)
        assert store.links.select(agent, flt) == scan(store, agent, flt)


def test_select_is_the_store_query_and_refuses_an_empty_filter(store: Store) -> None:
    assert isinstance(store, MemoryStore)
    tenant = Tenant(f"u{next(_tenants)}")
    _put(
        store,
        tenant,
        [("Alice", "s1", T0, {"topic": 1}), ("bob", "s1", T0, {"topic": True}), ("alice", None, None, {})],
    )
    flt = Filter(speaker="ALICE", metadata={"topic": True})
    assert select(store, tenant, flt) == scan(store, tenant, flt)
    assert len(select(store, tenant, flt)) == 1
    assert len(select(store, tenant, Filter(metadata={"topic": 1.0}))) == 2  # True == 1 == 1.0, as in Python
    assert select(store, tenant, Filter(since=T0)) == select(store, tenant, Filter(session="s1"))
    with pytest.raises(Exception, match="empty filter"):
        select(store, tenant, Filter())
