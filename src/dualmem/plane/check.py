"""Health checks of a store (``dualmem check``): what is damaged or inconsistent, and what repair fixed.

A check reports problems by kind, each with a count, a few details and whether a store-level repair
can fix it (each backend's checks are its own: ``plane/sqlite/_check.py``, ``PostgresStore._check``).
``pending`` nodes (written without their controller decisions) are repaired by the write path
(``Memory.repair``), not here; nodes without an embedding need the embedder too.
"""

from __future__ import annotations

from dataclasses import dataclass

from dualmem.types import JSONValue

__all__ = ["RULE_NOTICE", "CheckReport", "Problem"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One kind of damage: ``count`` instances, the first few described in ``details``."""

    kind: str
    count: int
    details: tuple[str, ...] = ()
    repairable: bool = True

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "kind": self.kind,
            "count": self.count,
            "details": list(self.details),
            "repairable": self.repairable,
        }


@dataclass(frozen=True, slots=True)
class CheckReport:
    """``healthy`` when there is no problem; after a repair, ``before`` holds what was found first."""

    healthy: bool
    problems: tuple[Problem, ...]
    repaired: tuple[str, ...] = ()
    before: tuple[Problem, ...] = ()

    @classmethod
    def of(cls, problems: list[Problem]) -> CheckReport:
        found = tuple(p for p in problems if p.count)
        return cls(not found, found)

    def kinds(self) -> set[str]:
        return {p.kind for p in self.problems}

    def to_json(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {
            "healthy": self.healthy,
            "problems": [p.to_json() for p in self.problems],
        }
        if self.repaired or self.before:
            out["repaired"] = list(self.repaired)
            out["before"] = [p.to_json() for p in self.before]
        return out


#: what a file whose lexical index predates the rule is told
RULE_NOTICE = (
    "the lexical index predates rule {rule} (Chinese, Japanese and Korean text as bigrams): {count} "
    "rows of CJK text are not found by a lexical search until 'dualmem check --repair' reindexes them"
)
