"""Leave-one-conversation-out CV of the learned System-One scorer on the LoCoMo dev conversations.

    python -m research.run_cv_locomo --data ../shared/data/locomo --out bench-cv [--ablations no-speaker ...]

See ``research.cv``. BLAS runs single-threaded here:
on a shared machine a multi-threaded BLAS made each fit 10-20x slower.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
from pathlib import Path  # noqa: E402

from research.cv import ABLATIONS, VIEW_ABLATIONS, CVConfig, print_report, run_cv  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--out", type=Path, default=Path("bench-cv"))
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--ablations", nargs="*", default=list(ABLATIONS), choices=list(ABLATIONS))
    parser.add_argument("--no-handset", action="store_true", help="skip the hand-set System One baseline")
    parser.add_argument(
        "--views",
        nargs="*",
        default=list(VIEW_ABLATIONS),
        choices=list(VIEW_ABLATIONS),
        help="read-path ablations of the real Memory.search: a view left out, or no expansion",
    )
    parser.add_argument("--no-search", action="store_true", help="score the pool only (no Memory.search)")
    parser.add_argument("--no-reach", action="store_true", help="skip the views' reach features")
    parser.add_argument(
        "--view-limit", type=int, default=None, help="view ablations on the first N questions of each fold"
    )
    ns = parser.parse_args()
    cfg = CVConfig(
        data=ns.data,
        out=ns.out,
        embedder=ns.embedder,
        ablations=tuple(ns.ablations),
        handset=not ns.no_handset,
        search=not ns.no_search,
        view_ablations=tuple(ns.views),
        reach=not ns.no_reach,
        view_limit=ns.view_limit,
    )
    print_report(run_cv(cfg).report)


if __name__ == "__main__":
    main()
