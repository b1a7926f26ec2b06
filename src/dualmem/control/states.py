"""Typed System-One states: one frozen type per request purpose, and the wire JSON each one sends.

The paper (B.1-B.5) fixes what each request carries: typing ``{"observation"}``; relations
``{"new_memory", "candidates"}``; routing ``{"query"}``; traversal ``{"query", "evidence",
"candidates"}``; stopping ``{"query", "evidence", "depth"}``; memory objects ``{id, content, timestamp,
entities}`` (+ ``timestamp_role``/``temporal_references`` on temporal queries, B.5). ``to_wire()``
produces exactly those fields plus the **documented additions** listed in :data:`WIRE_ADDITIONS`
(context that every backend sees, a model as well as the builtin decider). ``Batch.state`` is always
``to_wire()`` of the typed state, so what Jev and an LLM see is pinned by one test per purpose.

Deterministic signals (cosine similarity, lexical overlap) are computed by the read and write
paths through a :class:`FeatureSource` over the embeddings of the memories in the state. The same
source travels with the batch (``Batch.features``, never sent) so that an in-process decider (the
builtin one, or a learned scorer) can ask for any pair's signal by node id, instead of trusting
keys of the JSON state. :func:`parse_state` reads a wire state back strictly: a missing or
mistyped field is an :class:`~dualmem.errors.InvalidInput`, never a silent 0.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, TypedDict, runtime_checkable

import numpy as np

from dualmem.errors import InvalidInput
from dualmem.text.lexical import overlap
from dualmem.types import JSONValue, Node, TemporalRef, Vector, memory_object

__all__ = [
    "QUERY",
    "WIRE_ADDITIONS",
    "ConsolidationPair",
    "ConsolidationState",
    "EmbeddingFeatures",
    "EvidenceItem",
    "FeatureSource",
    "MemoryState",
    "MessageState",
    "Purpose",
    "RelationCandidate",
    "RelationState",
    "RoutingState",
    "State",
    "StoppingState",
    "TraversalCandidate",
    "TraversalState",
    "TypingState",
    "WireFeatures",
    "parse_state",
]

#: the id under which a FeatureSource knows the query of a read-path state
QUERY = "@query"

Purpose = Literal["typing", "relations", "consolidation", "routing", "scoring", "assessment", "message"]

#: every wire field that is not in the paper's Appendix B, per purpose, and why it is sent
WIRE_ADDITIONS: Mapping[str, str] = {
    "typing.speaker": "who said the observation (attributes preferences and events)",
    "typing.timestamp": "when the observation was made (ISO 8601 or null)",
    "memory.speaker": "the speaker of a memory, when known (omitted otherwise)",
    "relations.candidates[].similarity": "cosine of the new memory and the candidate, 4 decimals",
    "relations.candidates[].lexical_overlap": "Jaccard overlap of their content tokens, 4 decimals",
    "relations.candidates[].shared_entities": "exact entity identifiers both memories carry",
    "relations.candidates[].time_delta_days": "new minus candidate timestamp in days (null if unknown)",
    "relations.candidates[].same_session": "both memories come from the same session",
    "consolidation.pairs": "several pairs are judged in one request: [{new_memory, candidate}]",
    "scoring.evidence[].similarity": "cosine of the query and the evidence memory, 4 decimals",
    "scoring.evidence[].lexical_overlap": "Jaccard overlap of the query and the memory, 4 decimals",
    "scoring.candidates[].edge_weight": "the stored edge weight times the reach of its source "
    "(an anchor: its RRF score over the best anchor's)",
    "scoring.candidates[].similarity": "cosine of the query and the candidate, 4 decimals",
    "scoring.candidates[].lexical_overlap": "Jaccard overlap of the query and the candidate, 4 decimals",
    "scoring.candidates[].signals": "the read path's signals of the candidate by name (the candidate "
    "pool's features, dualmem.read.pool.FEATURES), 4 decimals; omitted when none were computed",
    "assessment.evidence[].similarity": "as in scoring",
    "assessment.evidence[].lexical_overlap": "as in scoring",
    "assessment.max_depth": "D(q), the depth the loop may reach (eq. 15)",
    "message": "a whole purpose of dualmem's (issue 47): a long query (the user's message) and its "
    "clauses, each to be labelled need, context or chatter before the search",
}

_DAY_S = 86_400.0


# -- the FeatureSource: deterministic signals by node id -------------------------------------------


@runtime_checkable
class FeatureSource(Protocol):
    """Deterministic pair signals over the memories of one state, addressed by node id.

    ``QUERY`` names the query of a read-path state. Both methods are symmetric and raise
    ``InvalidInput`` for an id the source does not know (a missing signal is an error, not a 0).
    """

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of the two embeddings (unit vectors: their dot product)."""
        ...

    def lexical(self, a: str, b: str) -> float:
        """Jaccard overlap of the two texts' content tokens, in [0, 1]."""
        ...


