"""The ordering walk of the temporal channel: from an anchor event to the memories around it in time.

An ordering question names events and asks how they stand in time: "what did I do right after the
concert", "how long after I arrived in Leeds did my partner join me", "which came first, the
photographer or the florist", "how many days between the flight and my first day at work". The
query as a whole matches each event only in part; the walk searches each *clause* on its own:

1. ``ordering`` splits the query (English cues) into its event clauses and the direction it asks
   about: the clause after "before" / "after" / "since" / "until" (the anchor) and the rest of the
   question (the target), the two sides of "between X and Y" and "from X to Y", the two options of
   "first ... X or Y".
2. Each clause is searched by itself (its vector and lexical top ``size``, fused by reciprocal rank):
   its best hit with a timestamp is that event's anchor memory.
3. From each anchor the walk takes the memories nearest it in time on the side the question asks
   about (``store.links.time_search``: within its session and across sessions), up to ``STEPS``.

The walk's list (``walk``, the pool's ``walk_rank``) is the anchors (one a clause), then the anchors'
time neighbours, nearest first (one of each anchor in turn), then each clause's next best hits (up to
``HEAD`` a clause), cut at the channel's size. It runs inside the
temporal channel (``read.channels``' ``temporal``): removing that channel removes the walk too.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from dualmem.plane.base import Candidate, SearchStore
from dualmem.read.route import fused_scores
from dualmem.types import Tenant

__all__ = ["DEEP", "HEAD", "STEPS", "Ordering", "ordering", "ordering_walk"]

#: each clause's best dated hits (and after the anchors' neighbours, its best hits) that join the
#: walk's list
HEAD = 8
#: the memories the walk takes from each anchor on the side the question asks about
STEPS = 4
#: a clause is searched this many times the channel's size deep in each index
DEEP = 4

Direction = Literal["before", "after", "both"]
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]

# a clause ends at the verb of the question's main clause ("... did my partner join me"), at a
# punctuation mark or at the end
_END = r"(?=\s+(?:did|do|does|was|were|is|are|has|have|had|will|would|could)\b|\s*[?,.;:!]|\s*$)"
_CLAUSE = r"(?P<{}>[^?,.;:!]+?)"
_BETWEEN = re.compile(
    rf"\bbetween\s+{_CLAUSE.format('a')}\s+and\s+{_CLAUSE.format('b')}\s*(?=[?,.;:!]|$)", re.I
)
_FROM_TO = re.compile(
    rf"\bfrom\s+{_CLAUSE.format('a')}\s+(?:to|until|till)\s+{_CLAUSE.format('b')}{_END}", re.I
)
_FIRST = re.compile(
    rf"\bfirst\b\s*[,:]?\s*(?:was\s+it\s+)?{_CLAUSE.format('a')}\s+or\s+{_CLAUSE.format('b')}\s*(?=[?,.;:!]|$)",
    re.I,
)
_CUE = re.compile(
    r"\b(?:(?:right|just|straight|shortly|soon)\s+)?"
    r"(?P<cue>before\s+or\s+after|after\s+or\s+before|before|after|since|until|prior\s+to|following)"
    rf"\s+{_CLAUSE.format('a')}{_END}",
    re.I,
)
_DIRECTION: dict[str, Direction] = {
    "before": "before",
    "prior to": "before",
    "until": "before",
    "after": "after",
    "since": "after",
    "following": "after",
}
_WH = re.compile(
    r"^\s*(?:(?:roughly|about|approximately)\s+)?"
    r"(?:how\s+(?:long|many\s+\w+|much\s+time)|what|when|which|who|where|did|do|does)\b\s*",
    re.I,
)
_VERB = re.compile(r"^\s*(?:did|do|does|was|were|is|are|has|have|had|will|would|could)\s+", re.I)
#: words that name no event (a clause of only these finds nothing of its own)
_STOP = frozenset({
    "that", "this", "what", "when", "where", "which", "with", "from", "have", "been", "were", "they",
    "them", "their", "your",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Ordering:
    """An ordering question's event clauses and the side of the anchor(s) it asks about."""

    clauses: tuple[str, ...]
    direction: Direction


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" '\"")


def _kept(clauses: Sequence[str]) -> tuple[str, ...]:
    """The clauses that name something (a word of four letters or more that is not a stop word)."""
    out = [
        c for c in map(_clean, clauses) if any(len(w) >= 4 and w.casefold() not in _STOP for w in c.split())
    ]
    return tuple(dict.fromkeys(out))


