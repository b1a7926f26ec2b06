"""ScriptedController: the public fake System-One backend."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dualmem.control.questions import (
    Batch,
    Choice,
    ChoiceAnswer,
    Controller,
    Noul,
    NoulAnswer,
    Score,
    ScoreAnswer,
)
from dualmem.control.scripted import ScriptedController, to_answer
from dualmem.errors import ConfigError, ControllerError, UnknownDecision

CAUSED = Noul("relation.caused_by", "Did candidates[i] cause new_memory?", "yes", "no")
TIME = Choice("relation.time", "When?", (("before", "b"), ("after", "a"), ("unknown", "u")))
LEVELS = Score("traverse.relevance", "How relevant?", ("none", "some", "much", "all"))


def _q(q: Noul, target: int) -> Noul:
    return dataclasses.replace(q, target=target)


def test_is_a_controller() -> None:
    assert isinstance(ScriptedController(), Controller)
    assert ScriptedController(name="s2").name == "s2"


def test_targeted_entry_wins_over_key_entry() -> None:
    ctl = ScriptedController({"relation.caused_by": 0.9, "relation.caused_by@1": 0.2})
    batch = Batch(state={}, questions={"pair_0_caused_by": _q(CAUSED, 0), "pair_1_caused_by": _q(CAUSED, 1)})
    result = ctl.decide(batch)
    assert result.noul("pair_0_caused_by") == 0.9
    assert result.noul("pair_1_caused_by") == 0.2


def test_name_is_never_read() -> None:
    ctl = ScriptedController({"relation.caused_by": 0.7})
    result = ctl.decide(Batch(state={}, questions={"whatever": CAUSED, "pair_9_semantic": CAUSED}))
    assert result.noul("whatever") == result.noul("pair_9_semantic") == 0.7


def test_str_answers_a_choice_with_certainty() -> None:
    result = ScriptedController({"relation.time": "after"}).decide(Batch(state={}, questions={"t": TIME}))
    answer = result.choice("t")
    assert answer.label == "after"
    assert dict(answer.distribution) == {"before": 0.0, "after": 1.0, "unknown": 0.0}
    assert answer.probability == 1.0


def test_mapping_is_a_renormalised_distribution() -> None:
    result = ScriptedController({"relation.time": {"before": 3.0, "unknown": 1.0}}).decide(
        Batch(state={}, questions={"t": TIME})
    )
    answer = result.choice("t")
    assert answer.label == "before"
    assert dict(answer.distribution) == {"before": 0.75, "after": 0.0, "unknown": 0.25}


def test_unknown_label_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not options"):
        ScriptedController({"relation.time": "later"}).decide(Batch(state={}, questions={"t": TIME}))


def test_float_for_a_score_is_its_expected_level() -> None:
    answer = ScriptedController({"traverse.relevance": 1.25}).decide(Batch(state={}, questions={"s": LEVELS}))
    score = answer.score("s")
    assert score.value == 1.25
    assert score.distribution == (0.0, 0.75, 0.25, 0.0)


def test_default_and_missing() -> None:
    batch = Batch(state={}, questions={"c": CAUSED})
    assert ScriptedController(default=0.5).decide(batch).noul("c") == 0.5
    with pytest.raises(UnknownDecision, match=r"relation\.caused_by"):
        ScriptedController().decide(batch)


def test_fn_sees_state_and_question_and_wins_over_table() -> None:
    seen = []

    def fn(state, question):  # type: ignore[no-untyped-def]
        seen.append((dict(state), question.key))
        return 0.1 if question.kind == "noul" else "before"

    ctl = ScriptedController({"relation.caused_by": 0.9}, fn=fn)
    result = ctl.decide(Batch(state={"query": "q"}, questions={"a": CAUSED, "b": TIME}))
    assert result.noul("a") == 0.1
    assert result.choice("b").label == "before"
    assert seen == [({"query": "q"}, "relation.caused_by"), ({"query": "q"}, "relation.time")]


def test_fn_may_return_typed_answers() -> None:
    ctl = ScriptedController(fn=lambda _s, _q: NoulAnswer(0.3))
    assert ctl.decide(Batch(state={}, questions={"a": CAUSED})).noul("a") == 0.3


def test_records_batches_in_order() -> None:
    ctl = ScriptedController(default=0.5)
    first = Batch(state={"n": 1}, questions={"a": CAUSED}, purpose="relations")
    second = Batch(state={"n": 2}, questions={"b": CAUSED})
    ctl.decide(first)
    ctl.decide(second)
    assert ctl.batches == [first, second]


def test_out_of_range_noul_fails_validation() -> None:
    with pytest.raises(ControllerError, match="outside"):
        ScriptedController({"relation.caused_by": 1.5}).decide(Batch(state={}, questions={"a": CAUSED}))


@pytest.mark.parametrize(
    ("question", "value"),
    [(CAUSED, "yes"), (TIME, 0.5), (LEVELS, "much"), (LEVELS, 3.5), (TIME, {"before": 0.0})],
)
def test_values_that_do_not_fit_are_config_errors(question: Noul | Choice | Score, value: object) -> None:
    with pytest.raises(ConfigError):
        to_answer(question, value)  # type: ignore[arg-type]


@given(st.integers(min_value=1, max_value=10).flatmap(lambda n: st.tuples(st.just(n), st.floats(0, n - 1))))
def test_score_distribution_has_the_scripted_expectation(case: tuple[int, float]) -> None:
    n, value = case
    q = Score("k", "?", tuple(str(i) for i in range(n)))
    answer = to_answer(q, value)
    assert isinstance(answer, ScoreAnswer)
    assert len(answer.distribution) == n
    assert math.isclose(sum(answer.distribution), 1.0)
    assert math.isclose(sum(i * p for i, p in enumerate(answer.distribution)), value, abs_tol=1e-9)
    assert all(p >= 0 for p in answer.distribution)


def test_choice_ties_pick_the_first_option() -> None:
    answer = to_answer(TIME, {"after": 1.0, "unknown": 1.0})
    assert isinstance(answer, ChoiceAnswer)
    assert answer.label == "after"
