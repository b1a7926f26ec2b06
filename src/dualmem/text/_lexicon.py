"""Word lists for the entity heuristic (private): what is *not* an entity."""

from __future__ import annotations

__all__ = ["IE_WORDS", "ING_NOUNS", "KEEP_S", "NOT_ENTITIES", "PLURALS", "VERBS"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VERB_BASES = _words(
    """
    be have do say get make go know take see come think look want give use find tell ask work seem
    feel try leave call keep let begin help talk turn start hear play run move like live believe
    hold bring happen provide sit stand lose pay meet include continue set learn change lead understand
    watch follow stop create speak allow add spend grow open walk win offer remember consider appear
    buy wait serve die send expect build stay fall cut reach kill remain suggest raise pass sell require
    report decide pull enjoy appreciate hope wish love hate thank care share mean need guess miss wonder
    agree realize realise imagine plan sound matter check catch hang chat figure finish manage handle
    deal inspire motivate encourage support celebrate hit break amaze excite interest reward stun
    thrill surprise please relax admire recommend mention explain happen connect inspire touch bless
    pursue achieve improve discover explore express reflect remind keep feature sign join visit return
    put seek tend fill push pick drop apply involve prepare receive protect kick cheer chill
    struggle overcome admit accept reckon bet suppose assume notice carry fix treat hurt worry bother
    boost blow
    """
)

_IRREGULAR = _words(
    """
    am is are was were been being has had did done doing made said got gotten took taken saw seen
    came knew known thought gave given found told felt left kept began begun heard ran held brought
    wrote written sat stood lost paid met led understood spoke spoken grew grown won sent built fell
    fallen bought sold caught taught broke broken chose chosen ate eaten drove driven flew flown forgot
    forgotten hid hidden rode ridden went gone goes meant tried says makes takes gets
    """
)


def _inflect(base: str) -> set[str]:
    forms = {base, base + "s", base + "es", base + "ed", base + "d", base + "ing"}
    if base.endswith("e"):
        forms |= {base[:-1] + "ing", base[:-1] + "ed"}
    if base.endswith("y"):
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    if len(base) >= 3 and base[-1] not in "aeiouwxy" and base[-2] in "aeiou" and base[-3] not in "aeiou":
        forms |= {base + base[-1] + "ing", base + base[-1] + "ed"}
    return forms


#: "-ing" words of listed verbs that are mostly nouns
ING_NOUNS = _words(
    "meeting building setting ending beginning opening offering gathering "
    "meetings buildings findings savings belongings surroundings"
)

#: common verbs with their inflections (a verb is rarely what links two memories)
VERBS: frozenset[str] = frozenset(_IRREGULAR.union(*(_inflect(b) for b in _VERB_BASES)) - ING_NOUNS)

_ADJECTIVES = _words(
    """
    good great awesome amazing new old nice happy glad proud excited exciting interesting cool fun
    funny sad hard easy big small little long short high low best better worse worst bad real sure
    right wrong true whole full free special super fantastic wonderful beautiful lovely incredible
    important different able possible difficult tough busy tired ready perfect favorite favourite
    sweet cute crazy wild huge tiny entire certain clear simple positive negative late early recent
    next last first second final main major local personal social hot cold warm fresh young open
    close strong deep top total worth gorgeous delicious nervous thankful grateful helpful stressful
    meaningful powerful peaceful successful inspiring rewarding stunning tough glad unique okay
    fine lucky awful terrible horrible brilliant fabulous epic insane lovely blessed hopeful calm
    dope sick neat rad whoa impressive creative supportive positive passionate chill stoked pumped
    wow bummed dear kind mere such various several similar overall extra tight quick slow upcoming
    alone pretty fair latest mental safe magical emotional optimistic bright physical mental total
    actual whole fellow single double real main ideal
    """
)

_DISCOURSE = _words(
    """
    hey hi hello thanks thank wow yeah yep yup yes nope oh ah aw aww awesome omg lol haha btw congrats
    congratulations cheers sure bummer yo gosh geez hmm um uh sorry welcome bye goodbye anyways
    anyway totally definitely absolutely actually literally honestly basically seriously probably
    exactly also again always sometimes usually often still already almost even instead though
    thing things stuff lot lots way ways bit kind sort type part something anything everything nothing
    people guy guys folks everyone someone life time times moment moments today yesterday tomorrow
    tonight morning afternoon evening night week weekend month year day days weeks months years ago
    summer winter spring autumn together back well soon later far forward away plus phew whoa
    around ahead yeah
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december
    mr mrs ms dr gonna wanna gotta kinda sorta name names
    """
)

#: words that are never an entity on their own (besides the lexical stopwords)
NOT_ENTITIES: frozenset[str] = VERBS | _ADJECTIVES | _DISCOURSE

#: irregular plurals -> singular
PLURALS: dict[str, str] = {
    "children": "child", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth",
    "mice": "mouse", "geese": "goose", "buses": "bus", "potatoes": "potato", "tomatoes": "tomato",
    "heroes": "hero", "echoes": "echo", "lives": "life", "wives": "wife", "knives": "knife",
    "leaves": "leaf", "shelves": "shelf", "wolves": "wolf", "halves": "half", "loaves": "loaf",
    "thieves": "thief", "calves": "calf", "selves": "self", "scarves": "scarf", "headaches": "headache",
    "aches": "ache", "niches": "niche", "caches": "cache", "avalanches": "avalanche",
}  # fmt: skip

#: words ending in "s" that are not plurals (or whose plural is the word)
KEEP_S: frozenset[str] = _words(
    """
    news series species physics politics economics mathematics lens canvas gas atlas bias alias
    christmas clothes pants jeans shorts sunglasses glasses thanks always perhaps yes plus its
    this his hers ours yours whereas has was does is us bus campus virus bonus focus status trans
    """
)

#: singulars ending in "ie" (so "movies" -> "movie", not "movy")
IE_WORDS: frozenset[str] = _words(
    """
    movie cookie selfie brownie smoothie zombie hoodie calorie rookie goodie auntie pie tie lie genie
    newbie foodie veggie birdie prairie sweetie bootie freebie indie techie
    """
)
