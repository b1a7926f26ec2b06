"""Query analysis: names out of the text and into a feature, grounded times, question forms."""

from __future__ import annotations

import datetime as dt

import pytest

from dualmem.text.query import analyze, question_form


def test_known_names_are_removed_and_kept_as_persons() -> None:
    a = analyze("When did Caroline go to the LGBTQ support group?", names=["Caroline", "Melanie"])
    assert a.persons == ("Caroline",)
    assert a.stripped == "When did go to the LGBTQ support group?"
    assert a.mentions("caroline")
    assert not a.mentions("Melanie")
    assert not a.mentions(None)


def test_possessives_several_names_and_longest_first() -> None:
    a = analyze("What are Mary Ann's and Jon's goals?", names=["Mary", "Mary Ann", "Jon"])
    assert a.persons == ("Jon", "Mary Ann")
    assert "Mary" not in a.stripped
    assert "Jon" not in a.stripped
    assert a.stripped == "What are and goals?"


def test_unknown_names_and_substrings_stay() -> None:
    a = analyze("Did Jonathan visit Paris?", names=["Jon"])
    assert a.persons == ()
    assert a.stripped == "Did Jonathan visit Paris?"


def test_a_query_that_is_only_a_name_keeps_its_text() -> None:
    a = analyze("Caroline?", names=["Caroline"])
    assert a.persons == ("Caroline",)
    assert a.stripped == "Caroline?"


def test_times_are_grounded_against_now() -> None:
    now = dt.datetime(2023, 10, 20, tzinfo=dt.UTC)
    a = analyze("What did Mel do last week?", names=["Mel"], now=now)
    assert len(a.times) == 1
    ref = a.times[0]
    assert ref.start == dt.date(2023, 10, 9)
    assert ref.end == dt.date(2023, 10, 15)
    assert a.time_overlap(dt.date(2023, 10, 10), dt.date(2023, 10, 10))
    assert not a.time_overlap(dt.date(2023, 10, 17), dt.date(2023, 10, 18))
    assert analyze("What happened in May 2023?").times[0].start == dt.date(2023, 5, 1)


@pytest.mark.parametrize(
    ("query", "form"),
    [
        ("When did she move?", "when"),
        ("Where does he work?", "where"),
        ("Whose dog is it?", "who"),
        ("Why did they leave?", "why"),
        ("How many kids?", "how"),
        ("Which book?", "what"),
        ("Did Mel paint a sunrise?", "yes_no"),
        ("Tell me about pottery", "other"),
    ],
)
def test_question_form(query: str, form: str) -> None:
    assert question_form(query) == form


def test_names_are_matched_case_insensitively_in_ascii_and_beyond() -> None:
    # the substring pre-check must never skip a name the pattern would find
    a = analyze("what did CAROLINE's sister say?", names=["caroline", "Melanie"])
    assert a.persons == ("caroline",)
    assert a.stripped == "what did sister say?"
    # outside ASCII, re.IGNORECASE also matches the long s to "s" (lower() does not): the pattern decides
    b = analyze("When did \u017fam call?", names=["Sam"])
    assert b.persons == ("Sam",)
    assert b.stripped == "When did call?"
    c = analyze("Did Zo\u00cb come?", names=["zo\u00eb"])
    assert c.persons == ("zo\u00eb",)


def test_many_absent_names_leave_the_query_unchanged() -> None:
    names = [f"Person{i}" for i in range(200)] + ["Jon"]
    a = analyze("Where did Jon travel last May?", names=names)
    assert a.persons == ("Jon",)
    assert a.stripped == "Where did travel last May?"


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("What did you suggest I use for pagination?", "assistant"),
        ("Which library did you base my throttling on?", "assistant"),
        ("What was the command you gave me?", "assistant"),
        ("Which recipe have you recommended to me?", "assistant"),
        ("Where do I live now?", "user"),
        ("Can you remind me where I work?", "user"),
        ("Do you know where I live?", "user"),
        ("How many races have I signed up for?", "user"),
        ("What did Mira paint?", None),
    ],
)
def test_perspective_says_whose_words_a_question_asks_for(query: str, role: str | None) -> None:
    from dualmem.text.query import perspective

    assert perspective(query) == role


def test_roles_count_as_the_speaker_a_question_asks_about() -> None:
    from dualmem.text.query import analyze, role_of

    assert (role_of("User"), role_of(" assistant "), role_of("AI"), role_of("Mira"), role_of(None)) == (
        "user",
        "assistant",
        "assistant",
        None,
        None,
    )
    mine = analyze("Where do I live now?")
    assert mine.about
    assert mine.mentions("user")
    assert not mine.mentions("assistant")
    yours = analyze("What did you recommend for the flat?")
    assert yours.mentions("assistant")
    assert not yours.mentions("user")
    named = analyze("What did Mira say about my plans?", names=["Mira"])
    assert named.perspective is None
    assert named.mentions("Mira")
    assert not named.mentions("user")
    assert not analyze("What happened in 2023?").about
