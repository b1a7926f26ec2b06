"""Text cues of the builtin decider: cheap, deterministic regular-expression features of one text.

Private to :mod:`dualmem.control.builtin`. Every function here is pure and cached by its text, so
calling it twice (or from two batches) costs one dictionary lookup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

from dualmem.control.builtin_cues_cjk import (
    cjk_cue_updates,
    cjk_query_cue_updates,
    cjk_tokens,
    without_cjk_runs,
)
from dualmem.text.cjk import has_cjk
from dualmem.text.lexical import STOPWORDS, tokenize
from dualmem.text.stem import stemmer

__all__ = ["Cues", "QueryCues", "containment", "cues", "link", "query_cues", "stem_tokens", "variant"]

_APOS = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'\- ]{0,40}?)\s*:\s+")
_SENTENCES = re.compile(r"[^.!?;]+")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_PERIOD = "night|morning|afternoon|evening|week|weekend|month|year|summer|winter|spring|fall|autumn|time"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_CAUSE_FOLLOWS = re.compile(
    r"\b(?:because(?: of)?|'cause|due to|thanks to|owing to|as a result of|caused by|on account of|"
    r"after(?=[^.!?;]{0,60}\b(?:broke|broken|died|failed|lost|crashed|quit|fired|injur\w*|"
    r"accident|sick|ill|divorce\w*)\b))"
)
_EFFECT_FOLLOWS = re.compile(
    r"(?:,|\band)\s+so\b(?!\s+(?:much|many|glad|happy|good|great|nice|proud|excited|sorry|cool|awesome|"
    r"amazing|true|far|fun|sweet|beautiful|cute|lovely|sad|bad|tired|busy|hard|lucky|thankful|grateful|"
    r"important|special|inspiring|jealous|fast|long|well|\w+ly)\b)|\bso that\b|\btherefore\b|"
    r"\bthat'?s why\b|\bthat is why\b|\bwhich is why\b|"
    r"\bas a result\b|\b(?:led|leads|lead) to\b|\bcaused\b|\bresult(?:ed|s)? in\b|"
    r"\b(?:made|makes|inspired|motivated|prompted|encouraged|pushed) (?:me|him|her|us|them)\b"
)
_WEAK_CAUSAL = frozenset({"so that"})
#: any of these tokens means the (slower) causal clause patterns are worth running
_CAUSAL_GATE = _words(
    """because cause 'cause due thanks owing result caused after so therefore that's why led
    leads lead resulted results made makes inspired motivated prompted encouraged pushed"""
)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_CLOCK = re.compile(r"\d:\d\d")
_MAY_DATE = re.compile(r"\b(?:in|of|early|late|last|next|this|\d+(?:st|nd|rd|th)?) may\b|\bmay \d")
_LIKE_VERB = re.compile(
    r"\b(?:i|we|you|he|she|they|really|also|still|would|do)\s+(?:really\s+|also\s+|still\s+|just\s+)?"
    r"(?:like|likes|liked)\b"
)


@dataclass(frozen=True, slots=True)
class _Lexicon:
    """Single words (matched against the token set) and phrases (matched in the padded text).

    The padded text is the text's words joined by single spaces, so a phrase ``" w1 w2 "`` occurs in
    it only where ``w1`` is one of the words: ``openers`` maps each phrase's first word to its
    phrases, and only the phrases whose first word the text holds are searched for."""

    words: frozenset[str]
    phrases: tuple[str, ...]
    openers: Mapping[str, tuple[str, ...]]

    def count(self, tokens: frozenset[str], padded: str) -> int:
        found = len(tokens & self.words)
        for first in tokens & self.openers.keys():
            found += sum(1 for p in self.openers[first] if p in padded)
        return found

    def hit(self, tokens: frozenset[str], padded: str) -> bool:
        """``count(...) > 0``, stopping at the first word or phrase found."""
        if not self.words.isdisjoint(tokens):
            return True
        return any(p in padded for first in tokens & self.openers.keys() for p in self.openers[first])


def _lexicon(spec: str) -> _Lexicon:
    items = [i.strip() for i in spec.split("|") if i.strip()]
    phrases = tuple(f" {i} " for i in items if " " in i)
    openers: dict[str, list[str]] = {}
    for phrase in phrases:
        openers.setdefault(phrase.split()[0], []).append(phrase)
    return _Lexicon(
        frozenset(i for i in items if " " not in i),
        phrases,
        MappingProxyType({first: tuple(group) for first, group in openers.items()}),
    )


def _periods(*lead: str) -> str:
    return "|".join(f"{w} {p}" for w in lead for p in _PERIOD.split("|"))


_NEGATION = _lexicon(
    "no longer|not anymore|not any more|never|not|no|cannot|stopped|quit|gave up|give up|anymore|no more"
)
_CHANGE = _lexicon(
    "no longer|not anymore|anymore|any more|no more|now|nowadays|these days|moved|changed|switched|"
    "quit|stopped|used to|instead|from now on|gave up|recently started|new job|started"
)


#: the language of a value that changed (broader than ``_CHANGE``: a note that records an update
#: rarely says "I"): switching, moving, replacing, raising or lowering, starting or ending, correcting
_UPDATE = _lexicon(
    "switched|switching|switch to|moved|moving|migrated|migrating|ported|replaced|replacing|instead|"
    "no longer|not anymore|anymore|any more|now|nowadays|from now on|upgraded|downgraded|dropped|"
    "stopped|started|starting|changed|corrected|correction|actually|turns out|turned out|bumped|raised|"
    "lowered|increased|decreased|reduced|cut|extended|shortened|as of|renamed|promoted|relocated|"
    "deprecated|swapped|retired|reassigned|transferred|cancelled|canceled|postponed|rescheduled|"
    "became|updated|back to|went back|reverted|discontinued|ended|quit|left|took over|handed over|"
    "in favour of|in favor of|new|latest|anew|since|going forward|effective"
)
#: words that add beside what stands rather than replace it
_ADDITIVE = _lexicon("also|too|another|additional|extra|as well|in addition|plus|second|stays|still|both")
#: words next to which a text names the value it replaces ("instead of pip", "STM32 dropped")
_REPLACING = frozenset(
    {
        "instead",
        "replaced",
        "replacing",
        "dropped",
        "dropping",
        "ditched",
        "left",
        "leaving",
        "quit",
        "cancelled",
        "canceled",
        "stopped",
        "retired",
        "deprecated",
        "removed",
        "swapped",
        "from",
        "over",
        "off",
        "longer",
        "anymore",
    }
)
_REPLACE_SPAN = 3  # words either side of a replacing word
#: who a text is about when it is not its speaker: "my sister", "her boss", "our son"
_OTHER_PERSON = re.compile(
    r"\b(?:my|our|his|her|their|your)\s+(?:(?:new|old|little|big|younger|older|best)\s+)?"
    r"(sister|brother|mother|mom|mum|father|dad|parents?|son|daughter|wife|husband|partner|boyfriend|"
    r"girlfriend|fianc[eé]e?|friend|colleague|boss|manager|neighbou?r|cousin|aunt|uncle|grandma|grandpa|"
    r"grandmother|grandfather|kids?|child|children|roommate|flatmate|team ?mate|coworker|client)s?\b"
)


def _family(spec: str) -> frozenset[str]:
    return frozenset(spec.split())


#: what a personal fact is about: an update ("moved", "switched", "new job") of one of these
#: replaces an older fact of the same family by the same speaker ("I live in Berlin" -> "we moved to
#: Hamburg"); the families are words of :func:`tokenize`
SLOTS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "residence": _family(
            "live lives living lived move moved moving flat apartment house home hometown rent "
            "neighbourhood neighborhood"
        ),
        "work": _family(
            "job work works working worked employer company position role hire hired join joined team "
            "office boss startup career salary promoted promotion quit"
        ),
        "diet": _family("vegetarian vegan diet eat eating meat fish dairy gluten keto pescatarian"),
        "relationship": _family(
            "boyfriend girlfriend partner husband wife married engaged fiance fiancee divorced dating"
        ),
        "pet": _family("dog cat puppy kitten pet adopt adopted"),
        "tool": _family(
            "switch switched use using laptop phone editor ide framework library stack tool car bike"
        ),
        "study": _family("school university college degree course class studies study studying major"),
        "fitness": _family("run running race marathon pace gym train training workout pr"),
    }
)
_SELF_CHANGE = re.compile(
    r"\b(?:i|we|i've|we've|i'm|we're|i'd|we'd)\b(?:\s+(?!and\b|but\b)\w+){0,3}?\s+(?:moved|relocated|switched|"
    r"changed|started|quit|left|joined|became|stopped|no longer|gave up|took a new|got a new|now)\b"
)
_SLOT_PREFIXES: tuple[tuple[str, str], ...] = (("relocat", "residence"), ("neighbo", "residence"))
_PREF_POS = _lexicon(
    "love|loves|loved|loving|enjoy|enjoys|enjoyed|enjoying|prefer|prefers|preferred|favorite|"
    "favourite|favorites|favourites|fond of|fan of|adore|adores|passionate about|obsessed with"
)
_PREF_NEG = _lexicon(
    "hate|hates|hated|dislike|dislikes|disliked|can't stand|cannot stand|not a fan|not into|detest|"
    "avoid|don't like|doesn't like|didn't like|do not like|does not like|don't really like|"
    "don't enjoy|doesn't enjoy|don't eat|doesn't eat|don't drink|doesn't drink"
)
_HABIT = _lexicon(
    "always|usually|often|regularly|typically|normally|tend to|habit|routine|whenever|"
    + _periods("every", "each")
    + "|every sunday|every saturday"
)
_REPEAT = _lexicon("again|another|once more|as usual|every time|as always|one more time")
_PROCEDURAL = _lexicon(
    "how to|how do you|step|steps|step-by-step|recipe|instructions|instruction|tutorial|guide|"
    "make sure|need to|have to|should|must|in order to|method|technique|tip|tips|trick"
)
_SEQUENCE = _lexicon("first|then|next|finally|afterwards|after that|once done")
_IMPERATIVE = _words(
    """add mix open click put take use go turn set install run preheat stir combine place press
    select remove cut pour bake boil heat check try start make keep avoid don't never always
    remember write fill enter type save wash chop fold whisk pick choose"""
)
_PAST_IRREGULAR = _words(
    """went bought saw got had was were did made took met came broke ate ran told said gave found
    left felt thought brought won lost began wrote sang drove flew spent sent built caught taught
    fell kept slept paid sold heard held became chose swam rode wore"""
)
_FUTURE = _lexicon(
    "will|going to|gonna|plan to|plans to|planning to|tomorrow|soon|upcoming|can't wait|hope to|"
    "intend to|i'll|we'll|you'll|he'll|she'll|they'll|" + _periods("next")
)
_TIME_WORDS = _lexicon(
    "yesterday|today|tonight|tomorrow|ago|recently|earlier|later|lately|o'clock|"
    + _periods("last", "next", "this")
    + "|"
    + _MONTHS.replace("may|", "")
    + "|"
    + _WEEKDAYS
)
_PAST_REF = _lexicon(
    "yesterday|ago|used to|previously|earlier|back then|back when|once|when i was|" + _periods("last")
)
_COPULA = _lexicon(
    "is|are|am|has|have|work as|works as|work at|works at|work for|works for|live in|lives in|"
    "was born|means|consist of|consists of|belong to|belongs to|own|owns|studies|is from|are from"
)
_DEFINITIONAL = _lexicon(
    "|".join(
        f"{v} {o}" for v in ("is", "are", "am") for o in _words("a an the one my her his their our from")
    )
)
_FIRST_PERSON = _lexicon("i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us")

_Q_TEMPORAL = _rx(
    r"\b(?:when|what time|what date|which date|what day|how long|how many (?:days|weeks|months|"
    r"years|hours|minutes|times)|how often|before|after|since|until|till|ago|what year|which year|"
    r"what month|which month|dates?|timeline|in what order|how old|" + _MONTHS + r"|(?:19|20)\d\d)\b"
)
_Q_TEMPORAL_WEAK = _rx(r"\b(?:first|last|during|earlier|later|year|month|week|order|changed?|change)\b")
_Q_CAUSAL = _rx(
    r"\b(?:why|how come|what (?:led|caused|made|motivated|inspired|prompted|drove|pushed)|reasons?|"
    r"because|cause[sd]?|motivat\w*|purpose|due to|result of|as a result|effect of|consequences?|"
    r"explain\w*)\b"
)
_Q_CAUSAL_WEAK = _rx(r"\b(?:impact|influence[sd]?|affect(?:ed|s)?|lead to|so that|what happened after)\b")
_Q_RECENCY = _rx(
    r"\b(?:now|currently|current|latest|recent|recently|still|these days|at the moment|nowadays|"
    r"anymore|any more|today|most recent|last time|presently|at present|so far|yet)\b"
)
_Q_COMPARE = _rx(
    r"\b(?:both|also|as well|compare\w*|than|difference|differ\w*|same|in common|either|together|"
    r"between|combined|in total|altogether|each)\b"
)
_Q_AND = _rx(r"\band\b|,")
_Q_WORDS = _rx(r"\b(?:when|why|how|who|where|what|which)\b")
_Q_WHAT = _rx(r"\b(?:what|which|describe|kind of|type of|favou?rite|tell me about|who)\b")
_PROPER = re.compile(r"\b[A-Z][\w\-]*[a-z][\w\-]*\b")
_NOT_NAMES = (
    _words(
        """i what when why how who where which did does do is are was were has have had can could would
        should will the a an in on at of for and or but if to from with by my your his her their our
        its tell describe name list give please after before since during"""
    )
    | frozenset(_MONTHS.split("|"))
    | frozenset(_WEEKDAYS.split("|"))
)
_EXTRA_STOP = _words(
    """kind type thing things happen happened happens go went get got make made take took say said
    tell told one ones lot lots also really yeah yes well much many longer anymore thanks thank wow
    great awesome amazing hey hi hello cool nice glad sounds sound totally agree yep bye congrats
    congratulations appreciate lol haha man super definitely absolutely"""
)


_stem = stemmer("light")  # irregular forms, then -ies/-s/-ing/-ed, a doubled consonant, a final e


def _content(words: list[str]) -> frozenset[str]:
    return frozenset(_stem(t) for t in words if t not in STOPWORDS and t not in _EXTRA_STOP and len(t) > 1)


def stem_tokens(text: str) -> frozenset[str]:
    """Stemmed content tokens of ``text`` (stopwords and filler verbs removed; CJK runs as bigrams)."""
    tokens = _content(tokenize(text))
    return without_cjk_runs(tokens) | cjk_tokens(text) if has_cjk(text) else tokens


def link(part: frozenset[str], whole: frozenset[str]) -> float:
    """``containment`` damped when fewer than two tokens are shared (one shared word is weak evidence)."""
    shared = len(part & whole)
    return shared / len(part) * min(1.0, shared / 2) if part else 0.0


def containment(part: frozenset[str], whole: frozenset[str]) -> float:
    """The fraction of ``part`` found in ``whole`` (0.0 for an empty ``part``)."""
    if not part:
        return 0.0
    return len(part & whole) / len(part)


def _hits(pattern: re.Pattern[str], text: str, cap: int = 2) -> float:
    n = 0
    for _ in pattern.finditer(text):
        n += 1
        if n >= cap:
            break
    return n / cap


@dataclass(frozen=True, slots=True)
class Cues:
    """What the builtin decider reads from one memory text (0..1 strengths unless noted)."""

    speaker: str | None  # lower-case "Name" of a "Name: ..." prefix
    tokens: frozenset[str]  # stemmed content tokens (a speaker prefix included)
    cause_tokens: frozenset[str]  # tokens of clauses this text gives as a cause
    effect_tokens: frozenset[str]  # tokens of clauses this text gives as an effect
    numbers: frozenset[str]
    causal: float
    negation: float
    change: float
    pref_pos: float
    pref_neg: float
    habit: float
    repeat: float
    procedural: float
    sequence: float
    imperative: float
    past: float
    future: float
    time_words: float
    past_ref: float
    copula: float
    definitional: float
    first_person: float
    question: float
    slots: frozenset[str] = frozenset()  # the SLOTS families the text touches
    self_change: float = 0.0  # the speaker says their own situation changed ("we moved", "I've quit")
    update: float = 0.0  # the text records a value that changed (``_UPDATE``)
    additive: float = 0.0  # the text adds beside what stands ("also", "another", "stays")
    replaced: frozenset[str] = frozenset()  # content tokens next to a replacing word: the old value
    others: frozenset[str] = frozenset()  # the other people the text is about ("my sister" -> sister)


def _causal_clauses(lower: str) -> tuple[frozenset[str], frozenset[str], float]:
    """Tokens given as causes and as effects by causal connectives, and the connectives' strength."""
    cause: set[str] = set()
    effect: set[str] = set()
    strength = 0.0
    for sentence in _SENTENCES.findall(lower):
        for pattern, cause_after in ((_CAUSE_FOLLOWS, True), (_EFFECT_FOLLOWS, False)):
            for m in pattern.finditer(sentence):
                before = stem_tokens(sentence[: m.start()])
                after = stem_tokens(sentence[m.end() :])
                cause |= after if cause_after else before
                effect |= before if cause_after else after
                weak = m.group(0).strip(" ,") in _WEAK_CAUSAL
                strength = max(strength, 0.5 if weak else 1.0)
    return frozenset(cause), frozenset(effect), strength


