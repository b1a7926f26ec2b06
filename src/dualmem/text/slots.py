"""What a note is about: its *slot*, the subject and the attribute it states (offline, no model).

``slot_of("Mira's partner is Tomasz.")`` is ``Slot("mira", "partner")``; ``slot_of("User switched
to uv instead of pip.")`` is ``Slot("user", "package manager")``; ``slot_of("Moved in with Callum
this weekend: a two-bed in Portobello.")`` is ``Slot(None, "home")`` (no subject named). A slot is
read from the text's structure:

- the **subject**: a first-person speaker ("I", "my", "we") or "the user" -> ``user``; a sentence
  that opens with a possessive ("Priya's", "The billing service's") -> its owner, or the name that
  follows a relation noun ("Mira's sister Ola lives ..." -> ``ola``); a sentence that opens with a
  name (one of the note's entities, or a capitalised word) followed by a verb -> that name.
- the **attribute**: the noun of an opening possessive ("X's Y is ...") read through
  :data:`ATTRIBUTES` when it names a known one ("line manager" -> ``manager``), else what the rest
  of the text names, else the noun itself; or the attribute of :data:`ATTRIBUTES` whose cue (a verb
  of state, "moved / switched / upgraded to", a value word such as "pip" or "Postgres") comes first.

The write path records each new memory's slot (a ``slot`` decision: ``inspect`` shows it), lets a
memory supersede another only within one slot (:func:`may_replace`), and the read path applies its
version rule only to the slot a question asks about (``dualmem.read.versions``). An attribute in
:data:`MULTI_VALUED` holds several values at once (pets, languages, conditions): a new value adds
to it unless the text says it replaces one. No model is needed; most notes' attribute is not found
(about a third of the notes corpus's notes have one), and a slot not known constrains nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from dualmem.errors import InvalidInput

__all__ = [
    "ATTRIBUTES",
    "MULTI_VALUED",
    "PAIR_COSINE",
    "SLOT_KEY",
    "Slot",
    "may_replace",
    "query_slot",
    "question_subject",
    "replaces_value",
    "same_fact",
    "slot_of",
    "states_update",
]

#: the decision key a node's slot is recorded under (its label is the slot, ``str(Slot)``)
SLOT_KEY = "write.slot"
_SEP = " · "


@dataclass(frozen=True, slots=True)
class Slot:
    """The subject (``None``: not named) and the attribute (``None``: unknown) a memory states."""

    subject: str | None
    attribute: str | None

    def __str__(self) -> str:
        return f"{self.subject or '?'}{_SEP}{self.attribute or '?'}"

    @classmethod
    def parse(cls, text: object) -> Slot:
        """The slot :meth:`__str__` wrote ("priya · home address"; "?" for a part not known)."""
        if not isinstance(text, str) or _SEP.strip() not in text:
            raise InvalidInput(f"a slot is 'subject · attribute', got {text!r}")
        subject, _, attribute = (p.strip() for p in text.partition(_SEP.strip()))
        return cls(
            None if subject in ("", "?") else subject.lower(),
            None if attribute in ("", "?") else attribute.lower(),
        )

    @property
    def known(self) -> bool:
        return self.attribute is not None

    def same(self, other: Slot) -> bool:
        """Both attributes known and equal, and the subjects equal where both are named."""
        if self.attribute is None or other.attribute is None or self.attribute != other.attribute:
            return False
        return self.subject is None or other.subject is None or self.subject == other.subject

    def differs(self, other: Slot) -> bool:
        """Known to be about something else: another attribute, or another named subject."""
        if self.attribute is not None and other.attribute is not None and self.attribute != other.attribute:
            return True
        return self.subject is not None and other.subject is not None and self.subject != other.subject


def _cues(spec: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + spec + r")\b", re.IGNORECASE)


#: attribute -> the cues of a text that states it; the cue that comes first in the text wins
ATTRIBUTES: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {
        "medical condition": _cues(
            r"medical|condition|diagnos\w*|diabet\w*|asthma\w*|epilep\w*|illness|disease|insulin|"
            r"migraines?|arthritis|coeliac|celiac|crohn'?s|anxiety|depression|adhd|blood pressure"
        ),
        "allergy": _cues(r"allerg\w*"),
        "birthday": _cues(r"birthday|born on|date of birth"),
        "commute": _cues(r"commut\w*|line to work|bus to work|train to work|cycles? to work|tube"),
        "manager": _cues(
            r"manager|boss|reports? to|team lead|supervisor|line manager|took over (?:her|his|their) team"
        ),
        "partner": _cues(
            r"partner|boyfriend|girlfriend|husband|wife|married|engaged|fianc[eé]e?|dating|split up|"
            r"broke up|divorced|seeing \w+ now|is seeing"
        ),
        "employer": _cues(
            r"works? (?:at|for|as|in)|(?:where|who) (?:does|do) [\w ]+ work|working (?:at|for|as)|"
            r"employer|employed|job|hired|joined|"
            r"accepted (?:the|an) offer|starts there|new role|company|laid off|resigned|contract at"
        ),
        "home": _cues(
            r"lives? (?:in|at|with|near)|living (?:in|at|with)|moved (?:in|into|back to|house|home|out)|"
            r"moved to (?-i:[A-Z])\w*|relocat\w*|home address|address|rents?|lease|"
            # a dwelling noun counts after a determiner or a word that describes a home, never as the
            # head of another noun's compound ("the tea house", "a guest house" name a place)
            r"(?:my|our|his|her|their|your|the|a|an|new|old|own|rented|current|first|family|bigger|"
            r"smaller)\s+(?:flat|apartment|house)\b|"
            r"two-bed|one-bed|"
            r"neighbourhood|neighborhood"
        ),
        "car": _cues(r"drives?|car|hatchback|sedan|suv|vehicle|traded in"),
        "phone": _cues(r"phone|iphone|pixel \d+|galaxy s\d+|android"),
        "laptop": _cues(r"laptop|macbook|thinkpad|notebook computer"),
        "package manager": _cues(r"package manager|pip|uv|poetry|conda|pipenv|npm|yarn|pnpm|bun|cargo"),
        "database": _cues(
            r"database|db|postgres(?:ql)?|mysql|mariadb|sqlite|mongo(?:db)?|dynamodb|cockroach\w*|"
            r"supabase|aurora"
        ),
        "ci": _cues(r"ci|github actions|jenkins|circleci|gitlab ci|buildkite|travis"),
        "orchestrator": _cues(r"orchestrat\w*|airflow|dagster|prefect|dags?|luigi|cron"),
        "editor": _cues(r"editor|ide|vim|neovim|vs ?code|emacs|pycharm|intellij|sublime|zed|cursor"),
        "shell": _cues(r"shell|zsh|bash|fish shell|(?:uses|runs|switched to) fish"),
        "bank": _cues(r"bank(?:s|ing)?"),
        "doctor": _cues(r"dentist|gp|doctor|physician|therapist"),
        "exercise": _cues(
            r"gym|trains with|workouts?|swim\w*|running|yoga|pilates|cycling|climbing|pt|personal trainer"
        ),
        "diet": _cues(r"vegetarian|vegan|pescatarian|diet|gluten|keto|dairy|meat|eat(?:s|ing)? fish"),
        "pet": _cues(r"pets?|dogs?|cats?|puppy|kitten|adopted|rabbit|hamster|parrot"),
        "language": _cues(r"speaks?|languages?|fluent|learning (?:spanish|french|german|japanese|italian)"),
        "plan": _cues(r"plan|tier|subscription|upgraded to|downgraded to"),
        "quota": _cues(r"quota|storage|seats?|limit"),
        "pay day": _cues(r"salary|paid|pay ?day|payday|paycheck|pays"),
        "timezone": _cues(r"time ?zone|utc|gmt|cet|pst|est"),
        "email": _cues(r"e-?mail"),
        "hosting": _cues(r"deploy\w*|host\w*|aws|gcp|azure|heroku|vercel|fly\.io|netlify|region"),
        "framework": _cues(r"framework|django|flask|fastapi|rails|react|vue|svelte|angular|next\.js"),
        "version": _cues(r"version|python 3\.\d+|node \d+|upgraded"),
    }
)

#: attributes that hold several values at once: a new value adds unless it says it replaces one
MULTI_VALUED: frozenset[str] = frozenset({"pet", "language", "allergy", "medical condition", "doctor"})

_REPLACES = re.compile(
    r"\b(?:instead|replac\w+|no longer|not anymore|any ?more|gave up|give up|dropped|ditched|swapped|"
    r"switched|moved (?:from|off|away)|left|quit|stopped|rehomed|passed away|died|split up|broke up|"
    r"divorced|sold|traded in|actually|correction|not \w+ but|back to)\b",
    re.IGNORECASE,
)

_RELATIONS = (
    "sister|brother|mother|mom|mum|father|dad|son|daughter|wife|husband|partner|boyfriend|girlfriend|"
    "friend|colleague|boss|manager|neighbour|neighbor|cousin|aunt|uncle|kid|child|roommate|flatmate"
)
_RELATION_WORDS = frozenset(_RELATIONS.split("|"))
_NEXT_WORD = re.compile(r"\s+([a-zA-Z][\w\-]*)")
#: nouns a cue word may modify, so that the phrase is about them, not the cue's attribute
_HEADS = frozenset(
    re.findall(
        r"\w+",
        "present presents idea ideas insurance walker walkers clinic clinics practice party parties card "
        "cards fee fees readings reading allowance gift gifts cake dinner plans cover club",
    )
)
_STATES = re.compile(r"(?:is|are|was|were|:)\s", re.IGNORECASE)
_APOS = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our|me)\b", re.IGNORECASE)
_USER = re.compile(r"^(?:the\s+)?user(?:'s)?\b", re.IGNORECASE)
_LEAD = re.compile(r"^(?:so|also|and|but|now|btw|fyi|update|note|ok|okay)\b[,:]?\s*", re.IGNORECASE)
#: an opening possessive: the owner (one to four words), then the owned noun phrase
_POSSESSIVE = re.compile(
    r"^(?:[Tt]he\s+)?((?:[\w.\-]+\s+){0,3}?[\w.\-]+)'s?\s+((?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]*)"
    r"(?=\s+(?:is|are|was|were|has|have|now|will|runs?|got|lives?|moved|changed|:)\b|\s*[:,]|\s+[A-Z])",
)
_RELATION_NAME = re.compile(r"^(?:" + _RELATIONS + r")\s+([A-Z][\w\-]+)\b")
_NAME_VERB = re.compile(
    r"^((?:[A-Z][\w\-]+)(?:\s+[A-Z][\w\-]+){0,2})\s+(?:is|are|was|has|had|have|now|no longer|just|"
    r"recently|also|still|[a-z]+(?:s|ed))\b"
)
_QUESTION_SUBJECT = re.compile(
    r"\b(?:does|did|is|was|has|do|for|of|about|with|to)\s+((?:[A-Z][\w\-]+)(?:\s+[A-Z][\w\-]+)?)\b"
    r"|\b((?:[A-Z][\w\-]+))'s?\b"
)
_NOT_NAMES = frozenset(
    [
        "what",
        "which",
        "who",
        "where",
        "when",
        "how",
        "why",
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "there",
        "here",
        "they",
        "he",
        "she",
        "we",
        "you",
        "i",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "user",
    ]
)


_STOP = frozenset(
    ["and", "or", "but", "the", "a", "an", "of", "to", "in", "on", "at", "for", "with", "by", "from", "as"]
)


@lru_cache(maxsize=4096)
def slot_of(text: str, speaker: str | None = None) -> Slot:
    """The slot of one memory's text (the first clause that names an attribute decides it)."""
    if not isinstance(text, str):
        raise InvalidInput(f"a slot is read from text, not {type(text).__name__}")
    clean = _LEAD.sub("", text.translate(_APOS).strip())
    subject = _subject(clean, speaker)
    attribute: str | None = None
    owned = _owner(clean)
    if owned is not None:
        rest = clean[owned.end(2) :].strip()
        named = _RELATION_NAME.match(owned.group(2) + " " + rest)
        if named is not None:  # "Mira's sister Ola lives in Gdansk": about Ola
            subject = named.group(1).lower()
            attribute = _attribute(rest[len(named.group(1)) :])
        elif owned.group(2).lower() in _RELATION_WORDS and not _STATES.match(rest):
            subject = f"{owned.group(1).lower()} {owned.group(2).lower()}"  # "User's mum lives in Leeds"
            attribute = _attribute(rest)
        else:
            noun = owned.group(2).lower()
            attribute = _attribute(noun) or _attribute(rest) or _noun(noun)
    if attribute is None:
        attribute = _attribute(clean)
    return Slot(subject, attribute)


