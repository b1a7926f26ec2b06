"""An offline System-Two stand-in: quotes the evidence sentence that answers the question, or abstains.

It is extractive, not generative: it never writes a fact that is not in the evidence. Every
sentence of the evidence is a candidate, measured against the question (:class:`Candidate`):

- **topic**: the share of the question's topic words (content words, Porter-stemmed, without the
  speakers' names and the question's own dates; a word most sentences share weighs less) that the
  sentence has, and that the sentence before it has (an answer often follows the sentence that
  names the topic);
- **meaning**: the cosine of its memory's stored vector with the question's, when the answerer has
  an embedder (``Memory`` lends it its own);
- **answer type**: whether it holds what the question's form asks for and the question does not
  already say: a person for *who*, a time expression for *when*, a place for *where*, a number for
  *how many*, a name for *what is the name*, a reason for *why*, something new for *what/which*;
- **news**: the share of its content words the question lacks (a sentence that restates the
  question answers nothing);
- **date**: its memory's day or one of its time expressions falls within a week of a date the
  question names;
- less when it is said by someone else about someone else than the person the question names (or,
  between "user" and "assistant", by the other role than the question asks about), and when it is
  itself a question.

The weighted sum of these is the sentence's *support*; its *score* adds its evidence's retrieval
score (relative to the best evidence's), so retrieval orders the candidates but only the support
decides whether to answer. A sentence qualifies when it, or its memory, shares a topic word (or its
memory's meaning reaches ``min_meaning``) and it says something the question does not (yes/no
questions excepted). The best-scored qualifying sentence is quoted with its own source (speaker and
day; its memory first in ``Draft.used``), and the answerer abstains when none qualifies or its
support is below ``min_score``. Relative time expressions are followed by their grounded dates,
e.g. "yesterday [15 May 2024]".

The weights and the threshold were chosen on LoCoMo dev and the agent-chat corpus, with Mem-Gallery
held out (``bench/answer_quality.py --tune``, figures there). Deterministic: the same question and
evidence give the same draft; no model is asked (the embedder only embeds the question, which
retrieval has usually just embedded).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from dualmem.embed.base import Embedder, embed_queries
from dualmem.reason.base import ABSTAIN_TEXT, Draft
from dualmem.text._cjk_words import CJK_STOP_BIGRAMS, OTHER_PEOPLE
from dualmem.text.cjk import CJK_CHARS, bigrams, cjk_runs, has_cjk
from dualmem.text.cues import query_time_focus
from dualmem.text.entities import extract_entities
from dualmem.text.lexical import STOPWORDS, tokenize
from dualmem.text.query import analyze, perspective, role_of
from dualmem.text.stem import stem
from dualmem.text.temporal import describe, ground
from dualmem.text.timeparse import format_day
from dualmem.types import Evidence, TemporalRef

#: the retrieval weight of a replaced version of a fact (``valid_to`` set) on a present-tense question
REPLACED_WEIGHT = 0.5

__all__ = ["ABSTAIN_TEXT", "Candidate", "Expect", "ExtractiveAnswerer", "expected_answer", "split_sentences"]

Expect = Literal[
    "person", "time", "place", "number", "duration", "frequency", "reason", "name", "thing", "yes_no"
]

# -- sentences --------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")
_BREAK = re.compile(
    r"(?<=[.!?])[\"'”’)\]]*\s+"  # English: a full stop and a space
    rf"|(?<=[!?])(?=[{CJK_CHARS}])"  # an ASCII ! or ? right before CJK text
)
#: a CJK full stop (no space needed after it) and the closing quotes that stay with its sentence
_CJK_END = re.compile(r"([。！？．][\"'”’」』）)\]]*)\s*(?=\S)")
#: characters of an unfinished line from which it reads as hard-wrapped prose, not a title
_WRAPPED = 60
#: CJK characters a title line has at most (a longer unfinished line goes on in the next one)
_CJK_TITLE = 12
#: a line that ends a sentence (or a label before a list): the next line starts another
_ENDS = re.compile(r"[.!?:;。！？．：；…][\"'”’」』）)\]]*$")
_ABBREVIATION = re.compile(
    r"(?:\b(?:dr|mr|mrs|ms|st|prof|sr|jr|vs|etc|approx|no|mt|ft|fig|e\.g|i\.e|a\.m|p\.m)|(?<![\w.])[A-Z])"
    r"\.[\"'”’)\]]*$",
    re.IGNORECASE,
)
_SPEAKER_PREFIX = re.compile(r"^[^\W\d_][\w .'-]{0,40}:\s+")


def split_sentences(text: str) -> list[str]:
    """The sentences of a memory's text: its lines (code blocks, table rules and markdown markers
    left out), each split after ``.!?`` (not after "Dr.", "e.g." or an initial) and after the CJK
    full stops ``。！？．`` (no space needed). A sentence wrapped over several lines is one sentence:
    a line that ends without a full stop, colon or semicolon goes on in the next plain line (not a
    list item, heading, quote, table row or blank line)."""
    out: list[str] = []
    for line in _lines(text):
        merged: list[str] = []
        for piece in (p for part in _CJK_END.sub("\\1\0", line).split("\0") for p in _BREAK.split(part)):
            if merged and _ABBREVIATION.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        out += [p.strip() for p in merged if any(ch.isalnum() for ch in p)]
    return out


def _lines(text: str) -> list[str]:
    """The text's lines, markup left out, each wrapped sentence joined into one line."""
    lines: list[str] = []
    open_line = False  # the last line goes on in the next plain one
    item = False  # the last line is (the continuation of) a list item
    in_code = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            in_code = not in_code
            open_line = False
            continue
        if in_code or _TABLE_RULE.match(raw):
            open_line = False
            continue
        plain = not _MARKUP.match(raw) and not raw.lstrip().startswith("|")
        line = _EMPHASIS.sub("", _MARKUP.sub("", raw)).strip().strip("|").strip()
        if not line:
            open_line = False
            continue
        # a list item goes on only in an indented line ("- buy milk and\n  eggs")
        merged = open_line and plain and (not item or raw[:1].isspace()) and _goes_on(lines[-1], line)
        if merged:
            joiner = "" if has_cjk(lines[-1][-1:]) and has_cjk(line[:1]) else " "
            lines[-1] = f"{lines[-1]}{joiner}{line}"
        else:
            lines.append(line)
        open_line = _ENDS.search(lines[-1]) is None and not raw.lstrip().startswith(("#", "|"))
        item = (item and merged) or _MARKUP.match(raw) is not None
    return lines