def _flag(lexicon: _Lexicon, tokens: frozenset[str], padded: str) -> float:
    return 1.0 if lexicon.hit(tokens, padded) else 0.0


def _imperative(words: list[str]) -> float:
    """1.0 when the text opens like an instruction ("Add the flour", "To reset it, ...")."""
    if words and (words[0] in _IMPERATIVE or (words[0] == "to" and len(words) > 1)):
        return 1.0
    return 0.0


def _is_past(token: str) -> bool:
    return (len(token) >= 5 and token.endswith("ed")) or token in _PAST_IRREGULAR


def _time_words(words: list[str], tokens: frozenset[str], lower: str, padded: str) -> float:
    if _TIME_WORDS.hit(tokens, padded):
        return 1.0
    for w in words:
        if len(w) == 4 and w.isdigit() and w[:2] in ("19", "20"):
            return 1.0
        if w[-2:] in ("st", "nd", "rd", "th") and w[:-2].isdigit():
            return 1.0
    if ("may" in tokens and _MAY_DATE.search(lower)) or (":" in lower and _CLOCK.search(lower)):
        return 1.0
    return 0.0


def _negation(words: list[str], tokens: frozenset[str], padded: str) -> float:
    if _NEGATION.hit(tokens, padded) or any(w.endswith("n't") for w in words):
        return 1.0
    return 0.0


