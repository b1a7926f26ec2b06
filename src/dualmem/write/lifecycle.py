"""Lifecycle operations: correct (update with history), supersede chains, forget with no trace."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from dualmem import _json as bounded_json
from dualmem.errors import DatabaseLocked, DualmemError, InvalidInput
from dualmem.plane.base import MemoryStore, Store
from dualmem.text.timeparse import parse_time
from dualmem.types import Edge, JSONValue, Node, Tenant, check_json, check_text, utcnow

__all__ = [
    "Filter",
    "check_import_tenant",
    "forget_closure",
    "history",
    "repair_at_open",
    "scan",
    "select",
    "supersede",
]

log = logging.getLogger("dualmem")


@dataclass(frozen=True, slots=True)
class Filter:
    """Which memories of a tenant to select: every given condition must hold.

    ``since``/``until`` take whatever ``add(at=...)`` takes (an aware or naive datetime — naive is
    UTC —, a date, epoch seconds, ISO 8601 or a written date); anything else is ``InvalidInput``.
    """

    speaker: str | None = None
    since: dt.datetime | None = None  # observation time >= since
    until: dt.datetime | None = None  # observation time < until
    metadata: Mapping[str, JSONValue] | None = None  # key == value for every pair
    session: str | None = None

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            object.__setattr__(self, name, parse_time(getattr(self, name)))
        for name in ("speaker", "session"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"Filter {name} must be a string, not {type(value).__name__}")
            if value is not None:
                check_text(value, f"Filter {name}")
        if self.metadata is not None:
            if not isinstance(self.metadata, Mapping):
                raise InvalidInput("Filter metadata must be a mapping")
            check_json(self.metadata, "Filter metadata")

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


def select(store: MemoryStore, tenant: Tenant, flt: Filter) -> list[str]:
    """The ids of ``tenant``'s memories that ``flt`` matches, in time order, answered by the store's
    index (``MemoryStore.links.select``, ``plane/_select.py``): exactly :func:`scan`'s answer."""
    if flt.empty():
        raise InvalidInput(
            "an empty filter would select every memory", hint="use forget_all(user=...) for that"
        )
    return store.links.select(tenant, flt)


def scan(store: Store, tenant: Tenant, flt: Filter) -> list[str]:
    """What :func:`select` answers, by reading every node of ``tenant`` and checking
    ``Filter.matches`` in Python: the reference its store query is tested and measured against."""
    return [n.id for n in store.iter_nodes(tenant) if flt.matches(n)]


def forget_closure(store: Store, ids: Collection[str], tenant: Tenant) -> set[str]:
    """What forgetting ``ids`` removes: the nodes, every version in their supersession chains (what
    they superseded and what superseded them, transitively) and every derived node built from any of
    those (a summary of a forgotten fact would otherwise bring it back).

    Only nodes visible to ``tenant`` are ever included: an edge into another tenant's data (which a
    well-formed store never holds) cannot widen a forget beyond the caller's scope.
    """
    out = set(store.get_nodes(list(ids), tenant))
    frontier = list(out)
    while frontier:
        node_id = frontier.pop()
        linked: list[str] = []
        for e in store.edges_of(node_id, ["semantic", "temporal"]):
            if e.label == "superseded_by" or (e.label == "derived_from" and e.target == node_id):
                other = e.other(node_id)
                if other not in out:
                    linked.append(other)
        for other in store.get_nodes(linked, tenant):
            if other not in out:
                out.add(other)
                frontier.append(other)
    return out


def supersede(
    store: Store, old: Node, new: Node, *, weight: float = 1.0, at: dt.datetime | None = None
) -> None:
    """Mark ``old`` as no longer current: a valid-to time and an ``old -superseded_by-> new`` edge."""
    end = at or utcnow()
    with store.transaction():
        store.update_node(dataclasses.replace(old, valid_to=end))
        store.put_edges([Edge(old.id, new.id, "temporal", "superseded_by", weight)])


def history(store: Store, node: Node, tenant: Tenant) -> list[Node]:
    """Every version linked to ``node`` by ``superseded_by`` edges and visible to ``tenant``, oldest first."""
    seen: dict[str, Node] = {node.id: node}
    frontier = [node.id]
    while frontier:
        current = frontier.pop()
        for e in store.edges_of(current, ["temporal"]):
            if e.label != "superseded_by":
                continue
            other = e.other(current)
            if other not in seen:
                found = store.get_node(other, tenant)
                if found is not None:
                    seen[other] = found
                    frontier.append(other)
    return sorted(seen.values(), key=lambda n: (n.valid_to is None, n.valid_to or n.created_at, n.created_at))


def check_import_tenant(lines: Iterable[str], tenant: Tenant) -> None:
    """Refuse an export file that holds records outside ``tenant``: import never writes another tenant.

    Every node must belong to a tenant that ``tenant`` covers (same user; the same agent/run when
    ``tenant`` names them), and every edge and decision must refer only to nodes in the file. Lines
    that do not parse are left for the importer to report with their line number.
    """
    ids: set[str] = set()
    refs: list[str] = []
    for raw in lines:
        try:
            doc = bounded_json.loads(raw) if raw.strip() else None
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        kind = doc.get("kind")
        if kind == "node":
            _check_owner(doc, tenant)
            ids.add(str(doc.get("id")))
        elif kind == "edge":
            refs += [str(doc.get("source")), str(doc.get("target"))]
        elif kind == "decision":
            refs.append(str(doc.get("node_id")))
    outside = sorted(set(refs) - ids)
    if outside:
        raise InvalidInput(
            f"the import refers to {len(outside)} memory id(s) that are not in the file (e.g. {outside[0]})",
            hint="import a complete export made by export_jsonl",
        )


def _check_owner(doc: Mapping[str, object], tenant: Tenant) -> None:
    user, agent, run = doc.get("user"), doc.get("agent"), doc.get("run")
    try:
        owner = Tenant(user, agent, run)  # type: ignore[arg-type]
    except DualmemError:
        return  # malformed: the importer reports it with its line number
    if not tenant.covers(owner):
        found = f"user={owner.user!r}, agent={owner.agent!r}, run={owner.run!r}"
        wanted = f"user={tenant.user!r}" + "".join(
            f", {k}={v!r}" for k, v in (("agent", tenant.agent), ("run", tenant.run)) if v is not None
        )
        raise InvalidInput(
            f"the import holds memories of another tenant ({found}); this import is for {wanted}",
            hint="import a file exported by the same tenant, or pass that tenant's user/agent/run",
        )


def repair_at_open(store: Store, repair: Callable[[], object] | None) -> bool:
    """Complete the store's pending nodes when a memory opens for writing; True if it repaired.

    ``repair`` is the memory's ``repair_all`` when its controller is offline (the builtin decider:
    no network, milliseconds a node), else None: a remote controller is never called at open, and
    pending nodes are only reported. A write lock held by another process is not waited out as a
    failure: the nodes stay pending for the next open or ``dualmem check --repair``.
    """
    if next(iter(store.iter_nodes(None, status="pending")), None) is None:
        return False
    if repair is None:
        log.warning(
            "this memory has pending nodes (a controller outage); run repair or dualmem check --repair"
        )
        return False
    try:
        repair()
    except DatabaseLocked:
        log.warning("pending nodes not repaired at open: another process holds the write lock")
        return False
    return True
