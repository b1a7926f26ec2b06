"""Entity extraction: normalised identifiers that link mentions across memories.

The default ``RegexEntityExtractor`` is a fast heuristic (no model): the speaker, capitalised
names and multi-word proper nouns, and salient nouns (content words that are not stopwords nor
common verbs/adjectives, lightly singularised). ``SpacyEntityExtractor`` uses spaCy when the
``spacy`` extra is installed. ``create_extractor`` builds one from a spec (the write path's
``WriteProfile.entities``: ``"regex"``, ``"spacy"`` or ``"spacy:MODEL"``). Chinese, Japanese and
Korean names and nouns are cut out of their unspaced runs by ``_cjk_entities`` (never a whole run,
never one character).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from dualmem.errors import ConfigError
from dualmem.text._cjk_entities import cjk_entities
from dualmem.text._lexicon import IE_WORDS, ING_NOUNS, KEEP_S, NOT_ENTITIES, PLURALS
from dualmem.text.cjk import CJK_CHARS, has_cjk
from dualmem.text.lexical import STOPWORDS

__all__ = [
    "DEFAULT_MAX_ENTITIES",
    "EXTRACTORS",
    "EntityExtractor",
    "RegexEntityExtractor",
    "SpacyEntityExtractor",
    "create_extractor",
    "extract_entities",
    "normalize_entity",
    "singularize",
]

DEFAULT_MAX_ENTITIES = 12
#: the spec forms :func:`create_extractor` understands
EXTRACTORS = ("regex", "spacy", "spacy:MODEL")

_WORD = re.compile(r"[^\W\d_](?:[^\W_]|['\-](?=[^\W_]))*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_BOUNDARY = re.compile(r"[.!?:;\"“”()\[\]\n]")
_VOCATIVE = re.compile(r"\s*[:,!]")
_NON_WORD = re.compile(r"[^\w\s'\-]+")
_SPACE = re.compile(r"\s+")
_CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
_SKIP = STOPWORDS | NOT_ENTITIES
_ADVERB_OK = frozenset(
    [
        "family",
        "italy",
        "july",
        "rally",
        "belly",
        "jelly",
        "lily",
        "bully",
        "ally",
        "reply",
        "supply",
        "assembly",
    ]
)
_ABLE_OK = frozenset(["table", "vegetable", "cable", "fable", "bible"])


@runtime_checkable
class EntityExtractor(Protocol):
    """Turns a text into sorted, normalised entity identifiers."""

    def extract(self, text: str, *, speaker: str | None = None) -> tuple[str, ...]: ...


def normalize_entity(name: str) -> str:
    """Lower case, possessive ``'s`` and punctuation removed, spaces collapsed: "Mira's" -> "mira"."""
    text = name.translate(_APOSTROPHES).lower().strip()
    text = re.sub(r"'s\b|'\B", "", text)
    return _SPACE.sub(" ", _NON_WORD.sub(" ", text)).strip(" '-")


def _token(word: str) -> str:
    """``normalize_entity`` for one ``_WORD`` token (letters, digits, inner ' and -), but cheaper."""
    word = word.lower()
    return word[:-2] if word.endswith("'s") else word


def singularize(word: str) -> str:
    """A light English singular for a lower-case noun: "bicycles" -> "bicycle", "bus" stays."""
    if word in PLURALS:
        return PLURALS[word]
    if len(word) <= 3 or word in KEEP_S or not word.endswith("s") or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-1] if word[:-1] in IE_WORDS else word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zzes")):
        return word[:-2]
    return word[:-1]


def _is_common(word: str) -> bool:
    """Whether a lower-case word is a function word, common verb/adjective, or adverb-like."""
    if word in _SKIP or "'" in word:
        return True
    if word.endswith("ly") and word not in _ADVERB_OK:
        return True
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return True
    if len(word) > 6 and word.endswith(("ful", "ous", "ible")):
        return True
    if len(word) > 6 and word.endswith("able") and word not in _ABLE_OK:
        return True
    if word.endswith("ing") and len(word) > 5 and word not in ING_NOUNS:
        stem = word[:-3]
        return stem in _SKIP or stem + "e" in _SKIP or (stem[-1:] == stem[-2:-1] and stem[:-1] in _SKIP)
    return False


def _noun(word: str, *, names_ok: bool = False) -> str | None:
    """The singular of a salient noun, or ``None`` for a word that is not one.

    ``names_ok``: the word may be a name ("James", "Lucas"), so "-es/-as/-os" endings are kept.
    """
    if len(word) < 3 or _is_common(word):
        return None
    single = word if names_ok and word.endswith(("es", "as", "os")) else singularize(word)
    if len(single) < 3 or single in _SKIP:
        return None
    return single


def _name(tokens: list[str]) -> str | None:
    """A proper name from a run of capitalised tokens, leading/trailing common words dropped."""
    words = [_token(t) for t in tokens]
    while words and _is_common(words[0]):
        words.pop(0)
    while words and _is_common(words[-1]):
        words.pop()
    return " ".join(words) if words and len(words[0]) >= 2 else None


