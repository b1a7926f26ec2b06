"""BM25 recall@10 on LoCoMo with and without query-term selection, in one run (issue 13).

The store's lexical search drops very common terms and ORs at most 12 of the rarest once the index
holds ``QUERY_MIN_DOCS`` rows. A LoCoMo conversation is far below that, so this script forces the
selection on (min docs 0) and off (min docs infinite) over the same stores and questions, and reports
evidence recall@10 (the share of a question's evidence turns in the top 10, averaged) and the mean
number of OR-ed terms. Each conversation is its own user of one SQLite file.

    nice -n 10 python bench/lexical_selection.py --data ../shared/data/locomo
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dualmem.conversations import load_conversations
from dualmem.plane import SQLiteStore
from dualmem.plane import _codec as codec
from dualmem.types import Node, Tenant


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    args = parser.parse_args(argv)
    convs = load_conversations(args.data)
    unit = np.zeros(8, dtype=np.float32)
    unit[0] = 1.0
    report: dict[str, object] = {}
    with SQLiteStore.open(":memory:") as store:
        for conv in convs:
            tenant = Tenant(conv.id)
            store.put_nodes(
                [
                    Node(id=f"{conv.id}:{o.turn_id}", tenant=tenant, content=o.content, speaker=o.speaker,
                         at=o.at, embedding=unit)
                    for o in conv.observations
                ]
            )  # fmt: skip
        default = codec.QUERY_MIN_DOCS
        for label, min_docs in (("off", 10**12), ("on", 0)):
            codec.QUERY_MIN_DOCS = min_docs
            recalls: list[float] = []
            for conv in convs:
                tenant = Tenant(conv.id)
                for qa in conv.questions:
                    if qa.category == 5 or not qa.evidence:
                        continue
                    gold = {f"{conv.id}:{e}" for e in qa.evidence}
                    top = {i for i, _ in store.lexical_search(tenant, qa.question, 10)}
                    recalls.append(len(gold & top) / len(gold))
            report[f"bm25_recall_at_10_selection_{label}"] = round(float(np.mean(recalls)), 4)
            report["questions"] = len(recalls)
        codec.QUERY_MIN_DOCS = default
    report["common_share"] = codec.QUERY_COMMON_SHARE
    report["or_terms"] = codec.QUERY_OR_TERMS
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
