"""Explicit, immutable configuration: every threshold and budget lives in a ``Profile``.

``Profile.paper()`` is strictly the Jev-Mem paper's Appendix B: its numbers, and every dualmem
extension that the paper does not have switched off. The extensions are listed, with what each
does and its value in the paper profile, in one place: :data:`EXTENSIONS`. ``Profile.dualmem()``
(the dataclass defaults) is the paper's numbers with dualmem's extensions on. The switches that exist
to measure what a mechanism is worth (research, benchmarks), not to run a product, are apart:
:data:`ABLATIONS`; every preset leaves them on. One behaviour has one switch: read-time expansion is
``read.expansion`` (an empty ``read.views`` or ``read.fixed_depth=0`` used to turn it off too; both
still load, read as ``read.expansion=False`` with a ``DeprecationWarning``). Values returned by a
System-One backend are scores, not calibrated probabilities, so thresholds are set per backend:
``Profile.for_backend(name)`` gives the calibrated preset of a backend.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from dualmem._profile_json import profile_from_json, profile_to_json, read_profile, write_profile
from dualmem.control.calibration import Calibration
from dualmem.errors import ConfigError
from dualmem.types import VIEWS

__all__ = [
    "ABLATIONS",
    "CHANNEL_ROUTES",
    "EXTENSIONS",
    "READ_CHANNELS",
    "Lambdas",
    "Limits",
    "Profile",
    "ReadProfile",
    "WriteProfile",
    "checked_channels",
]

#: every Profile field that is dualmem's, not the paper's: what it does, and how Profile.paper()
#: neutralises it ("n/a" where the paper names the mechanism but gives no number, so there is
#: nothing to switch off and dualmem's value is used by both profiles)
EXTENSIONS: Mapping[str, str] = {
    "controller_timeout_s": "caller-side wall-clock bound per System-One request; paper: None (off)",
    "controller_cache": "LRU cache of System-One answers by exact batch content; paper: 0 (off)",
    "write.cand_vector": "weight of vector similarity in s_cand (eq. 8); paper: n/a (no weights given)",
    "write.cand_lexical": "weight of the lexical (BM25) rank in s_cand (eq. 8); paper: n/a",
    "write.cand_entity": "weight of shared entities in s_cand (eq. 8); paper: n/a",
    "write.cand_time": "weight of temporal proximity in s_cand (eq. 8); paper: n/a",
    "write.cand_pool": "per-signal shortlist size before s_cand fusion; paper: n/a",
    "write.cand_entity_share": "an entity in more than this share of the user's nodes is too common to "
    "seed candidates (bounded writes at scale); paper: n/a",
    "ann_threshold": "users with at least this many nodes get approximate vector search (the scale "
    "extra; exact numpy below it or without the extra); paper: n/a",
    "write.consolidation": "where periodic consolidation runs (background/inline/off); paper: n/a",
    "write.supersede_threshold": "consolidation marks an older fact superseded (valid_to + a "
    "superseded_by edge) when obsolescence or contradiction reaches it; paper: None (never; B.3 only "
    "records decisions and links)",
    "write.consolidation_window": "recent nodes examined per pass (the paper's 'bounded neighborhood'); "
    "paper: n/a",
    "write.consolidation_pairs": "candidate pairs per consolidation request; paper: n/a",
    "write.views": "the relation views whose edges the write path stores (deterministic temporal/entity "
    "edges, inferred edges, consolidation links) and whose relation questions it asks; superseded_by and "
    "derived_from edges are stored whatever it says (versions, history and forget follow them), and "
    "relation.supersedes is always asked; paper: all four",
    "write.entities": "entity extractor of new nodes: the regex heuristic, or spaCy (the spacy extra); "
    "paper: n/a (it uses entities but does not say how they are found)",
    "read.anchors": "pool candidates (by RRF, eq. 16) System One scores in the first round; None: the whole "
    "pool (the builtin decider, whose answers cost microseconds); paper: 10 (= W)",
    "read.hop_decay": "a node reached over edges scores x hop_decay per hop; paper: 1.0 (off)",
    "read.expansion_factor": "a round proposes up to expansion_factor x W neighbours, taken by the "
    "expansion prior pi_e x reach x p_g(q); paper: n/a",
    "read.prefer_current": "a superseded fact follows its current version (which takes at least its "
    "score) unless the query asks about the past, and a question about a known single-valued slot puts "
    "that slot's newest result first (read/versions.py); paper: False (off)",
    "read.superseded_factor": "see read.prefer_current: the factor of a superseded fact whose current "
    "version is out of reach (a filter) or of another slot than the query's; paper: unused",
    "read.likely_update": "with prefer_current, a result that the write path judged an update of another "
    "result (relation.supersedes at least this, below the write's own threshold) is ranked as its current "
    "version for this query when both state the same slot (text/slots.py); None: only written "
    "supersessions count; paper: n/a",
    "read.pair_cosine": "with prefer_current, two of a present-tense query's best results that state one "
    "fact (no known slot apart, embeddings at least this close, the newer saying that something changed: "
    "text/slots.py same_fact) are ranked newer first, the older right after; None: off; paper: n/a",
    "read.k_fill": "the K passed on are every scored candidate by its final score, then unscored pool "
    "candidates by RRF (read/scoring.py anchor_fill); paper: False (only scored candidates)",
    "read.pool": "N, the depth of each search of the candidate pool (vector, lexical as written and "
    "name-stripped, context); paper: n/a (the paper's anchors are the vector and lexical top lists)",
    "read.pool_window": "session neighbours either side added to the pool (dualmem.read.pool); paper: 0 "
    "would leave them out, dualmem's 2 is used by both profiles",
    "read.edges_per_node": "expansion reads only a beam node's strongest edges of the active views "
    "(by weight); paper: None (every edge, within the edge limit)",
    "read.expansion": "the one switch of graph expansion through the relation views at read time (new "
    "candidates join the pool and are scored by System One); paper: True",
    "read.channels": "retrieval channels of the views (dualmem.read.channels: temporal, entity, causal, "
    "semantic) that add their own candidates to the pool when the route's need for their view reaches "
    "theta_act; paper: n/a (its views only expand from anchors)",
    "read.channel_budget": "candidates the active channels may add together, split by the route's needs "
    "(eq. 13-14 over the channels); paper: n/a",
    "read.channel_route": "who routes the channels: 'fitted' (dualmem.read.channel_route, a logistic "
    "model per channel of whether it pays, fitted on the dev corpora) or 'builtin' (System One's "
    "route need against theta_act); paper: n/a",
}

#: the ablation switches: each turns a mechanism off (or pins it) to measure what it is worth; every
#: preset leaves it at the value named here, and a product profile has no reason to change it
ABLATIONS: Mapping[str, str] = {
    "read.controller_enabled": "False = plain RRF top-K, no System One at read time; presets: True",
    "read.fixed_depth": "run exactly this many expansion rounds (>= 1), ignoring D(q) and the stopping "
    "rule; presets: None (read.expansion=False is the no-expansion ablation)",
    "write.typing_enabled": "False = no System One node typing on write; presets: True",
    "write.relations_enabled": "False = no System One relation questions on write (deterministic edges "
    "only); presets: True",
}

#: the retrieval channels ``read.channels`` may name (``dualmem.read.channels``), each a view's
READ_CHANNELS: tuple[str, ...] = ("temporal", "entity", "causal", "semantic")
#: who may route the channels (``read.channel_route``)
CHANNEL_ROUTES: tuple[str, ...] = ("fitted", "builtin")


@dataclass(frozen=True, slots=True)
class WriteProfile:
    """Write path (§3.2, B.2) and consolidation (B.3)."""

    k_candidates: int = 10  # K_w
    theta_rel: float = 0.60  # an inferred edge needs P(g | v, u) >= theta_rel
    #: candidate discovery weights of s_cand (eq. 8): vector, lexical, shared entities, time proximity
    cand_vector: float = 1.0
    cand_lexical: float = 0.5
    cand_entity: float = 0.3
    cand_time: float = 0.2
    #: a candidate is linked semantically only above this cosine when discovered (cheap pre-filter)
    cand_pool: int = 30  # per-signal shortlist size before fusion
    #: an entity linked to more than this share of the user's nodes stops seeding candidates
    cand_entity_share: float = 0.10
    typing_enabled: bool = True  # ablation (see ABLATIONS)
    relations_enabled: bool = True  # ablation: False = controller off on write (deterministic edges only)
    consolidate_every: int = 20  # N successful writes per tenant; 0 disables
    #: "background": passes run on a worker thread and writes never wait; "inline": the write that
    #: reaches the period runs the pass; "off": only explicit ``Memory.consolidate`` calls
    consolidation: Literal["background", "inline", "off"] = "background"
    consolidation_gate: float = 0.85  # merge/promote probability needed to escalate to System Two
    contradiction_gate: float = 0.85  # contradiction must stay below this to escalate
    #: obsolescence/contradiction score that marks a fact superseded; None never supersedes (extension)
    supersede_threshold: float | None = 0.60
    consolidation_window: int = 20  # recent nodes examined per consolidation pass
    consolidation_pairs: int = 10  # max candidate pairs per consolidation request
    #: entity extractor of new nodes: "regex" (no model), "spacy" / "spacy:MODEL" (the spacy extra)
    entities: str = "regex"
    #: the views whose edges are stored (see EXTENSIONS); supersession and summary links always are
    views: tuple[str, ...] = VIEWS

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", _checked_views("write.views", self.views))


@dataclass(frozen=True, slots=True)
class Lambdas:
    """Weights of the transition score (eq. 23)."""

    similarity: float = 1.0  # lambda_1 * z_v
    relevance: float = 1.0  # lambda_2 * a_v
    relation: float = 1.0  # lambda_3 * p_g(q) * l_v
    novelty: float = 1.0  # lambda_4 * n_v
    support: float = 1.0  # lambda_5 * (pi_e + c_v) / 2

    def total(self) -> float:
        return self.similarity + self.relevance + self.relation + self.novelty + self.support


@dataclass(frozen=True, slots=True)
class Limits:
    """Independent hard limits of the evidence loop (B.5)."""

    max_depth: int = 8
    max_visited: int = 60  # nodes expansion may add beyond the first round's candidates
    max_edges: int = 2400
    max_controller_calls: int = 16
    time_budget_s: float = 15.0


@dataclass(frozen=True, slots=True)
class ReadProfile:
    """Read path (§3.3, B.4-B.5)."""

    budget: int = 80  # B, total graph-expansion budget
    theta_act: float = 0.10  # a view is active when p_g >= theta_act
    gamma: float = 1.0  # allocation exponent
    min_per_view: int = 1  # m
    beam: int = 10  # W
    #: pool candidates (best by RRF) scored in the first round; None: every pool candidate
    anchors: int | None = 30
    rrf_kappa: int = 60
    theta_suff: float = 0.95
    theta_cont: float = 0.15
    recency_weight: float = 0.1  # the 0.1 of eq. 25
    #: scores of nodes reached over an edge are multiplied by this once per hop (spreading
    #: activation decays); 1.0 is the paper's eq. 23-25 unchanged
    hop_decay: float = 1.0
    lambdas: Lambdas = field(default_factory=Lambdas)
    limits: Limits = field(default_factory=Limits)
    top_k: int = 10  # K memories passed to System Two
    controller_enabled: bool = True  # ablation: False = plain RRF top-K
    #: the views routing may activate and expansion may follow (empty: none; expansion is its own switch)
    views: tuple[str, ...] = VIEWS
    fixed_depth: int | None = None  # ablation: ignore D(q) and stopping, run exactly this many rounds
    prefer_current: bool = True  # superseded facts follow current ones unless the query asks history
    #: the factor a superseded fact's score is multiplied by when ``prefer_current`` (extension)
    superseded_factor: float = 0.5
    #: see ``EXTENSIONS["read.likely_update"]`` (``read.versions``); 0.4 was chosen on the agent
    #: chats' update questions with the notes held out (docs/benchmarks.md)
    likely_update: float | None = 0.4
    #: see ``EXTENSIONS["read.pair_cosine"]`` (``read.versions``); 0.5 chosen on the notes corpus's
    #: labelled pairs (``research.slot_agreement``), docs/current-facts.md
    pair_cosine: float | None = 0.5
    #: a round may propose up to ``expansion_factor`` x W neighbours for scoring (extension)
    expansion_factor: int = 2
    #: when the loop admitted fewer than K, fill the K with scored runners-up, then RRF anchors
    #: (extension; the paper passes only the admitted evidence)
    k_fill: bool = True
    pool: int = 50  # N: depth of each search of the pool
    pool_window: int = 2  # session neighbours either side
    #: expansion reads a beam node's strongest ``edges_per_node`` edges only (None: all of them)
    edges_per_node: int | None = 8
    #: read-time expansion through the views: the one switch that turns it off (see EXTENSIONS)
    expansion: bool = True
    #: retrieval channels that may run (``dualmem.read.channels``; see EXTENSIONS)
    channels: tuple[str, ...] = ()
    #: candidates the active channels may add together (see EXTENSIONS)
    channel_budget: int = 40
    #: who routes the channels: "fitted" or "builtin" (see EXTENSIONS)
    channel_route: str = "fitted"

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", _checked_views("read.views", self.views))
        object.__setattr__(self, "channels", checked_channels(self.channels))
        if self.channel_route not in CHANNEL_ROUTES:
            raise ConfigError(
                f"read.channel_route: unknown route {self.channel_route!r}",
                hint=f"use one of {CHANNEL_ROUTES}",
            )
        if self.fixed_depth == 0:
            _deprecated("read.fixed_depth=0 turns expansion off", "read.expansion=False")
            object.__setattr__(self, "fixed_depth", None)
            object.__setattr__(self, "expansion", False)
        if not self.views and self.expansion:
            _deprecated("an empty read.views turns expansion off", "read.expansion=False")
            object.__setattr__(self, "expansion", False)


def _deprecated(old: str, new: str) -> None:
    """The deprecation path of a second switch of one behaviour: it still works, read as ``new``."""
    warnings.warn(
        f"{old}: deprecated, read as {new}; set {new} in the profile (a later version reads the old form "
        "as its own setting only)",
        DeprecationWarning,
        stacklevel=4,
    )


def _expansion_given(read: ReadProfile, before: ReadProfile, changes: Mapping[str, object]) -> ReadProfile:
    """Views turned on in a profile that had none, expansion not named: expansion on, as when an empty
    ``read.views`` was what turned it off (deprecated: name ``read.expansion=True``)."""
    if before.views or not read.views or "expansion" in changes or read.expansion:
        return read
    _deprecated("turning read.views on turns expansion on", "read.expansion=True")
    return replace(read, expansion=True)


def checked_channels(channels: Iterable[str]) -> tuple[str, ...]:
    """``channels`` as a tuple of known channel names (a list is accepted; a string is an error)."""
    if isinstance(channels, str):
        raise ConfigError(f"read.channels is a list of channels, got the string {channels!r}")
    out = tuple(channels)
    unknown = sorted(set(out) - set(READ_CHANNELS))
    if unknown:
        raise ConfigError(
            f"read.channels: unknown channels {unknown}", hint=f"use some of {', '.join(READ_CHANNELS)}"
        )
    return out


def _checked_views(where: str, views: Iterable[str]) -> tuple[str, ...]:
    """``views`` as a tuple (a list given to ``Profile.with_`` is accepted), each a known view."""
    if isinstance(views, str):
        raise ConfigError(f"{where} is a list of views, got the string {views!r}")
    out = tuple(views)
    unknown = [v for v in out if v not in VIEWS]
    if unknown:
        raise ConfigError(f"{where}: unknown views {unknown}", hint=f"use some of {', '.join(VIEWS)}")
    return out


#: what ``Profile.named`` takes
PRESET_HINT = "use builtin, views, dualmem, paper, jev, llm, or a profile .json file"


@dataclass(frozen=True, slots=True)
class Profile:
    """All knobs of a memory. Build one with a preset and ``with_`` to change a field.

    ``calibration`` is the per-backend calibration of Noul scores (``dualmem calibrate-backend``):
    a memory opened with this profile applies it to its controller's answers (the controller must
    be the backend it was fitted for). ``to_json``/``from_json`` and ``save``/``load`` round-trip a
    profile, calibration included; ``Profile.named`` (and ``--profile``) take such a file's path.
    """

    name: str = "dualmem"
    controller_timeout_s: float | None = None  # caller-side wall-clock bound per System-One request
    controller_cache: int = 0  # > 0: LRU cache of that many System-One answers (repeated queries)
    #: a user with at least this many nodes gets approximate vector search; 0 = always exact
    ann_threshold: int = 20_000
    write: WriteProfile = field(default_factory=WriteProfile)
    read: ReadProfile = field(default_factory=ReadProfile)
    calibration: Calibration | None = None

    @classmethod
    def paper(cls) -> Profile:
        """Strictly Appendix B: its numbers, and every extension of :data:`EXTENSIONS` switched off."""
        return cls(
            name="paper",
            write=WriteProfile(supersede_threshold=None),
            read=ReadProfile(
                prefer_current=False,
                hop_decay=1.0,
                k_fill=False,
                edges_per_node=None,
                anchors=10,
                likely_update=None,
                pair_cosine=None,
            ),
        )

    @classmethod
    def dualmem(cls) -> Profile:
        """The paper's numbers with dualmem's extensions on (supersession at 0.60, prefer_current)."""
        return cls()

    @classmethod
    def builtin(cls) -> Profile:
        """Calibrated for the builtin feature decider (the read pipeline is every backend's).

        Its settings beyond :meth:`dualmem`: System One scores the whole pool in the first round
        (``read.anchors=None``: the builtin's answers cost microseconds), its candidate relevance
        (the learned scorer of ``dualmem calibrate``, answering ``traverse.relevance`` from the
        FeatureSource) is the whole transition score, λ = (0, 1, 0, 0, 0), since it already weighs
        similarity, lexical and context evidence; scores decay by 0.8 per hop; consolidation
        supersedes a fact only at 0.85 (its contradiction cues are crude); θ_suff/θ_cont are
        recalibrated paper thresholds (it rarely reports 0.95 sufficiency). It stores and reads no
        relation view (``write.views=()``, ``read.views=()``, ``read.expansion=False``: no edges written,
        no expansion): on the
        four dev corpora every view, alone or all together, left search results unchanged while
        costing write time and disk; ``superseded_by``/``derived_from`` edges are still written, and
        ``with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)`` opts back in.
        ``docs/benchmarks.md`` says how each was chosen.
        """
        return cls(
            name="builtin",
            write=WriteProfile(supersede_threshold=0.85, views=()),
            read=ReadProfile(
                views=(),
                expansion=False,
                theta_suff=0.80,
                theta_cont=0.25,
                anchors=None,
                hop_decay=0.8,
                lambdas=Lambdas(similarity=0.0, relevance=1.0, relation=0.0, novelty=0.0, support=0.0),
            ),
        )

    @classmethod
    def for_backend(cls, backend: str) -> Profile:
        presets = {"builtin": cls.builtin, "scripted": cls.dualmem, "jev": cls.dualmem, "llm": cls.dualmem}
        try:
            return presets[backend]()
        except KeyError:
            raise ConfigError(
                f"no profile preset for backend {backend!r}", hint=f"use one of {', '.join(presets)}"
            ) from None

    @classmethod
    def default_for(cls, backend: str) -> Profile:
        """The backend's calibrated preset, or the dualmem profile for a backend without one."""
        try:
            return cls.for_backend(backend)
        except ConfigError:
            return cls.dualmem()

    @classmethod
    def views(cls) -> Profile:
        """The default (:meth:`builtin`) with the paper's four relation views on: semantic, temporal,
        causal and entity edges written and expanded at read time, update detection kept (the
        :meth:`paper` preset has the views but turns dualmem's extensions, update detection among
        them, off). ``--profile views`` on the command line; a database whose memories were written
        without the views gets their edges with ``dualmem repair --views``."""
        base = cls.builtin()
        return base.with_(name="views", write__views=VIEWS, read__views=VIEWS, read__expansion=True)

    @classmethod
    def named(cls, name: str, *, base: Profile | None = None) -> Profile:
        """A preset by name (``builtin``, ``views``, ``dualmem``, ``paper``, or a backend's: ``jev``,
        ``llm``), or a profile file (a path ending in ``.json``; its missing settings from ``base``)."""
        if name.endswith(".json"):
            return cls.load(name, base=base)
        if name == "paper":
            return cls.paper()
        if name == "dualmem":
            return cls.dualmem()
        if name == "views":
            return cls.views()
        try:
            return cls.for_backend(name)
        except ConfigError:
            raise ConfigError(f"no profile preset {name!r}", hint=PRESET_HINT) from None

    def to_json(self) -> dict[str, Any]:
        return profile_to_json(self)

    @classmethod
    def from_json(cls, data: object, *, source: str = "profile", base: Profile | None = None) -> Profile:
        """Validate parsed JSON; ``ConfigError`` naming a bad field. Fields left out keep the value of
        the file's ``"base"`` preset when it names one, else of ``base``, else of :meth:`builtin` (the
        default profile of the default controller; ``dualmem._profile_json``)."""
        named = data.get("base") if isinstance(data, dict) else None
        if named is not None:
            if not isinstance(named, str) or named.endswith(".json"):
                raise ConfigError(f"{source}: base must name a preset, got {named!r}", hint=PRESET_HINT)
            base = cls.named(named)
        base = base if base is not None else cls.builtin()
        out = profile_from_json(cls, data, source=source, base=base)
        read = data.get("read") if isinstance(data, dict) else None
        if isinstance(read, dict):
            out = replace(out, read=_expansion_given(out.read, base.read, read))
        return out

    def save(self, path: str | Path) -> Path:
        return write_profile(self.to_json(), path)

    @classmethod
    def load(cls, path: str | Path, *, base: Profile | None = None) -> Profile:
        """A profile file (``save``'s); its missing settings from ``base`` (see :meth:`from_json`)."""
        return cls.from_json(read_profile(path), source=str(path), base=base)

    def with_(self, **changes: Any) -> Profile:
        """A copy with fields changed; nested sections by ``write=``/``read=`` or dotted ``read__beam=``."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in changes.items():
            section, _, name = key.partition("__")
            if name:
                nested.setdefault(section, {})[name] = value
            else:
                top[key] = value
        out = replace(self, **top) if top else self
        for section, values in nested.items():
            if section not in {f.name for f in fields(Profile)} or section == "name":
                raise ConfigError(f"unknown profile section {section!r}")
            before = getattr(out, section)
            try:
                after = replace(before, **values)
            except TypeError as exc:
                raise ConfigError(f"unknown profile setting in {section}: {exc}") from exc
            if section == "read":
                after = _expansion_given(after, before, values)
            out = replace(out, **{section: after})
        return out
