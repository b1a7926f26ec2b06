"""Long-message ingest: chunked embeddings of 300-2,500-word messages, and what they cost short turns.

Long messages are LoCoMo turns of one conversation concatenated in order until a drawn length
(300-2,500 words, log-uniform, seeded): synthetic but realistic text, like an assistant's long answer
or a pasted document. Everything runs in the same process and the same run, so ratios are fair on a
noisy machine:

- ``embed_*``: the embedder alone, one vector per message (``bare``: what a write embedded before
  chunks, the text truncated to the window) and with every extra window (``chunked``, ``embed_texts``);
  texts/s and tokens/s explain where the time goes;
- ``long_*``: ``add_many`` of the messages through the default stack (MiniLM + builtin controller,
  consolidation off), with chunks and with an embedder that hides its window (no chunks);
- ``short_*``: the same two on every LoCoMo turn (short: no turn gets a chunk), to show what the
  chunk machinery (the chunk search; texts are tokenised once either way) costs them.

Wall and CPU seconds are both reported: CPU seconds (every thread of the process) change least with
load on a shared machine. ``embed.chunked.ceiling_messages_per_s`` is ``--cores`` divided by the
embedder's CPU seconds per message: what the model allows with every core doing nothing else.

    .venv/bin/python bench/ingest_long.py --data ../shared/data/locomo [--messages 40]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dualmem import Memory, Observation, Profile
from dualmem.conversations import load_conversations
from dualmem.embed import Embedder, Matrix, MiniLMEmbedder
from dualmem.embed.windows import CHUNK_STRIDE, CHUNK_TOKENS, embed_texts


class Unwindowed:
    """The same embedder without ``windows``: every text is one (truncated) vector, as before chunks."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed(texts)


def long_messages(data: Path, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    convs = load_conversations(data)
    out: list[str] = []
    while len(out) < n:
        turns = rng.choice(convs).observations
        want = round(math.exp(rng.uniform(math.log(300), math.log(2500))))
        start = rng.randrange(len(turns))
        words: list[str] = []
        i = start
        while len(words) < want:
            words += turns[i % len(turns)].content.split()
            i += 1
        out.append(" ".join(words[:want]))
    return out


def timed_embed(embedder: MiniLMEmbedder, messages: list[str], cores: int) -> dict[str, Any]:
    """The embedder alone: wall and CPU seconds, and the messages/s ceiling the CPU cost allows."""
    t0, c0 = time.perf_counter(), time.process_time()
    embedder.embed(messages)
    bare, bare_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = embed_texts(embedder, messages)
    chunked, chunked_cpu = time.perf_counter() - t0, time.process_time() - c0
    texts = len(messages) + sum(0 if c is None else c.shape[0] for c in vectors.chunks)
    return {
        "bare": {
            "messages_per_s": round(len(messages) / bare, 2),
            "texts_per_s": round(len(messages) / bare, 1),
            "cpu_ms_per_text": round(1000 * bare_cpu / len(messages), 1),
        },
        "chunked": {
            "messages_per_s": round(len(messages) / chunked, 2),
            "texts": texts,
            "texts_per_message": round(texts / len(messages), 2),
            "texts_per_s": round(texts / chunked, 1),
            "cpu_ms_per_text": round(1000 * chunked_cpu / texts, 1),
            "cpu_s_per_message": round(chunked_cpu / len(messages), 3),
            # every core busy with the model and nothing else: an upper bound on chunked messages/s
            "ceiling_messages_per_s": round(cores * len(messages) / chunked_cpu, 2),
        },
    }


def ingest(groups: dict[str, list[Observation]], embedder: Embedder, db: Path) -> dict[str, Any]:
    """``add_many`` of each user's observations into a fresh file: items/s, chunked nodes, disk/item."""
    profile = Profile.builtin().with_(write__consolidation="off")
    observations = [o for group in groups.values() for o in group]
    t0, c0 = time.perf_counter(), time.process_time()
    with Memory.open(db, embedder=embedder, controller="builtin", profile=profile, answerer=None) as mem:
        for user, group in groups.items():
            mem.add_many(group, user=user)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        chunked = len(mem.store.get_chunks([n.id for n in mem.store.iter_nodes()]))
    size = db.stat().st_size + sum(p.stat().st_size for p in db.parent.glob(db.name + "-*"))
    return {
        "items": len(observations),
        "seconds": round(seconds, 2),
        "items_per_s": round(len(observations) / seconds, 2),
        "cpu_s_per_item": round(cpu / len(observations), 3),
        "chunked_nodes": chunked,
        "db_bytes_per_item": round(size / len(observations)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/locomo")
    ap.add_argument("--messages", type=int, default=40)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores for the ceiling")
    ap.add_argument("--no-short", action="store_true", help="skip the LoCoMo short-turn ingest (slow)")
    args = ap.parse_args()
    embedder = MiniLMEmbedder(threads=args.threads)
    messages = long_messages(args.data, args.messages, args.seed)
    embedder.embed(messages[:4])  # load the model outside the timings
    words = [len(m.split()) for m in messages]
    tokens = sum(len(e.ids) for e in embedder._load().splitter.encode_batch(messages))
    result: dict[str, Any] = {
        "messages": len(messages),
        "words": {"min": min(words), "mean": round(sum(words) / len(words)), "max": max(words)},
        "tokens_per_message": round(tokens / len(messages)),
        "window": {"tokens": CHUNK_TOKENS, "stride": CHUNK_STRIDE, "max_length": embedder.max_length},
        "embed": timed_embed(embedder, messages, args.cores),
    }
    half = len(messages) // 2
    longs = {
        "a": [Observation(content=m, speaker="Assistant", session="s1") for m in messages[:half]],
        "b": [Observation(content=m, speaker="Assistant", session="s1") for m in messages[half:]],
    }
    shorts = {c.id: list(c.observations) for c in load_conversations(args.data)}
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        result["long_chunked"] = ingest(longs, embedder, tmp / "long-c.db")
        result["long_unchunked"] = ingest(longs, Unwindowed(embedder), tmp / "long-u.db")
        if not args.no_short:
            result["short_chunked"] = ingest(shorts, embedder, tmp / "short-c.db")
            result["short_unchunked"] = ingest(shorts, Unwindowed(embedder), tmp / "short-u.db")
    lc, lu = result["long_chunked"], result["long_unchunked"]
    result["long_chunked_vs_unchunked"] = round(lc["items_per_s"] / lu["items_per_s"], 3)
    if not args.no_short:
        result["short_chunked_vs_unchunked"] = round(
            result["short_chunked"]["items_per_s"] / result["short_unchunked"]["items_per_s"], 3
        )
    result["embed_share_of_long_ingest"] = round(
        (len(messages) / result["embed"]["chunked"]["messages_per_s"]) / lc["seconds"], 3
    )
    # CPU shares hold better than wall shares when the machine is loaded
    result["embed_cpu_share_of_long_ingest"] = round(
        result["embed"]["chunked"]["cpu_s_per_message"] / lc["cpu_s_per_item"], 3
    )
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
