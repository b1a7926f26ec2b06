"""Would a write-time causal edge reach evidence the pool does not? Co-evidence pairs and cause cues.

For each corpus: the share of turns that state a cause (``dualmem.read.causal.states_cause``); the
co-evidence pairs (two evidence turns of one question), those in one session, those within the
pool's session window (2 turns: the pool adds them as neighbours whatever is stored), and the pairs
further apart in one session with a cue on either side (what a cue-built causal edge between turns
of a session could add: within the causal channel's ``REACH``, and beyond it); the questions with
cause language (``asks_cause``; with two or more evidence turns) and how many of their evidence
turns state a cause.

    python -m research.causal_pairs [--corpora locomo agentchat memgallery notes]
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from dualmem.conversations import Conversation
from dualmem.read.causal import REACH, asks_cause, states_cause
from research.corpora import conversations

__all__ = ["PairCounts", "count_pairs"]

#: the pool's session window (``read.pool_window``): pairs this close are neighbours in every pool
WINDOW = 2


@dataclass(slots=True)
class PairCounts:
    turns: int = 0
    cued_turns: int = 0
    pairs: int = 0
    same_session: int = 0
    within_window: int = 0
    cued_within_reach: int = 0
    cued_beyond_reach: int = 0
    cause_questions: int = 0
    cause_multi: int = 0
    cause_evidence: int = 0
    cause_evidence_cued: int = 0

    def row(self, name: str) -> str:
        share = self.cued_turns / self.turns if self.turns else 0.0
        cells = [
            name, self.turns, f"{share:.3f}", self.pairs, self.same_session, self.within_window,
            self.cued_within_reach, self.cued_beyond_reach, f"{self.cause_questions} ({self.cause_multi})",
            f"{self.cause_evidence_cued}/{self.cause_evidence}",
        ]  # fmt: skip
        return "| " + " | ".join(map(str, cells)) + " |"


def count_pairs(convs: Sequence[Conversation]) -> PairCounts:
    """The counts of the module docstring over ``convs``."""
    out = PairCounts()
    for conv in convs:
        obs = conv.observations
        pos = {o.turn_id: i for i, o in enumerate(obs) if o.turn_id}
        session = {o.turn_id: o.session for o in obs if o.turn_id}
        text = {o.turn_id: o.content for o in obs if o.turn_id}
        out.turns += len(obs)
        out.cued_turns += sum(states_cause(o.content) for o in obs)
        for qa in conv.questions:
            evidence = [e for e in qa.evidence if e in pos]
            if asks_cause(qa.question):
                out.cause_questions += 1
                out.cause_multi += len(evidence) >= 2
                out.cause_evidence += len(evidence)
                out.cause_evidence_cued += sum(states_cause(text[e]) for e in evidence)
            for a, b in itertools.combinations(evidence, 2):
                out.pairs += 1
                if session[a] is None or session[a] != session[b]:
                    continue
                out.same_session += 1
                distance = abs(pos[a] - pos[b])
                cued = states_cause(text[a]) or states_cause(text[b])
                if distance <= WINDOW:
                    out.within_window += 1
                elif distance <= REACH:
                    out.cued_within_reach += cued
                else:
                    out.cued_beyond_reach += cued
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["locomo", "agentchat", "memgallery", "notes"])
    ns = parser.parse_args(argv)
    print(
        "| corpus | turns | cue share | co-evidence pairs | one session | within 2 turns "
        f"| cued, 3-{REACH} apart | cued, further | cause questions (2+ evidence) | their evidence cued |"
    )
    print("|---" * 10 + "|")
    for name in ns.corpora:
        print(count_pairs(conversations(name)).row(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
