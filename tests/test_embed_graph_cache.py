"""The embedder's saved optimised graph (``MiniLMEmbedder(graph_cache=)``, ``embed/_saved.py``) and the
one-tokenizer ``embed`` path: the same vectors, bit for bit, however the session was opened."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from dualmem.embed import Embedder
from dualmem.embed import onnx as minilm_onnx
from dualmem.embed._saved import SavedGraph
from dualmem.embed.onnx import MINILM_MODEL_SHA256, MiniLMEmbedder, default_model_path

TEXTS = [
    "Caroline went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie painted a lake sunrise last year.",
    " ".join(["the pottery class on Tuesday was about glazing bowls"] * 60),  # over 256 tokens: cut
]

pytestmark = pytest.mark.slow


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def test_the_saved_graph_gives_the_same_vectors_and_is_used_again(minilm: Embedder, tmp_path: Path) -> None:
    expected = minilm.embed(TEXTS)
    first = MiniLMEmbedder(graph_cache=tmp_path)
    assert np.array_equal(first.embed(TEXTS), expected)
    graph, record = SavedGraph(tmp_path, model_sha256=MINILM_MODEL_SHA256).paths()
    assert _files(tmp_path) == sorted([graph, record])
    assert graph.stat().st_size == json.loads(record.read_text())["size"]
    stamp = graph.stat().st_mtime_ns
    second = MiniLMEmbedder(graph_cache=tmp_path)
    assert np.array_equal(second.embed(TEXTS), expected)
    assert graph.stat().st_mtime_ns == stamp, "the saved graph was opened, not written again"
    saved = SavedGraph(tmp_path, model_sha256=MINILM_MODEL_SHA256)
    assert saved._load(graph, record, None, minilm_onnx._ort_errors()) is not None


@pytest.mark.parametrize("damage", ["probe", "truncated", "garbage-record"])
def test_a_damaged_saved_graph_is_not_trusted_and_is_saved_again(
    minilm: Embedder, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    expected = minilm.embed(TEXTS)
    MiniLMEmbedder(graph_cache=tmp_path).embed(["first"])
    graph, record = SavedGraph(tmp_path, model_sha256=MINILM_MODEL_SHA256).paths()
    good = json.loads(record.read_text())
    if damage == "probe":  # a graph that answers differently than when it was saved
        record.write_text(json.dumps({**good, "probe": "0" * 64}))
    elif damage == "truncated":
        graph.write_bytes(graph.read_bytes()[:1000])
        record.write_text(json.dumps({**good, "size": 1000}))
    else:
        record.write_text("{not json")
    with caplog.at_level(logging.INFO, logger="dualmem"):
        again = MiniLMEmbedder(graph_cache=tmp_path)
        assert np.array_equal(again.embed(TEXTS), expected)
    assert "not used" in caplog.text
    assert json.loads(record.read_text()) == good, "the graph was optimised and saved afresh"
    assert graph.stat().st_size == good["size"]


def test_an_unwritable_cache_only_costs_the_saving(minilm: Embedder, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    embedder = MiniLMEmbedder(graph_cache=blocker / "graphs")
    assert np.array_equal(embedder.embed(TEXTS), minilm.embed(TEXTS))


def test_a_model_without_a_known_digest_is_never_cached(minilm: Embedder, tmp_path: Path) -> None:
    cache = tmp_path / "graphs"
    embedder = MiniLMEmbedder(model_path=default_model_path(), graph_cache=cache)
    assert np.array_equal(embedder.embed(TEXTS[:1]), minilm.embed(TEXTS[:1]))
    assert not cache.exists()


def test_embed_cuts_long_texts_as_the_truncating_tokenizer_does(minilm: Embedder) -> None:
    assert isinstance(minilm, MiniLMEmbedder)
    runtime = minilm._load()
    assert runtime.tokenizer is None  # one tokenizer: [CLS] ... [SEP] rows are cut by hand
    truncating = minilm_onnx._open_tokenizer(minilm_onnx.default_tokenizer_path(), minilm.max_length)
    rows = [e.ids for e in truncating.encode_batch(TEXTS, add_special_tokens=True)]
    assert len(rows[2]) == minilm.max_length
    assert np.array_equal(minilm.embed(TEXTS), minilm._embed_ids(runtime, rows))
