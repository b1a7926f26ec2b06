"""The pool's depth and window by leave-one-conversation-out CV (issue 13): ``dualmem-pool`` (the pool
ranked by each fold's refitted scorer) at each setting, on the five dev conversations, same folds.

    python -m research.cv_pool --out /tmp/x/cv --settings 50:2 40:2 30:2 50:1 30:1

One JSON line a setting (R@1/5/10/20 and MRR of every system the CV reports) on stdout. Builds and
pools are cached under ``<out>/cache`` (copy ``/tmp/final-cv/cache`` there to reuse main's builds).
BLAS runs single-threaded (see ``research/run_cv_locomo.py``).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from research.cv import CVConfig, run_cv  # noqa: E402


def summary(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for system in sorted({str(r["system"]) for r in rows}):
        mine = [r for r in rows if r["system"] == system]
        figures = {f"R@{k}": statistics.mean(r["recall"][k] for r in mine) for k in ("1", "5", "10", "20")}  # type: ignore[index]
        figures["MRR"] = statistics.mean(float(r["mrr"]) for r in mine)  # type: ignore[arg-type]
        out[system] = {"n": len(mine), **{k: round(v, 4) for k, v in figures.items()}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--out", type=Path, default=Path("bench-cv-pool"))
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--settings", nargs="+", default=["50:2", "40:2", "30:2", "50:1", "30:1"])
    ns = parser.parse_args()
    for setting in ns.settings:
        n, window = (int(x) for x in setting.split(":"))
        started = time.time()
        cfg = CVConfig(
            data=ns.data, out=ns.out, embedder=ns.embedder, pool=n, window=window, ablations=(),
            search=False, view_ablations=(), reach=False,
        )  # fmt: skip
        result = run_cv(cfg, progress=False, log=lambda _line: None)
        line = {"pool": n, "window": window, "seconds": round(time.time() - started)}
        print(json.dumps({**line, "systems": summary(result.rows)}), flush=True)


if __name__ == "__main__":
    main()
