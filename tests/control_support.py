"""Shared test parts for the System-One controller tests: Mira's bicycle story (the memories the
state, decider and contract tests judge), its wire form, and a recording decider."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Batch, BatchResult
from dualmem.memory import Memory
from dualmem.types import VIEWS, JSONValue, Node, Tenant


def with_views(profile: Profile | None = None) -> Profile:
    """``profile`` (the builtin one by default) opted in to every relation view, written and read:
    for tests of the edges themselves (the builtin profile stores none)."""
    return (profile or Profile.builtin()).with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)


T1 = dt.datetime(2024, 5, 14, 10, tzinfo=dt.UTC)  # Mira's old bicycle broke
T2 = dt.datetime(2024, 5, 16, 10, tzinfo=dt.UTC)  # she tells of the new one
BROKE = "My old bicycle broke."
BOUGHT = "I bought a new bicycle yesterday because my old one broke."
QUESTION = "When did Mira buy a new bicycle, and why?"


def tell_the_story(mem: Memory, user: str) -> tuple[str, str]:
    """Mira's two bicycle turns (speaker Mira, at T1 and T2) added to ``mem`` for ``user``; their ids."""
    broke = mem.add(f"Mira: {BROKE}", user=user, speaker="Mira", at=T1)
    bought = mem.add(f"Mira: {BOUGHT}", user=user, speaker="Mira", at=T2)
    return broke, bought


def mira_node(id: str, content: str, at: dt.datetime, vec: tuple[float, ...], **fields: Any) -> Node:
    """One of Mira's memories (tenant ``u``, entities bicycle and mira), embedded as ``vec`` normalised."""
    v = np.array(vec, dtype=np.float32)
    return Node(
        id=id, tenant=Tenant("u"), content=content, at=at, speaker="Mira", entities=("bicycle", "mira"),
        embedding=v / np.linalg.norm(v), **fields,
    )  # fmt: skip


def wire_memory(
    id: str, content: str, at: dt.datetime | None, entities: list[str], speaker: str = "Mira"
) -> dict[str, JSONValue]:
    """A memory object as a state carries it on the wire (B.1), its fields in wire order."""
    return {
        "id": id,
        "content": content,
        "timestamp": None if at is None else at.isoformat(),
        "entities": list[JSONValue](entities),
        "speaker": speaker,
    }


class Recorder(BuiltinController):
    """The builtin decider, keeping every batch it was asked in ``batches``."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[Batch] = []

    def decide(self, batch: Batch) -> BatchResult:
        self.batches.append(batch)
        return super().decide(batch)