def _goes_on(before: str, line: str) -> bool:
    """Whether ``line`` continues the unfinished ``before``: it starts in lower case or with a
    comma-like mark (a title line "Meeting notes" before "Alice will ..." stays apart, as does a
    recipe's "Salmon patties (20 min)" before "1 can salmon ..."), or both are CJK and ``before`` is
    longer than a title."""
    first = line[0]
    if first.islower() or first in ",，、(（":
        return True
    if (
        first.isupper() and len(before) >= _WRAPPED and " " in before
    ):  # a hard-wrapped line ("... with\nAlice")
        return True
    return has_cjk(before[-1:]) and has_cjk(first) and len(before) > _CJK_TITLE


# -- what the question asks for ---------------------------------------------------------------------

_I = re.IGNORECASE
_EXPECT_RULES: tuple[tuple[re.Pattern[str], Expect], ...] = (
    (re.compile(r"\bhow\s+(?:many|much)\b|\bwhat\s+(?:number|percentage|amount|price)\b", _I), "number"),
    (re.compile(r"\b(?:for\s+)?how\s+long\b", _I), "duration"),
    (re.compile(r"\bhow\s+(?:often|frequently)\b", _I), "frequency"),
    (
        re.compile(
            r"\bwhen\b|\b(?:what|which)\s+(?:(?:is|was|were|are)\s+the\s+)?"
            r"(?:year|month|day|date|time|week|weekend|season)\b",
            _I,
        ),
        "time",
    ),
    (
        re.compile(
            r"\bwhere\b|\b(?:what|which)\s+(?:city|country|place|town|state|location|restaurant|shop|store)\b",
            _I,
        ),
        "place",
    ),
    (re.compile(r"\bwho(?:m|se)?\b|\bwhich\s+(?:friend|person|people|family\s+member)\b", _I), "person"),
    (
        re.compile(
            r"\bwhy\b|\bwhat\s+(?:made|motivated|inspired|caused|led|prompted)\b|\bwhat\s+(?:is|was)\s+the\s+reason\b",
            _I,
        ),
        "reason",
    ),
    (re.compile(r"\b(?:what|which)\b[^?]*?\b(?:names?|called|named|titled|title|brand|breed)\b", _I), "name"),
    (re.compile(r"\bwhat\b|\bwhich\b|\bhow\b", _I), "thing"),
)
_AUXILIARY = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|should|might)\b", _I
)


