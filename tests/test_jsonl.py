"""The JSONL export format at its boundary: byte-exact output, pydantic-checked input, typed errors.

``tests/fixtures/export_v1.jsonl`` was written by the hand-rolled serialiser this format started
with; ``export_v2.jsonl`` is the same records under a version 2 header with the trailer (counts and
sha256) that lets an import prove the file whole. The export must keep producing exactly the v2
bytes, importing them must round-trip, and every way of breaking a file (cut, reordered, edited, no
trailer, version 1) is refused with nothing stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from dualmem.errors import EmbedderMismatch, InvalidInput
from dualmem.plane import Decision, InMemoryStore
from dualmem.plane.jsonl import export_lines, import_lines
from dualmem.types import Edge, Node, TemporalRef, Tenant, TypeScores
from export_seal import resealed

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "export_v2.jsonl"
V1 = FIXTURES / "export_v1.jsonl"
UTC = dt.UTC
DIM = 4


def _vec(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _store() -> InMemoryStore:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    t = Tenant("u", "a", None)
    created = dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    first = Node(
        id="n1", tenant=t, content="Zoë's café — “quoted” \\ slash\nnew line",
        at=dt.datetime(2024, 1, 1, tzinfo=UTC),
        speaker="Zoë", source="chat", session="s1", turn_id="t1",
        metadata={"k": [1, "x", None, True, 2.5], "nested": {"deep": {}}},
        entities=("Zoë", "café"),
        temporal_refs=(TemporalRef("yesterday", dt.date(2023, 12, 31), dt.date(2023, 12, 31), "day"),),
        types=TypeScores(0.9, 0.1, 0.0, 0.25), embedding=_vec(1, 2, 3, 4), created_at=created,
        valid_from=dt.datetime(2024, 1, 1, tzinfo=UTC), valid_to=dt.datetime(2024, 2, 1, tzinfo=UTC),
    )  # fmt: skip
    second = Node(
        id="n2", tenant=t, content="plain", at=None, embedding=_vec(4, 3, 2, 1), created_at=created,
        status="pending", derived=True,
    )  # fmt: skip
    store.put_nodes([first, second])
    store.put_edges(
        [
            Edge("n1", "n2", "temporal", "superseded_by", 0.75, created),
            Edge("n2", "n1", "semantic", "derived_from", 1.0, created, created, None),
        ]
    )
    store.put_decisions(
        [
            Decision(
                "n1", "relations", "pair_0_caused_by", "caused_by", 0.125, None, "builtin", 1.5, "n2", created
            ),
            Decision("n2", "typing", "type", "type", 0.5, "episodic", "llm", 0.0, None, created),
        ]
    )  # fmt: skip
    return store


def _export(store: InMemoryStore) -> str:
    tenant = Tenant("u", "a", None)
    return "".join(line + "\n" for line in export_lines(store, tenant, embedder="fake-4", dim=DIM))


def test_export_is_byte_identical_to_the_v2_golden_file() -> None:
    assert _export(_store()) == GOLDEN.read_text(encoding="utf-8")


def test_golden_file_round_trips() -> None:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    report = import_lines(store, GOLDEN.read_text(encoding="utf-8").splitlines(), embedder="fake-4", dim=DIM)
    assert (report.nodes, report.edges, report.decisions) == (2, 2, 2)
    assert _export(store) == GOLDEN.read_text(encoding="utf-8")
    assert store.get_node("n1") == _store().get_node("n1")


def test_chunk_vectors_follow_their_node_and_round_trip() -> None:
    store = _store()
    chunks = np.stack([_vec(1, 0, 0, 1), _vec(0, 1, 1, 0)])
    store.put_chunks({"n2": chunks})
    text = _export(store)
    lines = text.splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[:4] == ["header", "node", "node", "chunks"]
    assert json.loads(lines[3])["node_id"] == "n2"
    copy = _import(lines)
    np.testing.assert_array_equal(copy.get_chunks(["n2"])["n2"], chunks)
    assert _export(copy) == text
    with pytest.raises(InvalidInput, match=r"line 2 .*do not follow that node"):
        _import(resealed([lines[0], lines[3], lines[1], lines[2], *lines[4:-1]]))
    with pytest.raises(InvalidInput, match=r"line 4 .*not 3 x 4 float32"):
        _import(resealed([*lines[:3], json.dumps({**json.loads(lines[3]), "parts": 3}), *lines[4:-1]]))


def _lines() -> list[str]:
    return GOLDEN.read_text(encoding="utf-8").splitlines()


def _import(lines: list[str]) -> InMemoryStore:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    import_lines(store, lines, embedder="fake-4", dim=DIM)
    return store


def _edit(index: int, **changes: object) -> list[str]:
    """The golden file with one line changed, sealed again (so the change, not the seal, is judged)."""
    lines = _lines()[:-1]
    doc = json.loads(lines[index])
    for key, value in changes.items():
        if value is _DROP:
            del doc[key]
        else:
            doc[key] = value
    lines[index] = json.dumps(doc)
    return resealed(lines)


_DROP = object()
REF = {"expression": "x", "start": "2024-01-01", "end": "2024-01-01", "precision": "day"}


@pytest.mark.parametrize(
    ("index", "changes", "message"),
    [
        (1, {"created_at": "yesterday"}, r"line 2 .*created_at"),
        (1, {"content": _DROP}, r"line 2 .*content: Field required"),
        (1, {"status": "done"}, r"line 2 .*status"),
        (1, {"surprise": 1}, r"line 2 .*surprise: Extra inputs"),
        (1, {"embedding": "AAAAAA=="}, r"line 2 .*1-dim vector, expected 4"),
        (1, {"embedding": "not base64!"}, r"line 2 .*not base64"),
        (2, {"temporal_refs": [{**REF, "start": "2024-13-01"}]},
         r"line 3 .*temporal_refs\[0\]\.start: month must be in 1..12"),
        (3, {"view": "spatial"}, r"line 4 .*view"),
        (3, {"label": "causes"}, r"line 4 .*label 'causes' is not in view 'temporal'"),
        (5, {"value": "high"}, r"line 6 .*value"),
        (5, {"kind": "mystery"}, r"line 6 .*unknown record kind 'mystery'"),
    ],
)  # fmt: skip
def test_bad_records_name_the_line_and_the_field(
    index: int, changes: dict[str, object], message: str
) -> None:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    with pytest.raises(InvalidInput, match=message) as info:
        import_lines(store, _edit(index, **changes), embedder="fake-4", dim=DIM)
    assert info.value.hint
    assert store.get_nodes(["n1", "n2"]) == {}  # nothing applied


def test_bad_files_are_typed_errors() -> None:
    with pytest.raises(InvalidInput, match=r"line 9 .*not JSON"):
        _import([*_lines(), "{not json"])
    with pytest.raises(InvalidInput, match=r"line 2 .*not a JSON object"):
        _import([_lines()[0], "[1, 2]"])
    with pytest.raises(InvalidInput, match="does not start with a dualmem export header"):
        _import(_lines()[1:])
    with pytest.raises(InvalidInput, match="empty"):
        _import(["", "  "])
    with pytest.raises(InvalidInput, match="not a dualmem export"):
        _import(_edit(0, format="other"))
    with pytest.raises(InvalidInput, match="newer") as info:
        _import(_edit(0, version=3))
    assert info.value.hint == "upgrade dualmem"
    with pytest.raises(InvalidInput, match=r"line 1 .*dim"):
        _import(_edit(0, dim="four"))
    with pytest.raises(EmbedderMismatch):
        _import(_edit(0, embedder="other"))


def test_one_node_serialiser_feeds_the_export() -> None:
    from dualmem.plane.jsonl import NodeRecord

    node = _store().get_node("n1")
    full = node.to_json()
    assert set(NodeRecord.model_fields) == {*full, "kind", "embedding"}
    assert json.loads(_export(_store()).splitlines()[1]) == {**full, "kind": "node", "embedding": ANY_B64}
    assert node.memory_json() == {
        "id": "n1", "content": node.content, "timestamp": "2024-01-01T00:00:00+00:00",
        "entities": ["Zoë", "café"], "speaker": "Zoë",
    }  # fmt: skip


class _AnyBase64:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and len(other) == 24

    __hash__ = None  # type: ignore[assignment]


ANY_B64 = _AnyBase64()


def _refused(lines: list[str], message: str) -> None:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    with pytest.raises(InvalidInput, match=message) as info:
        import_lines(store, lines, embedder="fake-4", dim=DIM)
    assert info.value.hint
    assert store.get_nodes(["n1", "n2"]) == {}
    assert store.edges_of("n1") == []
    assert store.decisions_of("n1") == []


def test_the_trailer_seals_counts_and_sha256_of_every_line_before_it() -> None:
    lines = _lines()
    trailer = json.loads(lines[-1])
    assert trailer == {
        "kind": "trailer", "nodes": 2, "chunks": 0, "edges": 2, "decisions": 2,
        "sha256": hashlib.sha256("".join(f"{line}\n" for line in lines[:-1]).encode()).hexdigest(),
    }  # fmt: skip
    assert json.loads(resealed(lines[:-1])[-1]) == trailer  # the tests' helper follows the same rule


@pytest.mark.parametrize("keep", range(1, 7))
def test_a_file_cut_short_is_refused(keep: int) -> None:
    _refused(_lines()[:keep], r"no trailer: it ends at line \d+ and was cut short")


def test_reordered_edited_or_miscounted_files_are_refused() -> None:
    lines = _lines()
    _refused([lines[0], lines[2], lines[1], *lines[3:]], "do not match the sha256")
    _refused([lines[0], *lines[1:-1][::-1], lines[-1]], "do not match the sha256")
    _refused([lines[0], lines[1].replace("café", "cafe", 1), *lines[2:]], "do not match the sha256")
    _refused([*lines[:2], *lines[3:]], r"holds 1 nodes records but its trailer says 2")
    _refused([lines[0], *lines[1:3], lines[4], *lines[3:]], r"holds 3 edges records but its trailer says 2")
    trailer = json.loads(lines[-1])
    _refused([*lines[:-1], json.dumps({**trailer, "sha256": "0" * 64})], "do not match the sha256")
    _refused(
        [*lines[:-1], json.dumps({**trailer, "edges": 3})], "holds 2 edges records but its trailer says 3"
    )
    _refused([*lines[:-1], json.dumps({**trailer, "nodes": "2"})], r"line 8 .*nodes")
    _refused([*lines, lines[1]], "line 9 follows the export's trailer")
    _refused([*lines[:-1], lines[-1], lines[-1]], "line 9 follows the export's trailer")


def test_blank_lines_and_crlf_line_ends_do_not_break_the_seal() -> None:
    lines = _lines()
    store = _import([f"{line}\r\n" for line in lines[:3]] + ["", "  "] + lines[3:])
    assert _export(store) == GOLDEN.read_text(encoding="utf-8")


def test_version_1_files_have_no_trailer_and_are_refused_with_a_way_out() -> None:
    store = InMemoryStore()
    store.bind_embedder("fake-4", DIM)
    with pytest.raises(InvalidInput, match="format version 1, which has no trailer") as info:
        import_lines(store, V1.read_text(encoding="utf-8").splitlines(), embedder="fake-4", dim=DIM)
    assert info.value.hint is not None
    assert "export the memory again" in info.value.hint
    assert V1.read_text(encoding="utf-8").splitlines()[1:] == _lines()[1:-1]  # same records as v2
