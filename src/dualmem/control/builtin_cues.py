"""Text cues of the builtin decider: cheap, deterministic regular-expression features of one text.

Private to :mod:`dualmem.control.builtin`. Every function here is pure and cached by its text, so
calling it twice (or from two batches) costs one dictionary lookup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dualmem.text.lexical import STOPWORDS, tokenize

__all__ = ["Cues", "QueryCues", "containment", "cues", "query_cues", "stem_tokens", "variant"]

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


_CAUSE_FOLLOWS = _rx(
    r"\b(?:because(?: of)?|'cause|due to|thanks to|owing to|as a result of|caused by|on account of|"
    r"since|after(?=[^.!?;]{0,60}\b(?:broke|broken|died|failed|lost|crashed|quit|fired|injur\w*|"
    r"accident|sick|ill|divorce\w*)\b))"
)
_EFFECT_FOLLOWS = _rx(
    r"(?:,|\band)\s+so\b|\bso that\b|\btherefore\b|\bthat'?s why\b|\bthat is why\b|\bwhich is why\b|"
    r"\bas a result\b|\b(?:led|leads|lead) to\b|\bcaused\b|\bresult(?:ed|s)? in\b|"
    r"\b(?:made|makes|inspired|motivated|prompted|encouraged|pushed) (?:me|him|her|us|them)\b"
)
_WEAK_CAUSAL = frozenset({"since", "so that"})
_NEGATION = _rx(
    r"\b(?:no longer|not anymore|not any more|never|not|no|cannot|stopped|quit|gave up|give up|"
    r"anymore|no more)\b|n't\b"
)
_CHANGE = _rx(
    r"\b(?:no longer|not anymore|anymore|any more|no more|now|nowadays|these days|moved|changed|"
    r"switched|quit|stopped|used to|instead|from now on|gave up|recently started|new job|started)\b"
)
_PREF_POS = _rx(
    r"\b(?:love|loves|loved|loving|enjoy|enjoys|enjoyed|enjoying|prefer|prefers|preferred|"
    r"favou?rites?|fond of|fan of|adore|adores|passionate about|obsessed with|"
    r"(?:i|we|you|he|she|they|really|also|still|would|do)\s+(?:really\s+|also\s+|still\s+|just\s+)?"
    r"(?:like|likes|liked))\b"
)
_PREF_NEG = _rx(
    r"\b(?:hate|hates|hated|dislike|dislikes|disliked|can't stand|cannot stand|not a fan|not into|"
    r"detest|(?:don't|doesn't|didn't|do not|does not) (?:really )?(?:like|enjoy|eat|drink)|avoid)\b"
)
_HABIT = _rx(
    r"\b(?:always|usually|often|regularly|typically|normally|tend to|habit|routine|whenever|"
    r"every (?:day|week|weekend|morning|evening|night|month|year|summer|time|sunday|saturday)|"
    r"each (?:day|week|morning|year))\b"
)
_REPEAT = _rx(r"\b(?:again|another|once more|as usual|every time|as always|one more time)\b")
_PROCEDURAL = _rx(
    r"\b(?:how to|how do you|how you|steps?|step-by-step|recipe|instructions?|tutorial|guide|"
    r"make sure|you (?:need|have|should|must) to|in order to|method|technique|tips?|trick|"
    r"first,? |then |next,|finally,|afterwards,)"
)
_IMPERATIVE = _rx(
    r"^(?:add|mix|open|click|put|take|use|go|turn|set|install|run|preheat|stir|combine|place|press|"
    r"select|remove|cut|pour|bake|boil|heat|check|try|start|make|keep|avoid|don't|do not|never|"
    r"always|remember|write|fill|enter|type|save|wash|chop|fold|whisk|pick|choose)\b"
)
_PAST = _rx(
    r"\b(?:\w{3,}ed|went|bought|saw|got|had|was|were|did|made|took|met|came|broke|ate|ran|told|"
    r"said|gave|found|left|felt|thought|brought|won|lost|began|wrote|sang|drove|flew|spent|sent|"
    r"built|caught|taught|fell|kept|slept|paid|sold|heard|held|became|chose|swam|rode|wore)\b"
)
_FUTURE = _rx(
    r"\b(?:will|going to|gonna|plan(?:ning|s)? to|tomorrow|next (?:" + _PERIOD + r")|soon|"
    r"upcoming|can't wait|hope to|intend to)\b|'ll\b"
)
_TIME_WORDS = _rx(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|earlier|later|lately|"
    r"(?:last|next|this) (?:" + _PERIOD + r")|" + _MONTHS + r"|" + _WEEKDAYS + r"|"
    r"(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)|\d{1,2}:\d\d|o'clock)\b"
)
_PAST_REF = _rx(
    r"\b(?:yesterday|ago|used to|previously|earlier|back then|back when|once|when i was|"
    r"last (?:" + _PERIOD + r"))\b"
)
_COPULA = _rx(
    r"\b(?:is|are|am|has|have|works? (?:as|at|for)|lives? in|was born|means|consists? of|"
    r"belongs? to|owns?|studies|is from|are from)\b"
)
_DEFINITIONAL = _rx(r"\b(?:is|are|am) (?:a|an|the|one of|my|her|his|their|our|from)\b")
_FIRST_PERSON = _rx(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us)\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")

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
    tell told one ones lot lots also really yeah yes well much many longer anymore"""
)


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    if len(token) > 5 and token.endswith("ing"):
        return token[:-3]
    return token


