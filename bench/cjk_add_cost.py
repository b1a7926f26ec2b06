"""Chinese add cost with the multilingual embedder against MiniLM, in texts per second, same run.

Usage: ``python bench/cjk_add_cost.py [--data DIR_OR_FILE ...] [--lang zh] [--limit N] [--rounds R]
[--out PATH]``

Texts are the messages of ``dualmem.conversation/1`` files of one language (default: the CJK dev
corpus ``bench/cjk/src/zh-*.json`` when present, else the bundled Chinese demo sample). For each
embedder, in alternating rounds (A B A B ...: both see the same machine load), it measures

- ``embed``: the embedder alone over every text (one ``embed`` call, the model loaded before);
- ``add``: ``Memory.add_many`` of every text into a fresh in-memory database with the default
  (builtin) controller and profile, the write path a user pays (embedding, System One, the store).

The best round of each is reported (texts/s), and the ratio multilingual / MiniLM. One JSON object
to stdout (and ``--out``); progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from dualmem import Memory
from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "src" / "dualmem" / "data" / "sample_conversation_zh.json"
ENGINES = ("minilm", "multilingual")


def texts_of(paths: list[Path], lang: str) -> list[str]:
    files: list[Path] = []
    for path in paths:
        files += sorted(path.glob(f"{lang}-*.json")) if path.is_dir() else [path]
    texts = [o.content for f in files for conv in load_conversations(f) for o in conv.observations]
    return list(dict.fromkeys(texts))


def embed_rate(engine: str, texts: list[str]) -> float:
    embedder = create_embedder(engine)
    embedder.embed(texts[:4])  # load the model first
    started = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def add_rate(engine: str, texts: list[str]) -> float:
    embedder = create_embedder(engine)
    embedder.embed(texts[:4])
    with Memory.open(":memory:", embedder=embedder, answerer=None) as mem:
        started = time.perf_counter()
        mem.add_many(texts, user="bench")
        return len(texts) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = [HERE / "cjk" / "src"] if (HERE / "cjk" / "src").is_dir() else [SAMPLE]
    parser.add_argument("--data", type=Path, nargs="+", default=default, help="conversation files or folders")
    parser.add_argument("--lang", default="zh", help="the language prefix of files in a folder")
    parser.add_argument("--limit", type=int, default=0, help="at most N texts (0: all)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per engine")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    texts = texts_of(args.data, args.lang)
    if args.limit:
        texts = texts[: args.limit]
    if not texts:
        parser.error("no texts found")
    best: dict[str, dict[str, float]] = {e: {"embed": 0.0, "add": 0.0} for e in ENGINES}
    for r in range(args.rounds):
        for engine in ENGINES if r % 2 == 0 else reversed(ENGINES):
            for kind, measure in (("embed", embed_rate), ("add", add_rate)):
                rate = measure(engine, texts)
                best[engine][kind] = max(best[engine][kind], rate)
                print(f"round {r + 1} {engine} {kind}: {rate:.1f} texts/s", file=sys.stderr)
    result: dict[str, Any] = {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "data": [str(p) for p in args.data],
        "rounds": args.rounds,
        "texts_per_s": {e: {k: round(v, 1) for k, v in best[e].items()} for e in ENGINES},
        "ratio_multilingual_over_minilm": {
            k: round(best["multilingual"][k] / best["minilm"][k], 3) for k in ("embed", "add")
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    }
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
