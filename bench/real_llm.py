"""The real-model check of the ``llm`` backend (opt-in, not CI; ``bench/real_llm.sh`` starts the server).

Against an OpenAI-compatible server already running (llama.cpp's, on 127.0.0.1):

1. write/search smoke test: a memory with ``controller="llm"`` (debiased, the default) stores the
   first ``--turns`` turns of a LoCoMo dev conversation and answers ``--queries`` of its questions
   (the question text only); reports ms per write, pending nodes, s per query, stop reasons;
2. decision agreement: every Noul the llm backend answered during those writes, against the builtin
   decider on the same batches (its answer >= 0.5 is the label), debiased (the configured mode,
   ``cyclic`` by default) and again without debiasing (``none``: the same batches asked once each);
   agreement and mean score per decision key, decisions/s;
3. Choice agreement (the temporal-relation Choice, 7 options): the Choice questions of those write
   batches (at most ``--choices``) asked again in each debias mode (``none``, ``both_orders``,
   ``cyclic``): the share whose label is the builtin decider's, the share that picked the first listed
   option (the position-bias symptom), the label counts, the forward passes one Choice costs, and
   Choices/s.

    PYTHONPATH=src python bench/real_llm.py --url http://127.0.0.1:8765/v1 --model qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from dualmem import LLMConfig, Memory
from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.calibration import Recorder, Sample, agreement, compare, replay
from dualmem.control.config import DEBIAS_MODES
from dualmem.control.llm import LLMController
from dualmem.control.questions import Batch, BatchResult, Choice, ChoiceAnswer, NoulAnswer
from dualmem.conversations import load_conversations

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "conv-26.json"


def log(msg: str) -> None:
    print(f"real_llm: {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def labelled(pairs: list[tuple[Batch, BatchResult]]) -> list[Sample]:
    """The llm's recorded Noul scores, labelled by the builtin decider on the same batches."""
    builtin = BuiltinController()
    out: list[Sample] = []
    for batch, result in pairs:
        ref = builtin.decide(batch)
        for name, q in batch.questions.items():
            got, want = result.answers[name], ref.answers[name]
            if isinstance(got, NoulAnswer) and isinstance(want, NoulAnswer):
                out.append(Sample(q.key, got.score, want.score >= 0.5))
    return out