class EmbeddingFeatures:
    """A FeatureSource over embeddings and texts held in memory (what the read/write paths build)."""

    def __init__(self, vectors: Mapping[str, Vector | None], texts: Mapping[str, str]) -> None:
        self._vectors = dict(vectors)
        self._texts = dict(texts)

    @classmethod
    def of(
        cls, nodes: Sequence[Node], *, query: str | None = None, qvec: Vector | None = None
    ) -> EmbeddingFeatures:
        vectors: dict[str, Vector | None] = {n.id: n.embedding for n in nodes}
        texts = {n.id: n.content for n in nodes}
        if query is not None:
            vectors[QUERY] = qvec
            texts[QUERY] = query
        return cls(vectors, texts)

    def cosine(self, a: str, b: str) -> float:
        va, vb = self._vector(a), self._vector(b)
        if va is None or vb is None:
            return 0.0  # a record read without its vector has no similarity signal
        return float(np.dot(va, vb))

    def lexical(self, a: str, b: str) -> float:
        return overlap(self._text(a), self._text(b))

    def _vector(self, node_id: str) -> Vector | None:
        try:
            return self._vectors[node_id]
        except KeyError:
            raise InvalidInput(f"no embedding for {node_id!r} in this state's feature source") from None

    def _text(self, node_id: str) -> str:
        try:
            return self._texts[node_id]
        except KeyError:
            raise InvalidInput(f"no text for {node_id!r} in this state's feature source") from None


class WireFeatures:
    """A FeatureSource read from the documented signal fields of a typed state (4-decimal values).

    For a batch that arrives as wire JSON only (no in-process source): the signals are the ones
    every backend was shown, and a pair the state carries no signal for is an error.
    """

    def __init__(
        self, cosines: Mapping[frozenset[str], float], lexicals: Mapping[frozenset[str], float]
    ) -> None:
        self._cos = dict(cosines)
        self._lex = dict(lexicals)

    @classmethod
    def of(cls, state: State) -> WireFeatures:
        cos: dict[frozenset[str], float] = {}
        lex: dict[frozenset[str], float] = {}
        match state:
            case RelationState():
                for c in state.candidates:
                    key = frozenset((state.new_memory.id, c.memory.id))
                    cos[key], lex[key] = c.similarity, c.lexical_overlap
            case ConsolidationState():
                for p in state.pairs:
                    key = frozenset((p.new_memory.id, p.candidate.memory.id))
                    cos[key], lex[key] = p.candidate.similarity, p.candidate.lexical_overlap
            case TraversalState() | StoppingState():
                items: list[EvidenceItem | TraversalCandidate] = list(state.evidence)
                if isinstance(state, TraversalState):
                    items += state.candidates
                for item in items:
                    key = frozenset((QUERY, item.memory.id))
                    cos[key], lex[key] = item.similarity, item.lexical_overlap
            case _:
                pass
        return cls(cos, lex)

    def cosine(self, a: str, b: str) -> float:
        return self._get(self._cos, a, b, "similarity")

    def lexical(self, a: str, b: str) -> float:
        return self._get(self._lex, a, b, "lexical_overlap")

    @staticmethod
    def _get(table: Mapping[frozenset[str], float], a: str, b: str, name: str) -> float:
        try:
            return table[frozenset((a, b))]
        except KeyError:
            raise InvalidInput(f"the state carries no {name} for ({a!r}, {b!r})") from None


# -- memory objects ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryState:
    """A memory object as System One sees it (B.1): id, content, timestamp, entities (+ speaker).

    ``temporal_references`` is ``None`` unless the query is temporal (B.5): then the object also
    carries ``timestamp_role`` ("observation_time") and the grounded expressions. ``session`` is
    kept for deterministic pair facts (``same_session``) and is not itself sent.
    """

    id: str
    content: str
    timestamp: dt.datetime | None
    entities: tuple[str, ...]
    speaker: str | None = None
    session: str | None = None
    temporal_references: tuple[TemporalRef, ...] | None = None

    @classmethod
    def of(cls, node: Node, *, temporal: bool = False) -> MemoryState:
        return cls(
            id=node.id,
            content=node.content,
            timestamp=node.at,
            entities=tuple(node.entities),
            speaker=node.speaker or None,
            session=node.session,
            temporal_references=tuple(node.temporal_refs) if temporal else None,
        )

    def to_wire(self) -> dict[str, JSONValue]:
        out = memory_object(self.id, self.content, self.timestamp, self.entities, self.speaker)
        if self.temporal_references is not None:
            out["timestamp_role"] = "observation_time"
            out["temporal_references"] = [r.to_json() for r in self.temporal_references]  # type: ignore[misc]
        return out


