"""Node, Edge and Decision are mapped to JSON in one place (``to_json`` / ``from_json``, the field
lists ``NODE_FIELDS``, ``EDGE_FIELDS``, ``DECISION_FIELDS``); the HTTP models, the JSONL records and
the SQL rows of both stores derive from it, and these tests hold each of them to it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
from pathlib import Path

import numpy as np

from dualmem.plane import codec
from dualmem.plane import jsonl as records
from dualmem.plane.base import DECISION_FIELDS, Decision
from dualmem.plane.sqlite import SQLiteStore
from dualmem.types import EDGE_FIELDS, NODE_FIELDS, Edge, Node, TemporalRef, Tenant, TypeScores
from dualmem.wire import decode, schemas

T = dt.datetime(2023, 5, 8, 13, 56, 12, 345678, tzinfo=dt.UTC)
OFFSET = dt.datetime(2023, 5, 9, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))


def _node(**changes: object) -> Node:
    node = Node(
        id="n1",
        tenant=Tenant("alice", "planner", "r1"),
        content="Mel moved to Lisbon \x00 last week",
        at=OFFSET,
        speaker="Mel",
        source="chat",
        session="s1",
        turn_id="t7",
        metadata={"mood": "glad", "tags": ["a", 1, None], "deep": {"x": 1.5}},
        entities=("Mel", "Lisbon"),
        temporal_refs=(TemporalRef("last week", dt.date(2023, 4, 24), dt.date(2023, 4, 30), "week"),),
        types=TypeScores(0.1, 0.9, 0.0, 0.25),
        embedding=np.arange(4, dtype=np.float32) / 4,
        created_at=T,
        status="pending",
        valid_from=T,
        valid_to=None,
        derived=True,
    )
    return dataclasses.replace(node, **changes)  # type: ignore[arg-type]


def test_node_json_is_its_field_list_and_reads_back() -> None:
    for node in (_node(), _node(at=None, speaker=None, types=None, temporal_refs=(), metadata={})):
        data = node.to_json()
        assert tuple(data) == NODE_FIELDS
        assert Node.from_json(data, embedding=node.embedding) == node


def test_edge_and_decision_json_are_their_field_lists_and_read_back() -> None:
    edge = Edge("a", "b", "temporal", "superseded_by", 0.75, T, OFFSET, None)
    assert tuple(edge.to_json()) == EDGE_FIELDS
    assert Edge.from_json(edge.to_json()) == edge
    decision = Decision(
        "n1", "relations", "pair_0", "relation.supersedes", 0.8, None, "builtin", 1.5, "n0", T
    )
    assert tuple(decision.to_json()) == DECISION_FIELDS
    assert Decision.from_json(decision.to_json()) == decision
    assert tuple(f.name for f in dataclasses.fields(Decision)) == DECISION_FIELDS


def test_the_http_and_jsonl_models_hold_the_same_fields() -> None:
    flat = set(NODE_FIELDS) - {"user", "agent", "run"}
    assert set(schemas.NodeOut.model_fields) == flat | {"tenant"}
    assert set(records.NodeRecord.model_fields) == set(NODE_FIELDS) | {"kind", "embedding"}
    assert tuple(schemas.EdgeOut.model_fields) == EDGE_FIELDS
    assert set(records.EdgeRecord.model_fields) == set(EDGE_FIELDS) | {"kind"}
    assert tuple(schemas.DecisionOut.model_fields) == DECISION_FIELDS
    assert set(records.DecisionRecord.model_fields) == set(DECISION_FIELDS) | {"kind"}


def test_the_wire_and_the_export_read_back_the_same_node() -> None:
    node = _node()
    bare = dataclasses.replace(node, embedding=None)
    assert decode.node_from(schemas.node_out(node)) == bare
    line = {"kind": "node", **node.to_json(), "embedding": None}
    assert records.NodeRecord.model_validate(line).to_node(4) == bare
    edge = Edge("a", "b", "semantic", "related", 0.5, T)
    assert decode._edge_from(schemas._edge_out(edge)) == edge


def test_sql_rows_are_the_json_shape_with_text_columns(tmp_path: Path) -> None:
    """A row holds each field of ``NODE_FIELDS`` in its column (positional inserts rely on it), the
    JSON fields as JSON text, and the epoch of each time beside it."""
    node = _node()
    row = dict(zip(codec.NODE_WRITE_COLUMNS, codec.node_values(node), strict=True))
    assert row["metadata"] == codec.dump_json(node.to_json()["metadata"])
    assert row["at_ts"] == OFFSET.timestamp()
    assert row["created_ts"] == T.timestamp()
    with SQLiteStore.open(tmp_path / "m.db") as store:
        store.put_nodes([node])
        assert store.get_node(node.id) == node  # the SQLite store reads its row back as the node
    conn = sqlite3.connect(tmp_path / "m.db")
    columns = [r[1] for r in conn.execute("PRAGMA table_info(nodes)")]
    conn.close()
    assert tuple(columns[1:]) == codec.NODE_WRITE_COLUMNS  # after seq, the rowid
    read = [row[column] for column in codec.NODE_COLUMNS]
    assert codec.node_from_row(read, node.embedding) == node
