"""Relation construction (paper §3.2, B.2): deterministic edges and the batched relation request.

Timestamp order gives temporal edges and exact shared identifiers give entity edges with no
controller call. The relation request asks, per candidate pair, semantic / caused_by / causes /
same_episode, the alias question only when the pair shares no identifier, and the implicit-time
Choice only when timestamps cannot order the pair. An inferred edge needs a score >= theta_rel.
Only the questions whose edges are stored are asked (:data:`QUESTION_VIEWS`: each view question's
view must be in ``write.views``); ``relation.supersedes`` is asked whatever the views (its
``superseded_by`` edge is structural, and its decisions are the record of the pairs judged).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import TypeAlias

from dualmem.control import catalog
from dualmem.control.questions import Batch, BatchResult, ChoiceAnswer, NoulAnswer, Question
from dualmem.control.states import (
    EmbeddingFeatures,
    FeatureSource,
    MemoryState,
    RelationCandidate,
    RelationState,
)
from dualmem.plane.base import Decision
from dualmem.text.slots import may_replace, slot_of
from dualmem.types import VIEWS, Edge, Node, View
from dualmem.write.candidates import Candidate

__all__ = [
    "QUESTION_VIEWS",
    "decisions_from",
    "deterministic_edges",
    "in_views",
    "inferred_edges",
    "observed_before",
    "pair_features",
    "relation_batch",
    "relation_state",
    "supersessions",
]


def deterministic_edges(node: Node, candidates: Sequence[Candidate], previous: Node | None) -> list[Edge]:
    """Temporal edges from timestamp order, entity edges from exact shared identifiers.

    ``previous`` is the observation written just before ``node`` in the same session: arrival order
    is the finest timestamp order available when turns share a session time.
    """
    edges: list[Edge] = []
    if previous is not None and previous.id != node.id:
        edges.append(Edge(previous.id, node.id, "temporal", "before", 1.0))
    for cand in candidates:
        other = cand.node
        if node.at is not None and other.at is not None and node.at != other.at:
            first, second = (other, node) if other.at < node.at else (node, other)
            edges.append(Edge(first.id, second.id, "temporal", "before", 1.0))
        if cand.shared_entities:
            salient = [e for e in cand.shared_entities if e not in _speaker_ids(node, other)]
            weight = 1.0 if salient else 0.5
            edges.append(Edge(node.id, other.id, "entity", "shared_entity", weight))
    return edges


#: edge labels that record a memory's versions and summaries, not a relation view: stored whatever
#: ``write.views`` says (versions, ``history`` and ``forget`` follow them)
STRUCTURAL_LABELS: frozenset[str] = frozenset({"superseded_by", "derived_from"})


def in_views(edges: Sequence[Edge], views: Collection[str]) -> list[Edge]:
    """The ``edges`` to store under ``write.views``: those of a listed view, and every structural edge."""
    return [e for e in edges if e.view in views or e.label in STRUCTURAL_LABELS]


def _speaker_ids(a: Node, b: Node) -> set[str]:
    return {s.strip().lower() for s in (a.speaker, b.speaker) if s}


def _needs_time_choice(node: Node, other: Node) -> bool:
    return node.at is None or other.at is None or node.at == other.at


def _needs_alias(node: Node, cand: Candidate) -> bool:
    return bool(node.entities) and bool(cand.node.entities) and not cand.shared_entities


def relation_state(node: Node, candidates: Sequence[Candidate], source: FeatureSource) -> RelationState:
    """The typed relation state (B.2): the new memory and its candidates with their pair facts."""
    return RelationState(
        new_memory=MemoryState.of(node),
        candidates=tuple(RelationCandidate.of(node, c.node, c.shared_entities, source) for c in candidates),
    )


def pair_features(node: Node, candidates: Sequence[Candidate]) -> EmbeddingFeatures:
    """The FeatureSource of a relation request: the embeddings and texts of the pair's memories."""
    return EmbeddingFeatures.of([node, *(c.node for c in candidates)])


@lru_cache(maxsize=1024)
def _pair_questions(
    i: int, alias: bool, implicit_time: bool, views: frozenset[str]
) -> Mapping[str, Question]:
    """``catalog.relation_questions`` (a pure function of its arguments, frozen questions) built once
    per candidate index, flags and views, read-only: a write asks the same few dozen sets again and
    again. Only the questions of ``views`` (:data:`QUESTION_VIEWS`) and those of no view are kept."""
    asked = catalog.relation_questions(i, alias=alias, implicit_time=implicit_time)
    return MappingProxyType({name: q for name, q in asked.items() if _asked(q.key, views)})


def _asked(key: str, views: Collection[str]) -> bool:
    """Whether the relation question ``key`` is asked of a profile storing ``views``."""
    view = QUESTION_VIEWS.get(key)
    return view is None or view in views


def relation_batch(node: Node, candidates: Sequence[Candidate], views: Collection[str] = VIEWS) -> Batch:
    """The relation request of ``node`` and its ``candidates``: per pair, the questions whose edges
    a profile storing ``views`` keeps (``write.views``), and ``relation.supersedes``."""
    wanted = frozenset(views)
    questions: dict[str, Question] = {}
    for i, cand in enumerate(candidates):
        questions.update(
            _pair_questions(i, _needs_alias(node, cand), _needs_time_choice(node, cand.node), wanted)
        )
    source = pair_features(node, candidates)
    return Batch.of(relation_state(node, candidates, source), questions, "relations", features=source)