def _owner(text: str) -> re.Match[str] | None:
    """An opening possessive whose owner is one name ("St Anne's") or one lowercase phrase ("billing
    service's"), not a clause ("Mira left St Anne's")."""
    owned = _POSSESSIVE.match(text)
    if owned is None or (owned.group(1).lower() in _NOT_NAMES and owned.group(1).lower() != "user"):
        return None
    words = owned.group(1).split()
    caps = [w[:1].isupper() for w in words]
    if len(words) > 1 and (any(caps[1:]) != all(caps[1:]) or (caps[0] and not all(caps))):
        return None
    if owned.group(2).split()[-1] in _STOP:
        return None
    return owned


def _subject(text: str, speaker: str | None) -> str | None:
    if _USER.match(text):
        return "user"
    if _FIRST_PERSON.match(text):
        return "user" if speaker is None or speaker.lower() in ("user", "agent") else speaker.lower()
    owned = _owner(text)
    if owned is not None:
        return owned.group(1).lower()
    named = _NAME_VERB.match(text)
    if named is not None and named.group(1).split()[0].lower() not in _NOT_NAMES:
        return named.group(1).lower()
    return None


def _attribute(text: str) -> str | None:
    """The attribute whose cue comes first in ``text`` (a cue that modifies another noun, as in
    "birthday present" or "pet insurance", does not count); ties go to the longer cue."""
    best: tuple[int, int, str] | None = None
    for name, cues in ATTRIBUTES.items():
        for m in cues.finditer(text):
            after = _NEXT_WORD.match(text, m.end())
            if after is None or after.group(1).lower() not in _HEADS:
                key = (m.start(), -(m.end() - m.start()), name)
                best = key if best is None or key[:2] < best[:2] else best
                break
    return None if best is None else best[2]


