"""The System-One question catalog: names, keys, targets and the paper's Appendix B wording."""

from __future__ import annotations

import re

import pytest

from dualmem.control.catalog import (
    CLAUSE_LABELS,
    DECISION_KEYS,
    REPRESENTATIONS,
    TIME_RELATIONS,
    consolidation_questions,
    message_questions,
    relation_questions,
    routing_questions,
    stopping_questions,
    traversal_questions,
    typing_questions,
)
from dualmem.control.questions import Choice, Noul, Question
from dualmem.errors import InvalidInput

# Appendix B, quoted from the paper (candidate index 0 instantiated): (instruction, true, false)
PAPER_NOULS: dict[str, tuple[str, str, str]] = {
    "typing.episodic": (
        "Does observation describe a particular experience or event involving a participant?",
        "A specific past, current or planned event, even if its exact time is unstated.",
        "Only a general fact, procedure or preference with no particular event.",
    ),
    "typing.preference": (
        "Does observation express a participant’s preference, aversion or habitual choice?",
        "An attributable like, dislike, preferred option or habitual choice.",
        "An isolated action alone, another person’s unattributed preference, or no preference evidence.",
    ),
    "relation.semantic": (
        "Compare new_memory.content with candidates[0].content. Would a semantic link between these "
        "observations help retrieve a shared specific topic or fact?",
        "A specific shared topic, fact or event makes the connection useful.",
        "Only generic conversational vocabulary or no meaningful semantic connection.",
    ),
    "relation.caused_by": (
        "Compare new_memory.content with candidates[0].content. Does the candidate event cause, enable "
        "or explain the event in new_memory.content?",
        "The supplied accounts support this direction of causal influence.",
        "Only similarity, chronology, a shared entity, or insufficient causal evidence.",
    ),
    "route.temporal": (
        "Does answering query require event dates, durations, ordering or changes over time?",
        "A time relation is needed to answer correctly.",
        "Dates or ordering are incidental to the answer.",
    ),
    "route.causal": (
        "Does answering query require explaining a cause, motivation, enabling condition or effect?",
        "Causal or explanatory evidence is needed.",
        "Only factual association or chronology is requested.",
    ),
    "traverse.relevance": (
        "Does candidates[0].content contain a fact needed to answer query?",
        "Direct answer evidence or a necessary intermediate fact.",
        "Only topic overlap or unrelated content.",
    ),
    "traverse.new_information": (
        "Does candidates[0].content add an answer-relevant detail absent from evidence?",
        "A distinct relevant detail or missing reasoning link.",
        "Only duplicated evidence or irrelevant new details.",
    ),
    "stop.evidence_sufficient": (
        "Does evidence contain support for every factual part of an answer to query?",
        "A grounded answer can be given from these memories without inventing missing facts.",
        "Any required fact or reasoning link is unsupported; related topics alone are insufficient.",
    ),
    "stop.continue_useful": (
        "Given query and evidence, is another retrieval round likely to fill a specific gap or resolve "
        "a conflict?",
        "An identifiable missing fact or conflict could benefit from more memory retrieval.",
        "No identifiable retrieval need remains or more memories are unlikely to help.",
    ),
}

PAPER_REPRESENTATION = (
    "Compare new_memory.content with candidates[0].content. Which representation best fits the "
    "relationship between these two observations? Judge from the supplied accounts; do not assume "
    "answers to other questions.",
    (
        (
            "keep_separate",
            "Contradictory accounts, unique details that a combined representation would lose, or "
            "distinct facts/events without a supported general pattern.",
        ),
        (
            "merge",
            "Compatible accounts of the same fact or event can be combined without losing unique details.",
        ),
        (
            "promote",
            "Distinct repeated episodes explicitly support a stable general pattern suitable for semantic "
            "abstraction; prefer this over merge for repeated events.",
        ),
        ("uncertain", "Insufficient evidence to choose a safe combined or separate representation."),
    ),
)

STATE_FIELD = re.compile(
    r"\b(?:observation|query|evidence)\b|new_memory\.(?:content|timestamp|entities)|"
    r"candidates\[\d+\]\.(?:content|timestamp|entities|view|label|source|target)|"
    r"\bmessage\b.*\bclauses\[\d+\]"
)