# -- write path --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypingState:
    """Typing request (B.2): ``observation``; additions ``speaker``, ``timestamp``."""

    observation: str
    speaker: str | None
    timestamp: dt.datetime | None

    @classmethod
    def of(cls, node: Node) -> TypingState:
        return cls(node.content, node.speaker, node.at)

    def to_wire(self) -> dict[str, JSONValue]:
        return {
            "observation": self.observation,
            "speaker": self.speaker,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
        }


@dataclass(frozen=True, slots=True)
class RelationCandidate:
    """One existing memory paired with a new one, with the pair's deterministic facts."""

    memory: MemoryState
    similarity: float  # cosine(new, candidate)
    lexical_overlap: float
    shared_entities: tuple[str, ...]
    time_delta_days: float | None  # new.timestamp - candidate.timestamp, in days
    same_session: bool

    @classmethod
    def of(cls, new: Node, other: Node, shared: Sequence[str], source: FeatureSource) -> RelationCandidate:
        delta: float | None = None
        if new.at is not None and other.at is not None:
            delta = (new.at - other.at).total_seconds() / _DAY_S
        return cls(
            memory=MemoryState.of(other),
            similarity=source.cosine(new.id, other.id),
            lexical_overlap=source.lexical(new.id, other.id),
            shared_entities=tuple(shared),
            time_delta_days=delta,
            same_session=new.session is not None and new.session == other.session,
        )

    def to_wire(self) -> dict[str, JSONValue]:
        out = self.memory.to_wire()
        out["similarity"] = round(self.similarity, 4)
        out["lexical_overlap"] = round(self.lexical_overlap, 4)
        out["shared_entities"] = list(self.shared_entities)
        out["time_delta_days"] = None if self.time_delta_days is None else round(self.time_delta_days, 4)
        out["same_session"] = self.same_session
        return out


@dataclass(frozen=True, slots=True)
class RelationState:
    """Relation request (B.2): ``new_memory`` and ``candidates`` (at most K_w)."""

    new_memory: MemoryState
    candidates: tuple[RelationCandidate, ...]

    def to_wire(self) -> dict[str, JSONValue]:
        return {
            "new_memory": self.new_memory.to_wire(),
            "candidates": [c.to_wire() for c in self.candidates],
        }


@dataclass(frozen=True, slots=True)
class ConsolidationPair:
    new_memory: MemoryState
    candidate: RelationCandidate

    def to_wire(self) -> dict[str, JSONValue]:
        return {"new_memory": self.new_memory.to_wire(), "candidate": self.candidate.to_wire()}


@dataclass(frozen=True, slots=True)
class ConsolidationState:
    """Consolidation request (B.3), several pairs in one request: ``{"pairs": [...]}``."""

    pairs: tuple[ConsolidationPair, ...]

    def to_wire(self) -> dict[str, JSONValue]:
        return {"pairs": [p.to_wire() for p in self.pairs]}


# -- read path ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoutingState:
    """Routing request (B.4): the query only."""

    query: str

    def to_wire(self) -> dict[str, JSONValue]:
        return {"query": self.query}


@dataclass(frozen=True, slots=True)
class MessageState:
    """Message request (dualmem's, issue 47): the user's whole message and its clauses in order
    (``dualmem.text.clauses.split``), each to be labelled before the search."""

    message: str
    clauses: tuple[str, ...]

    def to_wire(self) -> dict[str, JSONValue]:
        return {"message": self.message, "clauses": list(self.clauses)}


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """A memory of the currently selected evidence, with its query signals."""

    memory: MemoryState
    similarity: float  # cosine(query, memory)
    lexical_overlap: float

    def to_wire(self) -> dict[str, JSONValue]:
        out = self.memory.to_wire()
        out["similarity"] = round(self.similarity, 4)
        out["lexical_overlap"] = round(self.lexical_overlap, 4)
        return out


