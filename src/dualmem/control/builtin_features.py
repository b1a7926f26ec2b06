"""Feature groups of the builtin decider: numbers in [0, 1] from a typed System-One state.

Private to :mod:`dualmem.control.builtin`. Five groups, one per state type of
:mod:`dualmem.control.states` (``typing``, ``pair`` for relations and consolidation, ``route``,
``traverse``, ``stop``). Text cues come from the typed memory fields; cosine and lexical signals
only from the batch's :class:`~dualmem.control.states.FeatureSource` (by node id, ``QUERY`` for
the query). A group is computed once per batch and candidate index (``Features.get``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import combinations
from typing import TypeVar

from dualmem.control.builtin_cues import Cues, containment, cues, link, query_cues, stem_tokens, variant
from dualmem.control.states import (
    QUERY,
    ConsolidationState,
    FeatureSource,
    MemoryState,
    MessageState,
    RelationCandidate,
    RelationState,
    RoutingState,
    State,
    StoppingState,
    TraversalCandidate,
    TraversalState,
    TypingState,
)
from dualmem.errors import InvalidInput
from dualmem.text.clauses import cues as clause_cues

__all__ = ["GROUPS", "Features", "group_of", "route_cues"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: feature names of each group (the weights file may only use these). All values lie in [0, 1].
#: ``sim`` is the state's cosine; ``sim_c`` the same centred on an "unrelated" floor (see
#: ``PAIR_SIM_FLOOR``); ``*_link_*`` how much of a causal clause of one text the other text covers;
#: ``topic``/``mutual`` overlap of content tokens (speaker names removed); ``*_flip_*`` a negation
#: or like/dislike flip scaled by topic or similarity.
GROUPS: Mapping[str, frozenset[str]] = {
    "typing": _words(
        """past time_words future past_ref pref_pos pref_neg habit procedural sequence imperative
        copula definitional first_person question causal short"""
    ),
    "pair": _words(
        """sim sim_c mutual dup_score lex topic ent_shared same_speaker same_session close_time
        near_x_sim cand_earlier cand_later order_unknown far_time cause_link_fwd effect_link_fwd
        cause_link_rev effect_link_rev causal_new causal_cand alias_variant near_dup neg_flip_topic
        pref_flip_topic change_topic slot_change neg_flip_sim numbers_differ repeat_pair habit_pair past_pair
        low_content cand_past_ref new_past_ref cand_future new_future update_new update_topic
        replaces_old additive_new sim_top sim_gap other_role other_person"""
    ),
    "route": _words("temporal causal names two_names recency compare conjunction two_questions what who"),
    "traverse": _words(
        """sim sim_c lex qcov qcov_new ev_overlap rel_novel edge_weight view_match view_match_rel
        view_semantic connected ev_entity ev_support time_match causal_match"""
    ),
    "stop": _words(
        "coverage top_sim top_sim_c count has_evidence depth_frac need_gap contra q_temporal q_causal"
    ),
    "message": _words("question request past_ref chatter named time content short first last only"),
}

_PREFIX_GROUP = {
    "typing": "typing",
    "relation": "pair",
    "consolidate": "pair",
    "route": "route",
    "traverse": "traverse",
    "stop": "stop",
    "message": "message",
}
_PER_CANDIDATE = frozenset({"pair", "traverse", "message"})


def group_of(key: str) -> str | None:
    """The feature group a decision key reads, or ``None`` for an unknown family."""
    return _PREFIX_GROUP.get(key.partition(".")[0])


# -- helpers -------------------------------------------------------------------------------------


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _lower(values: tuple[str, ...]) -> frozenset[str]:
    return _lowered(tuple(values))  # a state built by hand may hold a list


@lru_cache(maxsize=16384)
def _lowered(values: tuple[str, ...]) -> frozenset[str]:
    return frozenset(v.strip().lower() for v in values if v.strip())


def _speakers(m: MemoryState, c: Cues) -> frozenset[str]:
    return _speaker_names((m.speaker or "").strip().lower(), c.speaker)


@lru_cache(maxsize=1024)
def _speaker_names(field: str, prefix: str | None) -> frozenset[str]:
    """Raw and stemmed tokens of a memory's speaker (its ``speaker`` field and "Name:" prefix)."""
    names = {n for n in (field, prefix) if n}
    raw = {part for n in names for part in (n, *n.split())}
    return frozenset(raw).union(*(stem_tokens(n) for n in names))