def _preference(tokens: frozenset[str], lower: str, padded: str) -> tuple[float, float]:
    positive = _PREF_POS.hit(tokens, padded)
    if not positive and tokens & {"like", "likes", "liked"}:
        positive = _LIKE_VERB.search(lower) is not None
    return (1.0 if positive else 0.0), _flag(_PREF_NEG, tokens, padded)


@lru_cache(maxsize=16384)
def cues(text: str) -> Cues:
    """The cues of one memory text (cached); a CJK text's own cues are added (``builtin_cues_cjk``)."""
    english = _cues(text)
    body = text[m.end() :] if (m := _SPEAKER.match(text.translate(_APOS))) else text
    return replace(english, **cjk_cue_updates(english, body)) if has_cjk(text) else english


def _cues(text: str) -> Cues:
    text = text.translate(_APOS)
    m = _SPEAKER.match(text)
    speaker = m.group(1).strip().lower() if m else None
    body = text[m.end() :] if m else text
    lower = body.lower()
    words = tokenize(lower)
    tokens = frozenset(words)
    padded = " " + " ".join(words) + " "
    cause, effect, causal = (
        _causal_clauses(lower) if tokens & _CAUSAL_GATE else (frozenset(), frozenset(), 0.0)
    )
    pref_pos, pref_neg = _preference(tokens, lower, padded)
    return Cues(
        speaker=speaker,
        tokens=_content(tokenize(text)),
        cause_tokens=cause,
        effect_tokens=effect,
        numbers=frozenset(_NUMBER.findall(body)),
        causal=causal,
        negation=_negation(words, tokens, padded),
        change=_flag(_CHANGE, tokens, padded),
        pref_pos=pref_pos,
        pref_neg=pref_neg,
        habit=_flag(_HABIT, tokens, padded),
        repeat=_flag(_REPEAT, tokens, padded),
        procedural=min(1.0, _PROCEDURAL.count(tokens, padded) / 2),
        sequence=min(1.0, _SEQUENCE.count(tokens, padded) / 2),
        imperative=_imperative(words),
        past=min(1.0, sum(1 for w in tokens if _is_past(w)) / 2),
        future=_flag(_FUTURE, tokens, padded),
        time_words=_time_words(words, tokens, lower, padded),
        past_ref=_flag(_PAST_REF, tokens, padded),
        copula=_flag(_COPULA, tokens, padded),
        definitional=_flag(_DEFINITIONAL, tokens, padded),
        first_person=_flag(_FIRST_PERSON, tokens, padded),
        question=1.0 if body.rstrip().endswith("?") else 0.0,
        slots=_slots(tokens),
        self_change=1.0 if _SELF_CHANGE.search(lower) else 0.0,
        update=_flag(_UPDATE, tokens, padded),
        additive=_flag(_ADDITIVE, tokens, padded),
        replaced=_replaced(words),
        others=frozenset(m.group(1) for m in _OTHER_PERSON.finditer(lower)),
    )


