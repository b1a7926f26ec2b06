"""Clean vs message-shaped queries: evidence recall of ``Memory.search`` beside BM25, in one run.

Reads ``bench/messages/queries.json`` (``derive.py``), builds each conversation once with the
product's write path (the builtin profile, consolidation inline; cached under ``--builds``), and
runs every query through ``Memory.search`` (the builtin profile, ``k=20``; ``--ranker`` a scorer
file, e.g. one fitted without the corpus for leave-one-corpus-out) and BM25 over the same build
(``Store.lexical_search``, top 20). Reported per corpus and shape: turn R@10, session R@10 (the
share of the gold's sessions a top-10 turn comes from), R@20, n, and search p50 in ms.

    python bench/messages/evaluate.py --out bench/results/messages.json
    python bench/messages/evaluate.py --per-shape 40 --corpora locomo      # a subset while iterating
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]
sys.path.append(str(ROOT / "src"))  # after PYTHONPATH: another tree's src can be measured

from dualmem.bench.metrics import recall_at_k  # noqa: E402
from dualmem.config import Profile  # noqa: E402
from dualmem.control.builtin import BuiltinController  # noqa: E402
from dualmem.control.scorers import load_ranker  # noqa: E402
from dualmem.conversations import Conversation, load_conversations  # noqa: E402
from dualmem.memory import Memory  # noqa: E402
from dualmem.types import Tenant  # noqa: E402

SHAPES = ("clean", "wrapped", "unseen", "multi", "message")


#: ``--reuse-builds``: take the oldest build of a conversation found under ``--builds`` whatever its
#: key (for a code change that leaves the write path alone but changes the builtin's weights file,
#: which the key covers: both sides of a before/after comparison then read the same files)
REUSE = False


def _build(conv: Conversation, out: Path) -> Path:
    from research.builds import build

    if REUSE:
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
        found = sorted(out.glob(f"{safe}-????????????.sqlite"), key=lambda p: p.stat().st_mtime)
        if found:
            return found[0]
    return build(conv, out, profile=Profile.builtin().with_(write__consolidation="inline"), tag="messages")


def _session_recall(ranked: Sequence[str], gold: Sequence[str], session: Mapping[str, str], k: int) -> float:
    want = {session.get(t, t) for t in gold}
    got = {session.get(t, t) for t in ranked[:k]}
    return len(want & got) / len(want)


def _pick(items: list[dict[str, Any]], per_shape: int | None) -> list[dict[str, Any]]:
    if per_shape is None:
        return items
    out: list[dict[str, Any]] = []
    for corpus in sorted({q["corpus"] for q in items}):
        for shape in SHAPES:
            mine = [q for q in items if q["corpus"] == corpus and q["shape"] == shape]
            step = max(1, len(mine) // per_shape)
            out += mine[::step][:per_shape]
    return out


def run(
    queries: Sequence[dict[str, Any]],
    builds: Path,
    *,
    ranker: Path | None = None,
    profile: Profile | None = None,
    sessions: bool = False,
) -> list[dict[str, Any]]:
    """One row per (query, system): its retrieved turns and recalls."""
    convs: dict[tuple[str, str], Conversation] = {}
    from research.corpora import CORPORA

    for corpus in sorted({q["corpus"] for q in queries}):
        for conv in load_conversations(CORPORA[corpus].data):
            convs[corpus, conv.id] = conv
    rows: list[dict[str, Any]] = []
    profile = profile or Profile.builtin()
    for (corpus, cid), conv in sorted(convs.items()):
        mine = [q for q in queries if q["corpus"] == corpus and q["conversation"] == cid]
        if not mine:
            continue
        path = _build(conv, builds / corpus)
        session = {o.turn_id: str(o.session) for o in conv.observations if o.turn_id}
        ctl = BuiltinController(ranker=load_ranker(ranker) if ranker else None)
        with Memory.open(path, controller=ctl, answerer=None, profile=profile, read_only=True) as mem:
            turn = {n.id: n.turn_id or n.id for n in mem.nodes(user=cid)}
            tenant = Tenant(cid)
            mem.search("warm up", user=cid, k=20)
            for q in mine:
                started = time.perf_counter()
                found = mem.search(q["query"], user=cid, k=20)
                ms = 1000.0 * (time.perf_counter() - started)
                ranked = {"dualmem": [turn.get(e.node.id, e.node.id) for e in found.evidence]}
                started = time.perf_counter()
                lex = mem.store.lexical_search(tenant, q["query"], 20)
                bm25_ms = 1000.0 * (time.perf_counter() - started)
                ranked["bm25"] = [turn.get(i, i) for i, _ in lex]
                took = {"dualmem": ms, "bm25": bm25_ms}
                if sessions:  # the 10 best sessions, each as its best turn (S@10 reads sessions)
                    started = time.perf_counter()
                    grouped = mem.search(q["query"], user=cid, k=20, group="session")
                    took["dualmem-sessions"] = 1000.0 * (time.perf_counter() - started)
                    ranked["dualmem-sessions"] = [
                        turn.get(h.evidence[0].node.id, "") for h in grouped.sessions
                    ]
                for system, got in ranked.items():
                    rows.append(
                        {
                            "corpus": corpus,
                            "conversation": cid,
                            "shape": q["shape"],
                            "lang": q["lang"],
                            "source": q["source"],
                            "category": q["category"],
                            "system": system,
                            "ms": took[system],
                            "R@10": recall_at_k(got, q["evidence"], 10),
                            "R@20": recall_at_k(got, q["evidence"], 20),
                            "S@10": _session_recall(got, q["evidence"], session, 10),
                            "retrieved": got[:10],
                        }
                    )
        print(f"  {corpus}/{cid}: {len(mine)} queries", file=sys.stderr)
    return rows


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in sorted({(r["corpus"], r["shape"], r["system"]) for r in rows}):
        mine = [r for r in rows if (r["corpus"], r["shape"], r["system"]) == key]
        out.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = {
            "n": len(mine),
            **{m: statistics.fmean(r[m] for r in mine) for m in ("R@10", "R@20", "S@10")},
            "p50_ms": statistics.median(r["ms"] for r in mine),
        }
    return out


def report(summary: Mapping[str, Any]) -> str:
    lines = ["| corpus | shape | n | dualmem R@10 | bm25 R@10 | margin | dualmem S@10 | bm25 S@10 | p50 ms |"]
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for corpus, shapes in summary.items():
        for shape in SHAPES:
            s = shapes.get(shape)
            if not s:
                continue
            d, b = s["dualmem"], s["bm25"]
            grouped = f" (grouped {s['dualmem-sessions']['S@10']:.3f})" if "dualmem-sessions" in s else ""
            lines.append(
                f"| {corpus} | {shape} | {d['n']} | {d['R@10']:.3f} | {b['R@10']:.3f} | "
                f"{d['R@10'] - b['R@10']:+.3f} | {d['S@10']:.3f}{grouped} | {b['S@10']:.3f} | "
                f"{d['p50_ms']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=HERE / "queries.json")
    parser.add_argument("--builds", type=Path, default=Path("/tmp/dualmem-message-builds"))
    parser.add_argument("--corpora", nargs="*", default=None)
    parser.add_argument("--conversations", nargs="*", default=None, help="only these conversation ids")
    parser.add_argument("--per-shape", type=int, default=None, help="at most this many queries a shape")
    parser.add_argument("--ranker", type=Path, default=None, help="a scorer file (default: the packaged one)")
    parser.add_argument("--out", type=Path, default=None, help="write the summary and rows here (JSON)")
    parser.add_argument("--sessions", action="store_true", help="also search grouped by session (S@10)")
    parser.add_argument("--reuse-builds", action="store_true", help="any existing build of a conversation")
    ns = parser.parse_args(argv)
    global REUSE
    REUSE = ns.reuse_builds
    queries = json.loads(ns.queries.read_text(encoding="utf-8"))["queries"]
    if ns.queries == HERE / "queries.json" and (ns.corpora is None or "locomo" in ns.corpora):
        from derive import SOURCES, derive  # LoCoMo's are derived here, never committed

        if SOURCES["locomo"].exists():
            queries += derive(["locomo"])["queries"]
    if ns.corpora:
        queries = [q for q in queries if q["corpus"] in ns.corpora]
    if ns.conversations:
        queries = [q for q in queries if q["conversation"] in ns.conversations]
    rows = run(_pick(queries, ns.per_shape), ns.builds, ranker=ns.ranker, sessions=ns.sessions)
    summary = summarize(rows)
    text = report(summary)
    print(text)
    if ns.out is not None:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
