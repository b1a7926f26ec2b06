"""Run the LoCoMo benchmark: build one memory per conversation, ask every question of every system.

Each conversation is one tenant (``user`` = the conversation id) in its own SQLite file under
``<out>/cache/``, named by a hash of the conversation's turns, the embedder, the controller and the
write profile: a rerun reuses finished builds, and per-question records are appended to a JSON-lines
file next to them, so an interrupted run resumes where it stopped.

The answerer sees only the question and the selected evidence, never the category or the gold.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dualmem._progress import Progress
from dualmem._version import __version__
from dualmem.bench.judge import ABSTENTION_REFERENCE, BinaryJudge, ContinuousJudge, Judge, JudgeError
from dualmem.bench.locomo import BenchConfig, Endpoint, SystemSpec, system_spec
from dualmem.bench.metrics import bleu1, f1_tokens, is_refusal, locomo_official_score, mrr, recall_at_k
from dualmem.bench.report import BuildRecord, QuestionRecord, render_markdown, summarize
from dualmem.config import Profile
from dualmem.control import create_controller
from dualmem.control.questions import Controller
from dualmem.conversations import QA, Conversation, load_conversations
from dualmem.embed import Embedder, create_embedder, embed_queries
from dualmem.memory import Memory
from dualmem.read.route import rrf
from dualmem.reason import create_answerer
from dualmem.reason.base import Answerer
from dualmem.reason.chat_client import ChatClient
from dualmem.types import Evidence, Tenant

__all__ = ["BenchResult", "run_locomo"]

_BUILD_META = "bench_build"


@dataclass(frozen=True, slots=True)
class BenchResult:
    """What a run produced: records, builds, the summary, and the files written."""

    config: BenchConfig
    records: tuple[QuestionRecord, ...]
    builds: tuple[BuildRecord, ...]
    summary: dict[str, Any]
    report: Path
    results: Path
    plots: tuple[Path, ...]


@dataclass(slots=True)
class _Context:
    config: BenchConfig
    embedder: Embedder
    controller: Controller
    answerer: Answerer | None
    judges: dict[str, Judge]
    base: Profile
    progress: bool


def run_locomo(config: BenchConfig, *, progress: bool = True) -> BenchResult:
    """Run every configured system on every conversation; write report.md, results.json, plots."""
    conversations = load_conversations(config.data)[: config.limit]
    specs = [system_spec(n) for n in config.systems]
    if config.answerer == "none":
        specs = [s for s in specs if s.kind != "full-context"]
    ctx = _context(config, progress=progress)
    (config.out / "cache").mkdir(parents=True, exist_ok=True)
    records: list[QuestionRecord] = []
    builds: list[BuildRecord] = []
    for conv in conversations:
        for build_kind, group in _groups(specs).items():
            path, build = _ensure_build(conv, build_kind, ctx)
            builds.append(build)
            for spec in group:
                records.extend(_run_system(conv, spec, path, ctx))
    return _finish(config, conversations, records, builds)


def _context(config: BenchConfig, *, progress: bool) -> _Context:
    answerer: Answerer | None = None
    if config.answerer == "extractive":
        answerer = create_answerer("extractive")
    elif config.answerer == "chat" and config.answerer_endpoint is not None:
        answerer = create_answerer("chat", **_options(config.answerer_endpoint))
    return _Context(
        config=config,
        embedder=create_embedder(config.embedder),
        controller=(
            create_controller("llm", config=config.llm)
            if config.llm is not None
            else create_controller(config.controller, **_options(config.controller_endpoint))
        ),
        answerer=answerer,
        judges=_judges(config),
        # consolidation inline: builds are deterministic and its cost counts in the build time
        base=Profile.for_backend(config.controller).with_(write__consolidation="inline"),
        progress=progress,
    )


def _options(endpoint: Endpoint | None) -> dict[str, Any]:
    if endpoint is None:
        return {}
    pairs = (("base_url", endpoint.url), ("model", endpoint.model), ("api_key", endpoint.api_key))
    return {k: v for k, v in pairs if v}


def _judges(config: BenchConfig) -> dict[str, Judge]:
    out: dict[str, Judge] = {}
    for i, endpoint in enumerate(config.judges):
        client = ChatClient(
            base_url=endpoint.url, model=endpoint.model, api_key=endpoint.api_key, error=JudgeError
        )
        suffix = endpoint.model if len(config.judges) == 1 else f"{endpoint.model}#{i + 1}"
        for kind in config.judge_kinds:
            judge: Judge = BinaryJudge(client) if kind == "binary" else ContinuousJudge(client)
            out[f"{judge.name}@{suffix}"] = judge
    return out


def _groups(specs: Sequence[SystemSpec]) -> dict[str, list[SystemSpec]]:
    """Systems by the build they read; baselines read the full build when there is one."""
    memory_builds = {s.build for s in specs if s.kind == "memory"}
    baseline_build = "full" if "full" in memory_builds or not memory_builds else "no-write-control"
    groups: dict[str, list[SystemSpec]] = {}
    for spec in specs:
        groups.setdefault(spec.build if spec.kind == "memory" else baseline_build, []).append(spec)
    return groups


# -- builds ---------------------------------------------------------------------------------------


def _hash(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _conversation_hash(conv: Conversation) -> str:
    return _hash(
        [
            [o.content, o.at.isoformat() if o.at else None, o.speaker, o.turn_id, o.session]
            for o in conv.observations
        ]
    )


def _build_key(conv: Conversation, build_kind: str, ctx: _Context) -> str:
    profile = system_spec("no-write-control" if build_kind == "no-write-control" else "dualmem").profile(
        ctx.base
    )
    return _hash(
        {
            "version": __version__,
            "conversation": _conversation_hash(conv),
            "embedder": [ctx.embedder.name, ctx.embedder.dim],
            "controller": [
                ctx.config.controller,
                ctx.config.controller_endpoint and ctx.config.controller_endpoint.public(),
            ],
            "write": repr(profile.write),
            # the builtin decider's hand-set weights decide typing, relations and supersession
            "weights": _weights_digest() if ctx.config.controller == "builtin" else None,
        }
    )[:16]


@functools.cache
def _weights_digest() -> str:
    from importlib import resources

    text = resources.files("dualmem.control").joinpath("builtin_weights.json").read_text(encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _open(path: Path, ctx: _Context, profile: Profile) -> Memory:
    return Memory.open(
        path, embedder=ctx.embedder, controller=ctx.controller, answerer=ctx.answerer, profile=profile
    )


def _ensure_build(conv: Conversation, build_kind: str, ctx: _Context) -> tuple[Path, BuildRecord]:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
    path = ctx.config.out / "cache" / f"{safe}-{build_kind}-{_build_key(conv, build_kind, ctx)}.sqlite"
    profile = system_spec("no-write-control" if build_kind == "no-write-control" else "dualmem").profile(
        ctx.base
    )
    if ctx.config.use_cache and path.exists():
        with _open(path, ctx, profile) as mem:
            meta = mem.store.meta.get(_BUILD_META)
        if isinstance(meta, dict):
            return path, _build_record(conv, build_kind, meta, cached=True)
    for suffix in ("", "-wal", "-shm"):
        with suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
    bar = Progress(
        f"build {conv.id} ({build_kind})",
        len(conv.observations),
        enabled=ctx.progress,
        inline=sys.stderr.isatty(),
    )
    with _open(path, ctx, profile) as mem, bar:  # the heartbeat: a chunk of 256 turns takes seconds
        started = time.perf_counter()
        mem.add_many(conv.observations, user=conv.id, on_progress=lambda done, _total: bar.set(done))
        seconds = time.perf_counter() - started
        stats = mem.controller_stats()
        by_purpose = stats.get("by_purpose", {})
        meta = {
            "seconds": seconds,
            "turns": len(conv.observations),
            "nodes": mem.count(user=conv.id),
            "calls_by_purpose": {k: int(v["calls"]) for k, v in by_purpose.items()}
            if isinstance(by_purpose, dict)
            else {},
        }
        mem.store.meta.set(_BUILD_META, meta)
    bar.close()
    return path, _build_record(conv, build_kind, meta, cached=False)


def _build_record(conv: Conversation, build_kind: str, meta: dict[str, Any], *, cached: bool) -> BuildRecord:
    calls = {str(k): int(v) for k, v in dict(meta.get("calls_by_purpose") or {}).items()}
    return BuildRecord(
        conversation=conv.id,
        build=build_kind,
        turns=int(meta["turns"]),
        seconds=float(meta["seconds"]),
        cached=cached,
        controller_calls=sum(calls.values()),
        calls_by_purpose=calls,
        nodes=int(meta.get("nodes") or 0),
    )


# -- questions ------------------------------------------------------------------------------------


def _records_path(spec: SystemSpec, path: Path, ctx: _Context) -> Path:
    cfg = ctx.config
    key = _hash(
        {
            "build": path.name,
            "spec": repr(spec),
            "read": repr(spec.profile(ctx.base).read),
            "answerer": [cfg.answerer, cfg.answerer_endpoint and cfg.answerer_endpoint.public()],
            "judges": sorted(ctx.judges),
            "k": [list(cfg.k_values), cfg.top_k],
        }
    )[:16]
    return path.with_name(f"{path.stem}-{spec.name}-{key}.jsonl")


def _run_system(conv: Conversation, spec: SystemSpec, path: Path, ctx: _Context) -> list[QuestionRecord]:
    questions = conv.questions[: ctx.config.max_questions]
    log_path = _records_path(spec, path, ctx)
    done: dict[int, QuestionRecord] = {}
    if ctx.config.use_cache and log_path.exists():
        for line in log_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                old = QuestionRecord.from_json(json.loads(line))
                done[old.index] = old
    bar = Progress(f"{spec.name} {conv.id}", len(questions), enabled=ctx.progress, inline=sys.stderr.isatty())
    out: list[QuestionRecord] = []
    with _open(path, ctx, spec.profile(ctx.base)) as mem, log_path.open("a", encoding="utf-8") as log:
        for index, qa in enumerate(questions):
            rec = done.get(index) or _ask(mem, conv, spec, index, qa, ctx)
            if index not in done:
                log.write(json.dumps(rec.to_json()) + "\n")
                log.flush()
            out.append(rec)
            bar.update()
    bar.close()
    return out


def _retrieve(
    mem: Memory, spec: SystemSpec, conv: Conversation, question: str, k: int
) -> tuple[list[Evidence], dict[str, Any]]:
    tenant = Tenant(conv.id)
    if spec.kind == "memory":
        found = mem.search(question, user=conv.id, k=k)
        t = found.trace
        trace = {
            "stop_reason": t.stop_reason,
            "controller_calls": t.controller_calls,
            "rounds": len(t.rounds),
            "visited": t.visited,
            "depth": t.depth,
            "active_views": list(t.active),
        }
        return list(found.evidence), trace
    if spec.kind == "full-context":
        return [Evidence(n, 1.0) for n in mem.store.iter_nodes(tenant)], {}
    ranking: list[tuple[str, float]]
    if spec.kind == "bm25":
        ranking = mem.store.lexical.search("nodes", tenant, question, k)
    else:
        qvec = embed_queries(mem.embedder, [question])[0]
        if spec.kind == "dense":
            ranking = mem.store.vectors.search(tenant, qvec, k)
        else:
            pool = max(k, mem.profile.read.pool)
            vec = [i for i, _ in mem.store.vectors.search(tenant, qvec, pool)]
            lex = [i for i, _ in mem.store.lexical.search("nodes", tenant, question, pool)]
            ranking = rrf([vec, lex], mem.profile.read.rrf_kappa)[:k]
    nodes = mem.store.get_nodes([i for i, _ in ranking], tenant)
    return [Evidence(nodes[i], s) for i, s in ranking if i in nodes], {}


def _ask(
    mem: Memory, conv: Conversation, spec: SystemSpec, index: int, qa: QA, ctx: _Context
) -> QuestionRecord:
    cfg = ctx.config
    started = time.perf_counter()
    evidence, trace = _retrieve(mem, spec, conv, qa.question, cfg.max_k)
    retrieved_at = time.perf_counter()
    ids = tuple(e.node.turn_id or f"node:{e.node.id}" for e in evidence)
    ranked = spec.kind != "full-context"
    answer: str | None = None
    abstained: bool | None = None
    if ctx.answerer is not None:
        given = evidence[: cfg.top_k] if ranked else evidence
        draft = ctx.answerer.answer(qa.question, given)  # never the category or the gold
        answer, abstained = draft.text, draft.abstained
    finished = time.perf_counter()
    answered = _answered(abstained, trace)
    scores, verdicts = _score(qa, answer, ctx) if answer is not None else ({}, {})
    return QuestionRecord(
        system=spec.name,
        conversation=conv.id,
        index=index,
        question=qa.question,
        category=qa.category,
        gold_answer=qa.answer,
        gold_evidence=qa.evidence,
        retrieved=ids if ranked else (),
        recall={str(k): recall_at_k(ids, qa.evidence, k) for k in cfg.k_values} if ranked else {},
        mrr=mrr(ids, qa.evidence) if ranked else None,
        answer=answer,
        abstained=abstained,
        answered=answered,
        scores=scores,
        judges=verdicts,
        retrieval_ms=1000 * (retrieved_at - started) if ranked else None,
        e2e_ms=1000 * (finished - started),
        trace=trace,
    )


def _answered(abstained: bool | None, trace: dict[str, Any]) -> bool | None:
    if abstained is not None:
        return not abstained
    reason = trace.get("stop_reason")
    if reason is None or reason in ("controller_off", "fixed_depth"):
        return None
    return bool(reason == "sufficient")


def _score(qa: QA, answer: str, ctx: _Context) -> tuple[dict[str, float | None], dict[str, dict[str, Any]]]:
    adversarial = qa.category == 5 or qa.answer is None
    refusal = 1.0 if is_refusal(answer) else 0.0
    gold = qa.answer or ""
    scores: dict[str, float | None] = {
        "f1": locomo_official_score(
            answer, answer=qa.answer, category=5 if adversarial else _numbered(qa.category)
        ),
        "f1_set": refusal if adversarial else f1_tokens(answer, gold),
        "bleu1": refusal if adversarial else bleu1(answer, gold),
    }
    verdicts: dict[str, dict[str, Any]] = {}
    reference = ABSTENTION_REFERENCE if adversarial else gold
    for name, judge in ctx.judges.items():
        try:
            v = judge.judge(question=qa.question, gold=reference, generated=answer)
        except JudgeError as exc:
            scores[name] = None
            verdicts[name] = {"error": exc.message}
            continue
        scores[name] = v.score
        verdicts[name] = {"score": v.score, "label": v.label, "raw": v.raw}
    return scores, verdicts


# -- outputs --------------------------------------------------------------------------------------


def _finish(
    config: BenchConfig,
    conversations: Sequence[Conversation],
    records: list[QuestionRecord],
    builds: list[BuildRecord],
) -> BenchResult:
    from dualmem.bench.plots import write_plots

    order = {name: i for i, name in enumerate(config.systems)}
    records = sorted(records, key=lambda r: order.get(r.system, len(order)))
    summary = summarize(records, builds, k_values=config.k_values)
    meta = {
        "dualmem": __version__,
        "data": str(config.data),
        "conversations": len(conversations),
        "turns": sum(len(c.observations) for c in conversations),
        "questions": sum(len(c.questions[: config.max_questions]) for c in conversations),
        "skipped evidence ids": sum(c.skipped_evidence for c in conversations),
        "controller": config.controller,
        "answerer": config.answerer,
        "embedder": config.embedder,
        "judges": ", ".join(f"{j.model} at {j.url}" for j in config.judges) or "none",
    }
    report = config.out / "report.md"
    report.write_text(render_markdown(summary, meta=meta, k_values=config.k_values), encoding="utf-8")
    results = config.out / "results.json"
    payload = {
        "config": config.public(),
        "meta": meta,
        "conversations": [
            {
                "id": c.id,
                "turns": len(c.observations),
                "questions": len(c.questions),
                "skipped_evidence": c.skipped_evidence,
            }
            for c in conversations
        ],
        "summary": summary,
        "builds": [b.to_json() for b in builds],
        "records": [r.to_json() for r in records],
    }
    results.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    plots = write_plots(summary, config.out, k_values=config.k_values)
    return BenchResult(config, tuple(records), tuple(builds), summary, report, results, plots)


def _numbered(category: int | str) -> int:
    """LoCoMo's category number; a named category (another corpus) is scored as single-hop (plain F1)."""
    return category if isinstance(category, int) else 4
