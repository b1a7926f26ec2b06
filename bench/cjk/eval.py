"""Retrieval on the CJK dev corpus: dualmem (default and multilingual embedder) vs bigram BM25.

    python bench/cjk/eval.py                          # every file of bench/cjk/src, every system
    python bench/cjk/eval.py --systems bm25-bigram dualmem --limit 2
    python bench/cjk/eval.py --out bench/results/cjk-before   # also writes .json and .md

Systems, each over every user's own messages (one memory a user; questions of that user only):

- ``bm25-bigram``: a plain SQLite FTS5 index (``unicode61``, BM25 ranking) over text pre-split into
  tokens: overlapping bigrams of every CJK run (hanzi/kanji, kana, hangul), the run itself when it is
  one character, and Latin words and numbers lowercased. The query is the OR of its distinct tokens.
- ``dualmem``: ``Memory.open(":memory:")`` as a user gets it (MiniLM embedder, builtin controller,
  default profile); ``add_many`` of the messages with their speaker and time; then, once the
  background consolidation has finished (``wait_for_consolidation``, so that every run searches the
  same memory), ``search(k=10)``.
- ``dualmem-multilingual``: the same with ``embedder="multilingual"``; skipped (and said so) where
  this dualmem has no such embedder.
- ``dense-multilingual``: a diagnostic beside it: the multilingual embedder alone (cosine of the
  query's embedding, ``embed_queries`` where the embedder has it, with each message's), no read path.

Nothing is fitted on this corpus: dualmem's shipped settings were chosen on English corpora, so its
figures here are held out from the whole corpus (leave-one-corpus-out in docs/benchmarks.md's sense).

Figures per language and question family: ``R@5`` (share of a question's needed messages in the
first 5 results, averaged), ``R@n`` (all needed messages within the first |needed| results) and
``first`` (the first result is a needed message).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dualmem import Memory
from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder
from dualmem.errors import DualmemError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parents[1]))  # the repository root: the checker, the shared bigram BM25
# the sibling checker by its package path (bench/notes and bench/cjk both have a check.py)
from bench.cjk.check import FAMILIES, LANGUAGES, corpus_files  # noqa: E402
from research.cjk_bigrams import bigram_ranker, bigrams, score  # noqa: E402, F401 (bigrams: for callers)

K = 10
SYSTEMS = ("bm25-bigram", "dualmem", "dualmem-multilingual", "dense-multilingual")
METRICS = ("R@5", "R@n", "first")
Ranker = Callable[[str], list[str]]


def bm25_bigram(texts: dict[str, str]) -> Ranker:
    """An in-memory FTS5 index of ``texts`` (id -> text) over bigram tokens; ranks ids by BM25."""
    return bigram_ranker(texts, K)


def _dualmem(embedder: str | None = None) -> Callable[[Any], Ranker]:
    """``embedder``: ``None`` for the default, else its name, as a user opens a memory (a model passed
    as an object, shared by every user's memory, was seen to rank differently: see the README)."""

    def build(conv: Any) -> Ranker:
        mem = Memory.open(":memory:") if embedder is None else Memory.open(":memory:", embedder=embedder)
        ids = mem.add_many(conv.observations, user=conv.id)
        mem.wait_for_consolidation()  # background passes done: every run searches the same memory
        turn_of = {n: str(o.turn_id) for n, o in zip(ids, conv.observations, strict=True)}

        def rank(query: str) -> list[str]:
            found = mem.search(query, user=conv.id, k=K)
            return [turn_of[e.node.id] for e in found.evidence if e.node.id in turn_of]

        return rank

    return build


def dense(embedder: Any) -> Callable[[Any], Ranker]:
    """Cosine ranking of a user's messages by ``embedder`` alone. The user's questions are embedded in
    one batch up front (a call of the multilingual model costs about as much for one text as for 32)."""
    embed_query = getattr(embedder, "embed_queries", embedder.embed)

    def build(conv: Any) -> Ranker:
        ids = [str(o.turn_id) for o in conv.observations]
        rows = np.asarray(embedder.embed([o.content for o in conv.observations]), dtype=np.float32)
        asked = list(dict.fromkeys(q.question for q in getattr(conv, "questions", ())))
        known = (
            dict(zip(asked, np.asarray(embed_query(asked), dtype=np.float32), strict=True)) if asked else {}
        )

        def rank(query: str) -> list[str]:
            q = known[query] if query in known else np.asarray(embed_query([query]), dtype=np.float32)[0]
            order = np.argsort(-(rows @ q), kind="stable")
            return [ids[i] for i in order[:K]]

        return rank

    return build


def available(system: str) -> str | None:
    """Why ``system`` cannot run here (``None``: it can)."""
    if system not in ("dualmem-multilingual", "dense-multilingual"):
        return None
    try:
        create_embedder("multilingual")
    except (DualmemError, ImportError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def run(files: Sequence[Path], systems: Sequence[str]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every question's scores under each system, and each system's seconds."""
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = defaultdict(float)
    builders: dict[str, Callable[[Any], Ranker]] = {
        "dualmem": _dualmem(),
        "dualmem-multilingual": _dualmem("multilingual"),
    }
    if "dense-multilingual" in systems:  # a model of its own, never handed to a memory
        builders["dense-multilingual"] = dense(create_embedder("multilingual"))
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        conv = load_conversations(path)[0]
        for system in systems:
            started = time.perf_counter()
            if system == "bm25-bigram":
                rank = bm25_bigram({str(o.turn_id): o.content for o in conv.observations})
            else:
                rank = builders[system](conv)
            for q in raw["questions"]:
                ranked = rank(q["question"])
                rows.append(
                    {
                        "user": raw["id"],
                        "language": raw["language"],
                        "family": q["category"],
                        "system": system,
                        "question": q["question"],
                        "evidence": q["evidence"],
                        "ranked": ranked[:K],
                        **score(q["evidence"], ranked),
                    }
                )
            seconds[system] += time.perf_counter() - started
        print(f"  {raw['id']}: {len(raw['questions'])} questions", file=sys.stderr)
    return rows, dict(seconds)


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``{"<lang>/<family>": {system: {"n", "R@5", "R@n", "first"}}}``, with ``<lang>/all``."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        for name in (f"{r['language']}/all", f"{r['language']}/{r['family']}"):
            groups[name][r["system"]].append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    order = [f"{lang}/{f}" for lang in LANGUAGES for f in ("all", *FAMILIES)]
    for name in [n for n in order if n in groups]:
        out[name] = {}
        for system, these in groups[name].items():
            out[name][system] = {
                "n": len(these),
                **{m: round(sum(r[m] for r in these) / len(these), 3) for m in METRICS},
            }
    return out


def markdown(figures: dict[str, dict[str, dict[str, float]]], systems: Sequence[str]) -> str:
    head = "| group | n | " + " | ".join(f"{s} {m}" for s in systems for m in METRICS) + " |"
    lines = [head, "|" + "---|" * (2 + len(systems) * len(METRICS))]
    for name, by in figures.items():
        n = next(iter(by.values()))["n"]
        cells = [f"{by[s][m]:.3f}" if s in by else "-" for s in systems for m in METRICS]
        bold = f"**{name}**" if name.endswith("/all") else name
        lines.append(f"| {bold} | {n:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def as_json(meta: dict[str, Any], figures: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The results file: meta and figures indented, then one line a question."""
    head = json.dumps({"meta": meta, "figures": figures}, ensure_ascii=False, indent=1)
    lines = ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
    return head[:-2] + ',\n "questions": [\n' + lines + "\n ]\n}\n"


def _commit(path: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[HERE / "src"], help="files or folders")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--limit", type=int, default=None, help="only the first N files of each language")
    parser.add_argument("--out", type=Path, default=None, help="write OUT.json (every question) and OUT.md")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        default=None,
        metavar="JSON",
        help="no run: combine the results files of runs of the same code (some systems, some files each)",
    )
    ns = parser.parse_args(argv)
    if ns.merge:
        meta, rows = merge([json.loads(p.read_text(encoding="utf-8")) for p in ns.merge])
        return report(meta, rows, ns.out)
    files = corpus_files(ns.paths)
    if ns.limit is not None:
        files = [
            f for lang in LANGUAGES for f in [p for p in files if p.stem.startswith(f"{lang}-")][: ns.limit]
        ]
    if not files:
        parser.error("no corpus files")
    systems, skipped = [], {}
    for system in ns.systems:
        why = available(system)
        if why is None:
            systems.append(system)
        else:
            skipped[system] = why
            print(f"skipped {system}: {why}", file=sys.stderr)
    import dualmem

    source = Path(dualmem.__file__).resolve().parents[2]
    rows, seconds = run(files, systems)
    meta = {
        "dualmem": str(source),
        "commit": _commit(source),
        "files": [f.name for f in files],
        "systems": systems,
        "skipped": skipped,
        "seconds": {s: round(v, 1) for s, v in seconds.items()},
        "k": K,
    }
    return report(meta, rows, ns.out)


def merge(results: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One result from several runs of the same code (each with some systems over some files)."""
    metas = [r["meta"] for r in results]
    for key in ("dualmem", "commit", "k"):
        if any(m[key] != metas[0][key] for m in metas):
            raise SystemExit(f"cannot merge runs whose {key} differ: {[m[key] for m in metas]}")
    seen = [(s, f) for m in metas for s in m["systems"] for f in m["files"]]
    if len(set(seen)) != len(seen):
        raise SystemExit("cannot merge runs of the same system over the same file twice")
    systems = list(dict.fromkeys(s for m in metas for s in m["systems"]))
    files = sorted({f for m in metas for f in m["files"]})
    for s in systems:
        missing = [f for f in files if (s, f) not in seen]
        if missing:
            raise SystemExit(f"{s} did not run over {', '.join(missing)}")
    seconds: dict[str, float] = defaultdict(float)
    for m in metas:
        for k, v in m["seconds"].items():
            seconds[k] += v
    meta = {
        **metas[0],
        "files": files,
        "systems": systems,
        "skipped": {k: v for m in metas for k, v in m["skipped"].items() if k not in systems},
        "seconds": dict(seconds),
    }
    return meta, [row for r in results for row in r["questions"]]


def report(meta: dict[str, Any], rows: list[dict[str, Any]], out: Path | None) -> int:
    systems = [s for s in SYSTEMS if s in meta["systems"]]
    figures = summary(rows)
    table = markdown(figures, systems)
    print(table)
    print("seconds: " + ", ".join(f"{s} {v:.1f}" for s, v in meta["seconds"].items()))
    if out is not None:
        out.with_suffix(".json").write_text(as_json(meta, figures, rows), encoding="utf-8")
        note = f"dualmem from {meta['dualmem']} at {meta['commit']}; skipped: {meta['skipped'] or 'none'}\n\n"
        out.with_suffix(".md").write_text(note + table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