def all_questions(i: int = 0) -> dict[str, Question]:
    return {
        **{f"typing:{k}": q for k, q in typing_questions().items()},
        **{f"relation:{k}": q for k, q in relation_questions(i, alias=True, implicit_time=True).items()},
        **{f"routing:{k}": q for k, q in routing_questions().items()},
        **{f"traversal:{k}": q for k, q in traversal_questions(i).items()},
        **{f"stopping:{k}": q for k, q in stopping_questions().items()},
        **{f"consolidation:{k}": q for k, q in consolidation_questions(i).items()},
        **{f"message:{k}": q for k, q in message_questions(i + 1).items()},
    }


def by_key(questions: dict[str, Question]) -> dict[str, Question]:
    return {q.key: q for q in questions.values()}


def test_names_keys_and_targets_follow_the_contract() -> None:
    assert {n: q.key for n, q in typing_questions().items()} == {
        "episodic": "typing.episodic",
        "semantic": "typing.semantic",
        "procedural": "typing.procedural",
        "preference": "typing.preference",
    }
    assert {n: q.key for n, q in routing_questions().items()} == {
        "semantic": "route.semantic",
        "temporal": "route.temporal",
        "causal": "route.causal",
        "entity": "route.entity",
        "multi_hop_need": "route.multi_hop_need",
        "recency_importance": "route.recency_importance",
    }
    assert {n: q.key for n, q in stopping_questions().items()} == {
        "evidence_sufficient": "stop.evidence_sufficient",
        "continue_useful": "stop.continue_useful",
        "missing_evidence": "stop.missing_evidence",
        "contradiction": "stop.contradiction",
    }
    assert {n: q.key for n, q in traversal_questions(3).items()} == {
        "candidate_3_relevance": "traverse.relevance",
        "candidate_3_relation_usefulness": "traverse.relation_usefulness",
        "candidate_3_new_information": "traverse.new_information",
        "candidate_3_supports_current_evidence": "traverse.supports_current_evidence",
    }
    assert {n: q.key for n, q in consolidation_questions(2).items()} == {
        "pair_2_redundancy": "consolidate.redundancy",
        "pair_2_contradiction": "consolidate.contradiction",
        "pair_2_obsolescence": "consolidate.obsolescence",
        "pair_2_link_usefulness": "consolidate.link_usefulness",
        "pair_2_representation": "consolidate.representation",
    }
    for q in [*typing_questions().values(), *routing_questions().values(), *stopping_questions().values()]:
        assert q.target is None
    for q in [*traversal_questions(3).values(), *consolidation_questions(3).values()]:
        assert q.target == 3


@pytest.mark.parametrize(
    ("alias", "implicit_time"), [(False, False), (True, False), (False, True), (True, True)]
)
def test_relation_questions_add_alias_and_time_only_when_asked(alias: bool, implicit_time: bool) -> None:
    qs = relation_questions(7, alias=alias, implicit_time=implicit_time)
    expected = {
        "pair_7_semantic": "relation.semantic",
        "pair_7_caused_by": "relation.caused_by",
        "pair_7_causes": "relation.causes",
        "pair_7_same_episode": "relation.same_episode",
        "pair_7_supersedes": "relation.supersedes",
    }
    if alias:
        expected["pair_7_alias"] = "relation.alias"
    if implicit_time:
        expected["pair_7_time"] = "relation.time"
    assert {n: q.key for n, q in qs.items()} == expected
    assert all(q.target == 7 for q in qs.values())
    assert all(isinstance(q, Noul) for n, q in qs.items() if n != "pair_7_time")
    if implicit_time:
        time_q = qs["pair_7_time"]
        assert isinstance(time_q, Choice)
        assert time_q.labels == TIME_RELATIONS


@pytest.mark.parametrize("key", sorted(PAPER_NOULS))
def test_paper_wording_is_verbatim(key: str) -> None:
    q = by_key(all_questions(0))[key]
    assert isinstance(q, Noul)
    assert (q.instructions, q.true, q.false) == PAPER_NOULS[key]


