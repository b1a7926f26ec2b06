"""The write path (paper §3.2, B.2) on the paper's running example, with real SQLite and MiniLM."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from dualmem import ControllerError, Memory
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder

M1 = ("Mira: My old bicycle broke.", "2024-05-14T10:00:00Z")
M2 = ("Mira: I bought a new bicycle yesterday because my old one broke.", "2024-05-16T10:00:00Z")


def scripted(caused_by: float) -> ScriptedController:
    return ScriptedController({"relation.caused_by": caused_by, "relation.time": "unknown"}, default=0.0)


def write_mira(mem: Memory) -> tuple[str, str]:
    m1 = mem.add(M1[0], user="u", speaker="Mira", at=M1[1])
    m2 = mem.add(M2[0], user="u", speaker="Mira", at=M2[1])
    return m1, m2


def edges(mem: Memory, node_id: str) -> set[tuple[str, str, str, str]]:
    return {(e.source, e.target, e.view, e.label) for e in mem.store.edges_of(node_id)}


def test_running_example_causal_edge_at_0_9(minilm: Embedder, db_path: Path) -> None:
    with Memory(_store(db_path), minilm, scripted(0.9)) as mem:
        m1, m2 = write_mira(mem)
        assert mem.count(user="u") == 2
        got = edges(mem, m2)
        assert (m1, m2, "temporal", "before") in got
        assert (m2, m1, "entity", "shared_entity") in got
        assert (m1, m2, "causal", "causes") in got
        node2 = mem.get(m2, user="u")
        assert {"mira", "bicycle"} <= set(node2.entities)
        assert node2.content == M2[0]  # kept verbatim
        assert node2.status == "complete"
        assert node2.types is not None
        refs = {r.expression: r for r in node2.temporal_refs}
        assert refs["yesterday"].start.isoformat() == "2024-05-15"
        assert refs["yesterday"].precision == "day"


def test_running_example_no_causal_edge_at_0_5(minilm: Embedder, db_path: Path) -> None:
    with Memory(_store(db_path), minilm, scripted(0.5)) as mem:
        m1, m2 = write_mira(mem)
        got = edges(mem, m2)
        assert not any(view == "causal" for _, _, view, _ in got)
        assert (m1, m2, "temporal", "before") in got  # deterministic edges do not depend on the controller


def test_at_most_two_controller_calls_per_write(minilm: Embedder, db_path: Path) -> None:
    ctl = scripted(0.9)
    with Memory(_store(db_path), minilm, ctl) as mem:
        mem.add(M1[0], user="u", speaker="Mira", at=M1[1])
        assert mem.meter.stats.calls_for("typing") == 1
        assert mem.meter.stats.calls_for("relations") == 0  # no candidates yet: no relation request
        mem.add(M2[0], user="u", speaker="Mira", at=M2[1])
        assert mem.meter.stats.calls_for("typing") == 2
        assert mem.meter.stats.calls_for("relations") == 1
        purposes = [b.purpose for b in ctl.batches]
        assert purposes == ["typing", "typing", "relations"]


def test_relation_request_shape(minilm: Embedder, db_path: Path) -> None:
    ctl = scripted(0.9)
    with Memory(_store(db_path), minilm, ctl) as mem:
        write_mira(mem)
    rel = next(b for b in ctl.batches if b.purpose == "relations")
    names = set(rel.questions)
    assert {"pair_0_semantic", "pair_0_caused_by", "pair_0_causes", "pair_0_same_episode"} <= names
    # exact shared identifiers make the alias question unnecessary; timestamps order the pair
    assert "pair_0_alias" not in names
    assert "pair_0_time" not in names
    assert rel.state["new_memory"]["content"] == M2[0]  # type: ignore[index]
    cand = rel.state["candidates"][0]  # type: ignore[index]
    assert cand["content"] == M1[0]
    assert set(cand["shared_entities"]) >= {"bicycle", "mira"}


def test_implicit_time_choice_only_without_order(minilm: Embedder, db_path: Path) -> None:
    ctl = ScriptedController({"relation.time": "before"}, default=0.0)
    with Memory(_store(db_path), minilm, ctl) as mem:
        a = mem.add("Mira: My old bicycle broke.", user="u", speaker="Mira")
        b = mem.add("Mira: So I bought a new bicycle.", user="u", speaker="Mira")
        rel = next(x for x in ctl.batches if x.purpose == "relations")
        assert "pair_0_time" in rel.questions
        assert (a, b, "temporal", "before") in edges(mem, b)


def test_add_many_orders_and_relates_within_batch(minilm: Embedder, db_path: Path) -> None:
    ctl = scripted(0.9)
    with Memory(_store(db_path), minilm, ctl) as mem:
        ids = mem.add_many(
            [
                {"text": M1[0], "speaker": "Mira", "at": M1[1], "session": "s1"},
                {"text": M2[0], "speaker": "Mira", "at": M2[1], "session": "s2"},
            ],
            user="u",
        )
        assert len(ids) == 2
        assert (ids[0], ids[1], "causal", "causes") in edges(mem, ids[1])
        assert mem.meter.stats.calls_for("typing") == 2
        assert mem.meter.stats.calls_for("relations") == 1


class Down:
    """A controller that is unreachable: every request fails."""

    name = "down"

    def decide(self, batch: Batch) -> BatchResult:
        raise ControllerError("connection refused")


def test_degraded_mode_then_repair(minilm: Embedder, db_path: Path) -> None:
    with Memory(_store(db_path), minilm, Down()) as mem:
        m1, m2 = write_mira(mem)
        assert mem.get(m2, user="u").status == "pending"
        got = edges(mem, m2)
        assert (m1, m2, "temporal", "before") in got  # deterministic edges are kept
        assert not any(view == "causal" for _, _, view, _ in got)
        assert mem.stats(user="u")["pending"] == 2
    with Memory(_store(db_path), minilm, scripted(0.9)) as mem:
        report = mem.repair(user="u")
        assert set(report.ids) == {m1, m2}
        assert report.pending == ()
        assert mem.get(m2, user="u").status == "complete"
        assert mem.stats(user="u")["pending"] == 0
        assert any(view == "causal" for _, _, view, _ in edges(mem, m2))


def test_decisions_are_traced(minilm: Embedder, db_path: Path) -> None:
    with Memory(_store(db_path), minilm, scripted(0.9)) as mem:
        _, m2 = write_mira(mem)
        info = mem.inspect(m2, user="u")
        keys = {d.key for d in info.decisions}
        assert {"typing.episodic", "relation.caused_by", "relation.semantic"} <= keys
        caused = next(d for d in info.decisions if d.key == "relation.caused_by")
        assert caused.value == pytest.approx(0.9)
        assert caused.backend == "scripted"
        assert caused.latency_ms >= 0.0
        assert caused.other_id is not None


def test_write_control_off_keeps_deterministic_edges(minilm: Embedder, db_path: Path) -> None:
    from dualmem import Profile

    profile = Profile.paper().with_(write__relations_enabled=False)
    with Memory(_store(db_path), minilm, scripted(0.9), profile=profile) as mem:
        m1, m2 = write_mira(mem)
        got = edges(mem, m2)
        assert (m1, m2, "temporal", "before") in got
        assert not any(view == "causal" for _, _, view, _ in got)
        assert mem.meter.stats.calls_for("relations") == 0


def _store(path: Path):  # type: ignore[no-untyped-def]
    from dualmem.plane import SQLiteStore

    return SQLiteStore.open(path)


def test_the_vector_is_of_the_content_only(minilm: Embedder, db_path: Path) -> None:
    from dualmem.embed.windows import embedding_text

    assert embedding_text("I painted a sunrise.") == "I painted a sunrise."
    with Memory(_store(db_path), minilm, scripted(0.0)) as mem:
        painted = mem.add("Yeah, I painted that lake sunrise last year!", user="u", speaker="Melanie")
        stored = mem.get(painted, user="u").embedding
        assert stored is not None
        want = minilm.embed(["Yeah, I painted that lake sunrise last year!"])[0]
        assert np.allclose(stored, want, atol=1e-6)
        named = minilm.embed(["Melanie: Yeah, I painted that lake sunrise last year!"])[0]
        assert not np.allclose(stored, named, atol=1e-3)
        # the speaker stays a field: in the lexical index and on the node
        assert mem.get(painted, user="u").speaker == "Melanie"
        from dualmem.types import Tenant

        assert [i for i, _ in mem.store.lexical_search(Tenant("u"), "Melanie", 5)] == [painted]


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("before", ("old", "new", "before")),
        ("after", ("new", "old", "before")),
        ("during", ("new", "old", "contains")),
        ("contains", ("old", "new", "contains")),
        ("overlaps", ("old", "new", "overlaps")),
        ("same_time", ("old", "new", "same_time")),
        ("unknown", None),
    ],
)
def test_implicit_time_labels_become_temporal_edges(
    minilm: Embedder, db_path: Path, label: str, expected: tuple[str, str, str] | None
) -> None:
    ctl = ScriptedController(
        {"relation.time": {label: 0.9, "unknown": 0.1} if label != "unknown" else "unknown"}, default=0.0
    )
    with Memory(_store(db_path), minilm, ctl) as mem:
        ids = {"old": mem.add("Mira: I was cooking dinner.", user="u")}
        ids["new"] = mem.add("Mira: The phone rang while I cooked dinner.", user="u")
        got = {(e.source, e.target, e.label) for e in mem.store.edges_of(ids["new"]) if e.view == "temporal"}
        if expected is None:
            assert got == set()
        else:
            src, dst, lab = expected
            assert got == {(ids[src], ids[dst], lab)}


def test_chunked_pipelined_writes_keep_order_and_links(minilm: Embedder, tmp_path: Path) -> None:
    turns = [
        {"text": f"Turn {i}: Mira talks about her bicycle ride number {i}.", "session": "s1"}
        for i in range(7)
    ]
    with Memory(_store(tmp_path / "a.db"), minilm, scripted(0.0)) as mem:
        ids = mem.add_many(turns, user="u", chunk_size=2)  # four chunks, embedded ahead on a worker
        assert [mem.get(i, user="u").content for i in ids] == [t["text"] for t in turns]
        for first, second in itertools.pairwise(ids):  # the session chain crosses chunk borders
            assert (first, second, "temporal", "before") in edges(mem, second)
        assert mem.meter.stats.calls_for("typing") == 7
