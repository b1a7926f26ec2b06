"""dualmem's MiniLM embedder against the bare ONNX model, in the same run (issue 13).

"Bare" is the least work that produces the model's output: the same tokenizer and ``model.onnx``,
texts sorted by length and padded per batch, one ``session.run`` per batch with onnxruntime's default
session options, and no pooling. dualmem adds the session options of ``embed/onnx.py``, mean pooling
and normalisation. Rounds alternate (bare, dualmem, bare, ...) so drift on a shared machine hits both;
the best round of each is reported, and the ratio.

    nice -n 10 python bench/embed_overhead.py --texts 1024 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from dualmem.conversations import load_conversations
from dualmem.embed.onnx import MiniLMEmbedder, default_model_path, default_tokenizer_path


def bare(texts: list[str], batch: int) -> float:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.enable_truncation(max_length=256)
    session = ort.InferenceSession(str(default_model_path()), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    start = time.perf_counter()
    ids = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(texts)]
    ids.sort(key=len)
    for i in range(0, len(ids), batch):
        chunk = ids[i : i + batch]
        width = max(len(r) for r in chunk)
        input_ids = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for j, row in enumerate(chunk):
            input_ids[j, : len(row)] = row
            mask[j, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        session.run(None, feeds)
    return len(texts) / (time.perf_counter() - start)


def ours(texts: list[str], batch: int) -> float:
    embedder = MiniLMEmbedder(batch_size=batch)
    embedder.embed(["load the session first"])
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--texts", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    turns = [o.content for c in load_conversations(args.data) for o in c.observations]
    texts = turns[: args.texts]
    bare_rates, our_rates = [], []
    for _ in range(args.rounds):
        bare_rates.append(bare(texts, args.batch))
        our_rates.append(ours(texts, args.batch))
        print(f"bare {bare_rates[-1]:.1f}/s  dualmem {our_rates[-1]:.1f}/s", file=sys.stderr, flush=True)
    report = {
        "texts": len(texts),
        "batch": args.batch,
        "bare_texts_per_s": round(max(bare_rates), 1),
        "dualmem_texts_per_s": round(max(our_rates), 1),
        "dualmem_over_bare": round(max(our_rates) / max(bare_rates), 3),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
