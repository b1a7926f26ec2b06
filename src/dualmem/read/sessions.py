"""Sessions, not just turns (issue 47): the evidence of several turns of one session adds up.

An agent's next message usually builds on an earlier *session*: two or three of its turns, none of
which need be the best single match. ``group_sessions`` turns a ranked list of evidence into ranked
sessions: a session's score is its best turn's score plus its next best turns' at a decaying weight
(``TURN_WEIGHTS``), so that several matching turns of one session outrank one stray turn of another,
while one long chatty session cannot take every place (each session is one entry, with at most
``per_session`` of its turns). A memory without a session is a session of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from dualmem.read.trace import SessionHit
from dualmem.types import Evidence

__all__ = ["TURN_WEIGHTS", "group_sessions"]

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