def test_paper_representation_choice_is_verbatim() -> None:
    q = consolidation_questions(0)["pair_0_representation"]
    assert isinstance(q, Choice)
    # one consolidation request carries several pairs: only the field references change
    paper = (
        PAPER_REPRESENTATION[0]
        .replace("new_memory.content", "pairs[0].new_memory.content")
        .replace("candidates[0].content", "pairs[0].candidate.content")
    )
    assert (q.instructions, q.options) == (paper, PAPER_REPRESENTATION[1])
    assert q.labels == REPRESENTATIONS


def test_candidate_index_is_instantiated_in_the_wording() -> None:
    qs = by_key(all_questions(4))
    for key in ("relation.semantic", "relation.caused_by", "traverse.relevance", "traverse.new_information"):
        instructions, _, _ = PAPER_NOULS[key]
        assert qs[key].instructions == instructions.replace("candidates[0]", "candidates[4]")
    for q in qs.values():
        if q.target is not None and q.key.startswith("consolidate."):
            assert "pairs[4]." in q.instructions
            assert "pairs[0]" not in q.instructions
        elif q.target is not None and q.key.startswith("message."):
            assert "clauses[4]" in q.instructions
            assert "clauses[0]" not in q.instructions
        elif q.target is not None:
            assert "candidates[4]" in q.instructions
            assert "candidates[0]" not in q.instructions


def test_causes_is_the_reverse_direction_of_caused_by() -> None:
    qs = relation_questions(1, alias=False, implicit_time=False)
    caused_by, causes = qs["pair_1_caused_by"], qs["pair_1_causes"]
    assert isinstance(caused_by, Noul)
    assert isinstance(causes, Noul)
    assert "Does the candidate event cause, enable or explain the event in new_memory.content?" in (
        caused_by.instructions
    )
    assert (
        "Does the event in new_memory.content cause, enable or explain the event in candidates[1].content?"
        in (causes.instructions)
    )
    assert (causes.true, causes.false) == (caused_by.true, caused_by.false)


def test_every_instruction_names_a_state_field_and_has_criteria() -> None:
    for name, q in all_questions(2).items():
        assert STATE_FIELD.search(q.instructions), name
        if isinstance(q, Noul):
            assert q.true.strip()
            assert q.false.strip()
            assert q.true != q.false
        else:
            assert isinstance(q, Choice)
            assert all(label and text.strip() for label, text in q.options), name
            assert len(set(q.labels)) == len(q.labels)


def test_decision_keys_are_every_key_of_the_catalog() -> None:
    keys = {q.key for q in all_questions(0).values()}
    assert keys == DECISION_KEYS
    assert len(DECISION_KEYS) == 31
    families = {k.split(".")[0] for k in DECISION_KEYS}
    assert families == {"typing", "relation", "route", "traverse", "stop", "consolidate", "message"}


def test_message_questions_label_each_clause() -> None:
    qs = message_questions(3)
    assert list(qs) == ["clause_0", "clause_1", "clause_2"]
    for i, q in enumerate(qs.values()):
        assert isinstance(q, Choice)
        assert (q.key, q.target, q.labels) == ("message.clause", i, CLAUSE_LABELS)
    for bad in (0, -1, True):
        with pytest.raises(InvalidInput):
            message_questions(bad)


def test_label_tuples() -> None:
    assert TIME_RELATIONS == ("before", "after", "during", "contains", "overlaps", "same_time", "unknown")
    assert REPRESENTATIONS == ("keep_separate", "merge", "promote", "uncertain")


def test_builders_return_fresh_equal_questions() -> None:
    assert traversal_questions(1) == traversal_questions(1)
    assert traversal_questions(1) is not traversal_questions(1)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "0"])
def test_bad_candidate_index_is_refused(bad: object) -> None:
    for build in (
        lambda i: relation_questions(i, alias=False, implicit_time=False),
        traversal_questions,
        consolidation_questions,
    ):
        with pytest.raises(InvalidInput):
            build(bad)  # type: ignore[arg-type]
