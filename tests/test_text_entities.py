"""Entity extraction: the paper's linking example, names, nouns, normalisation, the protocol."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dualmem.errors import ConfigError
from dualmem.text import (
    DEFAULT_MAX_ENTITIES,
    EntityExtractor,
    RegexEntityExtractor,
    SpacyEntityExtractor,
    extract_entities,
    normalize_entity,
    singularize,
)


def test_bicycle_example_links_across_turns() -> None:
    m1 = extract_entities("Mira: My old bicycle broke.")
    m2 = extract_entities("I bought a new bicycle yesterday because my old one broke.", speaker="Mira")
    assert {"mira", "bicycle"} <= set(m1)
    assert {"mira", "bicycle"} <= set(m2)
    # verbs, adjectives and time words are not entities
    assert not {"old", "new", "broke", "bought", "yesterday", "one"} & (set(m1) | set(m2))


def test_output_is_sorted_distinct_normalised() -> None:
    got = extract_entities("Oliver's dog chased Oliver's cat. The dogs love Oliver!", speaker="  Mira ")
    assert got == tuple(sorted(set(got)))
    assert got == ("cat", "dog", "mira", "oliver")


@pytest.mark.parametrize(
    ("text", "present", "absent"),
    [
        ("Hey Maria, since we last spoke I went to that community meeting.",
         {"maria", "community", "meeting"}, {"hey", "since", "went", "spoke"}),
        ("The Grand Canyon trip with the kids was great; we took Universal Studios tickets too.",
         {"grand canyon", "universal studios", "kid", "trip", "ticket"}, {"the", "great", "took"}),
        ("Thanks, Nate! Yesterday I took the kids to the museum.",
         {"nate", "kid", "museum"}, {"thanks", "yesterday", "i"}),
        ("Weddings are full of joy!", {"wedding", "joy"}, {"weddings", "full"}),
        ("Caroline! That is great.", {"caroline"}, {"that", "great"}),
        ("James went to the bus stop with his glasses.",
         {"james", "bus", "glasses"}, {"jame", "bu", "glass"}),
        ("I love hiking on Saturday in May with my friends.",
         {"hiking", "friend"}, {"love", "saturday", "may"}),
        ("We watched movies, ate cookies and played with the puppies.",
         {"movie", "cookie", "puppy"}, {"movy", "watched", "played"}),
        ("Honestly I think it's really good and I feel great.", set(), {"honestly", "think", "feel", "good"}),
    ],
)  # fmt: skip
def test_extraction_cases(text: str, present: set[str], absent: set[str]) -> None:
    got = set(extract_entities(text))
    assert present <= got, got
    assert not absent & got, got


def test_cap_keeps_speaker_and_names_first() -> None:
    text = "Mira and Jon bought " + ", ".join(f"word{c}thing" for c in "abcdefghijklmnop") + " at Target."
    got = extract_entities(text, speaker="Zed")
    assert len(got) == DEFAULT_MAX_ENTITIES
    assert {"zed", "mira", "jon", "target"} <= set(got)
    assert len(extract_entities(text, limit=3)) == 3
    assert extract_entities(text, limit=0) == ()


@pytest.mark.parametrize(
    ("word", "single"),
    [("bicycles", "bicycle"), ("kids", "kid"), ("bus", "bus"), ("glass", "glass"), ("buses", "bus"),
     ("classes", "class"), ("boxes", "box"), ("babies", "baby"), ("movies", "movie"),
     ("children", "child"), ("news", "news"), ("lives", "life"), ("shoes", "shoe"), ("cat", "cat")],
)  # fmt: skip
def test_singularize(word: str, single: str) -> None:
    assert singularize(word) == single


@pytest.mark.parametrize(
    ("name", "norm"),
    [("Mira's", "mira"), ("  Grand   Canyon! ", "grand canyon"), ("James'", "james"), ("O.K.", "o k")],
)
def test_normalize_entity(name: str, norm: str) -> None:
    assert normalize_entity(name) == norm


def test_regex_extractor_is_an_entity_extractor() -> None:
    extractor = RegexEntityExtractor(max_entities=2)
    assert isinstance(extractor, EntityExtractor)
    assert extractor.extract("Mira rides a bicycle to the park.", speaker="Jon") == ("jon", "mira")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200), speaker=st.one_of(st.none(), st.text(max_size=10)))
def test_never_raises_and_is_well_formed(text: str, speaker: str | None) -> None:
    got = extract_entities(text, speaker=speaker)
    assert got == tuple(sorted(set(got)))
    assert len(got) <= DEFAULT_MAX_ENTITIES
    assert all(e and e == e.lower() and e == e.strip() for e in got)
    assert extract_entities(text, speaker=speaker) == got  # deterministic


@pytest.mark.skipif(importlib.util.find_spec("spacy") is not None, reason="spaCy is installed")
def test_spacy_extractor_without_spacy_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        SpacyEntityExtractor()
    assert info.value.hint == "pip install 'dualmem[spacy]'"


@pytest.mark.skipif(importlib.util.find_spec("spacy") is None, reason="spaCy is not installed")
def test_spacy_extractor_links_the_example() -> None:  # pragma: no cover - optional
    try:
        extractor = SpacyEntityExtractor()
    except ConfigError as exc:
        pytest.skip(exc.one_line())
    assert {"mira", "bicycle"} <= set(extractor.extract("Mira: My old bicycle broke."))
