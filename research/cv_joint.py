"""Cross-validation over several dev corpora at once: one scorer for persona chats and agent chats.

``research/run_cv_joint.py``. Every corpus is split into folds (LoCoMo: one conversation per
fold; a corpus of many short haystacks: ``folds`` groups of them). Each fold is held out once: the
System-One scorer (``scorer``: LightGBM-fitted boosted trees, ``dualmem.learn.boost``, or
``dualmem.learn.fit_logistic`` over the pool's features) and its setting (the tree count or the L2
strength, by inner cross-validation over the training folds) are fitted on every other fold *of
every corpus*, so the one fitted ranker has to serve both kinds of memory. The held-out fold is then read by:

- ``dualmem``: the real read pipeline (``Memory.search``, builtin profile) with the fold's scorer
  answering System One's relevance question;
- ``dualmem-pool``: the pool ranked by the fold's scorer alone (no routing, no loop);
- ``random-s1``: ``Memory.search`` with a random System One (``AutoController``) on the read path;
- ``dualmem no-<view>`` / ``no-views`` / ``no-expansion``: the read-path ablations;
- ``bm25``, ``dense``, ``hybrid``: the baselines over the same builds.

The report gives R@1/5/10/20 and MRR per corpus and system, and R@10 per category.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dualmem.bench.metrics import percentile
from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.questions import Controller
from dualmem.control.ranker import Ranker
from dualmem.control.scripted import AutoController
from dualmem.read.pool import FEATURES
from research.cv import (
    K_VALUES,
    CVConfig,
    QueryPool,
    _choose_l2,
    _fmt,
    _record,
    _rows,
    fit_ranker,
    load_pools,
    rank,
    read_variant,
    recall_table,
    searched,
)

__all__ = ["Corpora", "Corpus", "JointConfig", "JointResult", "load_corpora", "run_joint", "summarize"]

#: the read-path ablations run by default (``research.cv.VIEW_ABLATIONS``)
DEFAULT_VIEWS: tuple[str, ...] = ("semantic", "temporal", "causal", "entity", "views", "expansion")


@dataclass(frozen=True, slots=True)
class Corpus:
    """A dev corpus: a directory (or file) of conversations with questions, and how to fold it."""

    name: str
    data: Path
    folds: int | None = None  # None: one conversation per fold


@dataclass(frozen=True, slots=True)
class JointConfig:
    corpora: tuple[Corpus, ...]
    out: Path = Path("bench-cv-joint")
    embedder: str = "minilm"
    pool: int = 50
    window: int = 2
    views: tuple[str, ...] = DEFAULT_VIEWS
    random_seed: int | None = 7  # None: no random-System-One run
    profile: Profile = field(default_factory=Profile.builtin)
    limit: int | None = None  # conversations per corpus (a quick run)
    scorer: str = "trees"  # "trees" (dualmem.learn.boost) or "linear" (dualmem.learn.fit)


@dataclass(slots=True)
class JointResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    folds: dict[str, dict[str, Any]] = field(default_factory=dict)
    latency: dict[str, dict[str, float | None]] = field(default_factory=dict)
    report: Path | None = None


def _fold_names(corpus: Corpus, conversations: Sequence[str]) -> dict[str, str]:
    if corpus.folds is None:
        return {c: f"{corpus.name}/{c}" for c in conversations}
    return {c: f"{corpus.name}/fold{i % corpus.folds}" for i, c in enumerate(sorted(conversations))}


@dataclass(slots=True)
class Corpora:
    """Every corpus's question pools, by conversation, with each conversation's build, corpus and fold."""

    pools: dict[str, list[QueryPool]] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    corpus_of: dict[str, str] = field(default_factory=dict)
    fold_of: dict[str, str] = field(default_factory=dict)


def load_corpora(cfg: JointConfig, *, progress: bool = True) -> Corpora:
    """The pools of every corpus of ``cfg`` (built, or read from ``cfg.out``'s cache) and their folds."""
    out = Corpora()
    pools, paths, corpus_of, fold_of = out.pools, out.paths, out.corpus_of, out.fold_of
    for corpus in cfg.corpora:
        sub = CVConfig(
            data=corpus.data, out=cfg.out / corpus.name, embedder=cfg.embedder, pool=cfg.pool,
            window=cfg.window, ablations=(), handset=False, limit=cfg.limit, reach=False,
        )  # fmt: skip
        found: dict[str, Path] = {}
        loaded = load_pools(sub, progress=progress, paths=found)
        clash = set(loaded) & set(pools)
        if clash:
            raise ValueError(f"conversation ids in more than one corpus: {sorted(clash)}")
        pools.update(loaded)
        paths.update(found)
        corpus_of.update(dict.fromkeys(loaded, corpus.name))
        fold_of.update(_fold_names(corpus, list(loaded)))
    return out


def run_joint(cfg: JointConfig, *, progress: bool = True, log: Any = print) -> JointResult:
    loaded = load_corpora(cfg, progress=progress)
    pools, paths, corpus_of, fold_of = loaded.pools, loaded.paths, loaded.corpus_of, loaded.fold_of
    result = JointResult()
    ms: dict[str, list[float]] = {}
    for fold in sorted(set(fold_of.values())):
        held = [c for c, f in fold_of.items() if f == fold]
        train: dict[str, list[QueryPool]] = {}
        for conv, ps in pools.items():
            if fold_of[conv] != fold:
                train.setdefault(fold_of[conv], []).extend(ps)
        ranker, result.folds[fold] = fit_scorer(cfg.scorer, train)
        for conv in held:
            test = _rows(pools[conv])
            result.rows += _held_out(cfg, fold, corpus_of[conv], paths[conv], ranker, test, ms)
        questions = sum(len(_rows(pools[c])) for c in held)
        log(f"fold {fold}: {_settings(result.folds[fold])}, {questions} questions")
    result.latency = {s: {"p50": percentile(v, 50), "p95": percentile(v, 95)} for s, v in ms.items() if v}
    result.report = _write(cfg, result)
    return result


def fit_scorer(scorer: str, train: Mapping[str, list[QueryPool]]) -> tuple[Ranker, dict[str, Any]]:
    """One fold's System-One scorer, its settings chosen by inner CV over ``train``'s folds (each a
    group): the L2 strength of the linear one, the tree count of the trees (``choose_trees``)."""
    if scorer == "linear":
        l2 = _choose_l2(train, (), False)
        lin = fit_ranker([p for ps in train.values() for p in ps], l2=l2)
        return lin, {
            "scorer": "linear",
            "l2": l2,
            "weights": dict(zip(lin.features, lin.weights, strict=True)),
        }
    if scorer != "trees":
        raise ValueError(f"unknown scorer {scorer!r}: linear or trees")
    from dualmem.learn.boost import TreeSettings, choose_trees, fit_trees

    folds = {f: [(p.features, p.labels.astype(float)) for p in _rows(ps)] for f, ps in train.items()}
    trees, scores = choose_trees(folds, FEATURES)
    fitted = fit_trees([g for gs in folds.values() for g in gs], FEATURES, TreeSettings(trees=trees))
    return fitted, {"scorer": "trees", "trees": trees, "inner_r10": scores}


def _settings(fold: Mapping[str, Any]) -> str:
    if fold.get("scorer") == "trees":
        return f"{fold['trees']} trees"
    return f"l2={fold.get('l2')}"


def _held_out(
    cfg: JointConfig,
    fold: str,
    corpus: str,
    path: Path,
    ranker: Ranker,
    test: Sequence[QueryPool],
    ms: dict[str, list[float]],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for p in test:
        rows.append(_record("dualmem-pool", fold, p, rank(ranker, p)[0]))
        for base, ranked in p.baselines.items():
            rows.append(_record(base, fold, p, ranked))
    runs: list[tuple[str, Controller, Profile]] = [("dualmem", BuiltinController(ranker=ranker), cfg.profile)]
    if cfg.random_seed is not None:
        runs.append(("random-s1", AutoController(cfg.random_seed), cfg.profile))
    for view in cfg.views:
        name = "dualmem no-expansion" if view == "expansion" else f"dualmem no-{view}"
        runs.append((name, BuiltinController(ranker=ranker), read_variant(cfg.profile, view)))
    for system, controller, profile in runs:
        found, took = searched(system, fold, path, controller, profile, test, cfg.embedder)
        ms.setdefault(f"{corpus}: {system}", []).extend(took)
        rows += found
    return [{**r, "corpus": corpus} for r in rows]


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per corpus and system: R@k, MRR, the question count, and R@10 per category."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    keys = sorted({(r["corpus"], r["system"]) for r in rows})
    for corpus, system in keys:
        mine = [r for r in rows if r["corpus"] == corpus and r["system"] == system]
        cats = sorted({str(r["category"]) for r in mine})
        out.setdefault(corpus, {})[system] = {
            "n": len(mine),
            **{f"R@{k}": _mean([r["recall"][str(k)] for r in mine]) for k in K_VALUES},
            "MRR": _mean([r["mrr"] for r in mine]),
            "categories": {
                c: _mean([r["recall"]["10"] for r in mine if str(r["category"]) == c]) for c in cats
            },
        }
    return out


def _write(cfg: JointConfig, result: JointResult) -> Path:
    cfg.out.mkdir(parents=True, exist_ok=True)
    summary = summarize(result.rows)
    lines = ["# Joint cross-validation", ""]
    lines.append(
        "Folds: " + ", ".join(f"{c.name} ({'one conversation each' if c.folds is None else c.folds})"
                              for c in cfg.corpora) + "; one scorer fitted per fold on every other fold of "
        "every corpus."
    )  # fmt: skip
    for corpus, systems in summary.items():
        lines += recall_table(f"## {corpus}", systems)
        cats = sorted({c for s in systems.values() for c in s["categories"]})
        lines += [
            "",
            "R@10 by category:",
            "",
            "| system | " + " | ".join(cats) + " |",
            "|---" * (len(cats) + 1) + "|",
        ]
        for system, s in systems.items():
            lines.append(f"| {system} | " + " | ".join(_fmt(s["categories"].get(c)) for c in cats) + " |")
    lines += ["", "## Latency of Memory.search (ms)", "", "| corpus: system | p50 | p95 |", "|---|---|---|"]
    for name, lat in result.latency.items():
        lines.append(f"| {name} | {_fmt(lat['p50'])} | {_fmt(lat['p95'])} |")
    lines += ["", "## Folds", ""]
    for fold, info in result.folds.items():
        if info.get("scorer") == "trees":
            inner = ", ".join(f"{k}: {v:.3f}" for k, v in info["inner_r10"].items())
            lines.append(f"- {fold}: {info['trees']} trees (inner-CV R@10 by tree count: {inner})")
            continue
        weights = ", ".join(f"{k} {v:+.2f}" for k, v in info["weights"].items())
        lines.append(f"- {fold}: L2 {info['l2']}; {weights}")
    report = cfg.out / "report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {"summary": summary, "folds": result.folds, "latency": result.latency, "rows": result.rows}
    (cfg.out / "results.json").write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return report


def with_profile(cfg: JointConfig, profile: Profile) -> JointConfig:
    return replace(cfg, profile=profile)