def expected_answer(question: str) -> Expect:
    """The kind of answer a question asks for, from its wording alone: the rule that matches
    earliest wins ("What did they give him when they met?" asks for a thing, not a time)."""
    found = [
        (m.start(), order, kind) for order, (p, kind) in enumerate(_EXPECT_RULES) if (m := p.search(question))
    ]
    if found:
        return min(found)[2]
    if has_cjk(question):
        return _cjk_expected(question)
    return "yes_no" if _AUXILIARY.search(question) else "thing"


#: CJK characters that carry no topic on their own (function words, pronouns, common verbs, numerals)
_CJK_FUNCTION = frozenset(
    "的了着过是在和与也都就还又很太最吧呢吗啊呀我你他她它们这那哪有没不个只一二三四五六七八九十两几"
    "什么谁怎为叫说想要会能去来到做用看吃喝买天年月日号周上下里中前后好多少大小"
    "のはがをにでともへやかだてねよいうくすたなりれる"
)
#: what a CJK question asks for, by its question words (the earliest match wins, as in English)
_CJK_EXPECT: tuple[tuple[re.Pattern[str], Expect], ...] = (
    (re.compile("多久|多长时间|几年了|几个月了|どのくらい|얼마나 오래"), "duration"),
    (re.compile("多少|几个|几只|几次|几岁|いくつ|いくら|何人|몇|얼마"), "number"),
    (re.compile("什么时候|何时|哪天|哪一天|几号|几月|哪年|哪一年|几点|いつ|何時|何日|언제"), "time"),
    (re.compile("为什么|为何|怎么会|原因|なぜ|どうして|왜"), "reason"),
    (re.compile("谁|哪位|誰|だれ|누구"), "person"),
    (re.compile("哪里|哪儿|在哪|哪个城市|什么地方|どこ|어디"), "place"),
    (re.compile("叫什么|名字|什么名|名前|이름"), "name"),
    (re.compile("什么|哪|何|なに|どんな|무엇|뭐|무슨"), "thing"),
    (re.compile("吗[？?]?$|ですか[？?]?$|ますか[？?]?$|까[？?]?$"), "yes_no"),
)
#: a sentence holds a cause
_CJK_REASON = re.compile("因为|由于|所以|为了|因此|被|ので|から|ため|때문|해서")
#: a sentence names a place
_CJK_PLACE = re.compile(
    "[市省县区镇村路街]|公园|医院|中心|学校|商场|机场|车站|公司|餐厅|饭店|东京|北京|上海|深圳|杭州"
)


def _new_names(sentence: str, question_bigrams: frozenset[str]) -> bool:
    """Whether the sentence names something (an entity) none of whose bigrams the question holds."""
    return any(not set(bigrams(e)) & question_bigrams for e in extract_entities(sentence) if has_cjk(e))


def _cjk_expected(question: str) -> Expect:
    found = [(m.start(), i, kind) for i, (p, kind) in enumerate(_CJK_EXPECT) if (m := p.search(question))]
    return min(found)[2] if found else "thing"


