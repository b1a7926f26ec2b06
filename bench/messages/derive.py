"""Message-shaped dev queries (issue 47): questions as an agent would send them, derived from the dev corpora.

What an agent (and ``dualmem hook``) searches memory with is the user's whole message: small talk
around the need, or two or three needs in one message. This script derives such queries from the
dev corpora only (LoCoMo dev, ``../shared/data/locomo``, and the agent chats,
``bench/agentchat/haystacks``); no held-out set is read. Only the agent chats' are committed
(``queries.json``); LoCoMo's are derived when they are used (``evaluate.py``), never copied here.
Every derived query keeps the evidence of the question(s) it is made of, so it is scored by
evidence recall like the clean question.

Shapes (``shape``):

- ``clean``: the corpus's question as it is (LoCoMo categories 1-4, agent-chat questions other than
  ``message``), the baseline the others are compared with;
- ``wrapped``: the same question, verbatim, inside small talk written for this (``EN_WRAPS``, and
  ``ZH_WRAPS`` for about one question in four: a bilingual user chatting in Chinese around an
  English question); chosen by a hash of (conversation, question index), so the file is stable;
- ``unseen``: the same question inside small talk from ``UNSEEN_WRAPS`` / ``UNSEEN_ZH_WRAPS``,
  written after the read path's clause cues (``dualmem.text.clauses``) were set from the first
  templates, and never used to set them: how the cues do on small talk they were not tuned on;
- ``multi``: two or three questions of one conversation in one message, joined by connectives,
  sometimes with a line of small talk; evidence: the union of theirs;
- ``message``: the agent chats' message queries (the user's next turn, ``category: "message"``),
  as they are.

    python bench/messages/derive.py                      # writes bench/messages/queries.json (agent chats)
    python bench/messages/derive.py --check              # exit 1 when the file is not what it writes

``tests/test_messages_corpus.py`` checks the committed file against what this writes, that every
wrapped query holds its question verbatim, and that every evidence id is a turn of its conversation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES: dict[str, Path] = {
    "locomo": ROOT.parent / "shared" / "data" / "locomo",
    "agentchat": ROOT / "bench" / "agentchat" / "haystacks",
}
OUT = HERE / "queries.json"
FORMAT = "dualmem.messages/1"

#: (before, after) the question; ``{q}`` never appears in them: the question goes between
EN_WRAPS: tuple[tuple[str, str], ...] = (
    ("Hey, hope your week is going okay! Mine has been a blur of meetings and laundry.", "Thanks a lot!"),
    ("Morning! I just got back from a run and the coffee is finally kicking in.", ""),
    ("Sorry to bother you again, I know it's late.", "No rush at all, whenever you get a chance."),
    ("Okay so random thing, I was talking with a friend at lunch today and it came up.", "Haha, curious."),
    ("Hi there. Long day, the train was delayed twice and I'm only now sitting down.", "Thanks in advance!"),
    ("Quick one before I forget, I'm in between two calls.", "Cheers."),
    ("Good evening! The weather has been terrible here, rain all day.", "Anyway, hope you're well."),
    (
        "I was going through some old notes on my phone and got a bit lost.",
        "That would help me a lot, thanks!",
    ),
    ("Hello again! Just made some tea and finally have a quiet moment.", ""),
    ("So I have a weird question, bear with me.", "Sorry if that's a silly question lol."),
)
ZH_WRAPS: tuple[tuple[str, str], ...] = (
    ("你好呀！今天忙了一整天，终于有空坐下来了。", "谢谢啦！"),
    ("早上好～刚喝完咖啡，脑子还不太清醒。我想问一下：", "不着急，有空再回我就好。"),
    ("不好意思又来打扰你了。刚才和朋友吃饭的时候聊到这个。", "麻烦你了！"),
    ("哈哈，突然想起一件事。", "好奇而已，谢谢！"),
)
#: written after the clause cues were set, never used to set them (the ``unseen`` shape)
UNSEEN_WRAPS: tuple[tuple[str, str], ...] = (
    ("Ugh, my landlord finally fixed the boiler after three weeks of cold showers.", "Appreciate it!"),
    ("I'm sitting in a waiting room at the dentist and got bored, so here goes.", ""),
    ("My sister is visiting this weekend and the flat is a mess, but whatever.", "Talk soon."),
    ("Just finished binge-watching that new detective series, totally hooked.", "Ta!"),
    ("Back from the gym, my legs are jelly.", "Much appreciated, really."),
    (
        "It's been one of those days where nothing goes right, the printer jammed and I missed the bus.",
        "Cheers for listening.",
    ),
)
UNSEEN_ZH_WRAPS: tuple[tuple[str, str], ...] = (
    ("唉，今天地铁又晚点了，到公司都九点半了。", "多谢！"),
    ("周末去爬山了，累死了，腿到现在还疼。顺便问你个事：", "回头聊～"),
)
#: joins a further question of a multi-request message
CONNECTIVES: tuple[str, ...] = ("Also,", "And one more thing:", "Oh, and", "Separately,", "还有，")
MULTI_OPENERS: tuple[str, ...] = (
    "",
    "Hi! A couple of things today.",
    "Sorry, lots of questions today, bear with me.",
    "",
    "你好！我有几个问题想问一下。",
)


def _pick(key: str, n: int) -> int:
    """A stable choice in ``range(n)`` by ``key``."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % n