def _noun(phrase: str) -> str | None:
    words = [w for w in phrase.split() if w not in _NOT_NAMES]
    return " ".join(words[-2:]) if words else None


def question_subject(question: str) -> str | None:
    """The person or thing a question names ("What car does Mira drive?" -> ``mira``)."""
    clean = question.translate(_APOS)
    if re.search(r"\b(?:the user|user's|my|i)\b", clean, re.IGNORECASE):
        return "user"
    for m in _QUESTION_SUBJECT.finditer(clean):
        name = (m.group(1) or m.group(2) or "").lower()
        if name and name.split()[0] not in _NOT_NAMES:
            return name
    return None


def may_replace(new: Slot, old: Slot, text: str) -> bool:
    """Whether a memory of slot ``new`` (text ``text``) may replace one of slot ``old``: never across
    slots (both attributes known and different: "Mira has a new phone" is no update of her medical
    condition), and within a slot that holds several values ("adopted a dog", then "adopted a cat")
    only when the text says a value is replaced."""
    if new.attribute is not None and old.attribute is not None and new.attribute != old.attribute:
        return False
    return not (new.attribute in MULTI_VALUED and new.attribute == old.attribute and not replaces_value(text))


def replaces_value(text: str) -> bool:
    """The text says a value ends or is replaced ("instead of", "no longer", "gave up", ...)."""
    return _REPLACES.search(text.translate(_APOS)) is not None


