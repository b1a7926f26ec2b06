"""R@10 by question category on one dev corpus: ``Memory.search`` (builtin read profile) beside BM25
over the same builds, with written supersession on (the builtin write path) or off (``--mode nosup``:
no supersession at write time, no ``read.likely_update``).

Builds use the builtin write profile with consolidation inline (``research.builds.build`` caches
them by conversation, profile and weights; the packaged weights, so the agent chats are in-sample
for the write heads and the ranker). Recall is the share of a question's evidence turns among the
top 10, averaged per category and over all questions (``ALL``).

    nice -n 10 python -m research.recall_by_category agentchat --out /tmp/b --limit 6
    nice -n 10 python -m research.recall_by_category agentchat --out /tmp/b-off --mode nosup --limit 6
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from dualmem.config import Profile
from research.builds import build, open_build
from research.corpora import conversations

__all__ = ["recall_by_category"]


def recall_by_category(
    corpus: str, out: Path, mode: str = "sup", limit: int | None = None
) -> dict[str, object]:
    write = Profile.builtin().with_(write__consolidation="inline")
    read = Profile.builtin()
    if mode == "nosup":
        write = write.with_(write__supersede_threshold=None)
        read = read.with_(read__likely_update=None)
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conv in conversations(corpus, limit):
        path = build(conv, out, profile=write)
        with open_build(path, read) as mem:
            by_id = {n.id: n.turn_id for n in mem.nodes(user=conv.id)}
            tenant = mem.scope(conv.id).tenant
            for qa in conv.questions:
                gold = set(qa.evidence)
                if not gold:
                    continue
                found = [by_id.get(e.node.id) for e in mem.search(qa.question, user=conv.id, k=10).evidence]
                lex = [by_id.get(j) for j, _ in mem.store.lexical_search(tenant, qa.question, 10)]
                for system, order in (("dualmem", found[:10]), ("bm25", lex)):
                    r = len(gold & set(order)) / len(gold)
                    rows[system][str(qa.category)].append(r)
                    rows[system]["ALL"].append(r)
    return {
        "corpus": corpus,
        "mode": mode,
        **{
            s: {c: [round(sum(v) / len(v), 3), len(v)] for c, v in sorted(cats.items())}
            for s, cats in rows.items()
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", choices=["notes", "agentchat", "locomo", "memgallery"])
    parser.add_argument("--out", type=Path, required=True, help="the builds' folder (cached)")
    parser.add_argument("--mode", choices=["sup", "nosup"], default="sup")
    parser.add_argument("--limit", type=int, default=None, help="the first N conversations")
    ns = parser.parse_args(argv)
    print(json.dumps(recall_by_category(ns.corpus, ns.out, ns.mode, ns.limit), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