def _cjk_kind(expect: Expect, sentence: str, question_bigrams: frozenset[str]) -> bool:
    """``_has_kind`` for a CJK sentence: what it holds beyond the question's own words."""
    fresh = [b for b in bigrams(sentence) if b not in question_bigrams and b not in CJK_STOP_BIGRAMS]
    if expect == "reason":
        return _CJK_REASON.search(sentence) is not None
    if expect == "place":  # a place word, or a name the question does not hold (腾讯, 杭州)
        return _CJK_PLACE.search(sentence) is not None or _new_names(sentence, question_bigrams)
    if expect == "number":
        return (
            _DIGIT.search(sentence) is not None
            or re.search("[一二两三四五六七八九十百千万]", sentence) is not None
        )
    if expect == "person":
        people = any(p in sentence for p in OTHER_PEOPLE) or "叫" in sentence or "さん" in sentence
        return people or _new_names(sentence, question_bigrams)
    if expect == "name":
        return "叫" in sentence or "名字" in sentence or "名前" in sentence or "이름" in sentence
    return bool(fresh) if expect in {"thing", "duration", "frequency"} else True


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# words of a question that say what kind of answer it wants, not what it is about
_FORM_WORDS = _words(
    "name names called named kind type sort many much long often time times date year month day week "
    "happen happened think thought"
)
_FORM_STEMS = frozenset(stem(w) for w in _FORM_WORDS)
_PERSON_NOUNS = _words(
    """
    mom mother mum dad father parent parents sister sisters brother brothers sibling siblings son sons
    daughter daughters kid kids child children baby wife husband partner boyfriend girlfriend fiance
    fiancee spouse friend friends buddy cousin cousins aunt uncle niece nephew grandma grandmother
    grandpa grandfather grandparents family colleague colleagues coworker coworkers boss manager team
    teacher teachers coach mentor neighbor neighbour neighbors neighbours doctor therapist counselor
    nurse vet roommate classmate classmates group club community
    """
)
_PLACE_NOUNS = _words(
    """
    home house apartment city town village country park beach lake river mountain mountains forest
    museum gallery library school university college campus office gym studio restaurant cafe bar shop
    store market mall church hospital clinic center centre street road trail camp festival theater
    theatre stadium zoo garden island coast downtown abroad
    """
)
_NUMBER_WORDS = _words(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
    "million dozen couple twice once half"
)
_UNITS = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|decades?)"
_DURATION = re.compile(
    rf"\b(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|several|couple\s+of)\s+{_UNITS}\b"
    r"|\bsince\b|\ball\s+(?:day|week|year|my\s+life)\b",
    _I,
)
_FREQUENCY = re.compile(
    r"\b(?:every|each|daily|weekly|monthly|yearly|annually|once|twice|times|always|usually|often|"
    r"regularly|sometimes|per|never)\b",
    _I,
)
_REASON = re.compile(
    r"\b(?:because|since|so|due\s+to|reason|thanks\s+to|that's\s+why|in\s+order\s+to|cause)\b", _I
)
_CAPITAL = re.compile(r"[A-Z][\w'’-]*")
_PLACE_AFTER = re.compile(r"\b(?:in|at|to|from|near|around|visit(?:ed|ing)?)\s+(?:the\s+)?[A-Z]\w+")
_QUOTED = re.compile(r"[\"“][^\"”]{2,60}[\"”]")
_DIGIT = re.compile(r"\d")
_POSSESSIVE = re.compile(r"['’]s?$")
#: capitalised words that are not names: interjections and the usual first words of a chat turn
_NOT_NAMES = _words(
    """
    i thanks thank wow yes yeah yep yup no nope nah hey hi hello sure great congrats congratulations
    awesome cool nice oh ok okay omg haha ha lol sounds good glad love absolutely definitely totally
    really aw aww woah whoa woohoo yay oof ouch oops phew ugh hmm yum cheers bye btw fyi plus also
    well anyway anyways last next first finally actually honestly hopefully luckily unfortunately
    thankfully especially recently lately super pretty best crazy bet guess check look see tell take
    keep make let hope wish remember imagine appreciate agreed exactly right true sorry gonna wanna
    gotta lots things stuff people life time today yesterday tomorrow tonight
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december
    """
)
_ENDINGS = ("ing", "ed", "ly", "'s", "’s")


def _names(sentence: str, common: frozenset[str]) -> set[str]:
    """Lower-case capitalised words of ``sentence`` that may be names. The first word of a
    sentence counts only when it is not a usual first word, not "-ing/-ed/-ly" and never seen in
    lower case in the evidence (``common``)."""
    out = set()
    for m in _CAPITAL.finditer(sentence):
        word = _POSSESSIVE.sub("", m.group(0).lower())
        if not word or word in STOPWORDS or word in _NOT_NAMES:
            continue
        initial = not any(ch.isalnum() for ch in sentence[: m.start()])
        if initial and (word in common or m.group(0).lower().endswith(_ENDINGS)):
            continue
        out.add(word)
    return out


_NAMING = frozenset({"name", "names", "named", "called", "titled", "title"})
_NEAR_WORDS = 4


