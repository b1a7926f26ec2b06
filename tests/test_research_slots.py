"""research.slot_agreement: pair-level agreement of the slot extractor with labelled updates."""

from __future__ import annotations

import json
from pathlib import Path

from research.slot_agreement import agreement


def _scenario(path: Path, texts: list[str], updates: list[tuple[int, int, str, str]]) -> None:
    turns = [{"id": f"n{i + 1}", "speaker": "agent", "text": t} for i, t in enumerate(texts)]
    raw = {
        "sessions": [{"id": "d1", "turns": turns}],
        "updates": [{"old": f"n{o}", "new": f"n{n}", "subject": s, "attribute": a} for o, n, s, a in updates],
    }
    path.write_text(json.dumps(raw))


def test_agreement_counts_labelled_pairs_and_slots(tmp_path: Path) -> None:
    texts = [
        "Mira's partner is Tomasz.",
        "Mira's birthday is 2 June.",
        "Mira's partner is Jonah now.",
        "Mira drives a blue Honda Jazz.",
        "Traded the Jazz in for a Kia Niro.",
    ]
    _scenario(tmp_path / "x.json", texts, [(1, 3, "mira", "partner"), (4, 5, "mira", "car")])
    out = agreement(tmp_path)
    assert out["notes"] == 5
    assert out["one_fact_pairs"] == 2
    assert out["precision"] == 1.0  # one pair called one slot (the partner), and it is one fact
    assert out["recall"] == 0.5  # the car pair: "Traded ... in" names no attribute the cues know
    assert out["with_attribute"] == 0.8