@dataclass(frozen=True, slots=True)
class TraversalCandidate:
    """A proposed candidate (B.4): memory fields, graph type, relation properties, source/target."""

    memory: MemoryState
    view: str  # a View, or "anchor" for an RRF anchor
    label: str  # the edge label, or "rrf"
    source: str | None
    target: str
    edge_weight: float  # pi_e times the reach of its source (an anchor: normalised RRF score)
    similarity: float  # z_v = cosine(query, memory)
    lexical_overlap: float
    #: the read path's per-candidate signals (the pool's feature row, in the state's
    #: ``signal_names`` order); empty when the read path computed none for this candidate
    signals: tuple[float, ...] = ()

    def to_wire(self, signal_names: Sequence[str] = ()) -> dict[str, JSONValue]:
        out = self.memory.to_wire()
        out.update(
            {
                "view": self.view,
                "label": self.label,
                "source": self.source,
                "target": self.target,
                "edge_weight": round(self.edge_weight, 4),
                "similarity": round(self.similarity, 4),
                "lexical_overlap": round(self.lexical_overlap, 4),
            }
        )
        if self.signals:
            out["signals"] = {n: round(v, 4) for n, v in zip(signal_names, self.signals, strict=True)}
        return out


@dataclass(frozen=True, slots=True)
class TraversalState:
    """Traversal (candidate scoring) request (B.4): query, selected evidence, proposed candidates."""

    query: str
    evidence: tuple[EvidenceItem, ...]
    candidates: tuple[TraversalCandidate, ...]
    #: the names of every candidate's ``signals``, in order (``dualmem.read.pool.FEATURES``)
    signal_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        width = len(self.signal_names)
        for c in self.candidates:
            if c.signals and len(c.signals) != width:
                raise InvalidInput(
                    f"candidate {c.memory.id}: {len(c.signals)} signals for {width} signal names"
                )

    def to_wire(self) -> dict[str, JSONValue]:
        return {
            "query": self.query,
            "evidence": [e.to_wire() for e in self.evidence],
            "candidates": [c.to_wire(self.signal_names) for c in self.candidates],
        }


@dataclass(frozen=True, slots=True)
class StoppingState:
    """Stopping request (B.5): query, the selected top-k evidence, retrieval depth (+ max_depth)."""

    query: str
    evidence: tuple[EvidenceItem, ...]
    depth: int
    max_depth: int

    def to_wire(self) -> dict[str, JSONValue]:
        return {
            "query": self.query,
            "evidence": [e.to_wire() for e in self.evidence],
            "depth": self.depth,
            "max_depth": self.max_depth,
        }


State: TypeAlias = (
    TypingState
    | RelationState
    | ConsolidationState
    | RoutingState
    | TraversalState
    | StoppingState
    | MessageState
)


# -- strict parsing of wire JSON ---------------------------------------------------------------------


def parse_state(purpose: Purpose, wire: Mapping[str, JSONValue]) -> State:
    """The typed state of a wire JSON state; a missing or mistyped field raises ``InvalidInput``."""
    r = _Reader(wire, purpose)
    match purpose:
        case "typing":
            return TypingState(r.text("observation"), r.opt_text("speaker"), r.time("timestamp"))
        case "relations":
            return RelationState(
                _memory(r.obj("new_memory")), tuple(_rel_cand(c) for c in r.objs("candidates"))
            )
        case "consolidation":
            return ConsolidationState(
                tuple(
                    ConsolidationPair(_memory(p.obj("new_memory")), _rel_cand(p.obj("candidate")))
                    for p in r.objs("pairs")
                )
            )
        case "routing":
            return RoutingState(r.text("query"))
        case "message":
            return MessageState(r.text("message"), r.texts("clauses"))
        case "scoring":
            return _traversal(r)
        case "assessment":
            return StoppingState(
                r.text("query"),
                tuple(_evidence(e) for e in r.objs("evidence")),
                r.integer("depth"),
                r.integer("max_depth"),
            )
    raise InvalidInput(f"unknown state purpose {purpose!r}")


