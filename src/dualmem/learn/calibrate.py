"""``dualmem calibrate``: fit the System-One candidate scorer from data, reproducibly.

Two sources of targets:

* **labels**: queries with the ids of the memories that answer them, either conversation files
  with questions (LoCoMo, or dualmem's conversation format: each conversation is built into its own
  memory, evidence turn ids are the labels) or a JSON-lines file of
  ``{"query": ..., "relevant": [node or turn ids], "user": ...}`` against an existing ``--db``;
* **a teacher**: a System-One backend (``llm`` or ``jev``) answers the candidate-relevance question
  of the catalog (``traverse.relevance``) for the top candidates of each query's pool, one batched
  request per query; its scores are the soft targets, and every decision is recorded to a JSON-lines
  log, so the builtin learns to reproduce the teacher offline.

The fit is :func:`dualmem.learn.fit.fit_logistic` over the features of :mod:`dualmem.read.pool`;
with several conversations/users its L2 strength is chosen by leave-one-group-out. The weights file
carries its provenance: data (path and sha256), command, dualmem version, time, sizes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem import _json as bounded_json
from dualmem._version import __version__
from dualmem.control import catalog
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch
from dualmem.control.ranker import LinearRanker, Ranker
from dualmem.control.trees import TreeRanker
from dualmem.embed.base import Embedder
from dualmem.errors import InvalidInput
from dualmem.learn.abstain import abstention_features, fit_gate
from dualmem.learn.fit import fit_logistic
from dualmem.learn.heads import MIN_POSITIVES, LabelledPool, LearnedHeads, fit_heads, head_example
from dualmem.plane.base import SearchStore
from dualmem.read.pool import FEATURES, POOL_VERSION, Pool, PoolSettings, build_pool
from dualmem.read.reach import Links, reach_links
from dualmem.reason.extractive import ExtractiveAnswerer
from dualmem.types import VIEWS, Evidence, JSONValue, Node, Tenant

__all__ = [
    "CAUTIOUS_FALSE",
    "Example",
    "LabelledQuery",
    "PoolRecord",
    "choose_l2",
    "examples_from_labels",
    "examples_from_teacher",
    "fit_examples",
    "fit_learned_heads",
    "fit_tree_examples",
    "pool_records",
    "provenance",
    "read_labelled_jsonl",
    "record_example",
]

L2_GRID: tuple[float, ...] = (0.3, 3.0, 30.0)


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    """A query, the ids (node ids or turn ids) of the memories that answer it, and its tenant."""

    query: str
    relevant: frozenset[str]
    user: str
    group: str = ""  # a conversation, or the user: L2 is chosen leaving one group out
    decline: bool = False  # the memory cannot answer it (an adversarial question): abstention label


@dataclass(frozen=True, slots=True)
class Example:
    """One query's pool rows and their targets (0/1 labels or a teacher's scores)."""

    group: str
    features: npt.NDArray[np.float64]
    targets: npt.NDArray[np.float64]


def read_labelled_jsonl(path: Path) -> list[LabelledQuery]:
    """``{"query", "relevant", "user"}`` per line; blank lines skipped; ``InvalidInput`` on bad lines."""
    out: list[LabelledQuery] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = bounded_json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise InvalidInput(f"{path}:{n}: expected an object")
        query, relevant, user = row.get("query"), row.get("relevant", []), row.get("user")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput(f"{path}:{n}: 'query' must be a non-empty string")
        if not isinstance(user, str) or not user.strip():
            raise InvalidInput(f"{path}:{n}: 'user' must be a non-empty string", hint="the memory's tenant")
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise InvalidInput(f"{path}:{n}: 'relevant' must be a list of ids")
        out.append(LabelledQuery(query, frozenset(relevant), user, str(row.get("group") or user)))
    if not out:
        raise InvalidInput(f"{path}: no queries")
    return out


def _pools(
    store: SearchStore, embedder: Embedder, queries: Sequence[LabelledQuery], settings: PoolSettings | None
) -> Iterator[tuple[LabelledQuery, Pool]]:
    for q in queries:
        yield q, build_pool(store, embedder, q.query, Tenant(q.user), settings)


def examples_from_labels(
    store: SearchStore,
    embedder: Embedder,
    queries: Sequence[LabelledQuery],
    *,
    settings: PoolSettings | None = None,
) -> list[Example]:
    """Pools of labelled queries; a candidate is relevant when its id or turn id is listed."""
    out: list[Example] = []
    for q, pool in _pools(store, embedder, queries, settings):
        if not q.relevant or not pool.ids:
            continue
        labels = np.array(
            [float(i in q.relevant or (pool.nodes[i].turn_id or "") in q.relevant) for i in pool.ids]
        )
        out.append(Example(q.group or q.user, pool.features, labels))
    return out


def _shortlist(pool: Pool, k: int) -> list[int]:
    """The pool rows a teacher is asked about: best by plain rank fusion of the searches."""
    f = pool.features
    fused = (
        f[:, FEATURES.index("vec_rank")]
        + f[:, FEATURES.index("lex_rank")]
        + f[:, FEATURES.index("lex_q_rank")]
    )
    return [int(i) for i in np.lexsort((np.arange(len(fused)), -fused))[:k]]


def examples_from_teacher(
    store: SearchStore,
    embedder: Embedder,
    meter: Meter,
    queries: Sequence[LabelledQuery],
    *,
    per_query: int = 20,
    settings: PoolSettings | None = None,
    record: Callable[[dict[str, JSONValue]], None] | None = None,
) -> list[Example]:
    """Ask the teacher one batched ``traverse.relevance`` request per query over its shortlist."""
    out: list[Example] = []
    for q, pool in _pools(store, embedder, queries, settings):
        rows = _shortlist(pool, per_query)
        if not rows:
            continue
        cands: list[JSONValue] = []
        questions = {}
        for j, r in enumerate(rows):
            node = pool.nodes[pool.ids[r]]
            cand = node.memory_json()
            cand.update({"view": "anchor", "label": "rrf", "source": None, "target": node.id})
            cands.append(cand)
            questions.update(
                {k: v for k, v in catalog.traversal_questions(j).items() if k == f"candidate_{j}_relevance"}
            )
        batch = Batch(
            state={"query": q.query, "evidence": [], "candidates": cands},
            questions=questions,
            purpose="scoring",
        )
        decided = meter.ask(batch)
        targets = np.array([decided.result.noul(f"candidate_{j}_relevance") for j in range(len(rows))])
        if record is not None:
            for j, r in enumerate(rows):
                record(
                    {
                        "query": q.query,
                        "user": q.user,
                        "node_id": pool.ids[r],
                        "relevance": float(targets[j]),
                        "backend": decided.backend,
                    }
                )
        out.append(Example(q.group or q.user, pool.features[rows], targets))
    return out


def fit_examples(examples: Sequence[Example], *, l2: float) -> LinearRanker:
    x = np.vstack([e.features for e in examples])
    y = np.concatenate([e.targets for e in examples])
    fit = fit_logistic(x, y, l2=l2)
    return LinearRanker(FEATURES, tuple(float(w) for w in fit.weights), fit.bias, {"l2": l2})


#: the tree count is chosen over at most this many folds of groups (a fit per fold)
MAX_TREE_FOLDS = 8


def fit_tree_examples(
    examples: Sequence[Example], *, trees: int | None = None
) -> tuple[TreeRanker, dict[int, float]]:
    """The trees scorer on ``examples`` (targets above 0.5 count as relevant), its tree count
    ``trees`` or chosen by held-out recall@10 (``choose_trees``) over at most ``MAX_TREE_FOLDS``
    folds of whole groups (sorted, dealt round-robin), and the scores behind that choice (empty when
    given or with one group)."""
    from dualmem.learn.boost import TreeSettings, choose_trees, fit_trees

    names = sorted({e.group for e in examples})
    fold = {g: f"fold{i % MAX_TREE_FOLDS}" for i, g in enumerate(names)}  # dealt round-robin
    groups: dict[str, list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]] = {}
    for e in examples:
        groups.setdefault(fold[e.group], []).append((e.features, e.targets))
    scores: dict[int, float] = {}
    if trees is None:
        trees, scores = choose_trees(groups, FEATURES)
    fitted = fit_trees([g for gs in groups.values() for g in gs], FEATURES, TreeSettings(trees=trees))
    return fitted, scores


def _recall10(ranker: LinearRanker, examples: Sequence[Example]) -> float:
    vals = []
    for e in examples:
        gold = e.targets > 0.5
        if not gold.any():
            continue
        s = ranker.logits(e.features, FEATURES)
        top = np.lexsort((np.arange(len(s)), -s))[:10]
        vals.append(float(gold[top].sum()) / float(gold.sum()))
    return float(np.mean(vals)) if vals else 0.0


def choose_l2(examples: Sequence[Example], grid: Sequence[float] = L2_GRID) -> float:
    """L2 strength by leave-one-group-out recall@10 (the middle of the grid with one group)."""
    groups = sorted({e.group for e in examples})
    if len(groups) < 2:
        return float(grid[len(grid) // 2])
    best: tuple[float, float] | None = None
    for l2 in grid:
        score = float(
            np.mean(
                [
                    _recall10(
                        fit_examples([e for e in examples if e.group != g], l2=l2),
                        [e for e in examples if e.group == g],
                    )
                    for g in groups
                ]
            )
        )
        if best is None or score > best[0] + 1e-12:
            best = (score, l2)
    assert best is not None
    return best[1]


def provenance(
    *, data: Sequence[Path], command: str, mode: str, examples: Sequence[Example], extra: Mapping[str, Any]
) -> dict[str, Any]:
    digests = {}
    for path in data:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        digests[str(path)] = h.hexdigest()
    return {
        "data": digests,
        "command": command,
        "mode": mode,
        "dualmem": __version__,
        "created": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "queries": len(examples),
        "candidates": int(sum(len(e.targets) for e in examples)),
        "groups": sorted({e.group for e in examples}),
        "pool_version": POOL_VERSION,  # the feature definitions fitted on (read.pool)
        **dict(extra),
    }


# -- the stop/routing heads and the abstention gate (``--heads-out``) ---------------------------------

#: the shipped abstention gate's bound on false abstention over the training queries
CAUTIOUS_FALSE = 0.20


@dataclass(frozen=True, slots=True)
class PoolRecord:
    """A labelled query's pool, kept for the heads: features, candidate nodes (without their
    embeddings) in row order and the views' edges between candidates."""

    query: LabelledQuery
    features: npt.NDArray[np.float64]
    nodes: tuple[Node, ...]
    links: Links