def _named_near(sentence: str, names: set[str], topic: frozenset[str], *, alone: bool = True) -> bool:
    """A name within a few words of a topic word or of "name/called" ("the vet, Dr. Okafor"; "her
    name's Coco"), or (``alone``) a name in a sentence without any (its topic is in its context)."""
    tokens = tokenize(sentence)
    anchors = [i for i, t in enumerate(tokens) if t in _NAMING or stem(t) in topic]
    if not anchors:
        return alone and bool(names)
    return any(abs(i - j) <= _NEAR_WORDS for i, t in enumerate(tokens) if t in names for j in anchors)


def _has_kind(
    expect: Expect,
    sentence: str,
    ev: Evidence,
    q_words: frozenset[str],
    common: frozenset[str],
    topic: frozenset[str],
) -> bool:
    """Whether ``sentence`` holds the kind of answer ``expect`` names, beyond what the question says."""
    if expect != "time" and has_cjk(sentence) and any(has_cjk(w) for w in q_words):
        return _cjk_kind(expect, sentence, frozenset(w for w in q_words if has_cjk(w)))
    words = [w for w in tokenize(sentence) if w not in q_words]
    if expect == "person":
        names = _names(sentence, common) - q_words
        return any(w in _PERSON_NOUNS for w in words) or _named_near(sentence, names, topic, alone=False)
    if expect == "time":
        return any(ref.expression in sentence for ref in ev.temporal_refs) or bool(
            ground(sentence, ev.node.at)
        )
    if expect == "place":
        names = _names(sentence, common) - q_words - {(ev.node.speaker or "").lower()}
        return bool(_PLACE_AFTER.search(sentence) or names or any(w in _PLACE_NOUNS for w in words))
    if expect == "number":
        return any(_DIGIT.search(w) or w in _NUMBER_WORDS for w in words)
    pattern = {"duration": _DURATION, "frequency": _FREQUENCY, "reason": _REASON}.get(expect)
    if pattern is not None:
        return pattern.search(sentence) is not None
    if expect == "name":
        return (
            _named_near(sentence, _names(sentence, common) - q_words, topic)
            or _QUOTED.search(sentence) is not None
        )
    if expect == "thing":
        return any(w not in STOPWORDS for w in words)
    return True


# -- candidates -------------------------------------------------------------------------------------