def ordering(query: str) -> Ordering | None:
    """The event clauses of an ordering question and its direction; ``None`` for any other query.

    >>> ordering("How long after I arrived in Leeds did my partner join me?")
    Ordering(clauses=('I arrived in Leeds', 'my partner join me'), direction='after')
    >>> ordering("Which came first, the photographer or the florist?")
    Ordering(clauses=('the photographer', 'the florist'), direction='both')
    """
    for pattern in (_BETWEEN, _FROM_TO, _FIRST):
        m = pattern.search(query)
        if m is not None:
            clauses = _kept([m.group("a"), m.group("b")])
            if len(clauses) == 2:
                return Ordering(clauses, "both")
    m = _CUE.search(query)
    if m is None:
        return None
    cue = " ".join(m.group("cue").casefold().split())
    direction: Direction = _DIRECTION.get(cue, "both")
    rest = _clean(f"{query[: m.start()]} {query[m.end() :]}".replace("?", " "))
    rest = _VERB.sub("", _WH.sub("", rest))
    anchor = _kept([m.group("a")])
    if not anchor:  # "after all", "since then": no event to walk from
        return None
    clauses = _kept([*anchor, rest]) if len(rest.split()) >= 2 else anchor
    return Ordering(clauses, direction)


def _clause_hits(
    store: SearchStore, tenant: Tenant, clause: str, vector: npt.NDArray[np.float32], k: int
) -> list[str]:
    """A clause's vector and lexical top ``k`` fused by reciprocal rank (kappa 60), best first."""
    lists = (store.vectors.search(tenant, vector, k), store.lexical.search("nodes", tenant, clause, k))
    fused = fused_scores([node_id for node_id, _ in hits] for hits in lists)
    return sorted(fused, key=lambda i: -fused[i])


def _side(at: dt.datetime | None, of: dt.datetime, direction: Direction) -> bool:
    if at is None:
        return False
    if direction == "before":
        return at < of
    if direction == "after":
        return at > of
    return at != of


def ordering_walk(
    store: SearchStore,
    tenant: Tenant,
    query: str,
    embed: Embed,
    size: int,
    rows: MutableMapping[str, Candidate],
) -> list[tuple[str, float]]:
    """The walk's ranked hits for ``query`` (see the module docstring): (node id, 1 / (1 + rank));
    ``[]`` for a query that is no ordering question. ``rows``: the candidate rows read so far (the
    walk reads its hits into it)."""
    found = ordering(query)
    if found is None or size <= 0:
        return []
    vectors = embed(list(found.clauses))
    deep = DEEP * size
    lists = [_clause_hits(store, tenant, c, vectors[j], deep) for j, c in enumerate(found.clauses)]
    _read(store, tenant, [i for ids in lists for i in ids], rows)
    lists = [[i for i in ids if i in rows] for ids in lists]
    # an event a question dates is told in a memory that dates it ("we signed on Monday")
    dated = [[i for i in ids if rows[i].temporal_refs] for ids in lists]
    anchors = [
        next((rows[i] for i in (*d, *ids) if rows[i].at is not None), None)
        for d, ids in zip(dated, lists, strict=True)
    ]
    order = [a.id for a in anchors if a is not None]
    for rank in range(HEAD):
        order += [ids[rank] for ids in dated if rank < len(ids)]
    steps: list[list[str]] = []
    for anchor in anchors:
        if anchor is None or anchor.at is None:
            continue
        near = [i for i, _ in store.links.time_search(tenant, anchor.at, 2 * STEPS + 1) if i != anchor.id]
        _read(store, tenant, near, rows)
        side = [i for i in near if i in rows and _side(rows[i].at, anchor.at, found.direction)]
        steps.append(side[:STEPS])
    for rank in range(STEPS):
        order += [ids[rank] for ids in steps if rank < len(ids)]
    for rank in range(HEAD):
        order += [ids[rank] for ids in lists if rank < len(ids)]
    order = [i for i in dict.fromkeys(order) if i in rows][:size]
    return [(i, 1.0 / (1 + rank)) for rank, i in enumerate(order)]


def _read(
    store: SearchStore, tenant: Tenant, ids: Sequence[str], rows: MutableMapping[str, Candidate]
) -> None:
    missing = [i for i in dict.fromkeys(ids) if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))