def _replaced(words: list[str]) -> frozenset[str]:
    """The content tokens within ``_REPLACE_SPAN`` words of a replacing word ("instead of pip")."""
    near: list[str] = []
    for i, w in enumerate(words):
        if w in _REPLACING:
            near += [
                x for x in words[max(0, i - _REPLACE_SPAN) : i + _REPLACE_SPAN + 1] if x not in _REPLACING
            ]
    return _content(near) if near else frozenset()


def _slots(tokens: frozenset[str]) -> frozenset[str]:
    """The SLOTS families of a text: a token is a family's word, or starts with one of its prefixes."""
    found = {name for name, words in SLOTS.items() if words & tokens}
    found.update(name for prefix, name in _SLOT_PREFIXES if any(t.startswith(prefix) for t in tokens))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class QueryCues:
    """What the builtin decider reads from a query."""

    tokens: frozenset[str]
    names: frozenset[str]  # lower-case proper nouns
    temporal: float
    causal: float
    recency: float
    compare: float
    conjunction: float
    question_words: int
    what: float


@lru_cache(maxsize=4096)
def query_cues(query: str) -> QueryCues:
    """The cues of one query (cached); a CJK query's own cues are added (``builtin_cues_cjk``)."""
    english = _query_cues(query)
    return replace(english, **cjk_query_cue_updates(english, query)) if has_cjk(query) else english


