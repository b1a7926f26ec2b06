"""How well ``dualmem.text.slots`` tells which notes state one fact, on the notes corpus's labels.

Every update of ``bench/notes`` is labelled with the subject and attribute it changes; two notes
whose labels share a (subject, attribute) state one fact. Over every pair of notes of a scenario,
the extracted slots are compared: **precision** is the share of pairs the extractor calls one slot
(``Slot.same``) that the labels say are one fact, **recall** the share of labelled one-fact pairs it
calls one slot; also the share of notes given an attribute, and of labelled one-fact pairs it calls
two different attributes (what would wrongly veto a supersession). A pair the labels do not cover
(two notes about one slot that never changed, an additive fact) counts against precision, so
precision is a floor. The cues were written looking at this corpus: the figures are optimistic.

    python -m research.slot_agreement
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

from dualmem.text.slots import slot_of
from research.corpora import ROOT

__all__ = ["agreement"]


def agreement(folder: Path = ROOT / "bench" / "notes" / "src") -> dict[str, float | int]:
    tp = fp = fn = crossed = notes = known = 0
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text())
        turns = {t["id"]: t for s in raw["sessions"] for t in s["turns"]}
        slots = {i: slot_of(t["text"], t["speaker"]) for i, t in turns.items()}
        notes += len(slots)
        known += sum(s.attribute is not None for s in slots.values())
        labels: dict[str, set[tuple[str, str]]] = {}
        for u in raw["updates"]:
            for n in (u["old"], u["new"]):
                labels.setdefault(n, set()).add((u["subject"].lower(), u["attribute"].lower()))
        for a, b in itertools.combinations(sorted(turns), 2):
            one = bool(labels.get(a, set()) & labels.get(b, set()))
            same = slots[a].same(slots[b])
            tp += same and one
            fp += same and not one
            fn += one and not same
            sa, sb = slots[a].attribute, slots[b].attribute
            crossed += one and sa is not None and sb is not None and sa != sb
    return {
        "notes": notes,
        "with_attribute": round(known / notes, 3),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
        "one_fact_pairs": tp + fn,
        "one_fact_pairs_called_two_attributes": crossed,
    }


if __name__ == "__main__":
    print(json.dumps(agreement(), indent=1))
    sys.exit(0)
