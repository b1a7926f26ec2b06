"""Sessions, not just turns (issue 47): the evidence of several turns of one session adds up.

An agent's next message usually builds on an earlier *session*: two or three of its turns, none of
which need be the best single match. ``group_sessions`` turns a ranked list of evidence into ranked
sessions: a session's score is its best turn's score plus its next best turns' at a decaying weight
(``TURN_WEIGHTS``), so that several matching turns of one session outrank one stray turn of another,
while one long chatty session cannot take every place (each session is one entry, with at most
``per_session`` of its turns). A memory without a session is a session of its own.

``add_up`` is the same idea inside a turn-level search of a long message (``read.loop``): what an
agent's next message builds on is usually an *exchange*, the user's turn and the reply to it, of
which the search may find one well and the other poorly (a long reply shares few words with the
message). Each scored turn gains ``adjacent`` times the score of its best scored neighbour one turn
away in its session (scores taken min-max normalised over the scored turns, so the weight means the
same for any scorer), and the list is re-sorted. ``diversify`` then keeps one session from filling
the top: past its ``cap``-th turn, a session's turns follow every other session's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from dualmem.read.trace import SessionHit
from dualmem.types import Evidence

__all__ = ["TURN_WEIGHTS", "add_up", "diversify", "group_sessions"]

#: how much a session's best, second and third turn count towards its score
TURN_WEIGHTS: tuple[float, ...] = (1.0, 0.5, 0.25)


def _key(e: Evidence) -> str:
    return e.node.session if e.node.session else f"memory:{e.node.id}"


def group_sessions(evidence: Sequence[Evidence], k: int, per_session: int = 3) -> tuple[SessionHit, ...]:
    """The ``k`` best sessions of ``evidence`` (ranked best first), each with its best turns."""
    if k < 1 or per_session < 1:
        raise ValueError("k and per_session must be at least 1")
    groups: dict[str, list[Evidence]] = {}
    for e in evidence:
        groups.setdefault(_key(e), []).append(e)
    hits: list[SessionHit] = []
    for session, turns in groups.items():
        best = sorted(turns, key=lambda e: (-e.score, e.node.id))
        score = sum(w * e.score for w, e in zip(TURN_WEIGHTS, best, strict=False))
        hits.append(SessionHit(session, score, tuple(best[:per_session])))
    hits.sort(key=lambda h: (-h.score, h.session))
    return tuple(hits[:k])


def add_up(
    ranked: Sequence[Evidence], neighbours: Mapping[str, Sequence[tuple[str, int]]], adjacent: float
) -> list[Evidence]:
    """``ranked`` (best first) with each turn's score raised by ``adjacent`` times its best scored
    neighbour's (``neighbours``: node id -> (neighbour id, offset in its session); offsets of one turn
    count), both normalised to [0, 1] over ``ranked``; re-sorted best first, ties by node id.
    ``adjacent`` 0 (or fewer than two turns) leaves ``ranked`` as it is."""
    if adjacent < 0.0:
        raise ValueError(f"adjacent must not be negative, got {adjacent}")
    if adjacent == 0.0 or len(ranked) < 2:
        return list(ranked)
    low = min(e.score for e in ranked)
    span = (max(e.score for e in ranked) - low) or 1.0
    norm = {e.node.id: (e.score - low) / span for e in ranked}
    out = []
    for e in ranked:
        near = [norm[n] for n, off in neighbours.get(e.node.id, ()) if abs(off) == 1 and n in norm]
        out.append(replace(e, score=norm[e.node.id] + adjacent * max(near, default=0.0)))
    out.sort(key=lambda e: (-e.score, e.node.id))
    return out


def diversify(ranked: Sequence[Evidence], cap: int) -> list[Evidence]:
    """``ranked`` with each session's turns past its ``cap``-th moved after every other turn (in
    their order); ``cap`` 0 leaves it as it is. A memory without a session is a session of its own."""
    if cap < 0:
        raise ValueError(f"cap must not be negative, got {cap}")
    if cap == 0:
        return list(ranked)
    seen: dict[str, int] = {}
    first: list[Evidence] = []
    rest: list[Evidence] = []
    for e in ranked:
        seen[_key(e)] = seen.get(_key(e), 0) + 1
        (first if seen[_key(e)] <= cap else rest).append(e)
    return first + rest
