"""dualmem's MiniLM embedder against the bare ONNX model: same texts, same run (issue 13).

Two workloads: ``short`` (LoCoMo turns, a seeded sample) and ``long`` (long messages of
``ingest_long.py``: each message and its chunk windows, exactly the rows a write embeds). Systems:

- ``bare``: the least work that produces the model's output: the model's tokenizer (truncating at
  256), rows sorted by length and padded per batch, one ``session.run`` per batch, output discarded;
  its session has dualmem's options (``embed.onnx.session_options``: same threads, same settings);
- ``dualmem``: ``MiniLMEmbedder.embed`` (short) and ``embed_texts`` (long: it finds the windows
  itself), pooling and normalisation included;
- ``bare-spin``: ``bare`` with onnxruntime's busy-waiting intra-op pool (its default) on;
- ``bare-defaults``: ``bare`` with onnxruntime's default session options (what an earlier figure
  compared against; its threads are onnxruntime's, not ours);
- with ``--extra-threads N``: ``dualmem-tN`` and ``bare-tN``, the same with N intra-op threads.

A third workload, ``one`` (``--one N``), embeds N short turns one call each, as one ``add`` does
(dualmem through ``embed_texts``, the write path's call, bare one row per ``session.run``).

Every round runs each system once per workload, in reversed order every other round (ABBA), so drift
on a shared machine hits all; the ratio is the median of the per-round ratios. Each system's
``session.run`` time is measured inside the same calls, so "overhead" is everything but the model:
tokenisation, windows, padding, pooling. CPU seconds (``time.process_time``, every thread of the
process) are reported too: on a loaded machine they say what a text costs on a free core.

    nice -n 10 python bench/embed_overhead.py --texts 384 --messages 3 --rounds 4
    nice -n 10 python bench/embed_overhead.py --texts 0 --messages 0 --one 200 --extra-threads 1 --rounds 6
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dualmem.conversations import load_conversations
from dualmem.embed.onnx import (
    MiniLMEmbedder,
    default_model_path,
    default_tokenizer_path,
    session_options,
)
from dualmem.embed.windows import CHUNK_STRIDE, CHUNK_TOKENS, embed_texts
from ingest_long import long_messages


class TimedSession:
    """An onnxruntime session that adds up the seconds spent in ``run``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0

    def get_inputs(self) -> Any:
        return self.inner.get_inputs()


class Bare:
    """Tokenise, sort, pad, run: nothing else."""

    def __init__(self, options: Any, batch: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=256)
        path = str(default_model_path())
        self.session = TimedSession(ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]))
        self.types = "token_type_ids" in {i.name for i in self.session.get_inputs()}
        self.batch = batch

    def __call__(self, texts: Sequence[str]) -> None:
        ids = [np.asarray(e.ids, dtype=np.int64) for e in self.tokenizer.encode_batch(list(texts))]
        ids.sort(key=len)
        for i in range(0, len(ids), self.batch):
            chunk = ids[i : i + self.batch]
            width = max(len(r) for r in chunk)
            input_ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(input_ids)
            for j, row in enumerate(chunk):
                input_ids[j, : len(row)] = row
                mask[j, : len(row)] = 1
            feeds = {"input_ids": input_ids, "attention_mask": mask}
            if self.types:
                feeds["token_type_ids"] = np.zeros_like(input_ids)
            self.session.run(None, feeds)


def _ours(batch: int, threads: int | None) -> tuple[MiniLMEmbedder, TimedSession]:
    ours = MiniLMEmbedder(batch_size=batch, threads=threads)
    ours.embed(["load the session first"])
    runtime = ours._load()
    timed = TimedSession(runtime.session)
    ours._runtime = dataclasses.replace(runtime, session=timed)
    return ours, timed


def systems(batch: int, threads: int | None, extra: int | None = None) -> dict[str, tuple[Any, TimedSession]]:
    """name -> (object with a call per workload, its timed session); every session loaded."""
    import onnxruntime as ort

    defaults = ort.SessionOptions()
    defaults.log_severity_level = 3
    out: dict[str, tuple[Any, TimedSession]] = {"dualmem": _ours(batch, threads)}
    bares = [
        ("bare", session_options(threads)),
        ("bare-spin", session_options(threads, spin=True)),
        ("bare-defaults", defaults),
    ]
    if extra is not None:
        out[f"dualmem-t{extra}"] = _ours(batch, extra)
        bares.append((f"bare-t{extra}", session_options(extra)))
    for name, options in bares:
        bare = Bare(options, batch)
        bare(["load the session first"])
        out[name] = (bare, bare.session)
    return out