def _query_cues(query: str) -> QueryCues:
    text = query.translate(_APOS)
    names = frozenset(
        w.lower().removesuffix("'s") for w in _PROPER.findall(text) if w.lower() not in _NOT_NAMES
    )
    return QueryCues(
        tokens=stem_tokens(text),
        names=names,
        temporal=max(_hits(_Q_TEMPORAL, text, 1), 0.5 * _hits(_Q_TEMPORAL_WEAK, text, 1)),
        causal=max(_hits(_Q_CAUSAL, text, 1), 0.5 * _hits(_Q_CAUSAL_WEAK, text, 1)),
        recency=_hits(_Q_RECENCY, text, 1),
        compare=_hits(_Q_COMPARE, text, 1),
        conjunction=_hits(_Q_AND, text, 1),
        question_words=len({w.lower() for w in _Q_WORDS.findall(text)}),
        what=_hits(_Q_WHAT, text, 1),
    )


def _edit_distance(a: str, b: str, bound: int | None = None) -> int:
    """Levenshtein distance; with ``bound``, any value above ``bound`` once the distance is known to
    exceed it (a row's minimum never decreases further down the table, so the rest is skipped)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if bound is not None and min(cur) > bound:
            return min(cur)
        prev = cur
    return prev[-1]


@lru_cache(maxsize=16384)
def variant(a: str, b: str) -> float:
    """How much two different entity identifiers look like names of one entity (0..1)."""
    a, b = a.strip().lower(), b.strip().lower()
    if not a or not b or a == b:
        return 0.0
    short, long_ = sorted((a, b), key=len)
    words = long_.replace("-", " ").split()
    if len(short) >= 3 and (long_.startswith(short) or short in words):
        return 0.9
    if len(words) > 1 and short.replace(".", "") == "".join(w[0] for w in words):
        return 0.9
    # a ratio >= 0.7 needs close lengths (edit distance >= length gap); spelling variants of one
    # name keep their first letter. Both checks skip the quadratic distance for most pairs.
    if len(long_) > 40 or len(long_) - len(short) > 0.3 * len(long_) or a[0] != b[0]:
        return 0.0
    # ratio >= 0.7 needs a distance <= 0.3 x length: a distance known to be well above that (the
    # bound leaves a margin for the float ratio) is 0.0 without the rest of the table
    ratio = 1.0 - _edit_distance(a, b, int(0.3 * len(long_)) + 1) / len(long_)
    return ratio if ratio >= 0.7 else 0.0