#: similarity below which two memories (or a query and a memory) look unrelated. Calibrated on the
#: default MiniLM embedder with "Speaker: text" contents: random LoCoMo turn pairs have a median
#: cosine of 0.42 (90th percentile 0.60); a query's 10th-best turn about 0.5.
PAIR_SIM_FLOOR = 0.5
QUERY_SIM_FLOOR = 0.4


def _centred(sim: float, floor: float) -> float:
    """Similarity rescaled so that ``floor`` maps to 0 and 1.0 (or ``2 * floor`` for queries) to 1."""
    return min(1.0, max(0.0, (sim - floor) / min(floor, 1.0 - floor)))


def _topic(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


# -- groups ----------------------------------------------------------------------------------------


#: the cues (``control.builtin_cues``) the ``typing`` group reads, and a clause's (``text.clauses``)
_TYPING_CUES = (
    "past", "time_words", "future", "past_ref", "pref_pos", "pref_neg", "habit", "procedural",
    "sequence", "imperative", "copula", "definitional", "first_person", "question", "causal",
)  # fmt: skip
_CLAUSE_CUES = ("question", "request", "past_ref", "chatter", "named", "time", "content", "short")


def _attrs(cues: object, names: tuple[str, ...]) -> dict[str, float]:
    """``cues``' attributes ``names``, by name, in order."""
    return {n: getattr(cues, n) for n in names}


def _typing(state: TypingState) -> dict[str, float]:
    c = cues(state.observation)
    return {**_attrs(c, _TYPING_CUES), "short": 1.0 if len(c.tokens) <= 1 else 0.0}


def _time_features(cand: RelationCandidate) -> dict[str, float]:
    delta = cand.time_delta_days
    same_session = 1.0 if cand.same_session else 0.0
    close = 0.0
    if delta is not None:
        close = 1.0 if abs(delta) <= 0.1 else math.exp(-(abs(delta) - 0.1) / 0.25)
    return {
        "same_session": same_session,
        "close_time": close,
        "cand_earlier": 1.0 if delta is not None and delta > 1e-6 else 0.0,
        "cand_later": 1.0 if delta is not None and delta < -1e-6 else 0.0,
        "order_unknown": 1.0 if delta is None or abs(delta) <= 1e-6 else 0.0,
        "far_time": 1.0 if delta is not None and abs(delta) > 0.5 else 0.0,
    }


def _pair_semantics(
    n: Cues, c: Cues, speakers: frozenset[str], nt: frozenset[str], ct: frozenset[str]
) -> dict[str, float]:
    """``nt``, ``ct``: the two texts' content tokens without the pair's speakers."""
    topic = _topic(nt, ct)
    neg_flip = 1.0 if (n.negation > 0) != (c.negation > 0) else 0.0
    pref_flip = max(min(n.pref_pos, c.pref_neg), min(n.pref_neg, c.pref_pos))
    return {
        "topic": topic,
        "cause_link_fwd": link(n.cause_tokens - speakers, ct),
        "effect_link_fwd": link(c.effect_tokens - speakers, nt),
        "cause_link_rev": link(c.cause_tokens - speakers, nt),
        "effect_link_rev": link(n.effect_tokens - speakers, ct),
        "causal_new": n.causal,
        "causal_cand": c.causal,
        "neg_flip_topic": neg_flip * topic,
        "pref_flip_topic": pref_flip * topic,
        "change_topic": n.change * topic,
        "numbers_differ": 1.0 if n.numbers and c.numbers and n.numbers != c.numbers else 0.0,
        "repeat_pair": max(n.repeat, c.repeat, n.habit, c.habit) * topic,
        "habit_pair": max(n.habit, c.habit),
        "past_pair": min(n.past, c.past),
        "low_content": 1.0 if min(len(nt), len(ct)) <= 1 else 0.0,
        "cand_past_ref": c.past_ref,
        "new_past_ref": n.past_ref,
        "cand_future": c.future,
        "new_future": n.future,
    }


def _alias(new: MemoryState, cand: MemoryState) -> float:
    a, b = _lower(new.entities), _lower(cand.entities)
    if not a or not b:
        return 0.0
    return _alias_of(tuple(sorted(a - b)[:8]), tuple(sorted(b - a)[:8]))


def _alias_of(only_a: tuple[str, ...], only_b: tuple[str, ...]) -> float:
    """The best ``variant`` over the two memories' unshared entities (at most 8 of each)."""
    # every variant() match shares the first letter or is a word of a multi-word name:
    # skip the rest without the call (this runs for every candidate pair of every write)
    others = [(y, y[:1], " " in y or "-" in y) for y in only_b]
    best = 0.0
    for x in only_a:
        first, wordy = x[:1], " " in x or "-" in x
        for y, y_first, y_wordy in others:
            if wordy or y_wordy or first == y_first:
                best = max(best, variant(x, y))
    return best


_ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "system"})