def call(name: str, system: Any, workload: str, texts: Sequence[str], messages: Sequence[str]) -> None:
    if workload == "one":  # one call per text, as one add embeds its observation
        for text in texts:
            embed_texts(system, [text]) if name.startswith("dualmem") else system([text])
    elif not name.startswith("dualmem"):
        system(texts)
    elif workload == "short":
        system.embed(texts)
    else:
        embed_texts(system, messages)  # the messages' rows and their windows' rows (= texts)


def measure(
    named: dict[str, tuple[Any, TimedSession]],
    workloads: dict[str, tuple[list[str], list[str]]],
    rounds: int,
    log: Callable[[str], None],
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """workload -> system -> [(seconds, seconds in session.run, CPU seconds)] per round, ABBA order."""
    runs: dict[str, dict[str, list[tuple[float, float, float]]]] = {
        w: {n: [] for n in named} for w in workloads
    }
    for r in range(rounds):
        order = list(named) if r % 2 == 0 else list(reversed(named))
        for workload, (texts, messages) in workloads.items():
            for name in order:
                system, session = named[name]
                before = session.seconds
                t0, c0 = time.perf_counter(), time.process_time()
                call(name, system, workload, texts, messages)
                seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
                runs[workload][name].append((seconds, session.seconds - before, cpu))
                log(f"round {r} {workload:5s} {name:13s} {len(texts) / seconds:7.1f} texts/s")
    return runs


def summary(runs: dict[str, list[tuple[float, float, float]]], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, times in runs.items():
        rates = [n / s for s, _, _ in times]
        out[name] = {
            "texts_per_s_median": round(statistics.median(rates), 2),
            "ms_per_text_median": round(1000 / statistics.median(rates), 2),
            "ms_per_text_best": round(1000 / max(rates), 2),
            "texts_per_s_best": round(max(rates), 2),
            # CPU time is what load on a shared machine changes least: the cost of a text on a free core
            "cpu_ms_per_text_median": round(1000 * statistics.median(c for _, _, c in times) / n, 2),
            "share_outside_session_run": round(
                sum(s - m for s, m, _ in times) / sum(s for s, _, _ in times), 4
            ),
        }
    for name in runs:
        if name != "bare":
            ratios = [b[0] / o[0] for o, b in zip(runs[name], runs["bare"], strict=True)]  # bare s / its s
            out[name]["speed_vs_bare_median"] = round(statistics.median(ratios), 3)
            out[name]["speed_vs_bare_per_round"] = [round(x, 3) for x in ratios]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--texts", type=int, default=384, help="short LoCoMo turns")
    parser.add_argument("--messages", type=int, default=3, help="long messages (their windows too)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads, all systems")
    parser.add_argument("--one", type=int, default=0, help="short turns embedded one call each")
    parser.add_argument("--extra-threads", type=int, default=None, help="also dualmem/bare at N threads")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    turns = [o.content for c in load_conversations(args.data) for o in c.observations]
    random.Random(args.seed).shuffle(turns)
    named = systems(args.batch, args.threads, args.extra_threads)
    ours = named["dualmem"][0]
    messages = long_messages(args.data, args.messages, args.seed)
    windows = ours.windows(messages, size=CHUNK_TOKENS, stride=CHUNK_STRIDE)
    workloads = {
        "short": (turns[: args.texts], []),
        "long": ([*messages, *(w for ws in windows for w in ws)], messages),
        "one": (turns[len(turns) - args.one :] if args.one else [], []),
    }
    workloads = {w: v for w, v in workloads.items() if v[0]}
    runs = measure(named, workloads, args.rounds, lambda line: print(line, file=sys.stderr, flush=True))
    tokens = {
        w: sum(
            min(len(e.ids) + 2, 256)
            for e in ours._load().splitter.encode_batch(texts, add_special_tokens=False)
        )
        for w, (texts, _) in workloads.items()
    }
    report = {
        "batch": args.batch,
        "threads": args.threads,
        "rounds": args.rounds,
        "workloads": {
            w: {"texts": len(texts), "tokens_per_text": round(tokens[w] / len(texts), 1)}
            for w, (texts, _) in workloads.items()
        },
        "long_messages": len(messages),
        "results": {w: summary(runs[w], len(workloads[w][0])) for w in workloads},
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