def _scan(text: str) -> tuple[list[str], list[str]]:
    """(names, nouns) in order of appearance."""
    names: list[str] = []
    nouns: list[str] = []
    run: list[str] = []
    run_initial = False
    previous_end = 0
    initial = True
    for m in _WORD.finditer(text):
        gap = text[previous_end : m.start()]
        initial = previous_end == 0 or _BOUNDARY.search(gap) is not None
        if run and (initial or gap.strip() or not m.group(0)[0].isupper()):
            _flush(run, run_initial, text, previous_end, names, nouns)
            run = []
        word = m.group(0)
        if word[0].isupper():
            if not run:
                run_initial = initial
            run.append(word)
        elif (noun := _noun(_token(word))) is not None:
            nouns.append(noun)
        previous_end = m.end()
    if run:
        _flush(run, run_initial, text, previous_end, names, nouns)
    return names, nouns


def _flush(run: list[str], initial: bool, text: str, end: int, names: list[str], nouns: list[str]) -> None:
    """Classify a run of capitalised tokens as a name, or (sentence-initial) a common word."""
    if initial and len(run) == 1:
        word = _token(run[0])
        if _VOCATIVE.match(text, end) and not _is_common(word):
            names.append(word)  # "Mira: ...", "Caroline! ...", "Jon, ..."
        elif (noun := _noun(word, names_ok=True)) is not None:
            nouns.append(noun)  # "Weddings are ...", "Nature is ..." (but "James went ...")
        return
    if (name := _name(run)) is not None:
        names.append(name)


def extract_entities(
    text: str, *, speaker: str | None = None, limit: int = DEFAULT_MAX_ENTITIES
) -> tuple[str, ...]:
    """Sorted, distinct, normalised entities of ``text`` (at most ``limit``).

    The speaker comes first, then proper names, then salient nouns, in order of appearance, until
    ``limit`` is reached; the kept ones are returned sorted.
    """
    if has_cjk(text):  # CJK runs: their own names and nouns (_cjk_entities), English words as before
        names, nouns = _scan(_CJK_RUN.sub("\n", text.translate(_APOSTROPHES)))
        nouns += cjk_entities(text)
    else:
        names, nouns = _scan(text.translate(_APOSTROPHES))
    ordered = [normalize_entity(speaker)] if speaker else []
    ordered += names
    name_words = {w for n in names for w in n.split()}
    ordered += [n for n in nouns if n not in name_words]
    kept = [e for e in dict.fromkeys(ordered) if e][: max(0, limit)]
    return tuple(sorted(kept))


@dataclass(frozen=True, slots=True)
class RegexEntityExtractor:
    """The default extractor: ``extract_entities`` with a fixed cap."""

    max_entities: int = DEFAULT_MAX_ENTITIES

    def extract(self, text: str, *, speaker: str | None = None) -> tuple[str, ...]:
        return extract_entities(text, speaker=speaker, limit=self.max_entities)


_SPACY_LABELS = frozenset(
    ["PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE", "LAW"]
)


class SpacyEntityExtractor:
    """Named entities and noun lemmas from a spaCy pipeline (needs ``pip install 'dualmem[spacy]'``)."""

    def __init__(self, model: str = "en_core_web_sm", *, max_entities: int = DEFAULT_MAX_ENTITIES) -> None:
        try:
            import spacy  # optional dependency, imported only when asked for
        except ImportError as exc:
            raise ConfigError(
                "the spaCy entity extractor needs spaCy", hint="pip install 'dualmem[spacy]'"
            ) from exc
        try:
            self._nlp: Any = spacy.load(model)
        except OSError as exc:
            raise ConfigError(
                f"spaCy model {model!r} is not installed", hint=f"python -m spacy download {model}"
            ) from exc
        self.max_entities = max_entities

    def extract(self, text: str, *, speaker: str | None = None) -> tuple[str, ...]:
        doc = self._nlp(text)
        ordered = [normalize_entity(speaker)] if speaker else []
        ordered += [normalize_entity(e.text) for e in doc.ents if e.label_ in _SPACY_LABELS]
        ordered += [
            singularize(normalize_entity(t.lemma_ or t.text))
            for t in doc
            if t.pos_ in {"NOUN", "PROPN"} and not t.is_stop and len(t.text) >= 3
        ]
        kept = [e for e in dict.fromkeys(ordered) if e and e not in _SKIP][: max(0, self.max_entities)]
        return tuple(sorted(kept))


def create_extractor(spec: str = "regex", *, max_entities: int = DEFAULT_MAX_ENTITIES) -> EntityExtractor:
    """``"regex"``: :class:`RegexEntityExtractor`; ``"spacy"`` / ``"spacy:MODEL"``: spaCy's pipeline
    (default ``en_core_web_sm``), a ``ConfigError`` with an install hint when spaCy or the model is
    missing."""
    kind, _, model = spec.strip().partition(":")
    if kind == "regex" and not model:
        return RegexEntityExtractor(max_entities)
    if kind == "spacy":
        return SpacyEntityExtractor(model or "en_core_web_sm", max_entities=max_entities)
    raise ConfigError(f"unknown entity extractor {spec!r}", hint=f"choose one of: {', '.join(EXTRACTORS)}")
