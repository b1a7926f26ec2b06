"""The pool's columns bit for bit against the round-six implementation (main at 5aa51f7, kept
below as the reference): ``read/pool.py`` batches the per-candidate loops (``map``, numpy, one
stacked dot for the context vectors, a ``log1p`` table), and a search must return exactly what it
returned before, so every feature value must be the same float, not merely close. Run on real
memories: the small conversation of ``test_pool_features`` (hashing embedder, both stores, with
edge-reached candidates) and, when the data is present, three sessions of a LoCoMo dev
conversation with MiniLM.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from dualmem import Memory
from dualmem.control.builtin import BuiltinController
from dualmem.conversations import load_conversations
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore
from dualmem.plane.base import Candidate, NodeContext
from dualmem.read import pool
from dualmem.read.pool import FEATURES, build_pool, extend_pool
from dualmem.text.query import QueryAnalysis
from dualmem.types import Tenant, Vector
from test_pool_features import QUERIES, SETTINGS
from test_pool_features import small as small  # the fixture: its small conversation, both stores

#: round six's columns (the later ones, ``coherence`` on, are checked against the per-candidate
#: definitions by ``test_pool_features``)
ROUND_SIX = FEATURES[: FEATURES.index("pref") + 1]
COL = {name: i for i, name in enumerate(ROUND_SIX)}


# -- the reference: round six's code, unchanged but for names --------------------------------------


def _old_features(
    ids: Sequence[str],
    nodes: Mapping[str, Candidate],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    contexts: Mapping[str, NodeContext],
    q: Any,
) -> npt.NDArray[np.float64]:
    """Round six's ``_features`` (main at 5aa51f7), unchanged (its rank and score columns are the
    current ``_rank_column`` and ``_score_column``: those two did not change)."""
    vec_r, lex_r, lexq_r, ctx_r = q.ranks
    qvec, analysis, absent = q.qvec, q.analysis, q.absent
    out = np.zeros((len(ids), len(FEATURES)))
    if not ids:
        return out
    row_of = {node_id: row for row, node_id in enumerate(ids)}
    # the cosine of every node held to the stripped query (one product over them all: a node's
    # value does not depend on which batch it was first scored in)
    sim = dict(zip(nodes, (q.emb @ qvec).tolist(), strict=True))
    vec = np.fromiter((sim[i] for i in ids), np.float64, len(ids))
    out[:, COL["vec"]] = vec
    out[:, COL["ctx_vec"]] = vec
    for node_id, stored in contexts.items():
        row = row_of.get(node_id)
        if row is not None and stored.vector is not None:
            out[row, COL["ctx_vec"]] = float(stored.vector @ qvec)
    pool._rank_column(out[:, COL["vec_rank"]], vec_r, row_of, absent)
    pool._rank_column(out[:, COL["lex_rank"]], lex_r, row_of, absent)
    pool._rank_column(out[:, COL["lex_q_rank"]], lexq_r, row_of, absent)
    lexq = pool._score_column(out[:, COL["lex_q"]], lexq_r, row_of)
    pool._score_column(out[:, COL["lex"]], lex_r, row_of)
    pool._score_column(out[:, COL["ctx_lex"]], ctx_r, row_of)
    _old_neighbour_columns(out, ids, near, sim, lexq)
    _old_node_columns(out, [nodes[i] for i in ids], analysis)
    out[q.base_count :, COL["neighbour"]] = 1.0
    return out


def _old_matrix(nodes: Iterable[Candidate], like: Vector) -> npt.NDArray[np.float32]:
    """The nodes' vectors as rows (zeros for a node without one)."""
    rows = [n.embedding if n.embedding is not None else np.zeros_like(like) for n in nodes]
    return np.array(rows, dtype=like.dtype).reshape(len(rows), len(like))


def _old_neighbour_columns(
    out: npt.NDArray[np.float64],
    ids: Sequence[str],
    near: Mapping[str, tuple[tuple[str, int], ...]],
    sim: Mapping[str, float],
    lexq: Mapping[str, float],
) -> None:
    """``nb_vec`` (best ``vec`` of a neighbour we hold, 0 with none) and ``nb_lex`` (best ``lex_q``
    over all neighbours, 0 for an absent one): a max over each candidate's run of neighbours."""
    counts = np.fromiter((len(near.get(i, ())) for i in ids), np.intp, len(ids))
    has = counts > 0
    if not has.any():
        return
    js = [j for i in ids for j, _ in near.get(i, ())]
    starts = (np.cumsum(counts) - counts)[has]  # where each non-empty run begins
    lex = np.fromiter((lexq.get(j, 0.0) for j in js), np.float64, len(js))
    out[has, COL["nb_lex"]] = np.maximum.reduceat(lex, starts)
    vec = np.fromiter((sim.get(j, np.nan) for j in js), np.float64, len(js))
    best = np.fmax.reduceat(vec, starts)  # NaN (not held) loses to any value; all NaN: none held
    out[has, COL["nb_vec"]] = np.where(np.isnan(best), 0.0, best)


