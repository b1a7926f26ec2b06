"""CJK names and nouns in the entity view: cut out of unspaced runs, never a whole run nor one
character; English words in a mixed text found as before."""

from __future__ import annotations

import pytest

from dualmem.text.entities import extract_entities


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("我在阿里巴巴工作，同事小王推荐了杭州的一家餐厅。", {"阿里巴巴", "同事", "小王", "杭州", "餐厅"}),
        ("我女儿朵朵喜欢吃草莓", {"女儿", "朵朵", "草莓"}),
        ("我们上个月终于搬到了上海，新公寓有个阳台。", {"上海", "阳台"}),
        ("上周三我带妈妈去协和医院看了心内科", {"妈妈", "医院", "心内科"}),
        ("私は東京の会社で働いています。田中さんと会いました。", {"東京", "会社", "田中"}),
        ("저는 서울에 살아요. 김민수 씨를 만났어요.", {"서울", "김민수"}),
    ],
)
def test_names_and_nouns(text: str, wanted: set[str]) -> None:
    found = set(extract_entities(text))
    assert wanted <= found, found
    assert all(len(e) >= 2 for e in found)  # never one character
    assert all(len(e) <= 6 for e in found)  # never a whole run
    assert not {"我", "的", "了", "喜欢", "工作", "上个月", "살아요", "만났어요"} & found


def test_mixed_text_keeps_its_english_words() -> None:
    found = extract_entities("我平时用 pip 管理 Python 包，公司在深圳。", speaker="user")
    assert {"pip", "python", "user", "公司", "深圳"} <= set(found)
    assert "管理" not in found


def test_english_entities_are_unchanged() -> None:
    assert extract_entities("I use uv with Python 3.12 at Tencent", speaker="user") == (
        "python",
        "tencent",
        "user",
    )
    assert extract_entities("Mira: I moved to Porto in June.") == ("mira", "porto")
