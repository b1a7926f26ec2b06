"""The builtin feature-based System-One decider (dualmem.control.builtin)."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from control_support import BOUGHT, BROKE, QUESTION, T1, T2, wire_memory
from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController, BuiltinWeights, default_weights
from dualmem.control.questions import (
    Batch,
    BatchResult,
    Choice,
    ChoiceAnswer,
    Controller,
    Noul,
    NoulAnswer,
    Question,
    Score,
    validate_result,
)
from dualmem.errors import ConfigError, InvalidInput, UnknownDecision

M1 = wire_memory("m1", f"Mira: {BROKE}", T1, ["mira", "bicycle"])
M2 = wire_memory("m2", f"Mira: {BOUGHT}", T2, ["mira", "bicycle"])
M3 = wire_memory(
    "m3",
    "Mira: I had pasta with Tom for dinner.",
    dt.datetime(2024, 5, 10, 19, tzinfo=dt.UTC),
    ["mira", "pasta", "tom"],
)
QUERY = QUESTION


def mem(memory: dict[str, Any]) -> dict[str, Any]:
    """A complete memory object (B.1): the fields a test leaves out get their empty values."""
    return {"timestamp": None, "entities": [], **memory}


def pair_cand(memory: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {
        "similarity": 0.5,
        "lexical_overlap": 0.1,
        "shared_entities": [],
        "time_delta_days": None,
        "same_session": False,
    }
    return {**mem(memory), **base, **fields}


def pair_state(new: dict[str, Any], *cands: dict[str, Any]) -> dict[str, Any]:
    return {"new_memory": mem(new), "candidates": list(cands)}


def pairs_state(new: dict[str, Any], *cands: dict[str, Any]) -> dict[str, Any]:
    """A consolidation state: one (new_memory, candidate) entry per pair."""
    return {"pairs": [{"new_memory": mem(new), "candidate": c} for c in cands]}


def mira_pair_state() -> dict[str, Any]:
    return pair_state(
        M2,
        pair_cand(
            M1,
            similarity=0.93,  # all-MiniLM-L6-v2 cosine of the two contents
            lexical_overlap=0.43,
            shared_entities=["bicycle", "mira"],
            time_delta_days=2.0,
        ),
        pair_cand(M3, similarity=0.42, lexical_overlap=0.0, shared_entities=["mira"], time_delta_days=6.0),
    )


def evidence(memory: dict[str, Any], similarity: float) -> dict[str, Any]:
    return {
        **mem(memory),
        "similarity": similarity,
        "lexical_overlap": 0.2,
        "timestamp_role": "observation_time",
        "temporal_references": [],
    }


def traversal_state() -> dict[str, Any]:
    def cand(memory: dict[str, Any], view: str, source: str, target: str, sim: float) -> dict[str, Any]:
        return {
            **memory,
            "view": view,
            "label": "causes" if view == "causal" else "related",
            "source": source,
            "target": target,
            "edge_weight": 0.9,
            "similarity": sim,
            "lexical_overlap": 0.3,
        }

    return {
        "query": QUERY,
        "evidence": [evidence(M1, 0.73)],
        "candidates": [cand(M2, "causal", "m1", "m2", 0.73), cand(M3, "temporal", "m3", "m1", 0.34)],
    }


def stop_state(items: list[dict[str, Any]], *, depth: int = 1, query: str = QUERY) -> dict[str, Any]:
    return {"query": query, "evidence": items, "depth": depth, "max_depth": 8}


def every_batch() -> list[Batch]:
    relation_qs: dict[str, Question] = {}
    consolidation_qs: dict[str, Question] = {}
    traversal_qs: dict[str, Question] = {}
    for i in range(2):
        relation_qs |= catalog.relation_questions(i, alias=True, implicit_time=True)
        consolidation_qs |= catalog.consolidation_questions(i)
        traversal_qs |= catalog.traversal_questions(i)
    return [
        Batch(
            state={"observation": M2["content"], "speaker": "Mira", "timestamp": None},
            questions=catalog.typing_questions(),
        ),
        Batch(state=mira_pair_state(), questions=relation_qs),
        Batch(state={"query": QUERY}, questions=catalog.routing_questions()),
        Batch(state=traversal_state(), questions=traversal_qs),
        Batch(
            state=stop_state([evidence(M1, 0.73), evidence(M2, 0.73)]), questions=catalog.stopping_questions()
        ),
        Batch(state=pairs_state(M2, *mira_pair_state()["candidates"]), questions=consolidation_qs),
        Batch(
            state={
                "message": "Hi! Where did I move to? Thanks!",
                "clauses": ["Hi!", "Where did I move to?", "Thanks!"],
            },
            questions=catalog.message_questions(3),
        ),
    ]


def decide(state: dict[str, Any], questions: dict[str, Question]) -> BatchResult:
    batch = Batch(state=state, questions=questions)
    return validate_result(batch, BuiltinController().decide(batch), "builtin")


def test_is_a_controller_named_builtin() -> None:
    controller = BuiltinController()
    assert isinstance(controller, Controller)
    assert controller.name == "builtin"


def test_answers_every_catalog_decision_with_valid_values() -> None:
    seen: set[str] = set()
    for batch in every_batch():
        result = validate_result(batch, BuiltinController().decide(batch), "builtin")
        assert set(result.answers) == set(batch.questions)
        for name, question in batch.questions.items():
            seen.add(question.key)
            answer = result.answers[name]
            if isinstance(question, Choice):
                assert isinstance(answer, ChoiceAnswer)
                assert math.isclose(sum(answer.distribution.values()), 1.0, abs_tol=1e-9)
                assert list(answer.distribution) == list(question.labels)
                assert answer.probability == max(answer.distribution.values())
            else:
                assert isinstance(answer, NoulAnswer)
                assert 0.0 < answer.score < 1.0
    assert seen == catalog.DECISION_KEYS


def test_default_weights_cover_every_decision_key() -> None:
    weights = default_weights()
    assert set(weights.decisions) | set(weights.choices) == catalog.DECISION_KEYS
    assert set(weights.choices) == {"relation.time", "consolidate.representation", "message.clause"}
    assert {label for label, _ in weights.choices["message.clause"].labels} == set(catalog.CLAUSE_LABELS)
    assert {label for label, _ in weights.choices["relation.time"].labels} == set(catalog.TIME_RELATIONS)
    assert {label for label, _ in weights.choices["consolidate.representation"].labels} == set(
        catalog.REPRESENTATIONS
    )
    assert default_weights() is weights  # read once


def test_paper_running_example_relations() -> None:
    result = decide(mira_pair_state(), catalog.relation_questions(0, alias=False, implicit_time=False))
    assert result.noul("pair_0_caused_by") >= 0.6
    assert result.noul("pair_0_causes") < 0.6
    assert result.noul("pair_0_semantic") >= 0.6
    assert result.noul("pair_0_same_episode") < 0.6  # two days apart, different sessions


def test_unrelated_candidate_gets_no_relation() -> None:
    result = decide(mira_pair_state(), catalog.relation_questions(1, alias=True, implicit_time=False))
    for name in (
        "pair_1_semantic",
        "pair_1_caused_by",
        "pair_1_causes",
        "pair_1_same_episode",
        "pair_1_alias",
    ):
        assert result.noul(name) < 0.6, name


def test_causes_when_the_candidate_gives_the_new_memory_as_its_reason() -> None:
    new = {**M1, "content": "Sam: My car broke down.", "timestamp": None, "entities": ["sam", "car"]}
    later = {
        "id": "c",
        "content": "Sam: I took the bus to work because my car broke down.",
        "timestamp": None,
    }
    state = pair_state(new, pair_cand(later, similarity=0.87, lexical_overlap=0.5, time_delta_days=-1.0))
    result = decide(state, catalog.relation_questions(0, alias=False, implicit_time=False))
    assert result.noul("pair_0_causes") >= 0.6
    assert result.noul("pair_0_caused_by") < 0.6


def test_same_episode_in_one_session() -> None:
    new = {"id": "b", "content": "Sam: We ordered pizza after the movie.", "timestamp": None}
    cand = {"id": "a", "content": "Sam: The movie was great, we watched it at the Odeon.", "timestamp": None}
    state = pair_state(
        new, pair_cand(cand, similarity=0.6, lexical_overlap=0.29, time_delta_days=0.02, same_session=True)
    )
    result = decide(state, catalog.relation_questions(0, alias=False, implicit_time=False))
    assert result.noul("pair_0_same_episode") >= 0.6


def test_alias_for_variant_names() -> None:
    new = {"id": "b", "content": "Sam: Liz called about the NYC trip.", "entities": ["sam", "liz", "nyc"]}
    cand = {
        "id": "a",
        "content": "Sam: Elizabeth booked flights to New York City.",
        "entities": ["sam", "elizabeth", "new york city"],
    }
    other = {"id": "x", "content": "Sam: Bob fixed the sink.", "entities": ["sam", "bob", "sink"]}
    state = pair_state(new, pair_cand(cand, similarity=0.76), pair_cand(other, similarity=0.37))
    qs = catalog.relation_questions(0, alias=True, implicit_time=False)
    qs |= catalog.relation_questions(1, alias=True, implicit_time=False)
    result = decide(state, qs)
    assert result.noul("pair_0_alias") >= 0.6
    assert result.noul("pair_1_alias") < 0.6


def test_implicit_time_choice_reads_time_expressions() -> None:
    new = {"id": "b", "content": "Sam: Last year I lived in Boston.", "timestamp": None}
    cand = {"id": "a", "content": "Sam: I am moving to Denver next month.", "timestamp": None}
    plain = {"id": "c", "content": "Sam: The sky is blue.", "timestamp": None}
    state = pair_state(new, pair_cand(cand, similarity=0.65), pair_cand(plain, similarity=0.52))
    qs = catalog.relation_questions(0, alias=False, implicit_time=True)
    qs |= catalog.relation_questions(1, alias=False, implicit_time=True)
    result = decide(state, qs)
    assert result.choice("pair_0_time").label == "after"
    assert result.choice("pair_1_time").label == "unknown"
    flipped = decide(
        pair_state(cand, pair_cand(new, similarity=0.65)),
        catalog.relation_questions(0, alias=False, implicit_time=True),
    )
    assert flipped.choice("pair_0_time").label == "before"


def test_routing_sanity() -> None:
    both = decide({"query": QUERY}, catalog.routing_questions())
    assert both.noul("temporal") >= 0.5
    assert both.noul("causal") >= 0.5
    assert both.noul("entity") >= 0.5
    assert both.noul("semantic") >= 0.5
    food = decide({"query": "What is Mira's favourite food?"}, catalog.routing_questions())
    assert food.noul("causal") < 0.3
    assert food.noul("temporal") < 0.3
    assert food.noul("entity") >= 0.5
    assert food.noul("semantic") >= 0.5
    assert food.noul("multi_hop_need") < both.noul("multi_hop_need")
    why = decide({"query": "Why did Melanie start painting?"}, catalog.routing_questions())
    assert why.noul("causal") >= 0.5 > why.noul("temporal")
    now = decide({"query": "Where does Jon currently work?"}, catalog.routing_questions())
    assert now.noul("recency_importance") >= 0.5 > food.noul("recency_importance")
    several = decide({"query": "What do Caroline and Melanie both enjoy?"}, catalog.routing_questions())
    assert several.noul("multi_hop_need") >= 0.5


@pytest.mark.parametrize(
    ("text", "high", "low"),
    [
        (M2["content"], "episodic", "procedural"),
        ("Mira: I love sushi, it's my favourite food.", "preference", "procedural"),
        ("Jon: I usually go running every morning.", "preference", "procedural"),
        ("To make pancakes, first mix flour and eggs, then fry them.", "procedural", "preference"),
        ("Paris is the capital of France.", "semantic", "episodic"),
    ],
)
def test_typing_sanity(text: str, high: str, low: str) -> None:
    result = decide({"observation": text, "speaker": None, "timestamp": None}, catalog.typing_questions())
    assert result.noul(high) >= 0.5
    assert result.noul(low) < 0.5


def test_traversal_prefers_the_answer_bearing_candidate() -> None:
    qs = catalog.traversal_questions(0) | catalog.traversal_questions(1)
    result = decide(traversal_state(), qs)
    for decision in ("relevance", "relation_usefulness", "new_information"):
        assert result.noul(f"candidate_0_{decision}") >= 0.6, decision
        assert result.noul(f"candidate_1_{decision}") < 0.6, decision
    assert result.noul("candidate_0_supports_current_evidence") > result.noul(
        "candidate_1_supports_current_evidence"
    )


def test_candidate_already_in_evidence_adds_no_new_information() -> None:
    state = traversal_state()
    state["evidence"] = [evidence(M1, 0.73), evidence(M2, 0.73)]
    result = decide(state, catalog.traversal_questions(0))
    assert result.noul("candidate_0_new_information") < 0.3


def test_stopping_tracks_evidence_coverage_and_depth() -> None:
    qs = catalog.stopping_questions()
    empty = decide(stop_state([], depth=0), qs)
    partial = decide(stop_state([evidence(M1, 0.73)]), qs)
    full = decide(stop_state([evidence(M1, 0.73), evidence(M2, 0.73)]), qs)
    assert (
        empty.noul("evidence_sufficient")
        < partial.noul("evidence_sufficient")
        < full.noul("evidence_sufficient")
    )
    assert full.noul("evidence_sufficient") >= 0.8
    assert empty.noul("missing_evidence") > partial.noul("missing_evidence") > full.noul("missing_evidence")
    assert full.noul("missing_evidence") < 0.15
    assert partial.noul("continue_useful") > full.noul("continue_useful")
    assert full.noul("contradiction") < 0.15
    deep = decide(stop_state([evidence(M1, 0.73)], depth=8), qs)
    assert deep.noul("continue_useful") < partial.noul("continue_useful")


def test_stopping_sees_a_contradiction() -> None:
    love = {"id": "a", "content": "Sam: I love sushi.", "timestamp": None}
    quit_ = {"id": "b", "content": "Sam: I no longer eat sushi.", "timestamp": None}
    result = decide(
        stop_state([evidence(love, 0.87), evidence(quit_, 0.8)], query="Does Sam like sushi?"),
        catalog.stopping_questions(),
    )
    assert result.noul("contradiction") >= 0.5


def test_consolidation_sanity() -> None:
    love = {"id": "a", "content": "Sam: I love sushi.", "entities": ["sam", "sushi"]}
    quit_ = {"id": "b", "content": "Sam: I no longer eat sushi.", "entities": ["sam", "sushi"]}
    again = {"id": "c", "content": "Sam: I love sushi so much.", "entities": ["sam", "sushi"]}
    rain = {"id": "d", "content": "Sam: Lots of rain today.", "entities": ["sam"]}
    state = pairs_state(
        quit_,
        pair_cand(love, similarity=0.88, lexical_overlap=0.4, time_delta_days=30.0),
        pair_cand(again, similarity=0.87, lexical_overlap=0.4, time_delta_days=20.0),
        pair_cand(rain, similarity=0.45, lexical_overlap=0.14, time_delta_days=1.0),
    )
    qs: dict[str, Question] = {}
    for i in range(3):
        qs |= catalog.consolidation_questions(i)
    result = decide(state, qs)
    assert result.noul("pair_0_contradiction") >= 0.6
    assert result.noul("pair_0_obsolescence") >= 0.6
    assert result.noul("pair_0_redundancy") < 0.3
    assert result.choice("pair_0_representation").label == "keep_separate"
    assert result.noul("pair_2_link_usefulness") < 0.3
    assert result.noul("pair_2_contradiction") < 0.3
    dup = pairs_state(love, pair_cand(again, similarity=0.99, lexical_overlap=1.0, time_delta_days=3.0))
    dup_result = decide(dup, catalog.consolidation_questions(0))
    assert dup_result.noul("pair_0_redundancy") >= 0.8
    assert dup_result.choice("pair_0_representation").label == "merge"
    run_new = {"id": "e", "content": "Sam: I went running in the park again this morning."}
    run_old = {"id": "f", "content": "Sam: I went running in the park."}
    habit = pairs_state(
        run_new, pair_cand(run_old, similarity=0.95, lexical_overlap=0.8, time_delta_days=7.0)
    )
    assert (
        decide(habit, catalog.consolidation_questions(0)).choice("pair_0_representation").label == "promote"
    )


def answers_by_key(batch: Batch) -> dict[tuple[str, int | None], object]:
    result = BuiltinController().decide(batch)
    return {(q.key, q.target): result.answers[name] for name, q in batch.questions.items()}


def test_answers_do_not_depend_on_names_order_or_other_questions() -> None:
    rng = random.Random(7)
    for batch in every_batch():
        reference = answers_by_key(batch)
        items = list(batch.questions.items())
        rng.shuffle(items)
        renamed = {f"q{rng.randrange(10**9)}_{k}": q for k, q in items}
        assert answers_by_key(Batch(state=batch.state, questions=renamed)) == reference
        for name, question in items:  # each question alone
            alone = BuiltinController().decide(Batch(state=batch.state, questions={"x": question}))
            assert alone.answers["x"] == reference[(question.key, question.target)], name
        extra = dict(renamed) | {f"again_{k}": q for k, q in items}
        if "query" in batch.state:
            extra |= catalog.routing_questions()
        with_extra = answers_by_key(Batch(state=batch.state, questions=extra))
        assert {k: v for k, v in with_extra.items() if k in reference} == reference


def test_answers_ignore_question_text() -> None:
    q = catalog.routing_questions()["temporal"]
    assert isinstance(q, Noul)
    reworded = Noul(key=q.key, instructions="Is time involved in query?", true="yes", false="no")
    original = decide({"query": QUERY}, {"a": q}).noul("a")
    assert decide({"query": QUERY}, {"a": reworded}).noul("a") == original


def test_unknown_decision_key_is_refused_with_a_hint() -> None:
    batch = Batch(
        state={"query": QUERY},
        questions={"x": Noul(key="route.vibes", instructions="query?", true="t", false="f")},
    )
    with pytest.raises(UnknownDecision) as info:
        BuiltinController().decide(batch)
    assert "route.vibes" in str(info.value)
    assert info.value.hint
    odd = Batch(
        state={"query": QUERY}, questions={"x": Noul(key="vibes", instructions="query?", true="t", false="f")}
    )
    with pytest.raises(UnknownDecision):
        BuiltinController().decide(odd)


def test_wrong_question_kind_or_labels_are_refused() -> None:
    score = Score(key="route.temporal", instructions="query?", levels=("low", "high"))
    with pytest.raises(UnknownDecision):
        BuiltinController().decide(Batch(state={"query": QUERY}, questions={"x": score}))
    as_choice = Choice(key="route.temporal", instructions="query?", options=(("a", "A"), ("b", "B")))
    with pytest.raises(UnknownDecision):
        BuiltinController().decide(Batch(state={"query": QUERY}, questions={"x": as_choice}))
    time_q = catalog.relation_questions(0, alias=False, implicit_time=True)["pair_0_time"]
    assert isinstance(time_q, Choice)
    fewer = Choice(key=time_q.key, instructions=time_q.instructions, options=time_q.options[:3], target=0)
    with pytest.raises(UnknownDecision):
        BuiltinController().decide(Batch(state=mira_pair_state(), questions={"x": fewer}))


def test_candidate_target_must_exist() -> None:
    qs = catalog.traversal_questions(5)
    with pytest.raises(InvalidInput):
        BuiltinController().decide(Batch(state=traversal_state(), questions=qs))
    untargeted = Noul(key="traverse.relevance", instructions="query?", true="t", false="f")
    with pytest.raises(InvalidInput):
        BuiltinController().decide(Batch(state=traversal_state(), questions={"x": untargeted}))


def test_missing_state_fields_are_errors_not_zeros() -> None:
    """A state without a field its purpose needs is refused, naming the field (never read as 0)."""
    bare = {"new_memory": {"content": "I broke my arm."}, "candidates": [{"content": "I fell off my bike."}]}
    relation_qs = catalog.relation_questions(0, alias=True, implicit_time=True)
    with pytest.raises(InvalidInput, match="id"):
        BuiltinController().decide(Batch(state=bare, questions=relation_qs))
    no_sim = pair_state(M2, {k: v for k, v in pair_cand(M1).items() if k != "similarity"})
    with pytest.raises(InvalidInput, match="similarity"):
        BuiltinController().decide(Batch(state=no_sim, questions=relation_qs))
    for state, qs, field in [
        ({}, catalog.routing_questions(), "query"),
        ({"query": "why?"}, catalog.stopping_questions(), "evidence"),
        ({"query": "why?", "evidence": [], "depth": 1}, catalog.stopping_questions(), "max_depth"),
        ({}, catalog.typing_questions(), "observation"),
    ]:
        with pytest.raises(InvalidInput, match=field):
            BuiltinController().decide(Batch(state=state, questions=qs))


def minimal_weights(**decisions: Any) -> dict[str, Any]:
    return {"version": "1", "decisions": decisions}


def test_custom_weights_are_used() -> None:
    weights = BuiltinWeights.from_json(
        minimal_weights(**{"route.temporal": {"bias": 1.0, "weights": {"temporal": 2.0}}})
    )
    controller = BuiltinController(weights=weights)
    q = catalog.routing_questions()["temporal"]
    when = controller.decide(Batch(state={"query": "When?"}, questions={"t": q})).noul("t")
    what = controller.decide(Batch(state={"query": "What?"}, questions={"t": q})).noul("t")
    assert math.isclose(when, 1 / (1 + math.exp(-3.0)))
    assert math.isclose(what, 1 / (1 + math.exp(-1.0)))
    with pytest.raises(UnknownDecision):
        controller.decide(Batch(state={"query": "When?"}, questions=catalog.routing_questions()))


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"version": "2", "decisions": {}},
        {"decisions": {}},
        {"version": "1", "decisions": {}, "extra": 1},
        minimal_weights(**{"route.temporal": {"bias": "high"}}),
        minimal_weights(**{"route.temporal": {"bias": float("nan")}}),
        minimal_weights(**{"route.temporal": {"bias": True}}),
        minimal_weights(**{"route.temporal": {"bias": 0, "weights": {"no_such_feature": 1}}}),
        minimal_weights(**{"route.temporal": {"bias": 0, "weights": {"sim": 1}}}),  # a pair feature
        minimal_weights(**{"route.temporal": {"bias": 0, "weight": {}}}),
        minimal_weights(**{"vibes.temporal": {"bias": 0}}),
        minimal_weights(**{"route.temporal": [1, 2]}),
        {"version": "1", "decisions": {}, "choices": {"relation.time": {}}},
        {"version": "1", "decisions": {}, "choices": {"relation.time": {"before": {"bias": "x"}}}},
        {
            "version": "1",
            "decisions": {"relation.time": {"bias": 0}},
            "choices": {"relation.time": {"before": {"bias": 0}}},
        },
    ],
)
def test_invalid_weights_raise_config_error(data: object) -> None:
    with pytest.raises(ConfigError):
        BuiltinWeights.from_json(data)


def test_weights_file_round_trip_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "w.json"
    good.write_text(json.dumps(minimal_weights(**{"stop.contradiction": {"bias": -1.0}})), encoding="utf-8")
    assert set(BuiltinWeights.from_file(good).decisions) == {"stop.contradiction"}
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.json"):
        BuiltinWeights.from_file(broken)
    with pytest.raises(ConfigError):
        BuiltinWeights.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(minimal_weights(**{"stop.contradiction": {"bias": -1.0, "weights": {"x": 1}}})))
    with pytest.raises(ConfigError, match=r"stop\.contradiction"):
        BuiltinWeights.from_file(bad)


def test_weights_are_immutable() -> None:
    weights = default_weights()
    with pytest.raises(TypeError):
        weights.decisions["route.temporal"] = weights.decisions["route.causal"]  # type: ignore[index]


def test_every_declared_feature_is_computed() -> None:
    """The weights file is validated against GROUPS, so GROUPS must be exactly what is computed."""
    from dualmem.control.builtin import features_of
    from dualmem.control.builtin_features import GROUPS, group_of

    seen: set[str] = set()
    for batch in every_batch():
        features = features_of(batch)
        for question in batch.questions.values():
            group = group_of(question.key)
            assert group is not None
            values = features.get(group, question.target)
            assert set(values) == GROUPS[group], group
            assert all(0.0 <= v <= 1.0 for v in values.values()), values
            seen.add(group)
    assert seen == set(GROUPS)
