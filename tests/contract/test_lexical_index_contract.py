"""The lexical index contract (``dualmem.plane.lexindex.LexicalComponent``) on every backend.

Each store's ``lexical`` ranks by the one rule and the one BM25: for a one-user store its scores are
the reference computed here from ``lexindex`` alone (the terms of each row, ``idf`` and ``weight``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
import pytest

from dualmem.plane import Store, lexindex
from dualmem.types import Node, Tenant

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
USER = Tenant("lex-user")
TEXTS = [
    ("sam", "We planted tomatoes and zucchini in the garden."),
    ("alex", "My gardener waters the tomato beds every morning."),
    ("sam", "The café on Rue Cler serves naïve crêpes."),
    (None, "Running a marathon needs months of training; I'm running three days a week."),
    ("alex", "A quiet day at home, nothing planted."),
]


def _nodes(tenant: Tenant = USER, prefix: str = "n") -> list[Node]:
    rng = np.random.default_rng(7)
    out = []
    for i, (speaker, text) in enumerate(TEXTS):
        vector = rng.normal(size=8).astype(np.float32)
        out.append(
            Node(id=f"{prefix}{i}", tenant=tenant, content=text, speaker=speaker, session="s1",
                 at=T0 + dt.timedelta(minutes=i), embedding=vector / np.linalg.norm(vector))
        )  # fmt: skip
    return out


def _reference(query: str, k: int) -> list[tuple[str, float]]:
    """BM25 of ``lexindex`` over the rows' terms (speaker and content), single-word phrases only."""
    rows = {
        f"n{i}": lexindex.terms(speaker or "") + lexindex.terms(text)
        for i, (speaker, text) in enumerate(TEXTS)
    }
    avgdl = sum(len(t) for t in rows.values()) / len(rows)
    scores: dict[str, float] = {}
    for phrase in lexindex.phrases(query):
        assert len(phrase) == 1
        df = sum(1 for t in rows.values() if phrase[0] in t)
        for node_id, terms in rows.items():
            tf = Counter(terms)[phrase[0]]
            if tf:
                part = lexindex.idf(len(rows), df) * lexindex.weight(tf, len(terms), avgdl)
                scores[node_id] = scores.get(node_id, 0.0) + part
    return sorted(scores.items(), key=lambda item: (-item[1], int(item[0][1:])))[:k]


@pytest.mark.parametrize(
    "query", ["gardening tomatoes", "Sam's zucchini", "cafe crepes", "running marathons", "plant"]
)
def test_scores_are_the_one_bm25_of_the_one_rule(store: Store, query: str) -> None:
    store.put_nodes(_nodes())
    index = store.lexical  # type: ignore[attr-defined]
    assert isinstance(index, lexindex.LexicalComponent)
    got = index.search("nodes", USER, query, 5)
    want = _reference(query, 5)
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)
    assert store.lexical_search(USER, query, 5) == got


def test_count_and_rule(store: Store) -> None:
    index = store.lexical  # type: ignore[attr-defined]
    assert index.count("nodes", USER.user) == 0
    store.put_nodes(_nodes())
    store.put_nodes(_nodes(Tenant("other"), "o"))
    assert index.count("nodes", USER.user) == len(TEXTS)
    assert index.count("nodes", "nobody") == 0
    assert index.rule() == lexindex.RULE_VERSION
    store.delete_nodes(["n0", "n1"])
    assert index.count("nodes", USER.user) == len(TEXTS) - 2
    assert [i for i, _ in index.search("nodes", USER, "tomatoes", 5)] == []


CJK = [
    ("user", "我女儿叫朵朵，今年上小学二年级。"),
    ("user", "我用 uv 管理 Python packages，比 pip 快多了。"),
    ("user", "来週の金曜日に東京で友達と会います。"),
    ("user", "저는 서울에서 간호사로 일하고 있어요."),
    ("user", "Dinner tonight: pasta with tomatoes."),
]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("女儿的名字你记得吗？", "c0"),  # a question in other words: its bigrams (女儿) find the memory
        ("朵朵上几年级", "c0"),
        ("管理包的工具", "c1"),
        ("package manager", "c1"),  # the English words of mixed text are stemmed as before
        ("东京见面是哪天？", "c2"),  # simplified 东 is not 東, but 京 is one character of both
        ("東京で誰と会いますか", "c2"),
        ("서울에서 무슨 일을 해요?", "c3"),
        ("tomato", "c4"),
    ],
)
def test_cjk_text_is_found_by_its_terms_on_every_backend(store: Store, query: str, first: str | None) -> None:
    rng = np.random.default_rng(5)
    nodes = []
    for i, (speaker, text) in enumerate(CJK):
        vector = rng.normal(size=8).astype(np.float32)
        nodes.append(
            Node(id=f"c{i}", tenant=USER, content=text, speaker=speaker, session="s1",
                 at=T0 + dt.timedelta(minutes=i), embedding=vector / np.linalg.norm(vector))
        )  # fmt: skip
    store.put_nodes(nodes)
    found = store.lexical_search(USER, query, 3)
    assert (found[0][0] if found else None) == first
    # the neighbour context field is indexed by the same rule (c0's neighbours hold c1's words)
    if first == "c1":
        assert "c1" not in [i for i, _ in store.context_search(USER, query, 5)]
        assert {"c0", "c2"} <= {i for i, _ in store.context_search(USER, query, 5)}