def inferred_edges(
    node: Node, candidates: Sequence[Candidate], batch: Batch, result: BatchResult, theta: float
) -> list[Edge]:
    """Edges whose relation score reaches ``theta`` (eq. 9)."""
    edges: list[Edge] = []
    for name, question in batch.questions.items():
        if question.target is None:
            continue
        other = candidates[question.target].node
        answer = result.answers[name]
        edge = _edge_for(question.key, node, other, answer, theta)
        if edge is not None:
            edges.append(edge)
    return edges


def _edge_for(key: str, node: Node, other: Node, answer: object, theta: float) -> Edge | None:
    if isinstance(answer, ChoiceAnswer):
        if key != "relation.time" or answer.label == "unknown" or answer.probability < theta:
            return None
        return _directed(_TIME_EDGES.get(answer.label), node, other, answer.probability)
    if not isinstance(answer, NoulAnswer) or answer.score < theta:
        return None
    return _directed(_RELATION_EDGES.get(key), node, other, answer.score)


#: (from the candidate?, view, label) of the edge a judgement makes between the new memory and a
#: candidate: from the candidate to the new memory, or the other way
_Direction: TypeAlias = tuple[bool, View, str]

#: the edge of each relation Noul that reaches the threshold
_RELATION_EDGES: dict[str, _Direction] = {
    "relation.semantic": (False, "semantic", "related"),
    "relation.caused_by": (True, "causal", "causes"),  # the candidate causes the new memory
    "relation.causes": (False, "causal", "causes"),
    "relation.same_episode": (False, "temporal", "same_episode"),
    "relation.alias": (False, "entity", "alias"),
}

#: the edge of each label of the time Choice: how the candidate's event relates to the new memory's
_TIME_EDGES: dict[str, _Direction] = {
    "before": (True, "temporal", "before"),
    "after": (False, "temporal", "before"),
    "during": (False, "temporal", "contains"),
    "contains": (True, "temporal", "contains"),
    "overlaps": (True, "temporal", "overlaps"),
    "same_time": (True, "temporal", "same_time"),
}


#: the view of the edges each relation question's answer makes: asked only when that view is stored
#: (``write.views``); a question not listed (``relation.supersedes``) is asked whatever the views
QUESTION_VIEWS: Mapping[str, View] = MappingProxyType(
    {key: view for key, (_, view, _) in _RELATION_EDGES.items()}
    | {"relation.time": "temporal"}  # every label of the time Choice makes a temporal edge (_TIME_EDGES)
)


def _directed(direction: _Direction | None, node: Node, other: Node, score: float) -> Edge | None:
    if direction is None:
        return None
    from_other, view, label = direction
    source, target = (other, node) if from_other else (node, other)
    return Edge(source.id, target.id, view, label, score)


def supersessions(
    node: Node,
    candidates: Sequence[Candidate],
    batch: Batch,
    result: BatchResult,
    threshold: float | None,
    ended: Collection[str] = (),
) -> list[Edge]:
    """The ``superseded_by`` edges (candidate -> ``node``) of the candidates ``node`` replaces:
    ``relation.supersedes`` reaches ``threshold`` (``None``: never, as in the paper), the candidate
    was observed before ``node`` and is still current (not ended before, nor in ``ended``), and the
    two are about one slot (``dualmem.text.slots.may_replace``)."""
    if threshold is None:
        return []
    out: list[Edge] = []
    new_slot = slot_of(node.content, node.speaker)
    for name, question in batch.questions.items():
        if question.key != "relation.supersedes" or question.target is None:
            continue
        answer = result.answers[name]
        old = candidates[question.target].node
        if not isinstance(answer, NoulAnswer) or answer.score < threshold:
            continue
        if old.valid_to is not None or old.derived or old.id in ended or not observed_before(old, node):
            continue
        if not may_replace(new_slot, slot_of(old.content, old.speaker), node.content):
            continue
        out.append(Edge(old.id, node.id, "temporal", "superseded_by", answer.score))
    return out


def observed_before(a: Node, b: Node) -> bool:
    """True when ``a`` was observed (or, without timestamps, written) before ``b``."""
    if a.at is not None and b.at is not None and a.at != b.at:
        return a.at < b.at
    return (a.created_at, a.id) < (b.created_at, b.id)


def decisions_from(
    node_id: str,
    questions: Mapping[str, Question],
    purpose: str,
    result: BatchResult,
    *,
    backend: str,
    latency_ms: float,
    others: Sequence[str] = (),
) -> list[Decision]:
    """Trace records of the answers to ``questions`` (of a request of ``purpose``), one per question."""
    out: list[Decision] = []
    for name, question in questions.items():
        answer = result.answers[name]
        other = others[question.target] if question.target is not None and others else None
        if isinstance(answer, NoulAnswer):
            value, label = answer.score, None
        elif isinstance(answer, ChoiceAnswer):
            value, label = answer.probability, answer.label
        else:
            value, label = answer.value, None
        out.append(
            Decision(
                node_id=node_id,
                purpose=purpose,
                name=name,
                key=question.key,
                value=float(value),
                label=label,
                backend=backend,
                latency_ms=latency_ms,
                other_id=other,
            )
        )
    return out