def stem_tokens(text: str) -> frozenset[str]:
    """Stemmed content tokens of ``text`` (stopwords and filler verbs removed)."""
    return frozenset(
        _stem(t) for t in tokenize(text) if t not in STOPWORDS and t not in _EXTRA_STOP and len(t) > 1
    )


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
    tokens: frozenset[str]  # stemmed content tokens of the body
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
    imperative: float
    past: float
    future: float
    time_words: float
    past_ref: float
    copula: float
    definitional: float
    first_person: float
    question: float


def _causal_clauses(body: str) -> tuple[frozenset[str], frozenset[str], float]:
    cause: set[str] = set()
    effect: set[str] = set()
    strength = 0.0
    for sentence in _SENTENCES.findall(body):
        for pattern, cause_after in ((_CAUSE_FOLLOWS, True), (_EFFECT_FOLLOWS, False)):
            for m in pattern.finditer(sentence):
                before = stem_tokens(sentence[: m.start()])
                after = stem_tokens(sentence[m.end() :])
                cause |= after if cause_after else before
                effect |= before if cause_after else after
                weak = m.group(0).strip(" ,").lower() in _WEAK_CAUSAL
                strength = max(strength, 0.5 if weak else 1.0)
    return frozenset(cause), frozenset(effect), strength


@lru_cache(maxsize=16384)
def cues(text: str) -> Cues:
    """The cues of one memory text (cached)."""
    text = text.translate(_APOS)
    m = _SPEAKER.match(text)
    speaker = m.group(1).strip().lower() if m else None
    body = text[m.end() :] if m else text
    cause, effect, causal = _causal_clauses(body)
    return Cues(
        speaker=speaker,
        tokens=stem_tokens(body),
        cause_tokens=cause,
        effect_tokens=effect,
        numbers=frozenset(_NUMBER.findall(body)),
        causal=causal,
        negation=_hits(_NEGATION, body, 1),
        change=_hits(_CHANGE, body, 1),
        pref_pos=_hits(_PREF_POS, body, 1),
        pref_neg=_hits(_PREF_NEG, body, 1),
        habit=_hits(_HABIT, body, 1),
        repeat=_hits(_REPEAT, body, 1),
        procedural=_hits(_PROCEDURAL, body),
        imperative=1.0 if _IMPERATIVE.match(body.lstrip()) else 0.0,
        past=_hits(_PAST, body),
        future=_hits(_FUTURE, body, 1),
        time_words=_hits(_TIME_WORDS, body, 1),
        past_ref=_hits(_PAST_REF, body, 1),
        copula=_hits(_COPULA, body, 1),
        definitional=_hits(_DEFINITIONAL, body, 1),
        first_person=_hits(_FIRST_PERSON, body, 1),
        question=1.0 if body.rstrip().endswith("?") else 0.0,
    )


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
    """The cues of one query (cached)."""
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


def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
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
    if len(long_) > 40:
        return 0.0
    ratio = 1.0 - _edit_distance(a, b) / len(long_)
    return ratio if ratio >= 0.7 else 0.0
