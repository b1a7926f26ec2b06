"""The extractive answerer on Chinese/Japanese text (sentences end at 。！？ with no space) and on
multi-line notes (a sentence wrapped over lines is quoted whole, issue 49 item 8)."""

from __future__ import annotations

import datetime as dt

from dualmem.reason.extractive import ExtractiveAnswerer, split_sentences
from dualmem.text.temporal import ground
from dualmem.types import Evidence, Node, Tenant

TENANT = Tenant("u")


def _ev(i: int, content: str, *, score: float = 0.5, speaker: str = "小明") -> Evidence:
    at = dt.datetime(2024, 5, 3, 10, tzinfo=dt.UTC)
    refs = ground(content, at)
    node = Node(id=f"n{i}", tenant=TENANT, content=content, at=at, speaker=speaker, temporal_refs=refs)
    return Evidence(node, score, temporal_refs=refs)


def test_chinese_and_japanese_sentences_end_at_their_full_stops_without_spaces() -> None:
    assert split_sentences("我今天去了北京。明天回上海！你呢？好的") == [
        "我今天去了北京。",
        "明天回上海！",
        "你呢？",
        "好的",
    ]
    assert split_sentences("「行こう。」と彼は言った。昨日は雨でした") == [
        "「行こう。」",
        "と彼は言った。",
        "昨日は雨でした",
    ]
    assert split_sentences("好吧!我知道了") == ["好吧!", "我知道了"]
    # English is split as before: a stop needs a space, "3.5" and "Dr." stay whole
    assert split_sentences("It costs 3.5 euros. Dr. Okafor agreed!") == [
        "It costs 3.5 euros.",
        "Dr. Okafor agreed!",
    ]


def test_a_sentence_wrapped_over_lines_is_one_sentence() -> None:
    note = (
        "The release is on Tuesday\nat the office, after the review.\n\n"
        "Meeting notes\nAlice sends the slides."
    )
    assert split_sentences(note) == [
        "The release is on Tuesday at the office, after the review.",
        "Meeting notes",  # a title line stays apart from the capitalised line after it
        "Alice sends the slides.",
    ]
    assert split_sentences("- buy milk and\n  eggs\n- call mom") == ["buy milk and eggs", "call mom"]
    # a hard-wrapped line of prose goes on in the next even when it starts with a name
    wrapped = "We agreed that the quarterly report goes out on the first Monday, reviewed by\nAlice and Bo."
    assert split_sentences(wrapped) == [
        "We agreed that the quarterly report goes out on the first Monday, reviewed by Alice and Bo."
    ]
    # a list item does not swallow the unindented paragraph after it; a heading keeps its first item
    listed = "- their ability to sway in the wind due to slender stems\nThey bloom from summer into autumn."
    assert split_sentences(listed) == [
        "their ability to sway in the wind due to slender stems",
        "They bloom from summer into autumn.",
    ]
    assert split_sentences("Salmon patties (20 min)\n1 can salmon + 1 egg.") == [
        "Salmon patties (20 min)",
        "1 can salmon + 1 egg.",
    ]
    assert split_sentences("我们决定下个月把整个后端服务迁移到新的\n集群上，由小王负责。") == [
        "我们决定下个月把整个后端服务迁移到新的集群上，由小王负责。"
    ]


def test_a_multi_line_note_is_quoted_whole() -> None:
    note = (
        "Deploy checklist: the staging database must be migrated\nbefore the new workers start, or jobs fail."
    )
    draft = ExtractiveAnswerer(min_score=0.0).answer(
        "What must happen before the new workers start?", [_ev(1, note, speaker="notes")]
    )
    assert not draft.abstained
    assert "before the new workers start, or jobs fail." in draft.text
    assert "staging database must be migrated" in draft.text


def test_a_chinese_question_quotes_the_chinese_sentence_that_answers() -> None:
    evidence = [
        _ev(1, "今天天气很好。我女儿最喜欢吃草莓，每周都要买两盒。", score=0.9),
        _ev(2, "我在阿里巴巴工作，每天坐地铁上班。", score=0.8),
    ]
    draft = ExtractiveAnswerer(min_score=0.0).answer("我女儿最喜欢吃什么水果？", evidence)
    assert not draft.abstained
    assert "我女儿最喜欢吃草莓，每周都要买两盒。" in draft.text
    assert "今天天气很好" not in draft.text  # only the sentence that answers is quoted
    assert draft.used[0] == "n1"