class _Reader:
    """Typed access to one JSON object; every miss names the field."""

    def __init__(self, value: object, where: str) -> None:
        if not isinstance(value, Mapping):
            raise InvalidInput(f"{where}: expected an object, got {type(value).__name__}")
        self.m: Mapping[str, object] = value
        self.where = where

    def _get(self, key: str) -> object:
        if key not in self.m:
            raise InvalidInput(
                f"{self.where}: missing field {key!r}", hint="build states with dualmem.control.states"
            )
        return self.m[key]

    def has(self, key: str) -> bool:
        return key in self.m

    def text(self, key: str) -> str:
        v = self._get(key)
        if not isinstance(v, str):
            raise InvalidInput(f"{self.where}.{key}: expected a string")
        return v

    def opt_text(self, key: str) -> str | None:
        v = self._get(key)
        if v is not None and not isinstance(v, str):
            raise InvalidInput(f"{self.where}.{key}: expected a string or null")
        return v

    def number(self, key: str) -> float:
        v = self._get(key)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise InvalidInput(f"{self.where}.{key}: expected a number")
        return float(v)

    def opt_number(self, key: str) -> float | None:
        return None if self._get(key) is None else self.number(key)

    def integer(self, key: str) -> int:
        v = self._get(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidInput(f"{self.where}.{key}: expected an integer")
        return v

    def flag(self, key: str) -> bool:
        v = self._get(key)
        if not isinstance(v, bool):
            raise InvalidInput(f"{self.where}.{key}: expected true or false")
        return v

    def texts(self, key: str) -> tuple[str, ...]:
        v = self._get(key)
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise InvalidInput(f"{self.where}.{key}: expected a list of strings")
        return tuple(v)

    def time(self, key: str) -> dt.datetime | None:
        v = self.opt_text(key)
        if v is None:
            return None
        try:
            return dt.datetime.fromisoformat(v)
        except ValueError:
            raise InvalidInput(f"{self.where}.{key}: not an ISO 8601 time: {v!r}") from None

    def obj(self, key: str) -> _Reader:
        return _Reader(self._get(key), f"{self.where}.{key}")

    def objs(self, key: str) -> list[_Reader]:
        v = self._get(key)
        if not isinstance(v, list):
            raise InvalidInput(f"{self.where}.{key}: expected a list")
        return [_Reader(x, f"{self.where}.{key}[{i}]") for i, x in enumerate(v)]


def _memory(r: _Reader) -> MemoryState:
    refs: tuple[TemporalRef, ...] | None = None
    if r.has("temporal_references"):
        refs = tuple(_ref(x) for x in r.objs("temporal_references"))
    return MemoryState(
        id=r.text("id"),
        content=r.text("content"),
        timestamp=r.time("timestamp"),
        entities=r.texts("entities"),
        speaker=r.opt_text("speaker") if r.has("speaker") else None,
        temporal_references=refs,
    )


def _ref(r: _Reader) -> TemporalRef:
    try:
        start, end = dt.date.fromisoformat(r.text("start")), dt.date.fromisoformat(r.text("end"))
    except ValueError:
        raise InvalidInput(f"{r.where}: start/end must be ISO dates") from None
    precision = r.text("precision")
    if precision not in ("day", "week", "month", "year"):
        raise InvalidInput(f"{r.where}.precision: unknown precision {precision!r}")
    return TemporalRef(r.text("expression"), start, end, precision)  # type: ignore[arg-type]


class _Matched(TypedDict):
    memory: MemoryState
    similarity: float
    lexical_overlap: float


def _matched(r: _Reader) -> _Matched:
    """A memory with its cosine and lexical overlap (to the new memory, or to the query)."""
    return {
        "memory": _memory(r),
        "similarity": r.number("similarity"),
        "lexical_overlap": r.number("lexical_overlap"),
    }


def _rel_cand(r: _Reader) -> RelationCandidate:
    return RelationCandidate(
        **_matched(r),
        shared_entities=r.texts("shared_entities"),
        time_delta_days=r.opt_number("time_delta_days"),
        same_session=r.flag("same_session"),
    )


def _evidence(r: _Reader) -> EvidenceItem:
    return EvidenceItem(**_matched(r))


def _traversal(r: _Reader) -> TraversalState:
    """A scoring state; every candidate that carries ``signals`` names the same ones, in order."""
    names: tuple[str, ...] | None = None
    candidates: list[TraversalCandidate] = []
    for c in r.objs("candidates"):
        signals: tuple[float, ...] = ()
        if c.has("signals"):
            s = c.obj("signals")
            keys = tuple(s.m)
            if names is None:
                names = keys
            elif keys != names:
                raise InvalidInput(f"{s.where}: signal names differ from the first candidate's")
            signals = tuple(s.number(k) for k in keys)
        candidates.append(_trav_cand(c, signals))
    return TraversalState(
        r.text("query"), tuple(_evidence(e) for e in r.objs("evidence")), tuple(candidates), names or ()
    )


def _trav_cand(r: _Reader, signals: tuple[float, ...]) -> TraversalCandidate:
    return TraversalCandidate(
        memory=_memory(r),
        view=r.text("view"),
        label=r.text("label"),
        source=r.opt_text("source"),
        target=r.text("target"),
        edge_weight=r.number("edge_weight"),
        similarity=r.number("similarity"),
        lexical_overlap=r.number("lexical_overlap"),
        signals=signals,
    )
