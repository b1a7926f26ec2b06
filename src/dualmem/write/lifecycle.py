"""Lifecycle operations: correct (update with history), supersede chains, forget with no trace."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from dualmem.errors import InvalidInput
from dualmem.plane.base import Store
from dualmem.types import Edge, JSONValue, Node, Tenant, utcnow

__all__ = ["Filter", "forget_closure", "history", "select", "supersede"]


@dataclass(frozen=True, slots=True)
class Filter:
    """Which memories of a tenant to select: every given condition must hold."""

    speaker: str | None = None
    since: dt.datetime | None = None  # observation time >= since
    until: dt.datetime | None = None  # observation time < until
    metadata: Mapping[str, JSONValue] | None = None  # key == value for every pair
    session: str | None = None

    def empty(self) -> bool:
        return all(v is None for v in (self.speaker, self.since, self.until, self.metadata, self.session))

    def matches(self, node: Node) -> bool:
        if self.speaker is not None and (node.speaker or "").lower() != self.speaker.lower():
            return False
        if self.session is not None and node.session != self.session:
            return False
        if (self.since is not None or self.until is not None) and node.at is None:
            return False
        if self.since is not None and node.at is not None and node.at < self.since:
            return False
        if self.until is not None and node.at is not None and node.at >= self.until:
            return False
        return not self.metadata or all(node.metadata.get(k) == v for k, v in self.metadata.items())


def select(store: Store, tenant: Tenant, flt: Filter) -> list[str]:
    if flt.empty():
        raise InvalidInput(
            "an empty filter would select every memory", hint="use forget_all(user=...) for that"
        )
    return [n.id for n in store.iter_nodes(tenant) if flt.matches(n)]


def forget_closure(store: Store, ids: Collection[str]) -> set[str]:
    """``ids`` plus every derived node built (transitively) from them: a summary of a forgotten fact
    would otherwise bring it back."""
    out = set(ids)
    frontier = list(ids)
    while frontier:
        node_id = frontier.pop()
        for e in store.edges_of(node_id, ["semantic"]):
            if e.label == "derived_from" and e.target == node_id and e.source not in out:
                out.add(e.source)
                frontier.append(e.source)
    return out


def supersede(
    store: Store, old: Node, new: Node, *, weight: float = 1.0, at: dt.datetime | None = None
) -> None:
    """Mark ``old`` as no longer current: a valid-to time and an ``old -superseded_by-> new`` edge."""
    end = at or utcnow()
    with store.transaction():
        store.update_node(dataclasses.replace(old, valid_to=end))
        store.put_edges([Edge(old.id, new.id, "temporal", "superseded_by", weight)])


def history(store: Store, node: Node) -> list[Node]:
    """Every version linked to ``node`` by ``superseded_by`` edges, oldest first."""
    seen: dict[str, Node] = {node.id: node}
    frontier = [node.id]
    while frontier:
        current = frontier.pop()
        for e in store.edges_of(current, ["temporal"]):
            if e.label != "superseded_by":
                continue
            other = e.other(current)
            if other not in seen:
                found = store.get_node(other)
                if found is not None:
                    seen[other] = found
                    frontier.append(other)
    return sorted(seen.values(), key=lambda n: (n.valid_to is None, n.valid_to or n.created_at, n.created_at))
