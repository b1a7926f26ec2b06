"""Versions of a fact at read time: the current one answers, unless the query asks about history.

A write that updates an older memory supersedes it (``write.relations.supersessions``, only within
one slot: ``dualmem.text.slots``): the old node gets ``valid_to`` and a ``superseded_by`` edge
(temporal view) to the new one. The read path then ranks versions by one rule (dualmem extension
``read.prefer_current``; the paper has no supersession at read time), scoped by slot: a version
whose slot is known to be another than the one the query asks about is left as scored.

- a query about the present (or about nothing in particular): a superseded candidate's **current
  version** (the end of its ``superseded_by`` chain, however long) takes at least the superseded
  one's score, and joins the results if the pool missed it (it was found through the old one's
  edge); the superseded one is then placed **right after** its current version (the older the
  version the further down the chain, each just below the next), never dropped: it carries its
  ``valid_from`` / ``valid_to``. An update that shares no word with the question is found through
  the version the question matched. When the question's slot is the superseded one's and not its
  successor's, the supersession is taken to have crossed slots and the rule leaves both as scored.
- a question about a known single-valued slot: of the best results stating it, the newest first
  and the others right after it (versions the write path did not link).
- a query about history (``text.cues.query_time_focus``: "before", "used to", "originally", ...):
  the **previous version** of a current candidate takes at least its successor's score and is placed
  just above it; nothing is demoted.
- ``read.likely_update`` (present-tense queries): among the best results, one that the write path
  judged an update of another (its ``relation.supersedes`` decision at least this, recorded with
  the write, though below the write's own threshold) is ranked as that one's current version when
  both state the **same slot** (subject and attribute): it never moves another slot's memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dualmem.plane.base import SearchStore
from dualmem.text.slots import MULTI_VALUED, Slot, may_replace, same_fact, slot_of
from dualmem.types import Edge, Evidence, Node, Tenant

__all__ = ["VersionRule", "current_first", "node_slot", "order_versions"]

_ABOVE = 1e-9  # a previous version's lead over its successor on a history query (ties fall by id)
_BELOW = 1e-7  # how far below the next newer version a replaced one is placed


def _edges(store: SearchStore, node_id: str) -> list[Edge]:
    return [e for e in store.edges_of(node_id, ["temporal"]) if e.label == "superseded_by"]


def _chain(store: SearchStore, node_id: str) -> list[tuple[str, Edge]]:
    """The versions after a superseded node, oldest first, to its current one (``superseded_by``
    edges followed to the end, however many; a cycle is not followed twice)."""
    seen = {node_id}
    at = node_id
    out: list[tuple[str, Edge]] = []
    while True:
        nxt = [e for e in _edges(store, at) if e.source == at and e.target not in seen]
        if not nxt:
            return out
        last = max(nxt, key=lambda e: (e.weight, e.target))
        at = last.target
        seen.add(at)
        out.append((at, last))


def node_slot(node: Node) -> Slot:
    """The slot a memory states (``dualmem.text.slots.slot_of`` of its text, cached)."""
    return slot_of(node.content, node.speaker)


@dataclass(frozen=True, slots=True)
class VersionRule:
    """How one search orders versions: whether it asks about the past, the superseded factor (the
    floor of a replaced version's score, relative to its own), how many of the best results are
    looked at, a filter's nodes, ``read.likely_update``, and the slot the query asks about."""

    asks_past: bool
    factor: float
    window: int
    allowed: frozenset[str] | None = None
    likely: float | None = None
    slot: Slot | None = None
    pair_cosine: float | None = None


def _asked_not_successor(
    rule: VersionRule,
    old: Node,
    current_id: str,
    out: Mapping[str, Evidence],
    store: SearchStore,
    tenant: Tenant,
) -> bool:
    """The query's known slot is ``old``'s and its current version is not known to state it: as far
    as this question can tell the write path's supersession crossed slots; the rule stays out."""
    asked = rule.slot
    if asked is None or asked.attribute is None or not node_slot(old).same(asked):
        return False
    held = out.get(current_id)
    current = held.node if held is not None else store.get_nodes([current_id], tenant).get(current_id)
    return current is not None and not node_slot(current).same(asked)


def _other_slot(rule: VersionRule, node: Node) -> bool:
    """The query asks about a known attribute and ``node`` states another one."""
    if rule.slot is None or rule.slot.attribute is None:
        return False
    mine = node_slot(node).attribute
    return mine is not None and mine != rule.slot.attribute


def order_versions(
    scored: Mapping[str, Evidence], store: SearchStore, tenant: Tenant, rule: VersionRule
) -> dict[str, Evidence]:
    """``scored`` (evidence by node id) with the version rule applied (see the module docstring)."""
    out = dict(scored)
    if rule.asks_past:
        best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[: rule.window]
        for e in best:
            if _other_slot(rule, e.node):
                continue
            before = [x for x in _edges(store, e.node.id) if x.target == e.node.id]
            _lift(out, store, tenant, [(x.source, x) for x in before], e.score + _ABOVE, rule.allowed)
        return out
    if rule.likely is not None:
        _likely_updates(out, store, rule)
    if rule.pair_cosine is not None:
        _pair_versions(out, rule)
    _newest_of_slot(out, rule)
    stale = [e for e in out.values() if e.node.valid_to is not None]
    chains: list[tuple[str, list[tuple[str, Edge]]]] = []
    kept: set[str] = set()
    for e in sorted(stale, key=lambda e: (-e.score, e.node.id)):
        if _other_slot(rule, e.node):
            continue  # another slot's version: demoted below, its current version not lifted
        chain = _chain(store, e.node.id)
        if rule.allowed is not None:
            chain = [(i, x) for i, x in chain if i in rule.allowed]
        if chain and _asked_not_successor(rule, e.node, chain[-1][0], out, store, tenant):
            kept.add(e.node.id)  # the question names this one's slot, not its successor's: as scored
        elif chain:
            _lift(out, store, tenant, [chain[-1]], e.score, rule.allowed)
            chains.append((e.node.id, chain))
    for old, chain in chains:  # each replaced version right after its current one, older further down
        current = chain[-1][0]
        if current in out:
            out[old] = replace(out[old], score=out[current].score - _BELOW * len(chain))
    for e in stale:  # a replaced version of another slot, or whose current one a filter hides
        if e.node.id not in kept and not any(old == e.node.id for old, _ in chains):
            out[e.node.id] = replace(out[e.node.id], score=out[e.node.id].score * rule.factor)
    return out


#: how many of the best results the slot rule looks at
SLOT_WINDOW = 5


def _newest_of_slot(out: dict[str, Evidence], rule: VersionRule) -> None:
    """A present-tense question about a known single-valued slot: of the best results stating that
    slot, the newest comes first and the others follow it, newest first (versions the write path
    did not link). A question whose slot is not known, or one slot's several values, move nothing."""
    asked = rule.slot
    if asked is None or asked.attribute is None or asked.attribute in MULTI_VALUED:
        return
    best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[:SLOT_WINDOW]
    mine = [e for e in best if e.node.valid_to is None and node_slot(e.node).same(asked)]
    if len(mine) < 2:
        return
    top = max(e.score for e in mine)
    newest = sorted(mine, key=lambda e: (e.node.at or e.node.created_at, e.node.created_at), reverse=True)
    for i, e in enumerate(newest):
        out[e.node.id] = replace(e, score=top - _BELOW * i)


def _pair_versions(out: dict[str, Evidence], rule: VersionRule) -> None:
    """A present-tense question: of the best results, two current ones that state one fact
    (``dualmem.text.slots.same_fact``: no known slot apart, close embeddings, the newer saying that
    something changed) are versions the write path did not link; the newer comes first, the older
    right after it. Never another slot's memory than the question's, nor a second value of a slot
    that holds several."""
    assert rule.pair_cosine is not None
    best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[:SLOT_WINDOW]
    held = [
        e
        for e in best
        if e.node.valid_to is None
        and e.node.embedding is not None
        and e.node.at is not None
        and not _other_slot(rule, e.node)
    ]
    held.sort(key=lambda e: (e.node.at, e.node.created_at, e.node.id))  # oldest first
    newer_of: dict[str, str] = {}
    for i, old in enumerate(held):
        for new in held[i + 1 :]:
            a, b = node_slot(old.node), node_slot(new.node)
            cosine = float(np.dot(old.node.embedding, new.node.embedding))  # type: ignore[arg-type]
            if (
                old.node.at is not None
                and new.node.at is not None
                and old.node.at < new.node.at
                and may_replace(b, a, new.node.content)
                and same_fact(
                    a,
                    b,
                    new.node.content,
                    cosine,
                    threshold=rule.pair_cosine,
                    speakers=(old.node.speaker, new.node.speaker),
                )
            ):
                newer_of[old.node.id] = new.node.id
    for old_id in sorted(newer_of, key=lambda i: -out[i].score):
        current = newer_of[old_id]
        while current in newer_of:  # the newest of a chain
            current = newer_of[current]
        lifted = max(out[current].score, out[old_id].score)
        out[current] = replace(out[current], score=lifted)
        out[old_id] = replace(out[old_id], score=lifted - _BELOW)


def _likely_updates(out: dict[str, Evidence], store: SearchStore, rule: VersionRule) -> None:
    """Among the ``window`` best results, one the write path judged an update of another
    (``relation.supersedes`` >= ``likely``, recorded with the write) stating the same slot is
    ranked as that one's current version: both answered this query, and both state one fact."""
    assert rule.likely is not None
    best = sorted(out.values(), key=lambda e: (-e.score, e.node.id))[: rule.window]
    held = {e.node.id for e in best}
    slots = {e.node.id: node_slot(e.node) for e in best}
    for e in best:
        if e.node.valid_to is not None or _other_slot(rule, e.node):
            continue
        if not any(slots[e.node.id].same(s) for i, s in slots.items() if i != e.node.id):
            continue  # no other of these results states its slot: no recorded update can apply
        for d in store.log.decisions_of(e.node.id, key="relation.supersedes"):
            other = d.other_id
            if d.value < rule.likely or other not in held or other == e.node.id:
                continue
            old = out[other]
            mine, theirs = node_slot(e.node), node_slot(old.node)
            if not mine.same(theirs) or not may_replace(mine, theirs, e.node.content):
                continue  # never across slots, nor a second value of a slot that holds several
            if (
                old.node.valid_to is None
                and old.node.at is not None
                and e.node.at is not None
                and old.node.at < e.node.at
            ):
                lifted = max(out[e.node.id].score, old.score)
                out[e.node.id] = replace(out[e.node.id], score=lifted)
                out[other] = replace(old, score=lifted - _BELOW)


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
    while frontier:  # chains of any length; ``found`` ends a cycle
        nxt = [e.target for at in frontier for e in _edges(store, at) if e.source == at]
        frontier = [n for n in dict.fromkeys(nxt) if n not in found and n != node_id]
        found.update(frontier)
    return found
