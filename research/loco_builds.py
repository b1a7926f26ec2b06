"""Each corpus built with the write heads fitted without it (leave-one-corpus-out builds).

The heads (``dualmem.learn.write_heads.fit_write_heads``) are fitted on the judged pairs of the
other corpora's recorded builds (``research.builds``), then the corpus is built afresh with them:
its supersession edges come from a System One that never saw its labels. ``research.loco
--search`` reads these builds.

    python -m research.loco_builds --pairs research-out/builds --out research-out/builds-loco
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from dualmem.learn.write_heads import fit_write_heads
from research import write_heads as wh
from research.builds import build
from research.corpora import CORPORA, ENGLISH, conversations, embedder_of


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=Path("research-out/builds"), help="recorded builds")
    parser.add_argument("--out", type=Path, default=Path("research-out/builds-loco"))
    parser.add_argument("--corpora", nargs="+", default=list(ENGLISH), choices=list(CORPORA))
    parser.add_argument(
        "--train", nargs="+", default=list(ENGLISH), choices=list(CORPORA), help="corpora the heads see"
    )
    ns = parser.parse_args(argv)
    rows = wh.collect(ns.pairs, sorted(set(ns.train) | set(ns.corpora)))
    for name in ns.corpora:
        heads = fit_write_heads([r for r in rows if r.group != name], provenance={"held_out": name})
        (ns.out / name).mkdir(parents=True, exist_ok=True)
        heads.save(ns.out / name / "write_heads.json")
        print(f"{name}: {json.dumps(heads.provenance['heads'])}", file=sys.stderr)
        weights = heads.weights()
        for conv in conversations(name):
            build(conv, ns.out / name, weights=weights, record=True, spec=embedder_of(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
