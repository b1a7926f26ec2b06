"""Leave-one-conversation-out cross-validation of the learned System-One scorer on LoCoMo.

``python -m research.run_cv_locomo --data DIR``: every conversation is held
out once; the scorer's weights, its L2 strength (inner leave-one-conversation-out over the
training conversations) and the abstention threshold are fitted on the other conversations only,
then the held-out conversation is ranked. Baselines (bm25, dense, hybrid RRF) and the hand-set
System One (``dualmem-handset``: ``Memory.search`` with the packaged builtin weights) run in the
same process over the same builds. Ablations refit the scorer without a feature group (or without
the session neighbours in the pool) under the same folds.

The builds are the LoCoMo harness's (``dualmem.bench.runner``), cached under ``<out>/cache``;
the pools and rankings of every question are cached next to them, so a rerun only refits.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem import __version__
from dualmem.bench.locomo import BenchConfig
from dualmem.bench.metrics import CATEGORY_NAMES, mrr, percentile, recall_at_k
from dualmem.config import Lambdas, Profile
from dualmem.control.questions import Controller
from dualmem.control.ranker import LinearRanker, Ranker
from dualmem.conversations import QA, Conversation, load_conversations
from dualmem.learn.abstain import abstention_features, fit_gate
from dualmem.learn.calibrate import CAUTIOUS_FALSE
from dualmem.learn.fit import fit_logistic
from dualmem.memory import Memory
from dualmem.read.pool import FEATURES, POOL_VERSION, PoolSettings, build_pool
from dualmem.read.reach import Links, reach_links
from dualmem.read.route import rrf
from dualmem.reason.extractive import ExtractiveAnswerer
from dualmem.types import VIEWS, Evidence, Node, Tenant
from research.builds import views_profile
from research.cv_reach import reach_systems
from research.pools import QueryPool

__all__ = ["ABLATIONS", "CVConfig", "CVResult", "QueryPool", "fit_ranker", "run_cv"]

K_VALUES: tuple[int, ...] = (1, 5, 10, 20)
L2_GRID: tuple[float, ...] = (0.3, 3.0, 30.0)

#: feature groups an ablation drops (``no-neighbours`` also removes neighbour-only candidates)
ABLATIONS: Mapping[str, tuple[str, ...]] = {
    "no-speaker": ("speaker", "other_speaker"),
    "no-context": ("ctx_vec", "nb_vec", "nb_lex", "ctx_lex"),
    "no-neighbours": ("ctx_vec", "nb_vec", "nb_lex", "ctx_lex", "neighbour"),
    "no-time": ("time",),
    "no-length": ("log_len", "short"),
    "no-vector": ("vec", "vec_rank", "ctx_vec", "nb_vec"),
    "no-lexical": ("lex", "lex_rank", "lex_q", "lex_q_rank", "nb_lex", "ctx_lex"),
}


@dataclass(frozen=True, slots=True)
class CVConfig:
    data: Path
    out: Path = Path("bench-cv")
    embedder: str = "minilm"
    pool: int = 50
    window: int = 2
    ablations: tuple[str, ...] = tuple(ABLATIONS)
    handset: bool = True  # also run the hand-set builtin System One (RRF anchors) as a baseline
    limit: int | None = None
    search: bool = True  # evaluate the real read path (Memory.search) with each fold's scorer
    view_ablations: tuple[str, ...] = ("semantic", "temporal", "causal", "entity", "views", "expansion")
    reach: bool = True  # the views as learned reach features of the pool (dualmem.read.reach)
    view_limit: int | None = None  # view ablations on the first N questions of each held-out fold
    #: the retrieval channels the pools are built with (``read.channels``: name, candidates each)
    channels: tuple[tuple[str, int], ...] = ()
    #: who chooses each question's channels: "fixed" (all of ``channels``, each its size), "builtin"
    #: (the builtin decider's route, ``read.channels.routed_sizes``, sharing the sizes' sum),
    #: "random" (a random route, ``AutoController``) or "fitted" (``read.channel_route``)
    route: str = "fixed"
    #: the fitted route's artefact (``route`` "fitted"; None: the packaged one)
    route_artefact: Path | None = None


@dataclass(slots=True)
class CVResult:
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per (system, question)
    folds: dict[str, dict[str, Any]] = field(default_factory=dict)
    latency: dict[str, dict[str, float | None]] = field(default_factory=dict)
    abstention: dict[str, dict[str, float | None]] = field(default_factory=dict)
    report: Path | None = None
    out_json: Path | None = None


# -- pools ----------------------------------------------------------------------------------------


def _collect(conv: Conversation, mem: Memory, cfg: CVConfig) -> list[QueryPool]:
    tenant = Tenant(conv.id)
    out: list[QueryPool] = []
    for index, qa in enumerate(conv.questions):
        started = time.perf_counter()
        pool = build_pool(
            mem.store,
            mem.embedder,
            qa.question,
            tenant,
            PoolSettings(cfg.pool, cfg.window, routed_channels(cfg, qa.question)),
        )
        pool_ms = 1000 * (time.perf_counter() - started)
        turn = [pool.nodes[i].turn_id or f"node:{i}" for i in pool.ids]
        gold = set(qa.evidence)
        base, handset_ms = _baselines(mem, tenant, qa, cfg)
        out.append(
            QueryPool(
                conversation=conv.id,
                index=index,
                category=qa.category,
                evidence=qa.evidence,
                turn_ids=tuple(turn),
                features=pool.features,
                labels=np.array([float(t in gold) for t in turn]),
                neighbour_only=pool.features[:, FEATURES.index("neighbour")] > 0.5,
                baselines=base,
                pool_ms=pool_ms,
                handset_ms=handset_ms,
                contents=tuple(pool.nodes[i].content for i in pool.ids),
                speakers=tuple(pool.nodes[i].speaker for i in pool.ids),
                question=qa.question,
            )
        )
    return out


def routed_channels(cfg: CVConfig, question: str) -> tuple[tuple[str, int], ...]:
    """The channels ``question``'s pool is built with (``CVConfig.route``)."""
    if cfg.route == "fixed" or not cfg.channels:
        return cfg.channels
    from dualmem.config import ReadProfile
    from dualmem.control.builtin import BuiltinController
    from dualmem.control.catalog import routing_questions
    from dualmem.control.questions import Batch
    from dualmem.control.scripted import AutoController
    from dualmem.control.states import RoutingState
    from dualmem.read.channels import routed_sizes

    ctl = AutoController(7) if cfg.route == "random" else BuiltinController()
    res = ctl.decide(Batch.of(RoutingState(question), routing_questions(), "routing"))
    names = tuple(c for c, _ in cfg.channels)
    profile = ReadProfile(channels=names, channel_budget=sum(n for _, n in cfg.channels))
    need = {c: res.noul(c) for c in names}
    if cfg.route == "fitted":
        from dualmem.read.channel_route import FittedRoute, fitted_sizes

        art = cfg.route_artefact
        route = None if art is None else FittedRoute.from_json(json.loads(art.read_text(encoding="utf-8")))
        sizes = fitted_sizes(question, profile, need, route)[1]
    else:
        sizes = routed_sizes(need, profile)
    return tuple((c, sizes[c]) for c in names if sizes.get(c, 0) > 0)