def pool_records(
    store: SearchStore,
    embedder: Embedder,
    queries: Sequence[LabelledQuery],
    *,
    settings: PoolSettings | None = None,
) -> list[PoolRecord]:
    out = []
    for q, pool in _pools(store, embedder, queries, settings):
        if not pool.ids:
            continue
        nodes = tuple(replace(pool.nodes[i], embedding=None) for i in pool.ids)
        links = reach_links(store, pool.ids, range(len(pool.ids)), VIEWS)
        out.append(PoolRecord(q, pool.features, nodes, links))
    return out


def _gold(record: PoolRecord) -> frozenset[int]:
    rel = record.query.relevant
    return frozenset(i for i, n in enumerate(record.nodes) if n.id in rel or (n.turn_id or "") in rel)


def record_example(record: PoolRecord) -> Example | None:
    """The relevance head's example of a record (``None`` for a query to decline or without labels
    in its pool), as ``examples_from_labels`` makes it."""
    gold = _gold(record)
    if record.query.decline or not record.query.relevant or not len(record.nodes):
        return None
    labels = np.array([float(i in gold) for i in range(len(record.nodes))])
    return Example(record.query.group or record.query.user, record.features, labels)


def fit_learned_heads(
    ranker: Ranker, records: Sequence[PoolRecord], *, provenance: Mapping[str, Any], k: int = 10
) -> LearnedHeads:
    """The stop and routing heads (labelled, answerable queries) and the abstention gate (every
    query; ``decline`` the label) over pools ranked by ``ranker``."""
    vec = FEATURES.index("vec") if "vec" in FEATURES else None
    examples, rows, declines = [], [], []
    answerer = ExtractiveAnswerer()
    for r in records:
        logits = ranker.logits(r.features, FEATURES)
        gold = _gold(r)
        if gold and not r.query.decline:
            cos = r.features[:, vec] if vec is not None else np.zeros(len(r.nodes))
            pool = LabelledPool(r.query.group or r.query.user, r.query.query, r.nodes, cos, gold, r.links)
            examples.append(head_example(pool, logits, k=k))
        probs = 0.5 * (1.0 + np.tanh(0.5 * logits))
        top = np.lexsort((np.arange(len(logits)), -logits))[:k]
        evidence = [Evidence(r.nodes[i], float(probs[i])) for i in top]
        draft = answerer.answer(r.query.query, evidence)
        rows.append(abstention_features(r.query.query, evidence, draft))
        declines.append(r.query.decline)
    heads = fit_heads(examples, provenance=provenance)
    if sum(declines) < MIN_POSITIVES or len(declines) - sum(declines) < MIN_POSITIVES:
        unsupported = {**heads.unsupported, "abstention": f"{sum(declines)} queries to decline: no gate"}
        return LearnedHeads(heads.decisions, unsupported, heads.provenance)
    gate = fit_gate(rows, declines, max_false=CAUTIOUS_FALSE, provenance={"max_false": CAUTIOUS_FALSE})
    return LearnedHeads(heads.decisions, heads.unsupported, heads.provenance, gate)
