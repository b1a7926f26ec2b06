"""Names and nouns of Chinese, Japanese and Korean text for the entity view (private).

No segmenter: the English extractor's word split keeps a whole CJK run ("我在阿里巴巴工作") as one
word, so CJK runs are cut here at what is not a name or noun, and the pieces of two to six
characters are the entities:

- **Chinese**: a run is cut at function characters (我 在 的 了 是 ...) and at common verbs,
  adverbs and measure words (工作 喜欢 推荐 一家 ...), and a person word (同事, 女儿, 妈妈) is an
  entity of its own beside the name after it ("同事小王" -> 同事, 小王);
- **Japanese**: names and nouns are written in kanji and katakana, particles, titles (さん) and
  inflections in hiragana: the kanji/katakana runs of two or more characters;
- **Korean**: words are spaced; a particle at a word's end (에, 에서, 을, 를, 은, 는, 이, 가, 씨 ...) is
  dropped and verb forms (…요, …다) are left out.

Dates, numbers and single characters are never entities.
"""

from __future__ import annotations

import re

from dualmem.text import _cjk_words as w

__all__ = ["cjk_entities"]

_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_JA_NOUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a0-\u30ff\u3005]{2,}")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL_WORD = re.compile("[\uac00-\ud7af]+")

#: one-character function words, pronouns, verbs and measure words that end a Chinese name or noun
_ZH_CUT_CHARS = frozenset(
    "我你他她它们的地得了着过是在和与跟及也都就还又很太更最吧呢吗啊呀嘛哦把被给对从向往让这那哪有没不别"
    "说吃喝看买叫住坐用做带去到个只件位条张些一二三四五六七八九十两几每某其该各"
)
#: longer common words that are never an entity (verbs, adverbs, time words, question words)
_ZH_CUT_WORDS = tuple(
    sorted(
        w._words(
            """
            工作 上班 下班 喜欢 推荐 觉得 知道 认识 开始 结束 已经 现在 以前 之前 以后 之后 今天 明天
            昨天 前天 后天 上周 下周 周末 时候 最近 一直 经常 总是 因为 所以 但是 可是 然后 如果 虽然
            什么 怎么 为什么 哪里 哪儿 谁 多少 一起 一家 一个 一些 一下 东西 事情 打算 准备 需要 应该
            可以 比较 非常 特别 真的 终于 刚刚 换成 改用 不再 搬到 参加 报名 帮忙 告诉 记得 提醒 预约
            上个月 下个月 这个月 本月 今年 去年 明年 平时 平常 管理 使用 上课 回家 出去 回来 过来 起来
            """
        ),
        key=len,
        reverse=True,
    )
)
_ZH_CUT = re.compile(
    "|".join(re.escape(x) for x in _ZH_CUT_WORDS) + "|[" + re.escape("".join(_ZH_CUT_CHARS)) + "]"
)
#: a person word (妈妈, 同事, 女儿): split out of a piece, kept as an entity of its own
_PERSON = re.compile(
    "(" + "|".join(re.escape(p) for p in sorted(w.OTHER_PEOPLE, key=len, reverse=True) if len(p) >= 2) + ")"
)
_JA_TIME_WORDS = w._words("今日 昨日 明日 先週 来週 今週 先月 来月 今年 去年 来年 毎日 毎週")
_KO_PARTICLES = tuple(
    sorted(
        w._words(
            """에서 에게 한테 으로 까지 부터 처럼 보다 하고 이랑 씨는 씨가 씨를 씨와 씨의 씨 님
            에 을 를 은 는 이 가 와 과 도 의 로 랑"""
        ),
        key=len,
        reverse=True,
    )
)
_KO_VERB_ENDINGS = ("요", "다", "까", "죠", "네", "어", "아", "고", "서", "면", "는데", "지만")
_KO_COMMON = w._words("저는 제가 저 나 우리 오늘 어제 내일 지금 요즘 그리고 그런데 정말 너무 아주 조금")


def _chinese(run: str) -> list[str]:
    out: list[str] = []
    for piece in _ZH_CUT.split(run):
        for part in _PERSON.split(piece):  # "同事小王": the person word, and the name beside it
            person = part in w.OTHER_PEOPLE and len(part) >= 2
            if person or (2 <= len(part) <= 6 and part not in w.CJK_STOPWORDS):
                out.append(part)
    return out


def _japanese(text: str) -> list[str]:
    out = []
    for m in _JA_NOUN.finditer(text):
        noun = m.group(0)
        if noun not in w.CJK_STOPWORDS and noun not in _JA_TIME_WORDS:
            out.append(noun)
    return out


def _korean(text: str) -> list[str]:
    out = []
    for word in _HANGUL_WORD.findall(text):
        verb = word.endswith(_KO_VERB_ENDINGS) and not word.endswith(("씨", "님"))
        if verb and not any(word.endswith(p) for p in _KO_PARTICLES):
            continue
        stem = word
        for particle in _KO_PARTICLES:
            if stem.endswith(particle) and len(stem) > len(particle) + 1:
                stem = stem[: -len(particle)]
                break
        if (
            len(stem) >= 2
            and stem not in _KO_COMMON
            and stem not in _KO_PARTICLES
            and not stem.endswith(_KO_VERB_ENDINGS[:4])
        ):
            out.append(stem)
    return out


def cjk_entities(text: str) -> list[str]:
    """The CJK names and nouns of ``text``, in order of appearance (Chinese, then Japanese, then Korean)."""
    if _KANA.search(text):
        found = _japanese(text)
    else:
        found = [e for run in _HAN_RUN.findall(text) for e in _chinese(run)]
    found += _korean(text)
    return list(dict.fromkeys(found))
