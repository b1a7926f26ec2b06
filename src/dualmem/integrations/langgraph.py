"""``DualmemStore``: a LangGraph ``BaseStore`` over a dualmem :class:`~dualmem.memory.Memory`, or over
a ``dualmem serve`` through :class:`~dualmem.client.Client`.

Needs the ``[langgraph]`` extra. ``DualmemStore(memory)`` wraps a memory the caller opened (and
closes); ``DualmemStore(Client(url, api_key=...))`` keeps the items on a server.

How LangGraph's model maps onto dualmem's:

- **Namespace → tenant.** LangGraph apps name a user's memories ``("memories", user_id)``. The
  label at ``user_at`` (default 1) is the tenant's ``user``, the next two (if any) its ``agent``
  and ``run``: ``("memories", "alice")`` is ``Tenant("alice")``, ``("memories", "alice", "coder")``
  agent ``coder`` of alice, ``("memories", "alice", "coder", "r7")`` one run of it. Labels before
  the user (the collection, ``"memories"``) and after the run are not part of the tenant; the whole
  namespace is kept in the memory's metadata, so ``list_namespaces`` and ``search`` give back
  exactly the namespace that was put (``("notes", "alice")`` and ``("memories", "alice")`` share
  alice's tenant and stay apart). ``user_at=0`` reads ``(user, agent, run)`` namespaces. A
  namespace without a user label is refused (:class:`BadNamespace`, an ``InvalidNamespaceError``).
  A search prefix reads like a dualmem scope: ``("memories", "alice")`` sees every agent and run
  of alice.
- **Over a server**, the tenant is the API key's: a namespace must name the key's user, and its
  items are stored in the key's tenant (agent and run labels then live in the namespace only).
- **Item → memory.** ``put(ns, key, value)`` stores one memory whose text is the value's first
  string field among ``text_fields`` (``text``, ``content``, ``memory``), else the value as JSON;
  the key, the namespace and the whole value ride in the memory's metadata (``metadata["langgraph"]``).
- ``put`` on an existing key is ``Memory.update``: a new current version, the old one kept as
  history (``Memory.history``). The item's ``created_at`` is its first version's, ``updated_at``
  its newest's (LangGraph's ``InMemoryStore`` resets both).
- ``put(ns, key, None)`` and ``delete`` are ``Memory.forget``: the memory, every version, what
  was derived from it. (If a consolidation pass superseded one item's memory with another's, the
  two share a chain and are forgotten together.)
- ``search(prefix, query=...)`` is a scoped dualmem search (adaptive retrieval, the System-One
  controller deciding); ``score`` is the evidence score, and items the search did not reach fill
  up to ``limit`` with ``score=None`` as ``InMemoryStore`` does. Without a query, items are listed
  oldest first (``InMemoryStore``: insertion order). ``filter`` matches the value as
  ``InMemoryStore`` does (equality, nested mappings, ``$eq $ne $gt $gte $lt $lte``), except that
  a comparison on a missing or non-numeric field does not match (``InMemoryStore`` raises). A query needs
  a prefix that names the user; a query-less listing may span every user.
- ``batch``/``abatch`` run reads against the state before the batch and then apply its puts, the
  last put of a key winning (as ``InMemoryStore``). ``index`` is accepted and ignored (every memory
  is indexed); TTLs are not supported. Memories added without this store are not items.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from dualmem import Memory
from dualmem.errors import InvalidInput
from dualmem.vocab import JSONValue, Node, Tenant

if TYPE_CHECKING:
    from dualmem.client import Client

__all__ = ["MARK", "BadNamespace", "DualmemStore", "NamespaceTooDeep", "namespace_of", "tenant_of"]

MARK = "langgraph"  # the metadata field that makes a memory an item
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class BadNamespace(InvalidInput, InvalidNamespaceError):
    """A namespace (or prefix) that cannot name a dualmem tenant."""


NamespaceTooDeep = BadNamespace  # the name before namespaces could be deeper than the tenant


def tenant_of(namespace: Sequence[str], *, user_at: int = 1) -> Tenant:
    """The tenant a namespace names: its label at ``user_at`` is the user, the next two (if any) the
    agent and the run. ``("memories", "alice", "coder")`` is ``Tenant("alice", "coder")``."""
    labels = tuple(namespace)
    if len(labels) <= user_at or not all(isinstance(x, str) and x for x in labels):
        want = ", ".join(["collection"] * user_at + ["user"])
        raise BadNamespace(
            f"a namespace needs non-empty labels ({want}, ...), got {labels!r}",
            hint=f"e.g. {('memories', 'alice')[1 - min(user_at, 1) :]!r}",
        )
    return Tenant(*labels[user_at : user_at + 3])


def namespace_of(node: Node) -> tuple[str, ...]:
    """The namespace an item's memory was put in (older items: its tenant's labels)."""
    mark = node.metadata.get(MARK)
    stored = mark.get("namespace") if isinstance(mark, dict) else None
    if isinstance(stored, list) and all(isinstance(x, str) for x in stored):
        return tuple(str(x) for x in stored)
    t = node.tenant
    return tuple(x for x in (t.user, t.agent, t.run) if x is not None)


class _Backend(Protocol):
    """Where the memories live: a local ``Memory`` or a server behind a ``Client``."""

    def nodes(self, tenant: Tenant | None) -> Iterable[Node]: ...
    def add(self, tenant: Tenant, text: str, metadata: dict[str, JSONValue]) -> None: ...
    def update(self, tenant: Tenant, node_id: str, text: str, metadata: dict[str, JSONValue]) -> None: ...
    def forget(self, tenant: Tenant, node_id: str) -> None: ...
    def search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]: ...


class _Local:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def nodes(self, tenant: Tenant | None) -> Iterable[Node]:
        return self.memory.store.iter_nodes(tenant)

    def add(self, tenant: Tenant, text: str, metadata: dict[str, JSONValue]) -> None:
        self.memory.add(
            text, user=tenant.user, agent=tenant.agent, run=tenant.run, source=MARK, metadata=metadata
        )

    def update(self, tenant: Tenant, node_id: str, text: str, metadata: dict[str, JSONValue]) -> None:
        scope = self.memory.scope(tenant.user, tenant.agent, tenant.run)
        with self.memory.store.transaction():
            node = scope.get(scope.update(node_id, text))
            self.memory.store.update_node(dataclasses.replace(node, metadata={**node.metadata, **metadata}))

    def forget(self, tenant: Tenant, node_id: str) -> None:
        self.memory.forget(node_id, user=tenant.user, agent=tenant.agent, run=tenant.run)

    def search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        found = self.memory.search(query, user=tenant.user, agent=tenant.agent, run=tenant.run, k=k)
        return [(e.node.id, e.score) for e in found.evidence]


class _Remote:
    """A server's memory: the API key's tenant holds every item (namespaces must name its user)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def _check(self, tenant: Tenant | None) -> None:
        own = self.client.tenant
        if tenant is not None and tenant.user != own.user:
            raise BadNamespace(
                f"this API key serves user {own.user!r}, not {tenant.user!r}",
                hint="use a key created for that user",
            )

    def nodes(self, tenant: Tenant | None) -> Iterable[Node]:
        self._check(tenant)
        return self.client.nodes()

    def add(self, tenant: Tenant, text: str, metadata: dict[str, JSONValue]) -> None:
        self._check(tenant)
        self.client.add(text, source=MARK, metadata=metadata)

    def update(self, tenant: Tenant, node_id: str, text: str, metadata: dict[str, JSONValue]) -> None:
        self._check(tenant)
        old = self.client.get(node_id)
        self.client.update(node_id, text, metadata={**old.metadata, **metadata})

    def forget(self, tenant: Tenant, node_id: str) -> None:
        self._check(tenant)
        self.client.forget(node_id)

    def search(self, tenant: Tenant, query: str, k: int) -> list[tuple[str, float]]:
        self._check(tenant)
        return [(e.node.id, e.score) for e in self.client.search(query, k=k).evidence]


