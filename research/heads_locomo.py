"""The builtin's learned stop (sufficiency) and routing heads under leave-one-conversation-out CV.

    python -m research.heads_locomo --data ../shared/data/locomo --out bench-cv [--limit 50]

Uses the CV harness's builds and pools (``research/run_cv_locomo.py``, same ``--out``). Reports, per
held-out conversation, each head's AUC on its own target against the hand-set head's, and the read
loop (``Memory.search``) with the hand-set and the fold-fitted heads on the first ``--limit``
labelled questions of each conversation: recall, rounds, controller calls, stop reasons, latency.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dualmem.bench.metrics import percentile  # noqa: E402
from dualmem.learn.heads import HEAD_GROUPS  # noqa: E402
from research.cv import CVConfig, _fmt, _mean, load_links, load_pools, summarize_cv  # noqa: E402
from research.cv_heads import heads_cv, heads_search  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--out", type=Path, default=Path("bench-cv"))
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--limit", type=int, default=50, help="read-loop questions per held-out conversation")
    ns = parser.parse_args()
    cfg = CVConfig(data=ns.data, out=ns.out, embedder=ns.embedder)
    paths: dict[str, Path] = {}
    pools = load_pools(cfg, progress=False, paths=paths)
    links = load_links(cfg, pools, paths)
    auc = heads_cv(cfg, pools, links, paths)
    rows, stats = heads_search(cfg, pools, links, paths, limit=ns.limit)
    lines = ["## Learned stop and routing heads (leave-one-conversation-out)", ""]
    lines += ["AUC of each head on its own target in the held-out conversation (hand-set / learned; "
              "`-`: the training folds did not support a head).", ""]  # fmt: skip
    lines += [
        "| head | positive rate | " + " | ".join(auc) + " | mean |",
        "|---|---|" + "---|" * (len(auc) + 1),
    ]
    for key in HEAD_GROUPS:
        cells = [f"{_fmt(f[key]['handset_auc'])} / {_fmt(f[key]['learned_auc'])}" for f in auc.values()]
        hand = _mean(f[key]["handset_auc"] for f in auc.values())
        learned = _mean(f[key]["learned_auc"] for f in auc.values())
        rate = _mean(f[key]["positive_rate"] for f in auc.values())
        lines.append(
            f"| {key} | {_fmt(rate)} | " + " | ".join(cells) + f" | {_fmt(hand)} / {_fmt(learned)} |"
        )
    summary = summarize_cv(rows)
    lines += ["", f"Read loop with the hand-set vs the fold-fitted heads (first {ns.limit} labelled "
              "questions per held-out conversation):", ""]  # fmt: skip
    lines += ["| system | n | R@10 | MRR | mean rounds | mean controller calls | p50 ms | stop reasons |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for system, st in stats.items():
        a = summary[system]["all"]
        stops = ", ".join(f"{k} {v}" for k, v in sorted(st["stops"].items()))
        lines.append(
            f"| {system} | {int(a['n'] or 0)} | {_fmt(a['R@10'])} | {_fmt(a['MRR'])} | "
            f"{np.mean(st['depth']):.2f} | {np.mean(st['calls']):.2f} | "
            f"{_fmt(percentile(st['ms'], 50))} | {stops} |"
        )
    text = "\n".join(lines) + "\n"
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "heads-report.md").write_text(text, encoding="utf-8")
    (ns.out / "heads-results.json").write_text(
        json.dumps({"auc": auc, "stats": stats, "rows": rows}, indent=1, default=str), encoding="utf-8"
    )
    print(text)


if __name__ == "__main__":
    main()
