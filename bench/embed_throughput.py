"""Embedding throughput of the default MiniLM ONNX embedder, in texts per second.

Usage: ``python bench/embed_throughput.py [--data DIR] [--limit N] [--threads T] [--batch-sizes 16,32]``

Texts are all LoCoMo turns under ``--data`` (default ``../shared/data/locomo`` next to the repo), or
synthetic sentences when that folder is absent. Prints one JSON object to stdout; progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

from dualmem.embed.onnx import MiniLMEmbedder

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"


def locomo_turns(folder: Path) -> list[str]:
    texts: list[str] = []
    for file in sorted(folder.glob("*.json")):
        conversation = json.loads(file.read_text(encoding="utf-8"))
        sessions = conversation.get("conversation", conversation)
        for key, value in sessions.items():
            if key.startswith("session_") and isinstance(value, list):
                texts.extend(turn["text"] for turn in value if isinstance(turn, dict) and turn.get("text"))
    return texts


def synthetic(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    subjects = ["I", "My sister", "The team", "Our neighbour", "Caroline", "The new manager"]
    verbs = ["visited", "talked about", "painted", "bought", "forgot", "planned a trip to"]
    objects = ["the museum", "a red bicycle", "the support group", "Paris last summer", "a puppy", "sushi"]
    tails = ["", " yesterday", " because it was raining", " with some old friends from school", " again"]
    return [
        f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(tails)}."
        for _ in range(n)
    ]


def measure(texts: list[str], *, batch_size: int, threads: int | None, repeats: int) -> dict[str, float]:
    embedder = MiniLMEmbedder(batch_size=batch_size, threads=threads)
    embedder.embed(texts[:batch_size])  # load the session and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        embedder.embed(texts)
        best = min(best, time.perf_counter() - start)
    return {"batch_size": batch_size, "seconds": round(best, 3), "texts_per_s": round(len(texts) / best, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of LoCoMo *.json files")
    parser.add_argument("--limit", type=int, default=0, help="use at most N texts (0: all)")
    parser.add_argument("--synthetic", type=int, default=2000, help="synthetic texts when no data")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--batch-sizes", default="16,32,64,128")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)

    texts = locomo_turns(args.data) if args.data.is_dir() else []
    source = str(args.data) if texts else "synthetic"
    if not texts:
        texts = synthetic(args.synthetic)
    if args.limit:
        texts = texts[: args.limit]
    results = []
    for size in (int(part) for part in args.batch_sizes.split(",")):
        print(f"batch_size={size} ...", file=sys.stderr, flush=True)
        results.append(measure(texts, batch_size=size, threads=args.threads, repeats=args.repeats))
    report = {
        "embedder": MiniLMEmbedder.name,
        "source": source,
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "threads": args.threads,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "results": results,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
