"""Edges of views turned on after memories were written (``dualmem repair --views``).

A write stores the edges of the views its profile lists (``write.views``); a memory written while a
view was off has none of that view's edges, and turning the view on later only gives them to new
writes. :func:`backfill_views` gives every complete memory of a tenant the edges its write would
have made under the profile's views, in write order: its candidates among the memories written
before it (as at its write), the deterministic edges (time order, shared entities, the previous turn
of its session) and System One's relation answers at ``theta_rel``. Edges already stored are kept as
they are; supersessions (``valid_to``, ``superseded_by``) are never decided again.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualmem.config import WriteProfile
from dualmem.control.meter import Meter
from dualmem.errors import ControllerError
from dualmem.plane.base import WriteStore
from dualmem.types import Edge, Tenant
from dualmem.write.candidates import discover
from dualmem.write.relations import deterministic_edges, in_views, inferred_edges, relation_batch

__all__ = ["BackfillReport", "backfill_views"]


@dataclass(frozen=True, slots=True)
class BackfillReport:
    """What one backfill did: memories looked at, edges added per view, memories whose relation
    question failed (their deterministic edges were still added; run it again later)."""

    memories: int
    edges: dict[str, int]
    failed: tuple[str, ...]
    views: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "memories": self.memories,
            "edges": dict(self.edges),
            "failed": list(self.failed),
            "views": list(self.views),
        }


def _key(e: Edge) -> tuple[str, str, str, str]:
    return (e.source, e.target, e.view, e.label)


def backfill_views(
    store: WriteStore, meter: Meter, profile: WriteProfile, tenant: Tenant | None
) -> BackfillReport:
    """Add the missing edges of ``profile.views`` to every complete memory of ``tenant`` (``None``:
    every tenant of the store); see the module docstring."""
    views = tuple(profile.views)
    nodes = sorted(
        (n for n in store.iter_nodes(tenant) if n.status == "complete"), key=lambda n: (n.created_at, n.id)
    )
    order = {n.id: i for i, n in enumerate(nodes)}
    last_in_session: dict[tuple[str, str | None, str | None, str], str] = {}
    added = dict.fromkeys(views, 0)
    failed: list[str] = []
    for node in nodes:
        found = discover(store, node, profile=profile) if views else []
        earlier = [c for c in found if order.get(c.node.id, len(nodes)) < order[node.id]]
        previous = None
        if node.session is not None:
            where = (node.tenant.user, node.tenant.agent, node.tenant.run, node.session)
            before = last_in_session.get(where)
            previous = store.get_node(before) if before is not None else None
            last_in_session[where] = node.id
        if not views:
            continue
        edges = deterministic_edges(node, earlier, previous)
        if earlier and profile.relations_enabled:
            batch = relation_batch(node, earlier, views)
            (decided,) = meter.ask_each([batch])
            if isinstance(decided, ControllerError):
                failed.append(node.id)
            else:
                edges += inferred_edges(node, earlier, batch, decided.result, profile.theta_rel)
        have = {_key(e) for e in store.edges_of(node.id)}
        new = [e for e in in_views(edges, views) if e.view in views and _key(e) not in have]
        new = list({_key(e): e for e in new}.values())
        store.put_edges(new)
        for e in new:
            added[e.view] += 1
    return BackfillReport(len(nodes), added, tuple(failed), views)