def _turns(mem: Memory, tenant: Tenant, ranking: Iterable[str]) -> tuple[str, ...]:
    ids = list(ranking)
    nodes = mem.store.get_nodes(ids, tenant)
    return tuple(nodes[i].turn_id or f"node:{i}" for i in ids if i in nodes)


def _baselines(
    mem: Memory, tenant: Tenant, qa: QA, cfg: CVConfig
) -> tuple[dict[str, tuple[str, ...]], float | None]:
    k = max(K_VALUES)
    qvec = mem.embedder.embed([qa.question])[0]
    lex = [i for i, _ in mem.store.lexical_search(tenant, qa.question, cfg.pool)]
    vec = [i for i, _ in mem.store.vector_search(tenant, qvec, cfg.pool)]
    out = {
        "bm25": _turns(mem, tenant, lex[:k]),
        "dense": _turns(mem, tenant, vec[:k]),
        "hybrid": _turns(mem, tenant, [i for i, _ in rrf([vec, lex], 60)][:k]),
    }
    if cfg.handset:
        started = time.perf_counter()
        found = mem.search(qa.question, user=tenant.user, k=k)
        ms = 1000 * (time.perf_counter() - started)
        out["dualmem-handset"] = tuple(e.node.turn_id or f"node:{e.node.id}" for e in found.evidence)
        return out, ms
    return out, None


