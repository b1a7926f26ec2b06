"""The extractive answerer chooses the sentence that answers, quotes it with its own source, abstains
only when no sentence qualifies (issue 41, item 15). Evidence is built by hand here; the end-to-end
checks over a real memory are in test_answer.py and test_demo_answers.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from dualmem.embed import Embedder
from dualmem.reason import ABSTAIN_TEXT
from dualmem.reason.extractive import ExtractiveAnswerer, expected_answer, split_sentences
from dualmem.text.temporal import ground
from dualmem.types import Evidence, Node, Tenant

TENANT = Tenant("u")


def _ev(
    i: int, content: str, *, day: int, score: float = 0.5, speaker: str = "Mira", **node: object
) -> Evidence:
    at = dt.datetime(2024, 5, day, 10, tzinfo=dt.UTC)
    refs = ground(content, at)
    n = Node(id=f"n{i}", tenant=TENANT, content=content, at=at, speaker=speaker, temporal_refs=refs, **node)  # type: ignore[arg-type]
    return Evidence(n, score, temporal_refs=refs)


def test_sentences_split_after_stops_but_not_after_titles_or_in_code() -> None:
    text = (
        "He's fine. The vet, Dr. Okafor, said to keep laundry off the floor!\n"
        "## Plan\n- **Flashcards** (Anki): 15 min a day\n```sql\nSELECT 1. FROM t;\n```\n"
        "|---|---|\n| Listening | 15 min |"
    )
    assert split_sentences(text) == [
        "He's fine.",
        "The vet, Dr. Okafor, said to keep laundry off the floor!",
        "Plan",
        "Flashcards (Anki): 15 min a day",
        "Listening | 15 min",
    ]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who helped Mira choose her new bicycle?", "person"),
        ("When did Biscuit eat a sock?", "time"),
        ("What was the date of our wedding?", "time"),
        ("Where did Joanna go for a road trip?", "place"),
        ("How many days a week am I in the office?", "number"),
        ("How long did the closing take?", "duration"),
        ("How often does Jon dance?", "frequency"),
        ("Why did Mira buy a new bicycle?", "reason"),
        ("What is the name of the vet?", "name"),
        ("What did the teammates give him when they met?", "thing"),  # the first question word decides
        ("Does Mira still eat sushi?", "yes_no"),
    ],
)
def test_the_question_says_what_kind_of_answer_it_wants(question: str, kind: str) -> None:
    assert expected_answer(question) == kind


def _pick(question: str, evidence: Sequence[Evidence], **weights: float) -> tuple[str, tuple[str, ...]]:
    """The draft's text and sources, the abstention threshold off (these evidence scores are made up)."""
    draft = ExtractiveAnswerer(**{"min_score": 0.0, **weights}).answer(question, evidence)
    assert not draft.abstained, draft
    return draft.text, draft.used


def test_who_quotes_the_sentence_with_the_person_not_the_one_that_repeats_the_question() -> None:
    evidence = [
        _ev(1, "I bought a new bicycle yesterday because my old one broke.", day=16, score=0.96),
        _ev(2, "The frame cracked near the pedals on my way home.", day=14, score=0.98),
        _ev(3, "Jonna helped me pick it; she came over from Rotterdam for the day.", day=16, score=0.9),
    ]
    text, used = _pick("Who helped Mira choose her new bicycle?", evidence)
    assert text.startswith('Mira said on 16 May 2024: "Jonna helped me pick it')
    assert used[0] == "n3"  # its own source first, not the top hit
    assert _pick("Who helped Mira choose her new bicycle?", evidence, w_typed=0.0)[1][0] == "n1"


def test_the_name_comes_from_the_sentence_that_has_one() -> None:
    evidence = [
        _ev(1, "Last week Biscuit ate a sock and we spent a night at the emergency vet.", day=3, score=0.99),
        _ev(2, "He's fine. The vet, Dr. Okafor, said to keep laundry off the floor.", day=3, score=0.98),
    ]
    text, used = _pick("What is the name of the vet?", evidence)
    assert "Okafor" in text
    assert used == ("n2",)
    assert text.startswith('Mira said on 3 May 2024: "The vet, Dr. Okafor')  # only that sentence is quoted
    assert _pick("What is the name of the vet?", evidence, w_typed=0.0)[1][0] == "n1"


def test_the_quote_names_its_own_speaker_and_day() -> None:
    evidence = [
        _ev(1, "Ana: I went to a pottery class too, it was dull.", day=10, score=0.99, speaker="Ana"),
        _ev(2, "Melanie: At the pottery class we made our own pots.", day=12, score=0.9, speaker="Melanie"),
    ]
    text, used = _pick("What did Melanie make at the pottery class?", evidence)
    assert text == 'Melanie said on 12 May 2024: "At the pottery class we made our own pots."'
    assert used == ("n2",)


def test_a_date_in_the_question_prefers_memories_of_that_time() -> None:
    evidence = [
        _ev(1, "I watched a classic movie the other day, so gripping.", day=2, score=0.9, speaker="Nate"),
        _ev(2, 'I watched the movie "Little Women" and it was great!', day=20, score=0.8, speaker="Nate"),
    ]
    question = "What movie did Nate watch on 20 May 2024?"
    assert "Little Women" in _pick(question, evidence)[0]
    assert "Little Women" not in _pick(question, evidence, w_dated=0.0)[0]  # the date is what chose it


def test_words_of_someone_else_about_someone_else_count_less() -> None:
    evidence = [
        _ev(
            1, "My charity race went great, I realized how strong I am.", day=5, score=0.9, speaker="Melanie"
        ),
        _ev(2, "After the charity race I realized self-care matters.", day=5, score=0.7, speaker="Caroline"),
    ]
    question = "What did Caroline realize after her charity race?"
    assert _pick(question, evidence)[1] == ("n2",)
    assert _pick(question, evidence, other_party=0.0)[1] == ("n1",)  # the penalty is what chose n2


@pytest.mark.parametrize(
    ("question", "memory"),
    [
        ("What is the name of Mira's cat?", "I adopted a beagle named Biscuit."),  # off topic
        ("Which cat cafe do you love?", "I love the cat cafe."),  # says nothing the question does not
    ],
)
def test_abstains_when_no_sentence_is_on_topic_or_says_something_new(question: str, memory: str) -> None:
    draft = ExtractiveAnswerer(min_score=0.0).answer(question, [_ev(1, memory, day=2)])
    assert draft.abstained
    assert (draft.text, draft.used) == (ABSTAIN_TEXT, ())


def test_abstains_below_the_threshold() -> None:
    evidence = [_ev(1, "Jonna helped me pick it.", day=16, score=0.3)]
    question = "Who helped Mira choose her new bicycle?"
    assert not ExtractiveAnswerer(min_score=0.0).answer(question, evidence).abstained
    assert ExtractiveAnswerer(min_score=5.0).answer(question, evidence).abstained


def test_the_same_question_and_evidence_give_the_same_draft(minilm: Embedder) -> None:
    evidence = [
        _ev(1, "I bought a new bicycle yesterday because my old one broke.", day=16, embedding=None),
        _ev(2, "Jonna helped me pick it.", day=16),
    ]
    answerer = ExtractiveAnswerer(embedder=minilm)
    first = answerer.answer("Who helped Mira choose her new bicycle?", evidence)
    assert answerer.answer("Who helped Mira choose her new bicycle?", evidence) == first