def _old_node_columns(
    out: npt.NDArray[np.float64], nodes: Sequence[Candidate], analysis: QueryAnalysis
) -> None:
    """The columns of the node alone: speaker, length and time."""
    named: dict[str | None, bool] = {}
    for node in nodes:
        if node.speaker not in named:
            named[node.speaker] = analysis.mentions(node.speaker)
    speaker = np.fromiter((named[n.speaker] for n in nodes), np.float64, len(nodes))
    out[:, COL["speaker"]] = speaker
    if analysis.about:  # issue 27: a role the query asks about counts as a named speaker
        out[:, COL["other_speaker"]] = 1.0 - speaker
    words = [len(n.content.split()) for n in nodes]
    out[:, COL["log_len"]] = [math.log1p(w) / 5.0 for w in words]
    out[:, COL["short"]] = np.asarray(words) <= 8
    out[:, COL["question"]] = [pool._asks(n.content) for n in nodes]  # issue 27
    if analysis.preference:  # issue 27
        out[:, COL["pref"]] = [0.0 if n.types is None else n.types.preference for n in nodes]
    if analysis.times:
        out[:, COL["time"]] = [pool._time_match(n, analysis) for n in nodes]


def _old_near(
    contexts: Mapping[str, NodeContext], ids: Sequence[str], window: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each id's stored neighbours within ``window`` (``()`` for a node without context)."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for i in ids:
        found = contexts.get(i)
        out[i] = () if found is None else tuple([p for p in found.neighbours if -window <= p[1] <= window])
    return out


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``_features``, ``_near`` and ``_matrix`` call of the pool is also run by the reference
    and must give the identical result (the names of the calls checked are collected)."""
    checked: list[str] = []
    features, near, matrix = pool._features, pool._near, pool._matrix

    def check_features(ids: Any, nodes: Any, nb: Any, contexts: Any, q: Any) -> npt.NDArray[np.float64]:
        got = features(ids, nodes, nb, contexts, q)
        want = _old_features(ids, nodes, nb, contexts, q)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        for name, j in COL.items():
            assert got[:, j].tolist() == want[:, j].tolist(), name
        checked.append("features")
        return got

    def check_near(contexts: Any, ids: Any, window: int) -> dict[str, tuple[tuple[str, int], ...]]:
        got = near(contexts, ids, window)
        assert got == _old_near(contexts, ids, window)
        checked.append("near")
        return got

    def check_matrix(nodes: Iterable[Candidate], like: Vector) -> npt.NDArray[np.float32]:
        held = list(nodes)
        got = matrix(held, like)
        want = _old_matrix(held, like)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        assert got.tobytes() == want.tobytes()
        checked.append("matrix")
        return got

    monkeypatch.setattr(pool, "_features", check_features)
    monkeypatch.setattr(pool, "_near", check_near)
    monkeypatch.setattr(pool, "_matrix", check_matrix)
    return checked


def _run(mem: Memory, queries: Sequence[str]) -> None:
    tenant = Tenant("u")
    for settings in SETTINGS:
        for query in queries:
            found = build_pool(mem.store, mem.embedder, query, tenant, settings)
            rest = [nd for nd in mem.nodes(user="u") if nd.id not in set(found.ids)][:3]
            extend_pool(mem.store, tenant, found, rest, settings)
            mem.search(query, user="u", k=10)  # the loop's own pools and extensions


def test_the_columns_are_the_round_six_values(small: Memory, compared: list[str]) -> None:
    _run(small, QUERIES)
    assert {"features", "near", "matrix"} <= set(compared)
    assert compared.count("features") > 2 * len(QUERIES) * len(SETTINGS)  # extensions included


def test_the_columns_are_the_round_six_values_on_locomo(
    locomo_dir: Path, minilm: Embedder, tmp_path: Path, compared: list[str]
) -> None:
    conv = load_conversations(locomo_dir)[0]
    sessions = list(dict.fromkeys(o.session for o in conv.observations))[:3]
    observations = [o for o in conv.observations if o.session in sessions]
    with Memory(SQLiteStore.open(tmp_path / "locomo.db"), minilm, BuiltinController()) as mem:
        mem.add_many(observations, user="u")
        _run(mem, [qa.question for qa in conv.questions][:12])
    assert compared.count("features") >= 24


def test_stacked_context_dots_are_the_one_vector_dots() -> None:
    """``ctx_vec`` takes a stack of (1, d) @ (d, 1) products for ``vector @ qvec``: numpy's dot
    loop per row, the same float32 sums (a matrix product would differ in the last bits)."""
    rng = np.random.default_rng(7)
    for dim in (3, 32, 256, 384, 1000):
        vectors = [rng.standard_normal(dim).astype(np.float32) for _ in range(300)]
        qvec = rng.standard_normal(dim).astype(np.float32)
        col = np.zeros(len(vectors))
        contexts = {str(k): NodeContext((), v) for k, v in enumerate(vectors)}
        pool._context_column(col, contexts, {str(k): k for k in range(len(vectors))}, qvec)
        assert col.tolist() == [float(v @ qvec) for v in vectors]