def load_pools(
    cfg: CVConfig, *, progress: bool = True, paths: dict[str, Path] | None = None
) -> dict[str, list[QueryPool]]:
    """Build (or reuse) every conversation's memory and every question's pool (``paths`` gets the
    builds' files by conversation)."""
    from dualmem.bench import runner

    conversations = load_conversations(cfg.data)[: cfg.limit]
    bench = BenchConfig(data=cfg.data, out=cfg.out, embedder=cfg.embedder, systems=("dualmem",))
    ctx = runner._context(bench, progress=progress)
    (cfg.out / "cache").mkdir(parents=True, exist_ok=True)
    pools: dict[str, list[QueryPool]] = {}
    for conv in conversations:
        path, _ = runner._ensure_build(conv, "full", ctx)
        if paths is not None:
            paths[conv.id] = path
        parts: list[object] = [path.name, cfg.pool, cfg.window, FEATURES, POOL_VERSION, cfg.handset]
        if cfg.channels:  # pools built with channels are another cache (keys without them unchanged)
            parts += [[list(c) for c in cfg.channels], cfg.route]
        key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]
        cache = path.with_name(f"{path.stem}-pools-{key}.pkl")
        if cache.exists():
            with cache.open("rb") as fh:
                pools[conv.id] = pickle.load(fh)
            continue
        # the hand-set System One as it was before the pool: RRF anchors, eq. 23 with equal lambdas
        handset = ctx.base.with_(read__lambdas=Lambdas())
        with runner._open(path, ctx, handset) as mem:
            pools[conv.id] = _collect(conv, mem, cfg)
        with cache.open("wb") as fh:
            pickle.dump(pools[conv.id], fh)
    return pools


def load_links(
    cfg: CVConfig, pools: Mapping[str, list[QueryPool]], paths: Mapping[str, Path]
) -> dict[str, list[Links]]:
    """Every question's view edges among its pool's candidates (fold-independent; cached)."""
    out: dict[str, list[Links]] = {}
    for conv, ps in pools.items():
        path = paths[conv]
        key = hashlib.sha256(json.dumps([path.name, cfg.pool, cfg.window, POOL_VERSION]).encode()).hexdigest()
        cache = path.with_name(f"{path.stem}-links-{key[:12]}.pkl")
        if cache.exists():
            with cache.open("rb") as fh:
                out[conv] = pickle.load(fh)
            continue
        with Memory.open(path, embedder=_embedder(cfg.embedder), answerer=None) as mem:
            by_turn = {n.turn_id: n.id for n in mem.nodes(user=conv) if n.turn_id}
            out[conv] = []
            for p in ps:
                ids = [by_turn.get(t, t.removeprefix("node:")) for t in p.turn_ids]
                out[conv].append(reach_links(mem.store, ids, range(len(ids)), VIEWS))
        with cache.open("wb") as fh:
            pickle.dump(out[conv], fh)
    return out


# -- fitting --------------------------------------------------------------------------------------


def _columns(drop: Sequence[str]) -> list[int]:
    return [i for i, f in enumerate(FEATURES) if f not in drop]


def _rows(pools: Sequence[QueryPool]) -> list[QueryPool]:
    return [p for p in pools if p.category != 5 and p.evidence and len(p.turn_ids)]


def _mask(p: QueryPool, drop_neighbours: bool) -> npt.NDArray[np.bool_]:
    if drop_neighbours:
        return ~p.neighbour_only
    return np.ones(len(p.turn_ids), dtype=bool)


def fit_ranker(
    pools: Sequence[QueryPool], *, drop: Sequence[str] = (), l2: float = 3.0, drop_neighbours: bool = False
) -> LinearRanker:
    """Fit the scorer on the labelled questions (categories 1-4) of ``pools``."""
    cols = _columns(drop)
    xs, ys = [], []
    for p in _rows(pools):
        m = _mask(p, drop_neighbours)
        xs.append(p.features[m][:, cols])
        ys.append(p.labels[m])
    fit = fit_logistic(np.vstack(xs), np.concatenate(ys), l2=l2)
    names = tuple(FEATURES[i] for i in cols)
    return LinearRanker(names, tuple(float(w) for w in fit.weights), fit.bias, {"l2": l2})


