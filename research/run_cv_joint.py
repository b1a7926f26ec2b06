"""Joint cross-validation of the read pipeline over LoCoMo dev and the agent-chat dev corpus.

    python -m research.run_cv_joint --out /tmp/cv-joint
    python -m research.run_cv_joint --views --out /tmp/cv-quick      # no read-path ablations

See ``research.cv_joint`` for the folds and the systems. Prints the report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from research.cv import print_report
from research.cv_joint import DEFAULT_VIEWS, Corpus, JointConfig, run_joint

ROOT = Path(__file__).resolve().parents[1]  # the repository


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared" / "data" / "locomo")
    parser.add_argument("--agentchat", type=Path, default=ROOT / "bench" / "agentchat" / "haystacks")
    parser.add_argument("--agentchat-folds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("bench-cv-joint"))
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--views", nargs="*", default=list(DEFAULT_VIEWS), help="read-path ablations to run")
    parser.add_argument("--no-random", action="store_true", help="skip the random-System-One run")
    parser.add_argument(
        "--scorer", choices=["trees", "linear"], default="trees", help="the System-One scorer to fit per fold"
    )
    parser.add_argument("--limit", type=int, default=None, help="conversations per corpus")
    ns = parser.parse_args()
    corpora = (Corpus("locomo", ns.locomo), Corpus("agentchat", ns.agentchat, folds=ns.agentchat_folds))
    cfg = JointConfig(
        corpora=corpora,
        out=ns.out,
        embedder=ns.embedder,
        views=tuple(ns.views),
        random_seed=None if ns.no_random else 7,
        limit=ns.limit,
        scorer=ns.scorer,
    )
    print_report(run_joint(cfg).report)


if __name__ == "__main__":
    main()