_NEAR = dt.timedelta(days=7)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One sentence of the evidence with what the answerer measured of it (module docstring)."""

    sentence: str
    evidence: Evidence
    rank: int  # the evidence's position (0 = the best retrieved)
    topic: float  # share of the question's topic weight the sentence covers (0..1)
    context: float  # the same share for its whole memory (a sentence of an on-topic memory qualifies)
    before: float  # the same share for the sentence before it in its memory (0 for the first)
    meaning: float  # cosine of its memory's vector with the question's (0 without an embedder)
    typed: bool  # holds the kind of answer the question asks for
    news: float  # share of its content words the question lacks (0..1)
    dated: bool  # its memory's day or a time expression of it falls near a date the question names
    other_party: bool  # said by someone else about someone else than the person the question names
    asks: bool  # itself a question
    covers: frozenset[str] = frozenset()  # the question's topic words (stems) it has
    retrieval: float = 0.0  # its evidence's score over the best evidence's


def _stems(text: str) -> list[str]:
    """Stems of the English words, and the bigrams and content characters of CJK runs (no spaces
    between CJK words; a one-character noun such as 狗 or 猫 matches only as a character)."""
    words = [stem(t) for t in tokenize(text) if t not in STOPWORDS and not has_cjk(t)]
    if not has_cjk(text):
        return words
    grams = [b for b in bigrams(text) if b not in CJK_STOP_BIGRAMS]
    return words + grams + [c for run in cjk_runs(text) for c in run if c not in _CJK_FUNCTION]


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _other_party(speaker: str, sentence: str, named: set[str], role: str | None) -> bool:
    """Said by someone else than the person the question names, and not about them; or, where
    speakers are roles ("user", "assistant"), said by the other role than the one it asks about."""
    if named:
        return speaker not in named and not any(_mentions(sentence.lower(), n) for n in named)
    theirs = role_of(speaker)
    return role is not None and theirs is not None and theirs != role


def _near(ev: Evidence, asked: Sequence[TemporalRef]) -> bool:
    spans = [(r.start, r.end) for r in ev.temporal_refs]
    if ev.node.at is not None:
        spans.append((ev.node.at.date(), ev.node.at.date()))
    return any(s <= q.end + _NEAR and q.start - _NEAR <= e for s, e in spans for q in asked)


@dataclass(eq=False, kw_only=True)
class ExtractiveAnswerer:
    """Quote the evidence sentence that best answers the question (module docstring), or abstain.

    ``embedder`` embeds the question for the meaning measure, against each memory's stored vector
    (``Memory`` lends its query embedder to an extractive answerer that has none; without one the
    meaning is 0). The ``w_*`` weights and ``other_party``/``asks`` penalties make the support;
    ``w_rank`` weighs retrieval into the score; ``min_score`` is the least support that answers. A
    second sentence, from another memory, is added when its score is within ``second`` of the best's
    and it holds the kind of answer the first lacks or a topic word it lacks. The defaults are the
    tuned values (``bench/answer_quality.py --tune``).
    """

    name = "extractive"

    embedder: Embedder | None = None
    w_topic: float = 1.0
    w_before: float = 0.15
    w_meaning: float = 0.3
    w_typed: float = 0.5
    w_news: float = 0.3
    w_dated: float = 0.8
    w_rank: float = 3.0
    other_party: float = 1.0
    asks: float = 0.4
    min_meaning: float = 0.5
    min_score: float = 0.85
    second: float = 0.85
    max_sentences: int = 2

    # -- measuring --------------------------------------------------------------------------------
    def candidates(self, question: str, evidence: Sequence[Evidence]) -> list[Candidate]:
        """Every sentence of ``evidence`` measured against ``question`` (unscored, in evidence order)."""
        speakers = {(ev.node.speaker or "").strip().lower() for ev in evidence} - {""}
        speaker_words = {stem(t) for s in speakers for t in tokenize(s)}
        speaker_words |= {x for s in speakers if has_cjk(s) for x in _stems(s)}  # 小林: 小林 and 林
        asked = ground(question, None)  # the dates the question names (absolute ones only)
        about = question
        for ref in asked:
            about = about.replace(ref.expression, " ")
        q_stems = set(_stems(question))
        topic = [t for t in dict.fromkeys(_stems(about)) if t not in speaker_words and t not in _FORM_STEMS]
        q_words = frozenset(q_stems | set(tokenize(question)))
        named = {s for s in speakers if _mentions(question.lower(), s)}
        role = None if named else perspective(question)  # "what did you suggest": the assistant's words
        expect = expected_answer(question)
        split = [
            split_sentences(_SPEAKER_PREFIX.sub("", ev.node.content.strip(), count=1)) for ev in evidence
        ]
        stems = [[set(_stems(s)) for s in sentences] for sentences in split]
        common = frozenset(
            w for sentences in split for s in sentences for w in re.findall(r"\b[a-z][\w']*", s)
        )
        # a topic word most sentences share tells them apart less than a rare one
        weight = {t: 1.0 / math.sqrt(1 + sum(t in x for node in stems for x in node)) for t in topic}
        total = sum(weight.values()) or 1.0
        topic_set = frozenset(weight)

        def share(words: set[str]) -> float:
            return sum(w for t, w in weight.items() if t in words) / total

        contexts = [share(set().union(*node)) if node else 0.0 for node in stems]
        meaning = self._meaning(question, evidence)
        top_score = max(ev.score for ev in evidence) if evidence else 0.0
        # a replaced version follows its current one in the evidence (``read.versions``); it answers
        # a question about the past, and otherwise weighs as half its retrieval score
        replaced = 1.0 if query_time_focus(question) == "past" else REPLACED_WEIGHT
        out = []
        for rank, (ev, sentences, node_stems) in enumerate(zip(evidence, split, stems, strict=True)):
            speaker = (ev.node.speaker or "").strip().lower()
            dated = bool(asked) and _near(ev, asked)
            previous = 0.0
            for sentence, words in zip(sentences, node_stems, strict=True):
                here = share(words)
                fresh = words - q_stems - speaker_words
                out.append(
                    Candidate(
                        sentence=sentence,
                        evidence=ev,
                        rank=rank,
                        topic=here,
                        context=contexts[rank],
                        before=previous,
                        meaning=float(meaning[rank]),
                        typed=_has_kind(expect, sentence, ev, q_words, common, topic_set),
                        news=len(fresh) / len(words) if words else 0.0,
                        dated=dated,
                        other_party=_other_party(speaker, sentence, named, role),
                        asks=sentence.rstrip().endswith(("?", "？")),
                        covers=frozenset(words & weight.keys()),
                        retrieval=(ev.score / top_score if top_score > 0 else 0.0)
                        * (replaced if ev.node.valid_to is not None else 1.0),
                    )
                )
                previous = here
        return out

    def _meaning(self, question: str, evidence: Sequence[Evidence]) -> npt.NDArray[np.float32]:
        """Cosine of each memory's stored vector with the question's (0 where there is none)."""
        out = np.zeros(len(evidence), dtype=np.float32)
        if self.embedder is None:
            return out
        # the question as retrieval embeds it (speakers' names out): with the memory's cached
        # embedder that is usually a cache hit
        names = {ev.node.speaker.strip() for ev in evidence if ev.node.speaker}
        q = np.asarray(
            embed_queries(self.embedder, [analyze(question, names=names).stripped])[0], dtype=np.float32
        )
        for i, ev in enumerate(evidence):
            own = ev.node.embedding
            if own is not None and len(own) == len(q):
                out[i] = float(np.dot(np.asarray(own, dtype=np.float32), q))
        return out

    def support(self, c: Candidate) -> float:
        """What the sentence itself shows for the question: the weighted sum of every measure but
        retrieval. The abstention threshold ``min_score`` applies to it."""
        return (
            self.w_topic * c.topic
            + self.w_before * c.before
            + self.w_meaning * c.meaning
            + self.w_typed * c.typed
            + self.w_news * c.news
            + self.w_dated * c.dated
            - self.other_party * c.other_party
            - self.asks * c.asks
        )

    def score(self, c: Candidate) -> float:
        """The candidate's score, which orders the candidates: its support plus its retrieval."""
        return self.support(c) + self.w_rank * c.retrieval

    def qualifies(self, c: Candidate, expect: Expect) -> bool:
        """On topic (a topic word in it or its memory, or meaning enough) and saying something new
        (or the question asks yes or no)."""
        on_topic = c.topic > 0 or c.context > 0 or c.meaning >= self.min_meaning
        return on_topic and (c.news > 0 or expect == "yes_no")

    # -- answering --------------------------------------------------------------------------------
    def answer(self, question: str, evidence: Sequence[Evidence]) -> Draft:
        if not evidence:
            return Draft(ABSTAIN_TEXT, abstained=True)
        return self.pick(question, self.candidates(question, evidence))

    def pick(self, question: str, candidates: Sequence[Candidate]) -> Draft:
        """The draft quoting the best qualifying candidates, or the abstention."""
        support, draft = self.best(question, candidates)
        return draft if support >= self.min_score else Draft(ABSTAIN_TEXT, abstained=True)

    def best(self, question: str, candidates: Sequence[Candidate]) -> tuple[float, Draft]:
        """The draft quoting the best-scored qualifying candidate and that candidate's support
        (``min_score`` aside); ``-inf`` and the abstention when none qualifies."""
        expect = expected_answer(question)
        ranked = sorted(
            ((self.score(c), i, c) for i, c in enumerate(candidates) if self.qualifies(c, expect)),
            key=lambda t: (-t[0], t[1]),
        )
        if not ranked:
            return -math.inf, Draft(ABSTAIN_TEXT, abstained=True)
        top, _, first = ranked[0]
        chosen = [first]
        covered = set(first.covers)
        for s, _, c in ranked[1:]:
            if len(chosen) >= self.max_sentences or s < self.second * top:
                break
            if c.evidence.node.id in {x.evidence.node.id for x in chosen}:
                continue
            if (c.typed and not any(x.typed for x in chosen)) or c.covers - covered:
                chosen.append(c)
                covered |= c.covers
        used = tuple(dict.fromkeys(c.evidence.node.id for c in chosen))
        return self.support(first), Draft(" ".join(_render(c) for c in chosen), abstained=False, used=used)


def _render(c: Candidate) -> str:
    """``Speaker said on DAY: "sentence"`` with each relative time expression's grounded date."""
    text, node = c.sentence.strip(), c.evidence.node
    for ref in c.evidence.temporal_refs:
        if ref.expression and ref.expression in text:
            text = text.replace(ref.expression, f"{ref.expression} [{describe(ref)}]", 1)
    when = f" on {format_day(node.at.date())}" if node.at else ""
    return f'{node.speaker or "someone"} said{when}: "{text}"'
