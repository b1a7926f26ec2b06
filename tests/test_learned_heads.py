"""Learned heads beyond candidate relevance: stop/routing heads, the abstention gate, graph reach."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController, LinearWeights, default_weights
from dualmem.control.questions import Batch
from dualmem.control.states import RoutingState
from dualmem.errors import ConfigError
from dualmem.learn.abstain import (
    ABSTAIN_FEATURES,
    AbstentionGate,
    GatedAnswerer,
    abstention_features,
    choose_threshold,
    fit_gate,
)
from dualmem.learn.heads import (
    MIN_POSITIVES,
    HeadExample,
    LearnedHeads,
    fit_heads,
    learned_weights,
    route_features,
    stop_features,
)
from dualmem.plane.memory import InMemoryStore
from dualmem.read.reach import REACH_FEATURES, reach_features, reach_links
from dualmem.reason.base import Draft
from dualmem.reason.extractive import ExtractiveAnswerer
from dualmem.types import EDGE_LABELS, Edge, Evidence, Node, Tenant

T = Tenant("u")
LABELS = {view: sorted(labels)[0] for view, labels in EDGE_LABELS.items()}


def _node(i: str, content: str, speaker: str | None = None) -> Node:
    return Node(id=i, tenant=T, content=content, at=dt.datetime(2024, 5, 1, tzinfo=dt.UTC), speaker=speaker)


# -- stop and routing heads ---------------------------------------------------------------------------


def test_stop_and_route_features_come_from_the_typed_state() -> None:
    ev = [(_node("a", "Mira: I adopted a dog named Pepper."), 0.8, 0.0)]
    f = stop_features("What dog has Mira adopted?", ev, max_depth=2)
    assert f["has_evidence"] == 1.0
    assert f["coverage"] > 0.0
    assert 0.0 <= f["top_sim"] <= 1.0
    assert stop_features("What dog has Mira adopted?", [], max_depth=2)["has_evidence"] == 0.0
    assert (
        route_features("When did Mira adopt the dog?")["temporal"] > route_features("What dog?")["temporal"]
    )


def _examples(n: int, rng: np.random.Generator) -> list[HeadExample]:
    out = []
    for _ in range(n):
        coverage, temporal = float(rng.random()), float(rng.integers(0, 2))
        stop = dict.fromkeys(
            ("coverage", "top_sim", "top_sim_c", "count", "has_evidence", "depth_frac", "need_gap", "contra",
             "q_temporal", "q_causal"), 0.0,
        )  # fmt: skip
        stop["coverage"] = coverage
        route = dict.fromkeys(route_features("x"), 0.0)
        route["temporal"] = temporal
        targets = {
            "stop.evidence_sufficient": coverage + 0.2 * float(rng.normal()) > 0.5,
            "route.temporal": temporal + 0.3 * float(rng.normal()) > 0.5,
            "route.causal": False,  # never pays: no head can be learned
        }
        out.append(HeadExample("g", {"stop": stop, "route": route}, targets))
    return out


def test_fit_heads_learns_what_the_labels_say_and_declines_unsupported_heads(tmp_path: Path) -> None:
    heads = fit_heads(_examples(400, np.random.default_rng(0)), keys=("stop.evidence_sufficient",
                      "route.temporal", "route.causal"), provenance={"data": "synthetic"})  # fmt: skip
    assert set(heads.decisions) == {"stop.evidence_sufficient", "route.temporal"}
    assert dict(heads.decisions["stop.evidence_sufficient"].weights)["coverage"] > 1.0
    assert dict(heads.decisions["route.temporal"].weights)["temporal"] > 1.0
    assert "route.causal" in heads.unsupported
    assert str(MIN_POSITIVES) in heads.unsupported["route.causal"]
    path = tmp_path / "heads.json"
    heads.save(path)
    again = LearnedHeads.from_file(path)
    assert set(again.decisions) == set(heads.decisions)
    assert again.provenance == {"data": "synthetic"}
    assert again.unsupported == heads.unsupported


def test_learned_heads_replace_only_their_decisions_in_the_builtin() -> None:
    heads = LearnedHeads({"route.temporal": LinearWeights(-3.0, (("temporal", 6.0),))})
    weights = learned_weights(heads)
    assert weights.decisions["route.temporal"] == heads.decisions["route.temporal"]
    assert weights.decisions["route.causal"] == default_weights().decisions["route.causal"]
    learned, hand = BuiltinController(weights=weights), BuiltinController()
    batch = Batch.of(RoutingState("When did Mira move?"), catalog.routing_questions(), "routing")
    a, b = learned.decide(batch), hand.decide(batch)
    assert a.noul("temporal") != b.noul("temporal")
    assert a.noul("causal") == b.noul("causal")


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"format": "x"}, "dualmem.heads/1"),
        (
            {"format": "dualmem.heads/1", "decisions": {"route.temporal": {"weights": {"nope": 1.0}}}},
            "unknown",
        ),
        (
            {"format": "dualmem.heads/1", "decisions": {"traverse.relevance": {"bias": 1.0}}},
            "no learned head",
        ),
    ],
)
def test_bad_heads_files_are_config_errors(doc: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        LearnedHeads.from_json(doc)


# -- abstention -----------------------------------------------------------------------------------------


def _ev(content: str, speaker: str, score: float = 0.5) -> Evidence:
    return Evidence(_node(content[:8], content, speaker), score)


def test_abstention_features_see_who_the_evidence_is_about() -> None:
    evidence = [_ev("Mira: I adopted a dog named Pepper.", "Mira"), _ev("Jon: Tea is nice.", "Jon")]
    answered = ExtractiveAnswerer().answer("What dog has Mira adopted?", evidence)
    f = abstention_features("What dog has Mira adopted?", evidence, answered)
    assert set(f) == set(ABSTAIN_FEATURES)
    assert f["named_top"] == 1.0
    assert f["named_used"] == 1.0
    assert f["draft_abstained"] == 0.0
    assert f["cover_used"] == 1.0
    assert f["rank_used"] == 1.0
    wrong = abstention_features("What dog has Jon adopted?", evidence, ExtractiveAnswerer().answer(
        "What dog has Jon adopted?", evidence))  # fmt: skip
    assert wrong["named_top"] == 0.0
    assert wrong["named_used"] == 0.0
    absent = abstention_features("What dog has Zelda adopted?", evidence, Draft("x", abstained=False))
    assert absent["named_absent"] == 1.0
    assert absent["names"] == 0.0


def test_choose_threshold_trades_correct_for_false_abstention() -> None:
    probs = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
    decline = [True, True, False, True, False, False, False, False]
    assert choose_threshold(probs, decline) == pytest.approx(0.6)
    assert choose_threshold(probs, decline, max_false=0.0) == pytest.approx(0.8)
    assert choose_threshold([0.5], [True]) == 1.0


def test_the_gate_is_fitted_and_wraps_an_answerer(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    rows, decline = [], []
    for _ in range(300):
        adv = bool(rng.random() < 0.3)
        row = dict.fromkeys(ABSTAIN_FEATURES, 0.0)
        row["named_used"] = float((not adv) ^ (rng.random() < 0.1))
        row["cover_used"] = float(rng.random())
        rows.append(row)
        decline.append(adv)
    gate = fit_gate(rows, decline)
    assert dict(zip(gate.features, gate.weights, strict=True))["named_used"] < -1.0
    path = tmp_path / "gate.json"
    path.write_text(json.dumps(gate.to_json()), encoding="utf-8")
    assert AbstentionGate.from_file(path).threshold == pytest.approx(gate.threshold, abs=1e-6)
    evidence = [_ev("Mira: I adopted a dog named Pepper.", "Mira"), _ev("Jon: Tea is nice.", "Jon")]
    gated = GatedAnswerer(ExtractiveAnswerer(), gate)
    assert gated.name == "extractive+gate"
    assert not gated.answer("What dog has Mira adopted?", evidence).abstained
    assert gated.answer("What dog has Jon adopted?", evidence).abstained  # the answer is Mira's, not Jon's
    with pytest.raises(ConfigError):
        AbstentionGate(("nope",), (1.0,), 0.0, 0.5)
    with pytest.raises(ConfigError):
        AbstentionGate(("names",), (1.0,), 0.0, 1.5)


# -- graph reach ------------------------------------------------------------------------------------------


def test_reach_features_follow_the_views_from_the_top_anchors() -> None:
    store = InMemoryStore()
    unit = np.ones(4, dtype=np.float32) / 2.0
    nodes = [dataclasses.replace(_node(f"n{i}", f"turn {i}"), embedding=unit) for i in range(4)]
    store.put_nodes(nodes)
    store.put_edges(
        [Edge("n0", "n2", "entity", LABELS["entity"], 0.5), Edge("n3", "n1", "temporal", LABELS["temporal"])]
    )
    ids = [n.id for n in nodes]
    links = reach_links(store, ids, range(len(ids)), ("semantic", "temporal", "causal", "entity"))
    logits = np.array([3.0, 2.0, -1.0, -2.0])
    x = reach_features(logits, links, anchors=1)
    assert x.shape == (4, len(REACH_FEATURES))
    assert list(x[:, 0]) == list(logits)
    col = {f: i for i, f in enumerate(REACH_FEATURES)}
    assert x[2, col["via_entity"]] == pytest.approx(0.5)  # from the top anchor n0
    assert x[3, col["via_temporal"]] == 0.0  # n1 -> n3 exists, but n1 is not among the top 1
    x2 = reach_features(logits, links, anchors=2)
    assert 0.0 < x2[3, col["via_temporal"]] < 1.0  # reached from n1, scaled by its relevance
