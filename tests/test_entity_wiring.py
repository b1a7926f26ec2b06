"""The write path's entity extractor is pluggable: WriteProfile.entities, or an extractor object.

spaCy is an optional extra and is not installed here: the spaCy extractor runs against a stand-in
``spacy`` module at the library edge (sys.modules), and the wiring itself through a fake extractor.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from dualmem import Memory
from dualmem.config import Profile
from dualmem.control.meter import Meter
from dualmem.control.scripted import ScriptedController
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError
from dualmem.plane import InMemoryStore
from dualmem.text import EXTRACTORS, RegexEntityExtractor, SpacyEntityExtractor, create_extractor
from dualmem.text.entities import EntityExtractor
from dualmem.types import Observation, Tenant
from dualmem.write.pipeline import Writer


@dataclass
class UpperExtractor:
    """A fake extractor: every capitalised word, upper-cased, with the calls it saw."""

    calls: list[tuple[str, str | None]] = field(default_factory=list)

    def extract(self, text: str, *, speaker: str | None = None) -> tuple[str, ...]:
        self.calls.append((text, speaker))
        return tuple(sorted({w.strip(".,!").upper() for w in text.split() if w[:1].isupper()}))


def _controller() -> ScriptedController:
    return ScriptedController({"relation.time": "unknown"}, default=0.0)


def test_writer_uses_the_extractor_it_is_given() -> None:
    fake = UpperExtractor()
    assert isinstance(fake, EntityExtractor)
    store = InMemoryStore()
    embedder = HashingEmbedder(32)
    store.bind_embedder(embedder.name, embedder.dim)
    writer = Writer(store, embedder, Meter(_controller()), Profile.paper().write, extractor=fake)
    report = writer.write([Observation("Mira rode to Porto.", speaker="Mira")], Tenant("u"))
    node = store.get_node(report.ids[0])
    assert node.entities == ("MIRA", "PORTO")
    assert fake.calls == [("Mira rode to Porto.", "Mira")]


def test_default_profile_uses_the_regex_extractor() -> None:
    assert Profile.paper().write.entities == "regex"
    store = InMemoryStore()
    embedder = HashingEmbedder(32)
    store.bind_embedder(embedder.name, embedder.dim)
    writer = Writer(store, embedder, Meter(_controller()), Profile.paper().write)
    assert writer.extractor == RegexEntityExtractor()


def test_create_extractor_specs() -> None:
    assert create_extractor("regex", max_entities=3) == RegexEntityExtractor(3)
    assert EXTRACTORS == ("regex", "spacy", "spacy:MODEL")
    for bad in ("regex:x", "nltk", ""):
        with pytest.raises(ConfigError, match="unknown entity extractor") as info:
            create_extractor(bad)
        assert "spacy" in (info.value.hint or "")


@pytest.mark.skipif(importlib.util.find_spec("spacy") is not None, reason="spaCy is installed")
def test_spacy_profile_without_spacy_fails_at_open_with_a_hint() -> None:
    profile = Profile.paper().with_(write__entities="spacy")
    with pytest.raises(ConfigError, match="needs spaCy") as info:
        Memory(InMemoryStore(), HashingEmbedder(32), _controller(), profile=profile)
    assert info.value.hint == "pip install 'dualmem[spacy]'"


# --- the spaCy extractor against a stand-in spacy module ------------------------------------------


@dataclass(frozen=True)
class _Span:
    text: str
    label_: str


@dataclass(frozen=True)
class _Token:
    text: str
    lemma_: str
    pos_: str
    is_stop: bool = False


@dataclass(frozen=True)
class _Doc:
    ents: tuple[_Span, ...]
    tokens: tuple[_Token, ...]

    def __iter__(self) -> Iterator[_Token]:
        return iter(self.tokens)


def _nlp(text: str) -> _Doc:
    ents = tuple(_Span(w, "PERSON" if w == "Mira" else "GPE") for w in ("Mira", "Porto") if w in text)
    tokens = (
        _Token("bicycles", "bicycle", "NOUN"),
        _Token("the", "the", "DET", True),
        _Token("rode", "ride", "VERB"),
    )
    return _Doc(ents, tokens)


@pytest.fixture
def fake_spacy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loaded: list[str] = []

    def load(name: str) -> object:
        if name == "missing_model":
            raise OSError(f"[E050] Can't find model '{name}'")
        loaded.append(name)
        return _nlp

    module = types.ModuleType("spacy")
    module.load = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "spacy", module)
    return loaded


def test_spacy_extractor_reads_entities_and_noun_lemmas(fake_spacy: list[str]) -> None:
    extractor = create_extractor("spacy:en_core_web_md")
    assert isinstance(extractor, SpacyEntityExtractor)
    assert fake_spacy == ["en_core_web_md"]
    assert extractor.extract("Mira rode the bicycles to Porto", speaker="Mira") == (
        "bicycle",
        "mira",
        "porto",
    )


def test_spacy_extractor_missing_model_is_a_config_error(fake_spacy: list[str]) -> None:
    with pytest.raises(ConfigError, match="missing_model") as info:
        create_extractor("spacy:missing_model")
    assert info.value.hint == "python -m spacy download missing_model"


def test_spacy_profile_reaches_the_write_path(fake_spacy: list[str]) -> None:
    profile = Profile.paper().with_(write__entities="spacy")
    with Memory(InMemoryStore(), HashingEmbedder(32), _controller(), profile=profile) as mem:
        node_id = mem.add("Mira rode the bicycles to Porto", user="u", speaker="Mira")
        assert mem.store.get_node(node_id).entities == ("bicycle", "mira", "porto")
    assert fake_spacy == ["en_core_web_sm"]
