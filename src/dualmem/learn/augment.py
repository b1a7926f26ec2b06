"""Training-only copies of a conversation for fitting System One's scorer.

``shuffled_sessions``: every session's turns in a seeded random order; each turn keeps its text,
speaker and id (so the questions and their evidence hold), and the times follow the new order. In a
conversation the turn next to one that matches a question is often its answer, and a scorer fitted
on conversations alone learns to trust that; in a memory of notes, a day's notes rarely speak of the
same thing. Fitting on these copies too (``dualmem calibrate --shuffled-copies``) teaches the scorer
to weigh a neighbour by how much it coheres (the pool's ``coherence``), measured by leave-one-corpus-
out cross-validation (docs/benchmarks.md). A copy is never scored, and it is held out with its source
in any inner cross-validation.
"""

from __future__ import annotations

import dataclasses
import random

from dualmem.conversations import Conversation

__all__ = ["SHUFFLED", "shuffled_sessions"]

#: the suffix of a shuffled copy's id
SHUFFLED = "-shuffled"


def shuffled_sessions(conv: Conversation, seed: int = 13) -> Conversation:
    """``conv`` with each session's turns in a random order (seeded by ``seed`` and the id)."""
    rng = random.Random(f"{seed}:{conv.id}")
    by_session: dict[str | None, list[int]] = {}
    for i, o in enumerate(conv.observations):
        by_session.setdefault(o.session, []).append(i)
    order: list[int] = []
    for idx in by_session.values():
        moved = idx[:]
        rng.shuffle(moved)
        order += moved
    slots = [i for idx in by_session.values() for i in idx]
    times = [o.at for o in conv.observations]
    observations = tuple(
        dataclasses.replace(conv.observations[j], at=times[slot])
        for j, slot in zip(order, slots, strict=True)
    )
    return dataclasses.replace(conv, id=conv.id + SHUFFLED, observations=observations)
