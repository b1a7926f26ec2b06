"""``DualmemStore``: a LangGraph ``BaseStore`` over a dualmem :class:`~dualmem.memory.Memory`.

Needs the ``[langgraph]`` extra. ``DualmemStore(memory)`` wraps a memory the caller opened (and closes).

How LangGraph's model maps onto dualmem's:

- **Namespace → tenant.** A namespace has one to three labels, read in order as the tenant's
  ``user``, ``agent`` and ``run``: ``("alice",)`` is ``Tenant("alice")``, ``("alice", "coder")`` is
  agent ``coder`` of ``alice``, ``("alice", "coder", "r7")`` one run of it. Put the user first. A
  namespace with more labels is refused (:class:`NamespaceTooDeep`, an ``InvalidNamespaceError``).
  A search prefix reads like a dualmem scope: ``("alice",)`` sees every agent and run of alice.
- **Item → memory.** ``put(ns, key, value)`` stores one memory whose text is the value's first
  string field among ``text_fields`` (``text``, ``content``, ``memory``), else the value as JSON;
  the key and the whole value ride in the memory's metadata (``metadata["langgraph"]``).
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
  a prefix with at least the user; a query-less listing may span every user.
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
from typing import Any

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

from dualmem.errors import InvalidInput
from dualmem.memory import Memory
from dualmem.types import JSONValue, Node, Tenant

__all__ = ["MARK", "DualmemStore", "NamespaceTooDeep", "namespace_of", "tenant_of"]

MARK = "langgraph"  # the metadata field that makes a memory an item
MAX_LABELS = 3
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class NamespaceTooDeep(InvalidInput, InvalidNamespaceError):
    """A namespace (or prefix) that cannot name a dualmem tenant."""


def tenant_of(namespace: Sequence[str]) -> Tenant:
    """``(user,)``, ``(user, agent)`` or ``(user, agent, run)`` as a :class:`Tenant`."""
    labels = tuple(namespace)
    if not 1 <= len(labels) <= MAX_LABELS:
        raise NamespaceTooDeep(
            f"a dualmem namespace has 1 to 3 labels (user, agent, run), got {labels!r}",
            hint="use (user,), (user, agent) or (user, agent, run)",
        )
    return Tenant(*labels)


def namespace_of(tenant: Tenant) -> tuple[str, ...]:
    return tuple(x for x in (tenant.user, tenant.agent, tenant.run) if x is not None)


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

    __slots__ = ("memory", "text_fields")

    def __init__(self, memory: Memory, *, text_fields: Sequence[str] = ("text", "content", "memory")) -> None:
        self.memory = memory
        self.text_fields = tuple(text_fields)

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
                tenant_of(op.namespace)
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
    def _entries(self, tenant: Tenant | None) -> list[_Entry]:
        """Every item the tenant covers (every user's for ``None``), oldest first."""
        nodes = self.memory.store.iter_nodes(tenant)
        groups: dict[tuple[tuple[str, ...], str], list[Node]] = {}
        for node in nodes:
            mark = node.metadata.get(MARK)
            if isinstance(mark, dict) and isinstance(mark.get("key"), str):
                groups.setdefault((namespace_of(node.tenant), str(mark["key"])), []).append(node)
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
        tenant = tenant_of(namespace)
        for e in self._entries(tenant):
            if e.namespace == tuple(namespace) and e.key == key:
                return e
        return None

    def _get(self, op: GetOp) -> Item | None:
        found = self._entry(op.namespace, op.key)
        return found.item() if found else None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if len(prefix) > MAX_LABELS:
            tenant_of(prefix)  # raises
        tenant = Tenant(*prefix) if prefix else None
        entries = [e for e in self._entries(tenant) if op.filter is None or matches(e.value, op.filter)]
        offset, limit = max(0, op.offset), max(0, op.limit)
        if not op.query:
            return [e.hit(None) for e in entries[offset : offset + limit]]
        if tenant is None:
            raise InvalidInput(
                "a search query needs a namespace prefix naming the user", hint="e.g. ('alice',)"
            )
        by_node = {version: e for e in entries for version in e.versions}
        ranked: dict[tuple[tuple[str, ...], str], tuple[_Entry, float]] = {}
        if by_node:
            k = min(100, max(20, 3 * (offset + limit)))
            found = self.memory.search(op.query, user=tenant.user, agent=tenant.agent, run=tenant.run, k=k)
            for ev in found.evidence:
                e = by_node.get(ev.node.id)
                if e is not None and (e.namespace, e.key) not in ranked:
                    ranked[(e.namespace, e.key)] = (e, ev.score)
        hits = [e.hit(score) for e, score in ranked.values()]
        hits += [e.hit(None) for e in entries if (e.namespace, e.key) not in ranked]
        return hits[offset : offset + limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {e.namespace for e in self._entries(None)}
        conditions = op.match_conditions or ()
        chosen = [ns for ns in found if all(_matches_namespace(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- writing -----------------------------------------------------------------------------
    def _put(self, op: PutOp) -> None:
        tenant = tenant_of(op.namespace)
        scope = self.memory.scope(tenant.user, tenant.agent, tenant.run)
        found = self._entry(op.namespace, op.key)
        if op.value is None:
            if found is not None:
                scope.forget(found.node.id)
            return
        value = _json_value(op.value)
        metadata: dict[str, JSONValue] = {MARK: {"key": op.key, "value": value}}
        text = self._text(value)
        if found is None or found.node.valid_to is not None:
            scope.add(text, source=MARK, metadata=metadata)
            return
        new_id = scope.update(found.node.id, text)
        node = scope.get(new_id)
        self.memory.store.update_node(dataclasses.replace(node, metadata={**node.metadata, **metadata}))

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
