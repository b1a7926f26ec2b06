"""Does the trees scorer read small memories as well as the dev-sized ones it is fitted on?

    python -m research.small_memories --out /tmp/cvt          # reuse cv_joint's builds under /tmp/cvt

The five LoCoMo dev conversations are cut into two-session slices (~45 turns each, about the size of
``dualmem demo``'s sample conversation; a question is kept when all its evidence lies in the slice).
Each slice is built and pooled like any dev conversation and is held out with its source
conversation's fold of ``research/run_cv_joint.py``: the scorer of that fold (fitted on the other LoCoMo
conversations and every agent-chat fold, ``--trees`` fixed rather than chosen by inner CV) ranks
its pools, and ``--train-slices`` also fits on the other folds' slices. Prints one JSON object:
R@1/5/10 of ``dualmem-pool`` and the baselines per corpus (and per category for the slices).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

from dualmem.bench.metrics import recall_at_k
from dualmem.learn.boost import TreeSettings, fit_trees
from dualmem.read.pool import FEATURES
from research.cv import QueryPool, _rows, rank
from research.cv_joint import Corpus, JointConfig, load_corpora

ROOT = Path(__file__).resolve().parents[1]  # the repository
_SESSION = re.compile(r"session_(\d+)")
_TURN = re.compile(r"\s*D(\d+):\d+")


def write_slices(locomo: Path, out: Path, sessions: int = 2, least: int = 3) -> list[Path]:
    """``<conversation>-sNN.json`` for every run of ``sessions`` consecutive sessions with at least
    ``least`` questions whose evidence all lies in it."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(locomo.glob("*.json")):
        conv = json.loads(path.read_text(encoding="utf-8"))
        keys = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)) and conv[k])
        for i in range(0, len(keys) - sessions + 1, sessions):
            keep = set(keys[i : i + sessions])
            qa = [q for q in conv["qa"] if q.get("evidence") and all(_inside(e, keep) for e in q["evidence"])]
            if len(qa) < least:
                continue
            part = {"speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"], "qa": qa}
            for k in sorted(keep):
                part[f"session_{k}"] = conv[f"session_{k}"]
                part[f"session_{k}_date_time"] = conv[f"session_{k}_date_time"]
            target = out / f"{path.stem}-s{min(keep):02d}.json"
            target.write_text(json.dumps(part), encoding="utf-8")
            written.append(target)
    return written


def _inside(evidence: str, sessions: set[int]) -> bool:
    m = _TURN.match(evidence)
    return m is not None and int(m.group(1)) in sessions


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo")
    parser.add_argument("--agentchat", type=Path, default=ROOT / "bench" / "agentchat" / "haystacks")
    parser.add_argument("--out", type=Path, default=Path("bench-cv-joint"))
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--train-slices", action="store_true", help="fit on the other folds' slices too")
    ns = parser.parse_args()
    slices = write_slices(ns.locomo, ns.out / "slices-data")
    cfg = JointConfig(
        corpora=(
            Corpus("locomo", ns.locomo),
            Corpus("agentchat", ns.agentchat, folds=4),
            Corpus("slices", ns.out / "slices-data"),
        ),
        out=ns.out,
    )
    loaded = load_corpora(cfg, progress=False)
    fold_of = dict(loaded.fold_of)
    for conv, corpus in loaded.corpus_of.items():
        if corpus == "slices":  # held out with the conversation it was cut from
            fold_of[conv] = "locomo/" + conv.rsplit("-s", 1)[0]
    trained = {"locomo", "agentchat"} | ({"slices"} if ns.train_slices else set())
    recalls: dict[tuple[str, str, str], list[float | None]] = {}
    for fold in sorted(set(fold_of.values())):
        train: list[QueryPool] = [
            p
            for conv, ps in loaded.pools.items()
            if fold_of[conv] != fold and loaded.corpus_of[conv] in trained
            for p in _rows(ps)
        ]
        groups = [(p.features, p.labels.astype(float)) for p in train]
        ranker = fit_trees(groups, FEATURES, TreeSettings(trees=ns.trees))
        for conv, ps in loaded.pools.items():
            if fold_of[conv] != fold:
                continue
            corpus = loaded.corpus_of[conv]
            for p in _rows(ps):
                systems = {"dualmem-pool": rank(ranker, p)[0], **p.baselines}
                for system, ranked in systems.items():
                    for k in (1, 5, 10):
                        got = recall_at_k(ranked, p.evidence, k)
                        recalls.setdefault((corpus, system, f"R@{k}"), []).append(got)
                        if corpus == "slices" and system == "dualmem-pool" and k == 10:
                            recalls.setdefault((corpus, system, f"R@10 cat {p.category}"), []).append(got)
    questions = {c: sum(len(_rows(ps)) for v, ps in loaded.pools.items() if loaded.corpus_of[v] == c)
                 for c in ("locomo", "agentchat", "slices")}  # fmt: skip
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for (corpus, system, metric), values in sorted(recalls.items()):
        figures.setdefault(corpus, {}).setdefault(system, {})[metric] = _mean(values)
    report = {"slice_count": len(slices), "questions": questions, "trees": ns.trees, **figures}
    report["train_slices"] = ns.train_slices
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
