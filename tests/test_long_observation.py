"""A fact at the end of a long message is found: by the lexical side (FTS5 indexes the whole text) and
by the dense side (the message is embedded as overlapping chunks and scores as its best one)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dualmem import Memory
from dualmem.embed import Embedder
from dualmem.embed.windows import CHUNK_STRIDE, CHUNK_TOKENS, embed_texts
from dualmem.types import Tenant

FILLER = (
    "We talked about the weather, the traffic on the ring road, a film we both liked, the price of "
    "groceries, and how the garden looks after the rain. "
)
FACT = "The spare key is hidden under the blue flowerpot."
LONG = FILLER * (2100 // len(FILLER.split())) + FACT


def _memory(mem: Memory) -> str:
    for i in range(30):
        mem.add(f"Short note {i}: {FILLER}", user="u", speaker="Ana", session="s1")
    mem.add("Mira: I bought a new bicycle yesterday.", user="u", speaker="Mira", session="s1")
    return mem.add(LONG, user="u", speaker="Assistant", session="s1")


@pytest.mark.slow
def test_a_fact_at_the_end_of_a_2000_word_message_is_found(minilm: Embedder, tmp_path: Path) -> None:
    assert len(LONG.split()) > 2000
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        target = _memory(mem)
        found = mem.search("Where is the spare key hidden?", user="u", k=5)
    assert target in [e.node.id for e in found.evidence]


@pytest.mark.slow
def test_the_dense_side_finds_it_through_the_last_chunk(minilm: Embedder, tmp_path: Path) -> None:
    user = Tenant("u")
    query = minilm.embed(["Where is the spare key hidden?"])[0]
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        target = _memory(mem)
        chunks = mem.store.get_chunks([target])[target]
        # ~2,600 tokens: the first window is the node's embedding, the rest overlapping chunks
        assert 14 <= chunks.shape[0] <= 20
        node = mem.get(target, user="u")
        assert node.embedding is not None
        np.testing.assert_allclose(node.embedding, minilm.embed([LONG])[0], atol=1e-5)
        hits = mem.store.vector_search(user, query, 3)
        assert hits[0][0] == target
        assert hits[0][1] == pytest.approx(float(np.max(chunks @ query)), abs=1e-5)
        assert int(np.argmax(chunks @ query)) == chunks.shape[0] - 1  # the window holding the fact
        # without its chunks the message's own vector (its first window) does not find it
        mem.store.put_chunks({target: np.zeros((0, minilm.dim), dtype=np.float32)})
        assert target not in [i for i, _ in mem.store.vector_search(user, query, 10)]


def test_short_texts_stay_one_vector_and_windows_overlap(minilm: Embedder) -> None:
    texts = ["Mira: I bought a new bicycle yesterday.", "word " * 240, LONG]
    out = embed_texts(minilm, texts)
    assert out.chunks[0] is None
    assert out.chunks[1] is None
    np.testing.assert_allclose(out.rows, minilm.embed(texts), atol=1e-5)
    windows = minilm.windows([LONG], size=CHUNK_TOKENS, stride=CHUNK_STRIDE)[0]  # type: ignore[attr-defined]
    assert len(windows) == out.chunks[2].shape[0]  # type: ignore[union-attr]
    assert windows[-1].endswith(FACT)
    assert all(len(w.split()) <= CHUNK_TOKENS for w in windows)
    assert windows[1].split()[:5] != windows[0].split()[:5]  # consecutive windows start apart ...
    assert set(windows[0].split()[-20:]) & set(windows[1].split()[:60])  # ... and overlap


@pytest.mark.slow
def test_check_repair_reembed_brings_an_old_database_up_to_date(
    minilm: Embedder, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from dualmem.cli.main import main
    from dualmem.plane import SQLiteStore
    from dualmem.types import Node

    db = tmp_path / "old.db"
    user = Tenant("u")
    old_texts = ["Mira: I bought a new bicycle yesterday.", f"Assistant: {LONG}"]  # as embedded before
    old = minilm.embed(old_texts)
    with SQLiteStore.open(db) as store:
        store.bind_embedder(minilm.name, minilm.dim)
        store.put_nodes(
            [
                Node(
                    id="short",
                    tenant=user,
                    content=old_texts[0][6:],
                    at=None,
                    speaker="Mira",
                    embedding=old[0],
                ),
                Node(id="long", tenant=user, content=LONG, at=None, speaker="Assistant", embedding=old[1]),
            ]
        )
    assert main(["--db", str(db), "check", "--reembed"]) == 2  # only together with --repair
    capsys.readouterr()
    assert main(["--db", str(db), "--embedder", "minilm", "check", "--repair", "--reembed"]) == 0
    assert "reembedded" in json.loads(capsys.readouterr().out)["repaired"]
    with SQLiteStore.open(db) as store:
        nodes = store.get_nodes(["short", "long"])
        want = minilm.embed([nodes["short"].content, LONG])
        np.testing.assert_allclose(nodes["short"].embedding, want[0], atol=1e-5)  # type: ignore[arg-type]
        np.testing.assert_allclose(nodes["long"].embedding, want[1], atol=1e-5)  # type: ignore[arg-type]
        assert set(store.get_chunks(["short", "long"])) == {"long"}
        query = minilm.embed(["Where is the spare key hidden?"])[0]
        assert store.vector_search(user, query, 1)[0][0] == "long"


# --- one tokenisation per text: window ids and rows equal the window texts re-tokenised --------------

EDGY = (
    "Unaffable counterrevolutionaries re-examined naïve café façades; 東京 and 北京 — ok?! "
    "Pneumonoultramicroscopicsilicovolcanoconiosis, antidisestablishmentarianism, x" * 40
)


def _window_texts_ids(minilm: Embedder, text: str) -> tuple[list[list[int]], list[list[int]], int]:
    from dualmem.embed._ids import window_ids, window_spans

    splitter = minilm._load().splitter  # type: ignore[attr-defined]
    enc = splitter.encode(text, add_special_tokens=False)

    def encode(piece: str) -> list[int]:
        return list(splitter.encode(piece, add_special_tokens=False).ids)

    spans = window_spans(len(enc.ids), capacity=254, size=CHUNK_TOKENS, stride=CHUNK_STRIDE)
    got = [window_ids(text, enc.ids, enc.offsets, enc.word_ids, span, encode) for span in spans]
    want = [encode(text[enc.offsets[s][0] : enc.offsets[e - 1][1]]) for s, e in spans]
    words = enc.word_ids
    cut = sum(words[s] == words[s - 1] or (e < len(words) and words[e] == words[e - 1]) for s, e in spans)
    return got, want, cut


def test_window_ids_equal_the_window_text_tokenised(minilm: Embedder) -> None:
    cut = 0
    for text in (LONG, EDGY, "word " * 254, "word " * 255, "a" * 300 + " b" * 400):
        got, want, cuts = _window_texts_ids(minilm, text)
        assert got == want
        cut += cuts
    assert cut > 0  # edges inside a word were exercised


def test_window_ids_on_real_long_messages(minilm: Embedder, locomo_dir: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from ingest_long import long_messages

    cut = total = 0
    for text in long_messages(locomo_dir, 40, 7):
        got, want, cuts = _window_texts_ids(minilm, text)
        assert got == want
        cut, total = cut + cuts, total + len(got)
    assert total > 300
    assert cut > 5


def test_embed_windows_rows_equal_embed_of_the_texts_and_their_windows(minilm: Embedder) -> None:
    texts = [LONG, "Mira: I bought a new bicycle yesterday.", EDGY, LONG, "", "word " * 255]
    out = embed_texts(minilm, texts)
    assert len(out) == len(texts)
    windows = minilm.windows(texts, size=CHUNK_TOKENS, stride=CHUNK_STRIDE)  # type: ignore[attr-defined]
    np.testing.assert_allclose(out.rows, minilm.embed(texts), atol=1e-5)
    for chunks, ws in zip(out.chunks, windows, strict=True):
        if not ws:
            assert chunks is None
            continue
        assert chunks is not None
        assert chunks.shape == (len(ws), minilm.dim)
        assert float(np.min(np.sum(chunks * minilm.embed(ws), axis=1))) >= 0.9999
    np.testing.assert_array_equal(out.chunks[0], out.chunks[3])  # a repeated text: the same rows


def test_a_cached_embedder_keeps_the_one_pass_path_and_the_chunks(minilm: Embedder) -> None:
    from dualmem.embed import CachedEmbedder, HashingEmbedder

    texts = [LONG, "Mira: I bought a new bicycle yesterday."]
    direct = embed_texts(minilm, texts)
    cached = embed_texts(CachedEmbedder(minilm, size=8), texts)
    np.testing.assert_array_equal(cached.rows, direct.rows)
    np.testing.assert_array_equal(cached.chunks[0], direct.chunks[0])  # type: ignore[arg-type]
    assert cached.chunks[1] is None
    plain = embed_texts(CachedEmbedder(HashingEmbedder(64), size=8), texts)  # no window: no chunks
    assert plain.chunks == (None, None)
    np.testing.assert_allclose(plain.rows, HashingEmbedder(64).embed(texts), atol=1e-6)