def _update(n: Cues, c: Cues, new: MemoryState, cand: MemoryState, topic: float) -> dict[str, float]:
    """Whether the new text replaces the candidate's value: update language, the candidate's words
    next to a replacing word ("instead of pip"), or words that add beside it ("also", "stays")."""
    role_new = (new.speaker or "").strip().lower() in _ASSISTANT_ROLES
    role_cand = (cand.speaker or "").strip().lower() in _ASSISTANT_ROLES
    return {
        "update_new": n.update,
        "update_topic": n.update * topic,
        "replaces_old": 1.0 if n.replaced & c.tokens else 0.0,
        "additive_new": n.additive,
        "other_role": 1.0 if role_new and not role_cand else 0.0,
        # the new text is about someone the candidate's is not ("my sister moved" after "I live in")
        "other_person": 1.0 if n.others - c.others else 0.0,
    }


def _rank(sim: float, others: Sequence[float]) -> dict[str, float]:
    """The candidate's cosine against the other candidates' of the same new memory."""
    best = max(others, default=None)
    if best is None:
        best = PAIR_SIM_FLOOR  # a lone candidate: measured against an unrelated cosine
    gap = sim - best
    return {"sim_top": 1.0 if gap >= 0 else 0.0, "sim_gap": min(1.0, max(0.0, 0.5 + gap / 0.4))}


def _pair(
    new: MemoryState, pair: RelationCandidate, source: FeatureSource, others: Sequence[float] = ()
) -> dict[str, float]:
    """``others``: the cosines of the new memory's other candidates (``sim_top``, ``sim_gap``)."""
    cand = pair.memory
    n, c = cues(new.content), cues(cand.content)
    new_speakers, cand_speakers = _speakers(new, n), _speakers(cand, c)
    speakers = new_speakers | cand_speakers
    sim = _unit(source.cosine(new.id, cand.id))
    sim_c = _centred(sim, PAIR_SIM_FLOOR)
    shared = _lower(pair.shared_entities) - speakers
    time = _time_features(pair)
    near = max(time["same_session"], time["close_time"])
    nt, ct = n.tokens - speakers, c.tokens - speakers
    mutual = min(containment(nt, ct), containment(ct, nt))
    near_dup = max(0.0, sim - 0.8) / 0.2
    return {
        "sim": sim,
        "sim_c": sim_c,
        "mutual": mutual,
        "dup_score": near_dup * mutual,
        "lex": _unit(source.lexical(new.id, cand.id)),
        "ent_shared": min(1.0, len(shared) / 2),
        "same_speaker": 1.0 if new_speakers and new_speakers == cand_speakers else 0.0,
        "near_x_sim": near * sim_c,
        "alias_variant": _alias(new, cand),
        "near_dup": near_dup,
        "neg_flip_sim": sim_c if (n.negation > 0) != (c.negation > 0) else 0.0,
        # the new text updates a fact of the same family the same speaker stated before
        "slot_change": n.self_change if n.slots & c.slots and new_speakers == cand_speakers else 0.0,
        **time,
        **_pair_semantics(n, c, speakers, nt, ct),
        **_update(n, c, new, cand, _topic(nt, ct)),
        **_rank(sim, others),
    }