def wrap(question: str, key: str, *, unseen: bool = False) -> tuple[str, str]:
    """``question`` inside small talk chosen by ``key``: (the message, its chatter's language);
    ``unseen``: from the templates the clause cues were not set on."""
    en, zh = (UNSEEN_WRAPS, UNSEEN_ZH_WRAPS) if unseen else (EN_WRAPS, ZH_WRAPS)
    if _pick(f"lang:{key}", 4) == 0:
        before, after = zh[_pick(key, len(zh))]
        return before + question + (" " + after if after else ""), "zh"
    before, after = en[_pick(key, len(en))]
    return " ".join(p for p in (before, question, after) if p), "en"


def join(questions: Sequence[str], key: str) -> str:
    """Several questions in one message (an opener, connectives between them)."""
    parts = [MULTI_OPENERS[_pick(f"open:{key}", len(MULTI_OPENERS))]] if questions else []
    for i, q in enumerate(questions):
        if i:
            conn = CONNECTIVES[_pick(f"conn:{key}:{i}", len(CONNECTIVES))]
            if conn.endswith((",", "and")) and q[:1].isupper() and not q[1:2].isupper():
                q = q[0].lower() + q[1:]
            parts.append(conn + q if conn == "还有，" else f"{conn} {q}")
        else:
            parts.append(q)
    return " ".join(p for p in parts if p)


def _clean(corpus: str, category: object) -> bool:
    if corpus == "locomo":
        return category in (1, 2, 3, 4)
    return category != "message"


def derive_conversation(
    corpus: str, conv_id: str, questions: Sequence[Any], turns: set[str]
) -> list[dict[str, Any]]:
    """Every derived query of one conversation (``questions``: the loader's ``QA`` records)."""
    out: list[dict[str, Any]] = []
    clean: list[tuple[int, Any]] = []
    for index, qa in enumerate(questions):
        evidence = [e for e in qa.evidence if e in turns]
        if not evidence:
            continue
        base = {"corpus": corpus, "conversation": conv_id, "source": [index], "category": qa.category}
        if qa.category == "message":
            out.append({**base, "shape": "message", "lang": "en", "query": qa.question, "evidence": evidence})
            continue
        if not _clean(corpus, qa.category):
            continue
        clean.append((index, qa))
        out.append({**base, "shape": "clean", "lang": "en", "query": qa.question, "evidence": evidence})
        text, lang = wrap(qa.question, f"{conv_id}:{index}")
        out.append({**base, "shape": "wrapped", "lang": lang, "query": text, "evidence": evidence})
        text, lang = wrap(qa.question, f"unseen:{conv_id}:{index}", unseen=True)
        out.append({**base, "shape": "unseen", "lang": lang, "query": text, "evidence": evidence})
    # multi: the clean questions in a stable shuffled order, dealt in groups of 2 or 3
    order = sorted(clean, key=lambda t: hashlib.sha256(f"{conv_id}:{t[0]}".encode()).hexdigest())
    i = 0
    while i + 1 < len(order):
        size = 3 if _pick(f"size:{conv_id}:{i}", 3) == 0 and i + 2 < len(order) else 2
        group = order[i : i + size]
        i += size * 2  # every other group: about one multi message per two clean questions
        key = f"{conv_id}:multi:{group[0][0]}"
        evidence = list(dict.fromkeys(e for _, qa in group for e in qa.evidence if e in turns))
        out.append(
            {
                "corpus": corpus,
                "conversation": conv_id,
                "source": [j for j, _ in group],
                "category": "multi",
                "shape": "multi",
                "lang": "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in join([], key)) else "en",
                "query": join([qa.question for _, qa in group], key),
                "evidence": evidence,
            }
        )
    for item in out:
        if item["shape"] == "multi":
            item["lang"] = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in item["query"]) else "en"
    return out


#: the corpora whose derived queries are committed (``queries.json``); LoCoMo's are derived when
#: used (``evaluate.py``), so that no LoCoMo text is copied into the repository
COMMITTED: tuple[str, ...] = ("agentchat",)


def derive(corpora: Sequence[str] = COMMITTED) -> dict[str, Any]:
    """The derived set of ``corpora`` (by default what ``queries.json`` holds)."""
    sys.path.insert(0, str(ROOT / "src"))
    from dualmem.conversations import load_conversations

    queries: list[dict[str, Any]] = []
    for corpus in corpora:
        path = SOURCES[corpus]
        for conv in sorted(load_conversations(path), key=lambda c: c.id):
            turns = {o.turn_id for o in conv.observations if o.turn_id}
            queries += derive_conversation(corpus, conv.id, conv.questions, turns)
    return {"format": FORMAT, "queries": queries}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when --out is not what derive writes")
    ns = parser.parse_args(argv)
    text = render(derive())
    if ns.check:
        same = ns.out.exists() and ns.out.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{ns.out} is stale: run bench/messages/derive.py")
        return 0 if same else 1
    ns.out.write_text(text, encoding="utf-8")
    counts: dict[str, int] = {}
    for q in json.loads(text)["queries"]:
        counts[f"{q['corpus']}/{q['shape']}"] = counts.get(f"{q['corpus']}/{q['shape']}", 0) + 1
    print(json.dumps(counts, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
