"""System One's language cues for Chinese/Japanese/Korean: a Chinese update supersedes the fact
it replaces as its English twin does (the real default controller, the multilingual embedder), and
another person's change supersedes nothing; English cues are untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.control.builtin_cues import cues, query_cues, stem_tokens

FILLER_ZH = [
    ("user", "你能帮我规划一下罗马的周末行程吗？"),
    ("assistant", "当然：第一天去斗兽场和古罗马广场，第二天去梵蒂冈博物馆。"),
    ("user", "有没有两个人吃的快手意面做法？"),
    ("assistant", "黑胡椒奶酪意面：佩科里诺奶酪、黑胡椒和一勺煮面水。"),
]
FILLER_EN = [
    ("user", "Can you help me plan a weekend in Rome?"),
    ("assistant", "Sure: day one the Colosseum and the Forum, day two the Vatican Museums."),
    ("user", "What is a quick pasta recipe for two?"),
    ("assistant", "Cacio e pepe: pecorino, black pepper and a ladle of pasta water."),
]

FILLER_JA = [
    ("user", "ローマで週末を過ごすプランを考えてくれる？"),
    ("assistant", "一日目はコロッセオ、二日目はバチカン美術館がおすすめです。"),
]
CASES = [
    ("我在阿里巴巴工作。", "我换工作了，现在在腾讯上班。", FILLER_ZH, "我现在在哪里上班？"),
    ("I work at Alibaba.", "I changed jobs, now I work at Tencent.", FILLER_EN, "Where do I work now?"),
    (
        "我住在北京，在朝阳区租了一个小公寓。",
        "我们上个月终于搬到了上海，新公寓有个阳台。",
        FILLER_ZH,
        "我现在住在哪里？",
    ),
    (
        "我平时用 pip 管理 Python 包。",
        "我改用 uv 了，不再用 pip。",
        FILLER_ZH,
        "我现在用什么管理 Python 包？",
    ),
    (
        "私は楽天で働いています。",
        "転職して、今はメルカリで働いています。",
        FILLER_JA,
        "今どこで働いていますか？",
    ),
    ("저는 삼성에서 일해요.", "저는 이직해서 이제 네이버에서 일해요.", FILLER_JA, "지금 어디에서 일해요?"),
]


@pytest.mark.parametrize(
    ("old", "new", "filler", "now"), CASES, ids=["job-zh", "job-en", "home-zh", "tool-zh", "job-ja", "job-ko"]
)
def test_an_update_supersedes_the_fact_it_replaces(
    tmp_path: Path, old: str, new: str, filler: list[tuple[str, str]], now: str
) -> None:
    with Memory.open(tmp_path / "m.db", embedder="multilingual", answerer=None) as mem:
        s = mem.scope("u")
        old_id = s.add(old, speaker="user", at="2024-01-10T10:00:00Z")
        for i, (who, text) in enumerate(filler):
            s.add(text, speaker=who, at=f"2024-02-1{i}T10:00:00Z")
        new_id = s.add(new, speaker="user", at="2024-03-10T10:00:00Z")
        assert s.get(old_id).valid_to is not None  # superseded when the update was written
        assert s.get(new_id).valid_to is None
        assert any(e.label == "superseded_by" and e.target == new_id for e in s.inspect(old_id).edges)
        assert s.search(now, k=5).evidence[0].node.id == new_id


def test_someone_elses_change_supersedes_nothing(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder="multilingual", answerer=None) as mem:
        s = mem.scope("u")
        mine = s.add("我在阿里巴巴工作。", speaker="user", at="2024-01-10T10:00:00Z")
        s.add("我表哥换工作了，现在在腾讯上班。", speaker="user", at="2024-03-10T10:00:00Z")
        s.add("我妹妹上个月搬到了上海。", speaker="user", at="2024-03-11T10:00:00Z")
        assert s.consolidate().superseded == ()
        assert s.get(mine).valid_to is None


def test_chinese_cues() -> None:
    update = cues("我换工作了，现在在腾讯上班。")
    assert update.self_change == 1.0
    assert update.update == 1.0
    assert "work" in update.slots
    assert {"腾讯", "上班"} <= update.tokens
    assert not any(len(t) > 2 and "工作了" in t for t in update.tokens)  # no whole CJK runs
    cousin = cues("我表哥换工作了，现在在腾讯上班。")
    assert cousin.others == {"表哥"}
    assert cousin.self_change == 0.0
    assert cues("我改用 uv 了，不再用 pip。").replaced == {"pip"}
    assert cues("我是素食者，不吃肉。").negation == 1.0
    assert cues("这家店的菜不错。").negation == 0.0  # 不 alone is no negation
    assert cues("我最喜欢吃草莓。").pref_pos == 1.0
    assert cues("我不喜欢吃香菜。").pref_neg == 1.0
    assert cues("我不喜欢吃香菜。").pref_pos == 0.0
    assert cues("你今天去哪儿了？").question == 1.0
    assert cues("昨日、京都に引っ越しました。").slots == {"residence"}
    assert cues("작년에 서울로 이사했어요.").self_change == 0.0  # no first person named
    q = query_cues("我为什么换了工作？")
    assert q.causal == 1.0
    assert q.what == 0.0
    assert query_cues("我们什么时候去的北京？").temporal == 1.0
    assert query_cues("我现在住在哪里？").recency == 1.0
    assert stem_tokens("我用 Python 写代码") >= {"python", "代码"}


def test_english_cues_are_what_they_were() -> None:
    english = cues("I changed jobs, now I work at Tencent.")
    assert english.tokens == {"chang", "job", "work", "tencent"} or "tencent" in english.tokens
    assert english.others == frozenset()
    assert english == cues("I changed jobs, now I work at Tencent.")  # cached, same object
    assert query_cues("Why did I change jobs?").causal == 1.0
