"""Benchmark records, their aggregation, and the markdown report.

``QuestionRecord`` is one system answering one question; ``BuildRecord`` one memory build.
``summarize`` turns them into the JSON summary written to ``results.json``; ``render_markdown``
into ``report.md`` (tables shaped like the Jev-Mem paper's Tables 1-2, plus retrieval and
answering-behaviour tables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dualmem.bench.metrics import CATEGORY_NAMES, Summary, mean, percentile, summarize_by_category
from dualmem.types import fields_json

__all__ = [
    "BuildRecord",
    "QuestionRecord",
    "render_markdown",
    "summarize",
]

_CATS = ("1", "2", "3", "4", "5", "1-4", "all")
_CAT_HEAD = (*(CATEGORY_NAMES[c].title() for c in (1, 2, 3, 4, 5)), "Overall (1-4)", "Overall (1-5)")


@dataclass(frozen=True, slots=True)
class QuestionRecord:
    """One system on one question. ``retrieved`` holds LoCoMo turn ids (``node:<id>`` for others)."""

    system: str
    conversation: str
    index: int
    question: str
    category: int | str
    gold_answer: str | None
    gold_evidence: tuple[str, ...]
    retrieved: tuple[str, ...] = ()
    recall: Mapping[str, float | None] = field(default_factory=dict)  # "1" -> recall@1
    mrr: float | None = None
    answer: str | None = None
    abstained: bool | None = None
    answered: bool | None = None
    scores: Mapping[str, float | None] = field(default_factory=dict)  # f1, f1_set, bleu1, judge names
    judges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # raw verdicts / errors
    retrieval_ms: float | None = None
    e2e_ms: float | None = None
    trace: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return fields_json(
            self,
            gold_evidence=list(self.gold_evidence),
            retrieved=list(self.retrieved),
            recall=dict(self.recall),
            scores=dict(self.scores),
            judges={k: dict(v) for k, v in self.judges.items()},
            trace=dict(self.trace),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> QuestionRecord:
        return cls(
            system=data["system"],
            conversation=data["conversation"],
            index=int(data["index"]),
            question=data["question"],
            category=int(data["category"]),
            gold_answer=data.get("gold_answer"),
            gold_evidence=tuple(data.get("gold_evidence", ())),
            retrieved=tuple(data.get("retrieved", ())),
            recall=dict(data.get("recall", {})),
            mrr=data.get("mrr"),
            answer=data.get("answer"),
            abstained=data.get("abstained"),
            answered=data.get("answered"),
            scores=dict(data.get("scores", {})),
            judges=dict(data.get("judges", {})),
            retrieval_ms=data.get("retrieval_ms"),
            e2e_ms=data.get("e2e_ms"),
            trace=dict(data.get("trace", {})),
        )


@dataclass(frozen=True, slots=True)
class BuildRecord:
    """One memory build: which conversation and build kind, its size, time, controller calls."""

    conversation: str
    build: str
    turns: int
    seconds: float
    cached: bool
    controller_calls: int
    calls_by_purpose: Mapping[str, int] = field(default_factory=dict)
    nodes: int = 0

    def to_json(self) -> dict[str, Any]:
        return fields_json(self, calls_by_purpose=dict(self.calls_by_purpose))


# -- aggregation ----------------------------------------------------------------------------------


def _by_cat(records: Sequence[QuestionRecord], value: Any) -> dict[str, dict[str, Any]]:
    summary = summarize_by_category((r.category, value(r)) for r in records)
    return {k: v.to_json() for k, v in summary.items()}


def _rate(flags: Iterable[bool | None]) -> float | None:
    return mean(1.0 if f else 0.0 for f in flags if f is not None)


def _system_summary(records: Sequence[QuestionRecord], k_values: Sequence[int]) -> dict[str, Any]:
    retrieval = {f"recall@{k}": _by_cat(records, lambda r, k=k: r.recall.get(str(k))) for k in k_values}
    retrieval["mrr"] = _by_cat(records, lambda r: r.mrr)
    metric_names = sorted({name for r in records for name in r.scores})
    qa = {name: _by_cat(records, lambda r, n=name: r.scores.get(n)) for name in metric_names}
    ret_ms = [r.retrieval_ms for r in records if r.retrieval_ms is not None]
    e2e_ms = [r.e2e_ms for r in records if r.e2e_ms is not None]
    calls = [r.trace["controller_calls"] for r in records if "controller_calls" in r.trace]
    return {
        "questions": len(records),
        "retrieval": retrieval,
        "qa": qa,
        "answered_rate_1_4": _rate(r.answered for r in records if r.category in (1, 2, 3, 4)),
        "abstention_rate_5": _rate(
            (not r.answered) if r.answered is not None else None for r in records if r.category == 5
        ),
        "latency_ms": {
            "retrieval_p50": percentile(ret_ms, 50),
            "retrieval_p95": percentile(ret_ms, 95),
            "retrieval_mean": mean(ret_ms),
            "e2e_p50": percentile(e2e_ms, 50),
            "e2e_p95": percentile(e2e_ms, 95),
            "e2e_mean": mean(e2e_ms),
        },
        "controller_calls_per_query": mean(float(c) for c in calls),
        "judge_errors": sum(1 for r in records for v in r.judges.values() if "error" in v),
    }


def _build_summary(builds: Sequence[BuildRecord]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in dict.fromkeys(b.build for b in builds):
        mine = [b for b in builds if b.build == kind]
        turns = sum(b.turns for b in mine)
        seconds = sum(b.seconds for b in mine)
        calls = sum(b.controller_calls for b in mine)
        out[kind] = {
            "conversations": len(mine),
            "turns": turns,
            "seconds": seconds,
            "per_turn_ms": 1000 * seconds / turns if turns else None,
            "controller_calls": calls,
            "controller_calls_per_write": calls / turns if turns else None,
            "cached": sum(1 for b in mine if b.cached),
        }
    return out


def summarize(
    records: Sequence[QuestionRecord], builds: Sequence[BuildRecord], *, k_values: Sequence[int]
) -> dict[str, Any]:
    """The JSON summary: per system (in first-seen order) and per build kind."""
    systems = list(dict.fromkeys(r.system for r in records))
    return {
        "systems": {s: _system_summary([r for r in records if r.system == s], k_values) for s in systems},
        "builds": _build_summary(builds),
    }


# -- markdown -------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return [*lines, ""]


def _cat_row(name: str, by_cat: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [name, *(_fmt(Summary(**by_cat[c]).mean) for c in _CATS)]


def render_markdown(summary: Mapping[str, Any], *, meta: Mapping[str, Any], k_values: Sequence[int]) -> str:
    """``report.md``: data, QA tables per metric, retrieval, answering behaviour, efficiency."""
    systems: Mapping[str, Mapping[str, Any]] = summary["systems"]
    lines = ["# dualmem on LoCoMo", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines.append("")
    metrics = sorted({m for s in systems.values() for m in s["qa"]}, key=_metric_order)
    for metric in metrics:
        lines += [f"## QA: {_METRIC_TITLES.get(metric, metric)}", ""]
        rows = [_cat_row(n, s["qa"][metric]) for n, s in systems.items() if metric in s["qa"]]
        lines += _table(["System", *_CAT_HEAD], rows)
    lines += ["## Retrieval (categories 1-4, questions with gold evidence)", ""]
    head = ["System", *(f"R@{k}" for k in k_values), "MRR"]
    rows = [
        [n, *(_fmt(s["retrieval"][f"recall@{k}"]["1-4"]["mean"]) for k in k_values),
         _fmt(s["retrieval"]["mrr"]["1-4"]["mean"])]
        for n, s in systems.items() if s["retrieval"]["mrr"]["1-4"]["n"]
    ]  # fmt: skip
    lines += _table(head, rows)
    k_mid = 10 if 10 in k_values else max(k_values)
    lines += [f"## Recall@{k_mid} by category", ""]
    rows = [
        _cat_row(n, s["retrieval"][f"recall@{k_mid}"])
        for n, s in systems.items()
        if s["retrieval"]["mrr"]["all"]["n"]
    ]
    lines += _table(["System", *_CAT_HEAD], rows)
    lines += ["## Answering behaviour", ""]
    lines += [
        "Answered = not abstained (with an answerer) or the evidence loop stopped on sufficiency (without).",
        "",
    ]
    rows = [[n, _fmt(s["answered_rate_1_4"]), _fmt(s["abstention_rate_5"])] for n, s in systems.items()]
    lines += _table(["System", "Answered (1-4)", "Abstained (5)"], rows)
    lines += _efficiency(summary)
    return "\n".join(lines)


_METRIC_TITLES = {
    "f1": "F1 (official LoCoMo: stemmed tokens; category 1 per sub-answer; category 5 = refusal)",
    "f1_set": "token-set F1 (A-MEM/Mem0 style; category 5 = refusal)",
    "bleu1": "BLEU-1 (category 5 = refusal)",
}


def _metric_order(name: str) -> tuple[int, str]:
    return (0 if name.startswith("judge") else 1, name)


def _efficiency(summary: Mapping[str, Any]) -> list[str]:
    builds: Mapping[str, Mapping[str, Any]] = summary["builds"]
    lines = ["## Efficiency", ""]
    lines += [
        "Build columns are shown for systems that build a memory; baselines read the dualmem store.",
        "",
    ]
    head = [
        "System", "Build total (s)", "Build / turn (ms)", "Ctrl calls / write",
        "Retrieval p50 (ms)", "Retrieval p95 (ms)", "End-to-end p50 (ms)", "End-to-end p95 (ms)",
        "Ctrl calls / query",
    ]  # fmt: skip
    rows = []
    for name, s in summary["systems"].items():
        build = (
            builds.get(_build_of(name)) if name not in ("bm25", "dense", "hybrid", "full-context") else None
        )
        lat = s["latency_ms"]
        rows.append([
            name,
            _fmt(build["seconds"], 1) if build else "—",
            _fmt(build["per_turn_ms"], 1) if build else "—",
            _fmt(build["controller_calls_per_write"], 2) if build else "—",
            _fmt(lat["retrieval_p50"], 1), _fmt(lat["retrieval_p95"], 1),
            _fmt(lat["e2e_p50"], 1), _fmt(lat["e2e_p95"], 1),
            _fmt(s["controller_calls_per_query"], 2),
        ])  # fmt: skip
    lines += _table(head, rows)
    cached = sum(b["cached"] for b in builds.values())
    if cached:
        lines += [f"{cached} build(s) came from the cache; their times are those of the original build.", ""]
    return lines


def _build_of(system: str) -> str:
    return "no-write-control" if system == "no-write-control" else "full"