def _route(state: RoutingState) -> dict[str, float]:
    return route_cues(state.query)


def route_cues(query: str) -> dict[str, float]:
    """The cues of ``query`` that System One's routing reads (the fitted channel route reads them too)."""
    q = query_cues(query)
    return {
        "temporal": q.temporal,
        "causal": q.causal,
        "names": 1.0 if q.names else 0.0,
        "two_names": 1.0 if len(q.names) >= 2 else 0.0,
        "recency": q.recency,
        "compare": q.compare,
        "conjunction": q.conjunction,
        "two_questions": 1.0 if q.question_words >= 2 else 0.0,
        "what": q.what,
        "who": 1.0 if "who" in query.lower().split() else 0.0,
    }


class _EvidenceView:
    """What traversal and stopping read from the evidence list (computed once per batch)."""

    def __init__(self, state: TraversalState | StoppingState, source: FeatureSource) -> None:
        self.items = [e.memory for e in state.evidence]
        self.source = source
        self.cues = [cues(e.content) for e in self.items]
        self.ids = frozenset(e.id for e in self.items)
        self.tokens = frozenset().union(*(c.tokens for c in self.cues))
        self.entities = frozenset().union(*(_lower(e.entities) for e in self.items))
        self.query = query_cues(state.query)
        self.query_new = self.query.tokens - self.tokens  # query tokens no evidence has yet

    def coverage(self) -> float:
        q = self.query.tokens
        return containment(q, self.tokens) if q else (1.0 if self.items else 0.0)

    def top_sim(self) -> float:
        return _unit(max((self.source.cosine(QUERY, e.id) for e in self.items), default=0.0))

    def has_time(self) -> float:
        refs = any(e.temporal_references for e in self.items)
        words = max((c.time_words for c in self.cues), default=0.0)
        stamped = any(e.timestamp is not None for e in self.items)
        return min(1.0, 0.5 * stamped + 0.5 * max(words, float(refs)))

    def contradiction(self) -> float:
        best = 0.0
        for a, b in combinations(self.cues[:10], 2):
            flip = max(
                1.0 if (a.negation > 0) != (b.negation > 0) else 0.0,
                min(a.pref_pos, b.pref_neg),
                min(a.pref_neg, b.pref_pos),
            )
            if flip:
                best = max(best, flip * _topic(a.tokens, b.tokens))
        return best


def _view_match(view: str, ev: _EvidenceView) -> float:
    q = ev.query
    match view:
        case "causal":
            return q.causal
        case "temporal":
            return q.temporal
        case "entity":
            return 1.0 if q.names else 0.3
        case _:
            return 0.0


def _traverse(ev: _EvidenceView, trav: TraversalCandidate) -> dict[str, float]:
    cand = trav.memory
    c = cues(cand.content)
    q = ev.query
    sim = _unit(ev.source.cosine(QUERY, cand.id))
    sim_c = _centred(sim, QUERY_SIM_FLOOR)
    qcov = containment(q.tokens, c.tokens)
    qcov_new = containment(ev.query_new, c.tokens) if ev.query_new else 0.0
    speakers = _speakers(cand, c)
    own = c.tokens - speakers
    in_evidence = cand.id in ev.ids
    overlap = 1.0 if in_evidence else max((containment(own, e.tokens) for e in ev.cues), default=0.0)
    ents = _lower(cand.entities) - speakers
    match = _view_match(trav.view, ev)
    return {
        "sim": sim,
        "sim_c": sim_c,
        "lex": _unit(ev.source.lexical(QUERY, cand.id)),
        "qcov": qcov,
        "qcov_new": qcov_new,
        "ev_overlap": overlap,
        "rel_novel": (0.5 * sim_c + 0.5 * max(qcov, qcov_new)) * (1.0 - overlap),
        "edge_weight": _unit(trav.edge_weight),
        "view_match": match,
        "view_match_rel": match * max(sim_c, qcov),
        "view_semantic": 1.0 if trav.view == "semantic" else 0.0,
        "connected": 1.0 if {trav.source, trav.target} & ev.ids else 0.0,
        "ev_entity": containment(ents, ev.entities),
        "ev_support": containment(own, ev.tokens),
        "time_match": q.temporal * max(c.time_words, c.past_ref),
        "causal_match": q.causal * c.causal,
    }


