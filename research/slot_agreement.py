"""How well ``dualmem.text.slots`` tells which notes state one fact, on the notes corpus's labels.

Every update of ``bench/notes`` is labelled with the subject and attribute it changes; two notes
whose labels share a (subject, attribute) state one fact. Over every pair of notes of a scenario,
the extracted slots are compared: **precision** is the share of pairs the extractor calls one slot
(``Slot.same``) that the labels say are one fact, **recall** the share of labelled one-fact pairs it
calls one slot; also the share of notes given an attribute, and of labelled one-fact pairs it calls
two different attributes (what would wrongly veto a supersession). A pair the labels do not cover
(two notes about one slot that never changed, an additive fact) counts against precision, so
precision is a floor. The cues were written looking at this corpus: the figures are optimistic.

With an embedder (``--embedder minilm``), the same figures for the pair judgement the read path
uses (``slots.same_fact``: the slot read from two memories, their embeddings' cosine and the newer
one's update cue), at each ``--cosine``; ``pair_precision`` / ``pair_recall`` per threshold, and
the same split by domain (``by_domain``: a threshold chosen on two domains can be read on the third).

    python -m research.slot_agreement --embedder minilm --cosine 0.4 0.45 0.5 0.55 0.6
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.embed import Embedder
from dualmem.text.slots import same_fact, slot_of
from research.corpora import ROOT

__all__ = ["agreement"]


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 0.0


def agreement(
    folder: Path = ROOT / "bench" / "notes" / "src",
    embedder: Embedder | None = None,
    cosines: Sequence[float] = (),
) -> dict[str, Any]:
    tp = fp = fn = crossed = notes = known = 0
    pair: dict[tuple[str, float], list[int]] = {}  # (domain or "all", cosine) -> tp, fp, fn
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(path.read_text())
        domain = str(raw.get("domain", path.stem.split("-")[0]))
        order = [t for s in raw["sessions"] for t in s["turns"]]
        turns = {t["id"]: t for t in order}
        position = {t["id"]: i for i, t in enumerate(order)}
        slots = {i: slot_of(t["text"], t["speaker"]) for i, t in turns.items()}
        vectors = None if embedder is None else np.asarray(embedder.embed([t["text"] for t in order]))
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
            if vectors is None:
                continue
            old, new = sorted((a, b), key=position.__getitem__)
            cos = float(vectors[position[old]] @ vectors[position[new]])
            speakers = (turns[old]["speaker"], turns[new]["speaker"])
            for c in cosines:
                said = same_fact(
                    slots[old], slots[new], turns[new]["text"], cos, threshold=c, speakers=speakers
                )
                for key in ((domain, c), ("all", c)):
                    row = pair.setdefault(key, [0, 0, 0])
                    row[0] += said and one
                    row[1] += said and not one
                    row[2] += one and not said
    out: dict[str, Any] = {
        "notes": notes,
        "with_attribute": _ratio(known, notes),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "one_fact_pairs": tp + fn,
        "one_fact_pairs_called_two_attributes": crossed,
    }
    if pair:
        out["pairs"] = {
            f"{d} @{c}": {"pair_precision": _ratio(t, t + f), "pair_recall": _ratio(t, t + n)}
            for (d, c), (t, f, n) in sorted(pair.items())
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=None, help="e.g. minilm: also the pair judgement")
    parser.add_argument("--cosine", type=float, nargs="+", default=[0.5])
    ns = parser.parse_args(argv)
    emb = None
    if ns.embedder is not None:
        from research.builds import embedder

        emb = embedder(ns.embedder)
    print(json.dumps(agreement(embedder=emb, cosines=ns.cosine if emb is not None else ()), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
