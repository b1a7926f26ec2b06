"""Versions of a fact at read time: the current one answers, unless the query asks about history.

A write that updates an older memory supersedes it (``write.relations.supersessions``): the old node
gets ``valid_to`` and a ``superseded_by`` edge (temporal view) to the new one. The read path then
ranks versions by one rule (dualmem extension ``read.prefer_current``; the paper has no
supersession at read time):

- a query about the present (or about nothing in particular): a superseded candidate's **current
  version** (the end of its ``superseded_by`` chain) takes at least the superseded one's score, and
  joins the results if the pool missed it (it was found through the old one's edge); the superseded
  one then scores ``factor`` x its score. An update that shares no word with the question is found
  through the version the question matched.
- a query about history (``text.cues.query_time_focus``: "before", "used to", "originally", ...):
  the **previous version** of a current candidate takes at least its successor's score and is placed
  just above it; nothing is demoted.
- ``read.likely_update`` (present-tense queries): among the best results, one that the write path
  judged an update of another (its ``relation.supersedes`` decision at least this, recorded with
  the write, though below the write's own threshold) is ranked as that one's current version: both
  answering the query is the evidence that they speak of the same attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from dualmem.plane.base import SearchStore
from dualmem.types import Edge, Evidence, Node, Tenant

__all__ = ["MAX_HOPS", "VersionRule", "current_first", "order_versions"]

#: the longest ``superseded_by`` chain followed from a superseded candidate to its current version
MAX_HOPS = 8
_ABOVE = 1e-9  # a previous version's lead over its successor on a history query (ties fall by id)


def _edges(store: SearchStore, node_id: str) -> list[Edge]:
    return [e for e in store.edges_of(node_id, ["temporal"]) if e.label == "superseded_by"]


def _current(store: SearchStore, node_id: str) -> tuple[str, Edge] | None:
    """The current version of a superseded node (following ``superseded_by`` edges) and the last edge."""
    seen = {node_id}
    at, last = node_id, None
    for _ in range(MAX_HOPS):
        nxt = [e for e in _edges(store, at) if e.source == at and e.target not in seen]
        if not nxt:
            break
        last = max(nxt, key=lambda e: (e.weight, e.target))
        at = last.target
        seen.add(at)
    return None if last is None else (at, last)


@dataclass(frozen=True, slots=True)
class VersionRule:
    """How one search orders versions: whether it asks about the past, the superseded factor, how
    many of the best results are looked at, a filter's nodes, and ``read.likely_update``."""

    asks_past: bool
    factor: float
    window: int
    allowed: frozenset[str] | None = None
    likely: float | None = None


def order_versions(
    scored: Mapping[str, Evidence], store: SearchStore, tenant: Tenant, rule: VersionRule
) -> dict[str, Evidence]:
    """``scored`` (evidence by node id) with the version rule applied (see the module docstring)."""
    asks_past, factor, window, allowed, likely = (
        rule.asks_past, rule.factor, rule.window, rule.allowed, rule.likely
    )  # fmt: skip
    out = dict(scored)
    if asks_past:
        best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[:window]
        for e in best:
            before = [x for x in _edges(store, e.node.id) if x.target == e.node.id]
            _lift(out, store, tenant, [(x.source, x) for x in before], e.score + _ABOVE, allowed)
        return out
    if likely is not None:
        _likely_updates(out, store, likely, window, factor)
    stale = [e for e in out.values() if e.node.valid_to is not None]
    for e in sorted(stale, key=lambda e: (-e.score, e.node.id)):
        found = _current(store, e.node.id)
        if found is not None:
            _lift(out, store, tenant, [found], e.score, allowed)
        out[e.node.id] = replace(out[e.node.id], score=out[e.node.id].score * factor)
    return out


def _likely_updates(
    out: dict[str, Evidence], store: SearchStore, at_least: float, window: int, factor: float
) -> None:
    """Among the ``window`` best results, one the write path judged an update of another
    (``relation.supersedes`` >= ``at_least``, recorded with the write) is ranked as that one's
    current version: both answered this query, which says they are about the same thing."""
    best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[:window]
    held = {e.node.id for e in best}
    for e in best:
        if e.node.valid_to is not None:
            continue
        for d in store.decisions_of(e.node.id):
            other = d.other_id
            if (
                d.key != "relation.supersedes"
                or d.value < at_least
                or other not in held
                or other == e.node.id
            ):
                continue
            old = out[other]
            if (
                old.node.valid_to is None
                and old.node.at is not None
                and e.node.at is not None
                and old.node.at < e.node.at
            ):
                lifted = max(out[e.node.id].score, old.score)
                out[e.node.id] = replace(out[e.node.id], score=lifted)
                out[other] = replace(old, score=old.score * factor)


def _lift(
    out: dict[str, Evidence],
    store: SearchStore,
    tenant: Tenant,
    targets: list[tuple[str, Edge]],
    score: float,
    allowed: frozenset[str] | None,
) -> None:
    """Each target node scores at least ``score`` (read from the store when not a candidate yet)."""
    targets = [(i, e) for i, e in targets if allowed is None or i in allowed]
    missing = [i for i, _ in targets if i not in out]
    nodes: Mapping[str, Node] = store.get_nodes(missing, tenant) if missing else {}
    for node_id, edge in targets:
        held = out.get(node_id)
        if held is not None:
            if held.score < score:
                out[node_id] = replace(held, score=score)
            continue
        node = nodes.get(node_id)
        if node is not None:  # another tenant's node is never read (get_nodes is tenant-bound)
            out[node_id] = Evidence(node, score, "temporal", edge, 0, node.temporal_refs)


def current_first(evidence: Sequence[Evidence], store: SearchStore) -> list[Evidence]:
    """The evidence an answer may quote: ``evidence`` in its order, less every superseded memory
    ranked below one of its own later versions (its ``superseded_by`` chain). Search already ranked
    the current version first (:func:`order_versions`); an answerer that weighs its own measures
    (the extractive one's topic words) must not quote the fact it replaced. A previous version that
    search ranked above its successor (a question about history) stays quotable."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for e in evidence:
        if e.node.valid_to is None or not (_later(store, e.node.id) & seen):
            out.append(e)
        seen.add(e.node.id)
    return out


def _later(store: SearchStore, node_id: str) -> set[str]:
    """Every later version of a node: the targets along its ``superseded_by`` chain."""
    found: set[str] = set()
    frontier = [node_id]
    for _ in range(MAX_HOPS):
        nxt = [e.target for at in frontier for e in _edges(store, at) if e.source == at]
        nxt = [n for n in nxt if n not in found and n != node_id]
        if not nxt:
            break
        found.update(nxt)
        frontier = nxt
    return found