#: the cosine (unit embeddings) at and above which two memories, the newer saying that something
#: changed, are taken to state one fact (:func:`same_fact`); 0.5 on the notes corpus's labelled
#: pairs (``research.slot_agreement --cosine``)
PAIR_COSINE = 0.5

#: the language of a value that changed: switching, moving, replacing, raising or lowering, starting
#: or ending, correcting, "from now on", "now"
_UPDATE = re.compile(
    r"\b(?:switched|switching|switch to|moved|moving|migrated|migrating|ported|replaced|replacing|"
    r"replace|instead|no longer|not anymore|anymore|any more|no more|now|nowadays|from now on|"
    r"from here|from today|from next|upgraded|downgraded|dropped|stopped|started|starting|changed|"
    r"corrected|correction|actually|turns out|turned out|bumped|raised|lowered|increased|decreased|"
    r"reduced|extended|shortened|as of|renamed|promoted|promotion|relocated|deprecated|swapped|"
    r"retired|reassigned|transferred|cancelled|canceled|postponed|rescheduled|deferred|rebooked|"
    r"became|updated|back to|went back|went up|went down|reverted|discontinued|ended|quit|left|"
    r"took over|handed over|in favour of|in favor of|new|latest|since|going forward|effective|"
    r"after all|is out|gone|over|renewal|renewed|phased out|handed back|sold|signed|accepted)\b",
    re.IGNORECASE,
)


def states_update(text: str) -> bool:
    """The text says a value changed ("switched to", "now", "moved", "went up", "rebooked", ...)."""
    return _UPDATE.search(text.translate(_APOS)) is not None


def same_fact(
    old: Slot,
    new: Slot,
    new_text: str,
    cosine: float,
    *,
    threshold: float = PAIR_COSINE,
    speakers: tuple[str | None, str | None] = (None, None),
) -> bool:
    """Whether an older memory (slot ``old``) and a newer one (slot ``new``, text ``new_text``)
    state one fact: never two known attributes, nor an assistant's suggestion; the same slot, or
    texts whose embeddings are close (``cosine`` at least ``threshold``) when the newer one says
    that something changed (the slot read from two memories, where one text alone does not name it:
    "Daily step goal: 8,000." and "Step target bumped to 10k now the knee has settled.")."""
    if not isinstance(cosine, (int, float)) or math.isnan(cosine):
        raise InvalidInput(f"a cosine is a number, got {cosine!r}")
    if "assistant" in speakers:
        return False
    if old.attribute is not None and new.attribute is not None and old.attribute != new.attribute:
        return False
    return old.same(new) or (cosine >= threshold and states_update(new_text))


def query_slot(question: str) -> Slot:
    """The slot a question asks about: its subject and the first attribute its words name."""
    clean = question.translate(_APOS)
    return Slot(question_subject(clean), _attribute(clean))