def _stop(ev: _EvidenceView, state: StoppingState) -> dict[str, float]:
    depth, max_depth = float(state.depth), float(state.max_depth)
    q = ev.query
    ev_causal = max((c.causal for c in ev.cues), default=0.0)
    need_gap = min(1.0, q.temporal * (1.0 - ev.has_time()) + q.causal * (1.0 - ev_causal))
    top = ev.top_sim()
    return {
        "coverage": ev.coverage(),
        "top_sim": top,
        "top_sim_c": _centred(top, QUERY_SIM_FLOOR),
        "count": min(1.0, len(ev.items) / 5),
        "has_evidence": 1.0 if ev.items else 0.0,
        "depth_frac": min(1.0, max(0.0, depth / max_depth)) if max_depth > 0 else 1.0,
        "need_gap": need_gap,
        "contra": ev.contradiction(),
        "q_temporal": q.temporal,
        "q_causal": q.causal,
    }


class Features:
    """Per-batch feature cache over a typed state and its FeatureSource.

    One computation per (group, candidate index). A group that does not fit the state (a
    traversal question about a relation state) or an index outside the state's candidates is an
    ``InvalidInput``; so is any signal the source does not have.
    """

    def __init__(self, state: State, source: FeatureSource) -> None:
        self._state = state
        self._source = source
        self._cache: dict[tuple[str, int | None], Mapping[str, float]] = {}
        self._evidence: _EvidenceView | None = None

    @property
    def state(self) -> State:
        return self._state

    @property
    def source(self) -> FeatureSource:
        return self._source

    def get(self, group: str, target: int | None) -> Mapping[str, float]:
        key = (group, target if group in _PER_CANDIDATE else None)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._compute(group, key[1])
        return found

    def _ev(self, state: TraversalState | StoppingState) -> _EvidenceView:
        if self._evidence is None:
            self._evidence = _EvidenceView(state, self._source)
        return self._evidence

    def _compute(self, group: str, target: int | None) -> Mapping[str, float]:
        state = self._state
        match group, state:
            case "typing", TypingState():
                return _typing(state)
            case "pair", RelationState():
                cand = _at(state.candidates, target, "candidates")
                new_id = state.new_memory.id
                others = [
                    _unit(self._source.cosine(new_id, c.memory.id))
                    for i, c in enumerate(state.candidates)
                    if i != target
                ]
                return _pair(state.new_memory, cand, self._source, others)
            case "pair", ConsolidationState():
                pair = _at(state.pairs, target, "pairs")
                return _pair(pair.new_memory, pair.candidate, self._source)
            case "route", RoutingState() | TraversalState() | StoppingState():
                return _route(RoutingState(state.query))  # routing reads only the query
            case "traverse", TraversalState():
                return _traverse(self._ev(state), _at(state.candidates, target, "candidates"))
            case "stop", StoppingState():
                return _stop(self._ev(state), state)
            case "message", MessageState():
                return _clause(state, _at(state.clauses, target, "clauses"), target)
        raise InvalidInput(
            f"a {group} decision cannot be answered from a {type(state).__name__}",
            hint="ask each catalog family with the state of its purpose (dualmem.control.states)",
        )


def _clause(state: MessageState, clause: str, target: int | None) -> dict[str, float]:
    """The ``message`` group: a clause's cues (``dualmem.text.clauses.cues``) and its place."""
    c = clause_cues(clause)
    n = len(state.clauses)
    return {
        **_attrs(c, _CLAUSE_CUES),
        "first": float(target == 0),
        "last": float(target == n - 1),
        "only": float(n == 1),
    }


_T = TypeVar("_T")


def _at(items: Sequence[_T], target: int | None, name: str) -> _T:
    if target is None or not 0 <= target < len(items):
        raise InvalidInput(
            f"question targets {name} {target!r} but state has {len(items)} {name}",
            hint=f"set question.target to an index into state[{name!r}]",
        )
    return items[target]