def rank(ranker: Ranker, p: QueryPool, *, drop_neighbours: bool = False) -> tuple[tuple[str, ...], float]:
    """The pool's turn ids best first, and the best relevance score."""
    m = _mask(p, drop_neighbours)
    feats = p.features[m]
    turns = [t for t, keep in zip(p.turn_ids, m, strict=True) if keep]
    if not turns:
        return (), 0.0
    s = ranker.score(feats, FEATURES)
    order = np.lexsort((np.arange(len(s)), -s))
    return tuple(turns[i] for i in order), float(s.max())


def _r10(ranker: Ranker, pools: Sequence[QueryPool], drop_neighbours: bool) -> float:
    vals = [recall_at_k(rank(ranker, p, drop_neighbours=drop_neighbours)[0], p.evidence, 10) for p in pools]
    kept = [v for v in vals if v is not None]
    return sum(kept) / len(kept) if kept else 0.0


def _choose_l2(train: Mapping[str, list[QueryPool]], drop: Sequence[str], drop_neighbours: bool) -> float:
    """L2 strength by inner leave-one-conversation-out over the training conversations."""
    if len(train) < 2:
        return L2_GRID[len(L2_GRID) // 2]
    best: tuple[float, float] | None = None
    for l2 in L2_GRID:
        scores = []
        for inner in train:
            fit_on = [p for c, ps in train.items() if c != inner for p in ps]
            r = fit_ranker(fit_on, drop=drop, l2=l2, drop_neighbours=drop_neighbours)
            scores.append(_r10(r, _rows(train[inner]), drop_neighbours))
        score = float(np.mean(scores))
        if best is None or score > best[0] + 1e-12:
            best = (score, l2)
    assert best is not None
    return best[1]


# -- the run --------------------------------------------------------------------------------------


def _record(system: str, fold: str, p: QueryPool, ranked: Sequence[str]) -> dict[str, Any]:
    return {
        "system": system,
        "fold": fold,
        "conversation": p.conversation,
        "index": p.index,
        "category": p.category,
        "recall": {str(k): recall_at_k(ranked, p.evidence, k) for k in K_VALUES},
        "mrr": mrr(ranked, p.evidence),
        "retrieved": list(ranked[:20]),
    }


def _search_records(
    system: str,
    held: str,
    path: Path,
    ranker: Ranker,
    test: Sequence[QueryPool],
    view_drop: str | None,
    embedder: str = "minilm",
) -> tuple[list[dict[str, Any]], list[float]]:
    """The real read path (``Memory.search``) on the held-out build with this fold's scorer."""
    from dualmem.control.builtin import BuiltinController

    profile = read_variant(views_profile(), view_drop)
    return searched(system, held, path, BuiltinController(ranker=ranker), profile, test, embedder)


def searched(
    system: str,
    fold: str,
    path: Path,
    controller: Controller,
    profile: Profile,
    test: Sequence[QueryPool],
    embedder: str,
) -> tuple[list[dict[str, Any]], list[float]]:
    """``Memory.search`` over the held-out questions with this System One and profile: one record
    and one latency (ms) per question."""
    rows, ms = [], []
    with Memory.open(
        path, embedder=_embedder(embedder), controller=controller, answerer=None, profile=profile
    ) as mem:
        for p in test:
            started = time.perf_counter()
            found = mem.search(p.question, user=p.conversation, k=max(K_VALUES))
            ms.append(1000 * (time.perf_counter() - started))
            ranked = tuple(e.node.turn_id or f"node:{e.node.id}" for e in found.evidence)
            rows.append(_record(system, fold, p, ranked))
    return rows, ms


@cache
def _embedder(spec: str) -> Any:
    from dualmem.embed import create_embedder

    return create_embedder(spec)


#: read-path ablations of the real System One: a view left out, every view off (``views``), no
#: graph expansion at all (``expansion``: zero rounds, no assessment); ``all-edges``: expansion reads
#: every edge of a beam node, not its strongest ``read.edges_per_node``; ``versions``: no
#: current-version rule (``read.prefer_current`` off: the loop's ranking as System One scored it)
VIEW_ABLATIONS: tuple[str, ...] = (
    "semantic",
    "temporal",
    "causal",
    "entity",
    "views",
    "expansion",
    "all-edges",
    "versions",
)


def read_variant(profile: Profile, name: str | None) -> Profile:
    """``profile`` with one read-path ablation of :data:`VIEW_ABLATIONS` applied (``None``: as is)."""
    if name is None:
        return profile
    if name == "views":  # every view off: the routing finds no view, nothing is expanded
        return profile.with_(read__views=(), read__expansion=False)
    if name == "expansion":
        return profile.with_(read__expansion=False)
    if name == "all-edges":
        return profile.with_(read__edges_per_node=None)
    if name == "versions":
        return profile.with_(read__prefer_current=False)
    if name in VIEWS:
        return profile.with_(read__views=tuple(v for v in profile.read.views if v != name))
    raise ValueError(f"unknown read-path ablation {name!r}")


def _variant_system(name: str) -> str:
    if name == "expansion":
        return "dualmem no-expansion"
    return f"dualmem {name}" if name == "all-edges" else f"dualmem no-{name}"


def run_cv(cfg: CVConfig, *, progress: bool = True, log: Callable[[str], None] = print) -> CVResult:
    paths: dict[str, Path] = {}
    pools = load_pools(cfg, progress=progress, paths=paths)
    links = load_links(cfg, pools, paths) if cfg.reach else None
    result = CVResult()
    systems: dict[str, tuple[tuple[str, ...], bool]] = {"dualmem-pool": ((), False)}
    for name in cfg.ablations:
        systems[f"dualmem-pool {name}"] = (ABLATIONS[name], name == "no-neighbours")
    search_ms: list[float] = []
    for held in pools:
        train = {c: ps for c, ps in pools.items() if c != held}
        flat = [p for ps in train.values() for p in ps]
        test = _rows(pools[held])
        fold: dict[str, Any] = {}
        for system, (drop, no_nb) in systems.items():
            l2 = _choose_l2(train, drop, no_nb)
            ranker = fit_ranker(flat, drop=drop, l2=l2, drop_neighbours=no_nb)
            fold[system] = {"l2": l2, "weights": dict(zip(ranker.features, ranker.weights, strict=True))}
            for p in test:
                result.rows.append(_record(system, held, p, rank(ranker, p, drop_neighbours=no_nb)[0]))
            if system == "dualmem-pool":
                result.abstention[held] = _abstention(ranker, train, pools[held])
                if links is not None:
                    rows, info = reach_systems(ranker, held, pools, links, _record)
                    result.rows += rows
                    fold["reach"] = info
                if cfg.search:
                    search_ms += _search_fold(cfg, result, held, paths[held], ranker, test)
        for p in test:
            for base, ranked in p.baselines.items():
                result.rows.append(_record(base, held, p, ranked))
        result.folds[held] = fold
        log(f"fold {held}: fitted {len(systems)} scorers")
    result.latency = _latency(pools)
    result.latency.update(_search_latency(search_ms))
    result.report = _write(cfg, result, pools)
    result.out_json = cfg.out / "cv-results.json"
    return result


def _search_latency(search_ms: list[float]) -> dict[str, dict[str, float | None]]:
    if not search_ms:
        return {}
    return {"dualmem (Memory.search)": {"p50": percentile(search_ms, 50), "p95": percentile(search_ms, 95)}}


def _search_fold(
    cfg: CVConfig, result: CVResult, held: str, path: Path, ranker: Ranker, test: list[QueryPool]
) -> list[float]:
    """The held-out fold searched through ``Memory.search`` with the fold's ranker, then each read-path
    ablation on the view subset: their rows added to ``result``; the search latencies (ms)."""
    rows, ms = _search_records("dualmem", held, path, ranker, test, None, cfg.embedder)
    result.rows += rows
    subset = test[: cfg.view_limit] if cfg.view_limit is not None else test
    if cfg.view_ablations and cfg.view_limit is not None:
        kept = {p.index for p in subset}
        result.rows += [{**r, "system": "dualmem (view subset)"} for r in rows if r["index"] in kept]
    for view in cfg.view_ablations:
        found = _search_records(_variant_system(view), held, path, ranker, subset, view, cfg.embedder)
        result.rows += found[0]
    return ms


# -- abstention -----------------------------------------------------------------------------------


def _evidence(p: QueryPool, ranker: Ranker, k: int = 10) -> tuple[list[Evidence], float]:
    s = ranker.score(p.features, FEATURES)
    order = np.lexsort((np.arange(len(s)), -s))[:k]
    tenant = Tenant(p.conversation)
    ev = [
        Evidence(
            Node(id=p.turn_ids[i], tenant=tenant, content=p.contents[i], at=None, speaker=p.speakers[i]),
            float(s[i]),
        )
        for i in order
    ]
    return ev, float(s.max()) if len(s) else 0.0


def _drafts(ranker: Ranker, pools: Iterable[QueryPool]) -> list[tuple[bool, bool, float, dict[str, float]]]:
    """(adversarial, extractive abstained, best relevance, gate features) per question."""
    answerer = ExtractiveAnswerer()
    out = []
    for p in pools:
        ev, top = _evidence(p, ranker)
        draft = answerer.answer(p.question, ev)
        out.append((p.category == 5, draft.abstained, top, abstention_features(p.question, ev, draft)))
    return out


def _abstention(
    ranker: Ranker, train: Mapping[str, list[QueryPool]], test: Sequence[QueryPool]
) -> dict[str, float | None]:
    """Correct abstention on category 5 and false abstention on 1-4 with the extractive answerer:
    alone, gated by the scorer's best relevance (``tau`` fitted on the training folds), and gated by
    the learned abstention gate (``dualmem.learn.abstain``, weights and threshold fitted on the
    training folds). The category is a training label only; no answerer or gate sees it."""
    train_d = _drafts(ranker, (p for ps in train.values() for p in ps))
    best = (-1.0, 0.0)
    for tau in np.linspace(0.0, 1.0, 41):
        acc = np.mean([(abst or top < tau) == adv for adv, abst, top, _ in train_d])
        if acc > best[0] + 1e-12:
            best = (float(acc), float(tau))
    tau = best[1]
    feats, declines = [f for *_, f in train_d], [adv for adv, *_ in train_d]
    gate = fit_gate(feats, declines)
    cautious = fit_gate(feats, declines, max_false=CAUTIOUS_FALSE)
    test_d = _drafts(ranker, test)
    adv = [d for d in test_d if d[0]]
    ans = [d for d in test_d if not d[0]]

    def gated(d: tuple[bool, bool, float, dict[str, float]]) -> bool:
        return d[1] or gate.abstains(d[3])

    return {
        "tau": tau,
        "correct_abstention_5": _rate([a for _, a, _, _ in adv]),
        "false_abstention_1_4": _rate([a for _, a, _, _ in ans]),
        "score_gated_correct_5": _rate([a or t < tau for _, a, t, _ in adv]),
        "score_gated_false_1_4": _rate([a or t < tau for _, a, t, _ in ans]),
        "gate_threshold": gate.threshold,
        "learned_gate_correct_5": _rate([gated(d) for d in adv]),
        "learned_gate_false_1_4": _rate([gated(d) for d in ans]),
        "cautious_threshold": cautious.threshold,
        "cautious_gate_correct_5": _rate([d[1] or cautious.abstains(d[3]) for d in adv]),
        "cautious_gate_false_1_4": _rate([d[1] or cautious.abstains(d[3]) for d in ans]),
    }


def _rate(xs: Sequence[bool]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _latency(pools: Mapping[str, list[QueryPool]]) -> dict[str, dict[str, float | None]]:
    ms = [p.pool_ms for ps in pools.values() for p in ps]
    out = {"dualmem (pool + features)": {"p50": percentile(ms, 50), "p95": percentile(ms, 95)}}
    hs = [p.handset_ms for ps in pools.values() for p in ps if p.handset_ms is not None]
    if hs:
        out["dualmem-handset"] = {"p50": percentile(hs, 50), "p95": percentile(hs, 95)}
    return out


# -- report ---------------------------------------------------------------------------------------


def _mean(vals: Iterable[float | None]) -> float | None:
    kept = [v for v in vals if v is not None]
    return sum(kept) / len(kept) if kept else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_report(report: Path | None) -> None:
    """Print the report a run wrote (every run writes one)."""
    assert report is not None
    print(report.read_text(encoding="utf-8"))


def recall_table(heading: str, systems: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Report lines: ``heading``, then a table of each system's n, R@k (``K_VALUES``) and MRR."""
    lines = [
        "",
        heading,
        "",
        "| system | n | R@1 | R@5 | R@10 | R@20 | MRR |",
        "|---|---|---|---|---|---|---|",
    ]
    for system, s in systems.items():
        vals = " | ".join(_fmt(s[f"R@{k}"]) for k in K_VALUES)
        lines.append(f"| {system} | {s['n']} | {vals} | {_fmt(s['MRR'])} |")
    return lines


def summarize_cv(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean metrics per system: overall (1-4), per category, per fold."""
    out: dict[str, Any] = {}
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]

        def agg(rs: Sequence[dict[str, Any]]) -> dict[str, float | None]:
            d = {f"R@{k}": _mean(r["recall"][str(k)] for r in rs) for k in K_VALUES}
            d["MRR"] = _mean(r["mrr"] for r in rs)
            d["n"] = float(len(rs))
            return d

        out[system] = {
            "all": agg(mine),
            "category": {str(c): agg([r for r in mine if r["category"] == c]) for c in (1, 2, 3, 4)},
            "fold": {
                f: agg([r for r in mine if r["fold"] == f]) for f in dict.fromkeys(r["fold"] for r in mine)
            },
        }
    return out


def _write(cfg: CVConfig, result: CVResult, pools: Mapping[str, list[QueryPool]]) -> Path:
    summary = summarize_cv(result.rows)
    lines = [
        "# LoCoMo leave-one-conversation-out CV",
        "",
        f"dualmem {__version__}; data `{cfg.data}`; embedder {cfg.embedder}; pool N={cfg.pool}, "
        f"window={cfg.window}; {sum(len(v) for v in pools.values())} questions, "
        f"{len(_rows([p for v in pools.values() for p in v]))} with evidence in categories 1-4.",
        "",
        "| system | R@1 | R@5 | R@10 | R@20 | MRR | "
        + " | ".join(f"R@10 {CATEGORY_NAMES[c]}" for c in (1, 2, 3, 4))
        + " |",
        "|---|" + "---|" * 9,
    ]
    for system, s in summary.items():
        a = s["all"]
        cats = [s["category"][str(c)]["R@10"] for c in (1, 2, 3, 4)]
        lines.append(
            f"| {system} | "
            + " | ".join(_fmt(a[m]) for m in ("R@1", "R@5", "R@10", "R@20", "MRR"))
            + " | "
            + " | ".join(_fmt(c) for c in cats)
            + " |"
        )
    folds = list(pools)
    lines += [
        "",
        "## R@10 / MRR per held-out conversation",
        "",
        "| system | " + " | ".join(folds) + " |",
        "|---|" + "---|" * len(folds),
    ]
    for system, s in summary.items():
        cells = [
            f"{_fmt(s['fold'][f]['R@10'])} / {_fmt(s['fold'][f]['MRR'])}" if f in s["fold"] else "-"
            for f in folds
        ]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    lines += ["", "## Per category (R@1 / R@5 / R@10 / R@20 / MRR)", ""]
    lines += [
        "| system | " + " | ".join(CATEGORY_NAMES[c] for c in (1, 2, 3, 4)) + " |",
        "|---|" + "---|" * 4,
    ]
    for system, s in summary.items():
        cells = [
            " / ".join(_fmt(s["category"][str(c)][m]) for m in ("R@1", "R@5", "R@10", "R@20", "MRR"))
            for c in (1, 2, 3, 4)
        ]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    lines += ["", "## Retrieval latency (ms)", "", "| path | p50 | p95 |", "|---|---|---|"]
    for name, lat in result.latency.items():
        lines.append(f"| {name} | {_fmt(lat['p50'])} | {_fmt(lat['p95'])} |")
    lines += ["", "## Abstention (extractive answerer over the scorer's top 10)", ""]
    keys = [
        "correct_abstention_5",
        "false_abstention_1_4",
        "tau",
        "score_gated_correct_5",
        "score_gated_false_1_4",
        "gate_threshold",
        "learned_gate_correct_5",
        "learned_gate_false_1_4",
        "cautious_threshold",
        "cautious_gate_correct_5",
        "cautious_gate_false_1_4",
    ]
    lines += ["| fold | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    for fold, a in result.abstention.items():
        lines.append(f"| {fold} | " + " | ".join(_fmt(a[k]) for k in keys) + " |")
    lines.append(
        "| mean | " + " | ".join(_fmt(_mean(a[k] for a in result.abstention.values())) for k in keys) + " |"
    )
    cfg.out.mkdir(parents=True, exist_ok=True)
    report = cfg.out / "cv-report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "config": {k: str(v) for k, v in cfg.__dict__.items()} if hasattr(cfg, "__dict__") else {},
        "summary": summary,
        "folds": result.folds,
        "latency": result.latency,
        "abstention": result.abstention,
        "rows": result.rows,
    }
    (cfg.out / "cv-results.json").write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return report
