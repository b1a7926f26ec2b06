"""A message's clauses and the cues that tell a need from chatter (issue 47).

What an agent searches memory with is the user's whole message: greetings, news of the day, thanks,
and somewhere in it the need ("when did I move?", "can you turn that into a shopping list?", "like
last time"). ``split`` cuts a message into sentences and, inside a long sentence, clauses (English
and CJK punctuation: ``. ! ? ; 。！？；：`` and line breaks; a comma only before a connective that starts a
new request, "..., can you ..."); ``cues`` measures each clause for the System-One decision that
labels it (``message.clause`` in ``dualmem.control.catalog``): a question, a request, a reference to
the past, small talk, named things, time expressions, content words. All offline, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["ClauseCues", "content_words", "cues", "split"]

#: a sentence ends at . ! ? ; (and their CJK forms, and the CJK colon) followed by space or a CJK
#: character, or at a line break
_SENTENCE = re.compile(
    r"(?<=[.!?;])[\"'\u201d\u2019)\]]*\s+(?=\S)"
    r"|(?<=[\u3002\uff01\uff1f\uff1b\uff1a])\s*(?=\S)"
    r"|(?<=[.!?])(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
    r"|\n+"
)
#: inside a sentence, a comma or dash before a new request or question opens a new clause
_REQUEST_START = re.compile(
    r"[,\u2014\uff0c]\s*"
    r"(?=(?:so\s+|and\s+|but\s+)?(?:can|could|would|will)\s+you\b|(?:please|remind me|tell me)\b)",
    re.IGNORECASE,
)
_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|St|vs|etc|e\.g|i\.e|No|approx)|(?<![A-Za-z])[A-Z](?:\.[A-Z])*)\.$"
)

_QWORD = re.compile(
    r"^(?:so\s+|and\s+|but\s+|also,?\s+|oh,?\s+)?(?:what|when|where|which|who|whom|whose|why|how|"
    r"is|are|was|were|do|does|did|have|has|had|can|could|would|will|should|shall|am)\b",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(
    r"[吗呢嗎]\s*[？?。]?$|什么|甚麼|怎么|怎麼|哪|几|幾|谁|誰|为什么|為什麼|多少|是否|有没有|是不是"
)
_REQUEST = re.compile(
    r"\b(?:can you|could you|would you|will you|please|help me|remind me|tell me|let me know|show me|"
    r"give me|find|look up|i need|i want to know|any idea|do you remember|what about|how about|"
    r"turn (?:it|that|this|the)|make (?:it|me|a)|write|draft|suggest|recommend|update)\b"
    r"|请|帮我|能不能|可以.*吗|麻烦你|提醒我|告诉我",
    re.IGNORECASE,
)
_PAST_REF = re.compile(
    r"\b(?:last time|like before|as before|again|still|remember|mentioned|you said|you suggested|"
    r"you told me|we talked|we discussed|earlier|previous(?:ly)?|the one (?:i|you|we)|that (?:one|thing)|"
    r"back then|used to|ago|last (?:week|month|year|summer|winter|spring|fall|autumn))\b"
    r"|上次|之前|以前|还记得|記得|记得|又|还是|仍然",
    re.IGNORECASE,
)
_CHATTER = re.compile(
    r"\b(?:hi|hey|hello|hiya|morning|good (?:morning|evening|afternoon|night)|thanks?|thank you|cheers|"
    r"sorry|no rush|no worries|haha+|lol|lmao|hope (?:you|your|all)|bear with me|anyway|long day|"
    r"busy (?:day|week)|quick one|random (?:thing|question)|just curious|curious|in advance|"
    r"weather|coffee|tea|tired|whenever you|bother you|silly question|you're well|have a good)\b"
    r"|你好|早上好|晚上好|谢谢|謝謝|麻烦了|麻烦你了|不好意思|打扰|哈哈|不着急|有空|忙了|好奇|啦|呀|～",
    re.IGNORECASE,
)
_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|ago|since|until|before|after|during|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"\d{1,2}(?::\d\d)?\s*(?:am|pm)|(?:19|20)\d\d|\d+\s*(?:days?|weeks?|months?|years?))\b"
    r"|[0-9一二三四五六七八九十]+[年月日号号]|昨天|今天|明天|上周|下周|去年|今年|星期|周末",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+|[\u3400-\u9fff]")
_STOP = frozenset(
    """a an the and or but so of to in on at for with from by as is are was were be been being am i me my
    mine we us our you your yours he him his she her they them their it its this that these those there
    here what when where which who whom whose why how do does did done have has had having can could
    would will should shall may might must not no yes just really very quite also too oh ok okay well
    like get got go going gone some any all about up down out over again still then than if because
    while into onto only even ever much many more most one two lot lots thing things way know think""".split()  # noqa: SIM905
)


def split(text: str) -> tuple[str, ...]:
    """``text``'s clauses, in order, stripped; one clause (the text) when it has no boundary."""
    out: list[str] = []
    pending = ""
    for part in _SENTENCE.split(text.strip()):
        part = part.strip()
        if not part:
            continue
        if pending:
            part = f"{pending} {part}"
            pending = ""
        if _ABBREV.search(part):  # "Dr." is not the end of a sentence
            pending = part
            continue
        out += [p.strip() for p in _REQUEST_START.split(part) if p.strip()]
    if pending:
        out.append(pending)
    return tuple(out) or ((text.strip(),) if text.strip() else ())


def content_words(text: str) -> int:
    """How many of ``text``'s words are content words (not function words; a CJK character counts)."""
    return sum(
        1
        for w in map(str.lower, _WORD.findall(text))
        if (w not in _STOP and len(w) > 2) or "\u3400" <= w[:1] <= "\u9fff"
    )


@dataclass(frozen=True, slots=True)
class ClauseCues:
    """What a clause looks like, each in [0, 1]."""

    question: float  # ends with a question mark or opens as a question (EN/ZH)
    request: float  # asks the assistant to do or tell something
    past_ref: float  # points back: "like last time", "the one I mentioned", "again", "still"
    chatter: float  # greetings, thanks, apologies, small talk, by the share of its words that are
    named: float  # names a thing: a capitalised word past the first, a number
    time: float  # a time expression
    content: float  # share of content words (not function words)
    short: float  # at most 4 words


@lru_cache(maxsize=4096)
def cues(clause: str) -> ClauseCues:
    """The cues of one clause (``split``'s output)."""
    text = clause.strip()
    words = _WORD.findall(text)
    n = max(1, len(words))
    lowered = [w.lower() for w in words]
    content = [w for w in lowered if (w not in _STOP and len(w) > 2) or "\u3400" <= w[:1] <= "\u9fff"]
    chatter_hits = len(_CHATTER.findall(text))
    named = any(
        w[:1].isupper() and w != "I" and not w.isupper() and i > 0 and words[i - 1][-1:] not in ".!?"
        for i, w in enumerate(words)
    ) or any(w.isdigit() for w in words)
    is_question = text.rstrip(" \"')\u201d").endswith(("?", "\uff1f")) or bool(_QWORD.match(text))
    return ClauseCues(
        question=1.0 if is_question or _ZH_QUESTION.search(text) else 0.0,
        request=1.0 if _REQUEST.search(text) else 0.0,
        past_ref=1.0 if _PAST_REF.search(text) else 0.0,
        chatter=min(1.0, chatter_hits * 3.0 / n + (0.5 if chatter_hits else 0.0)),
        named=1.0 if named else 0.0,
        time=1.0 if _TIME.search(text) else 0.0,
        content=len(content) / n,
        short=1.0 if len(words) <= 4 else 0.0,
    )