@dataclass(frozen=True, slots=True)
class _Entry:
    """One item: its newest memory and when its first version was written."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    node: Node
    created_at: dt.datetime
    versions: tuple[str, ...]  # every memory id of the item, oldest first

    def item(self) -> Item:
        return Item(
            value=dict(self.value), key=self.key, namespace=self.namespace,
            created_at=self.created_at, updated_at=self.node.created_at,
        )  # fmt: skip

    def hit(self, score: float | None) -> SearchItem:
        return SearchItem(
            self.namespace, self.key, dict(self.value), self.created_at, self.node.created_at, score
        )


class DualmemStore(BaseStore):
    """A LangGraph store whose items are dualmem memories (see the module docs for the mapping)."""

    __slots__ = ("_backend", "memory", "text_fields", "user_at")

    def __init__(
        self,
        memory: Memory | Client,
        *,
        text_fields: Sequence[str] = ("text", "content", "memory"),
        user_at: int = 1,
    ) -> None:
        if isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0:
            raise InvalidInput(f"user_at must be an integer >= 0, got {user_at!r}")
        self.memory = memory
        self._backend: _Backend = _Local(memory) if isinstance(memory, Memory) else _Remote(memory)
        self.text_fields = tuple(text_fields)
        self.user_at = user_at

    def tenant_of(self, namespace: Sequence[str]) -> Tenant:
        return tenant_of(namespace, user_at=self.user_at)

    # -- BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self.tenant_of(op.namespace)
                puts.pop((tuple(op.namespace), op.key), None)
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        for op in puts.values():
            self._put(op)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reading -----------------------------------------------------------------------------
    def _scope_of(self, prefix: tuple[str, ...]) -> Tenant | None:
        """The tenant a prefix reaches into (``None``: it names no user, so every user)."""
        return self.tenant_of(prefix) if len(prefix) > self.user_at else None

    def _entries(self, prefix: tuple[str, ...]) -> list[_Entry]:
        """Every item at or below ``prefix``, oldest first."""
        groups: dict[tuple[tuple[str, ...], str], list[Node]] = {}
        for node in self._backend.nodes(self._scope_of(prefix)):
            mark = node.metadata.get(MARK)
            if not isinstance(mark, dict) or not isinstance(mark.get("key"), str):
                continue
            namespace = namespace_of(node)
            if namespace[: len(prefix)] == prefix:
                groups.setdefault((namespace, str(mark["key"])), []).append(node)
        out = []
        for (namespace, key), versions in groups.items():
            versions.sort(key=lambda n: (n.created_at, n.id))
            newest = versions[-1]
            mark = newest.metadata[MARK]
            assert isinstance(mark, dict)
            value = mark.get("value")
            value = value if isinstance(value, dict) else {}
            ids = tuple(n.id for n in versions)
            out.append(_Entry(namespace, key, dict(value), newest, versions[0].created_at, ids))
        out.sort(key=lambda e: (e.created_at, e.node.id))
        return out

    def _entry(self, namespace: Sequence[str], key: str) -> _Entry | None:
        ns = tuple(namespace)
        self.tenant_of(ns)
        for e in self._entries(ns):
            if e.namespace == ns and e.key == key:
                return e
        return None

    def _get(self, op: GetOp) -> Item | None:
        found = self._entry(op.namespace, op.key)
        return found.item() if found else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        tenant = self._scope_of(prefix)
        entries = [e for e in self._entries(prefix) if op.filter is None or matches(e.value, op.filter)]
        offset, limit = max(0, op.offset), max(0, op.limit)
        if not op.query:
            return [e.hit(None) for e in entries[offset : offset + limit]]
        if tenant is None:
            example = ("memories", "alice")[1 - min(self.user_at, 1) :]
            raise InvalidInput(
                "a search query needs a namespace prefix naming the user", hint=f"e.g. {example!r}"
            )
        by_node = {version: e for e in entries for version in e.versions}
        ranked: dict[tuple[tuple[str, ...], str], tuple[_Entry, float]] = {}
        if by_node:
            k = min(100, max(20, 3 * (offset + limit)))
            for node_id, score in self._backend.search(tenant, op.query, k):
                e = by_node.get(node_id)
                if e is not None and (e.namespace, e.key) not in ranked:
                    ranked[(e.namespace, e.key)] = (e, score)
        hits = [e.hit(score) for e, score in ranked.values()]
        hits += [e.hit(None) for e in entries if (e.namespace, e.key) not in ranked]
        return hits[offset : offset + limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {e.namespace for e in self._entries(())}
        conditions = op.match_conditions or ()
        chosen = [ns for ns in found if all(_matches_namespace(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- writing -----------------------------------------------------------------------------
    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        tenant = self.tenant_of(namespace)
        found = self._entry(namespace, op.key)
        if op.value is None:
            if found is not None:
                self._backend.forget(tenant, found.node.id)
            return
        value = _json_value(op.value)
        mark: dict[str, JSONValue] = {"key": op.key, "namespace": list(namespace), "value": value}
        metadata: dict[str, JSONValue] = {MARK: mark}
        text = self._text(value)
        if found is None or found.node.valid_to is not None:
            self._backend.add(tenant, text, metadata)
        else:
            self._backend.update(tenant, found.node.id, text, metadata)

    def _text(self, value: Mapping[str, JSONValue]) -> str:
        for name in self.text_fields:
            field = value.get(name)
            if isinstance(field, str) and field.strip():
                return field
        return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _json_value(value: Mapping[str, Any]) -> dict[str, JSONValue]:
    if not isinstance(value, Mapping):
        raise InvalidInput(f"a store value must be a mapping, got {type(value).__name__}")
    try:
        out: dict[str, JSONValue] = json.loads(json.dumps(dict(value)))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a store value must be JSON-serialisable: {exc}") from exc
    return out


def _matches_namespace(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    if condition.match_type not in ("prefix", "suffix"):
        raise InvalidInput(f"unknown namespace match type {condition.match_type!r}")
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


def matches(value: Any, expected: Any) -> bool:
    """``InMemoryStore``'s filter semantics: nested mappings, sequences element-wise, operators."""
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_operator(value, str(op), arg) for op, arg in expected.items())
        return isinstance(value, Mapping) and all(matches(value.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(expected)
            and all(matches(a, b) for a, b in zip(value, expected, strict=True))
        )
    return bool(value == expected)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op not in OPERATORS:
        raise InvalidInput(f"unknown filter operator {op!r}", hint=f"use one of {', '.join(OPERATORS)}")
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    try:
        a, b = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