def smoke(config: LLMConfig, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Writes (debiased), then the same write batches re-asked without debiasing, then the queries;
    the report is saved after each phase, so an interrupted run keeps what it measured."""
    conv = load_conversations(args.data)[0]
    turns = list(conv.observations[: args.turns])
    queries = [qa.question for qa in conv.questions[: args.queries]]
    recorder = Recorder(LLMController.from_config(config))
    profile = Profile.dualmem().with_(write__consolidation="off")
    out: dict[str, Any] = {"conversation": conv.id, "turns": len(turns)}
    report["smoke"] = out
    with Memory.open(":memory:", embedder=args.embedder, controller=recorder, profile=profile) as mem:
        started = time.perf_counter()
        for i, obs in enumerate(turns):
            mem.add_many([obs], user="real")
            log(f"write {i + 1}/{len(turns)} done ({time.perf_counter() - started:.0f} s)")
        write_s = time.perf_counter() - started
        pairs = list(recorder.pairs)
        questions = sum(len(b.questions) for b, _ in pairs)
        out["ms_per_write"] = round(1000 * write_s / len(turns), 1)
        out["pending"] = mem.stats(user="real")["pending"]
        report[config.debias] = {
            "decisions": questions,
            "decisions_per_s_during_writes": round(questions / write_s, 3),
            "table": table(labelled(pairs)),
        }
        save(report, args.out)
        reask(config, pairs, report, args.out)
        builtin = BuiltinController()
        choices = choice_batches(pairs, limit=args.choices)
        log(f"re-asking {len(choices)} Choice questions in each debias mode")
        report["choices"] = choice_agreement([(b, builtin.decide(b)) for b in choices], config)
        save(report, args.out)
        searches = []
        for q in queries:
            t0 = time.perf_counter()
            found = mem.search(q, user="real", k=5)
            took = round(time.perf_counter() - t0, 2)
            reason = found.trace.stop_reason
            searches.append({"query": q, "s": took, "stop_reason": reason, "evidence": len(found.evidence)})
            log(f"query done in {took} s ({reason})")
        out["searches"] = searches
        out["s_per_query"] = round(sum(s["s"] for s in searches) / max(1, len(searches)), 2)
        out["controller_stats"] = mem.controller_stats()
        recorder.inner.close()  # type: ignore[attr-defined]
    save(report, args.out)


def reask(
    config: LLMConfig, pairs: list[tuple[Batch, BatchResult]], report: dict[str, Any], out: Path
) -> None:
    """The recorded write batches asked again without debiasing, labelled by the builtin decider."""
    log(f"re-asking {len(pairs)} write batches without debiasing")
    builtin = BuiltinController()
    reference = [(b, builtin.decide(b)) for b, _ in pairs]  # the labels: the builtin on the same batches
    started = time.perf_counter()
    with LLMController.from_config(dataclasses.replace(config, debias="none")) as plain:
        samples, failed = compare(reference, plain, theta=0.5)
    elapsed = time.perf_counter() - started
    questions = sum(len(b.questions) for b, _ in pairs)
    report["none"] = {"decisions": questions, "failed_batches": failed, "table": table(samples),
                      "decisions_per_s": round(questions / elapsed, 3) if elapsed else None}  # fmt: skip
    save(report, out)


def choice_batches(pairs: list[tuple[Batch, BatchResult]], *, limit: int) -> list[Batch]:
    """The Choice questions of the recorded batches, one batch each (their state kept), at most ``limit``."""
    out: list[Batch] = []
    for batch, _ in pairs:
        for name, q in batch.questions.items():
            if isinstance(q, Choice) and len(out) < limit:
                out.append(dataclasses.replace(batch, questions={name: q}))
    return out


def choice_agreement(
    reference: list[tuple[Batch, BatchResult]], config: LLMConfig, modes: tuple[str, ...] = DEBIAS_MODES
) -> dict[str, dict[str, Any]]:
    """Per debias mode: how often the llm's Choice label is the reference's, and how often it is the
    first listed option; label counts, forward passes per Choice, Choices/s, failed batches."""
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        agree = first = asked = failed = passes = 0
        labels: dict[str, int] = {}
        started = time.perf_counter()
        with LLMController.from_config(dataclasses.replace(config, debias=mode)) as llm:  # type: ignore[arg-type]
            answered, failed = replay(reference, llm)
            for q, want, got in answered:
                if not (isinstance(q, Choice) and isinstance(got, ChoiceAnswer)):
                    continue
                asked += 1
                passes += llm.passes(q)
                agree += isinstance(want, ChoiceAnswer) and got.label == want.label
                first += got.label == q.labels[0]
                labels[got.label] = labels.get(got.label, 0) + 1
        elapsed = time.perf_counter() - started
        out[mode] = {
            "choices": asked,
            "agreement": round(agree / asked, 3) if asked else None,
            "first_option_share": round(first / asked, 3) if asked else None,
            "labels": dict(sorted(labels.items())),
            "passes_per_choice": round(passes / asked, 2) if asked else None,
            "choices_per_s": round(asked / elapsed, 3) if elapsed and asked else None,
            "failed_batches": failed,
        }
    return out


def save(report: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


def table(samples: list[Sample]) -> dict[str, dict[str, float]]:
    return {k: {m: round(v, 3) for m, v in row.items()} for k, row in agreement(samples).items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--context-tokens", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--choices", type=int, default=40, help="Choice questions re-asked per debias mode")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--out", type=Path, default=Path("/tmp/llm-prep/real_llm.json"))
    args = parser.parse_args()
    config = LLMConfig(base_url=args.url, model=args.model, timeout_s=args.timeout,
                       context_tokens=args.context_tokens, retries=1)  # fmt: skip
    report: dict[str, Any] = {"config": config.public(), "data": str(args.data)}
    log(f"smoke test: {args.turns} writes, {args.queries} queries, debias={config.debias}")
    smoke(config, args, report)
    print(json.dumps(report, indent=2))
    log(f"report written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
