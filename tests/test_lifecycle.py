"""Consolidation and the memory lifecycle (paper B.3): supersede, summarize, update, forget, export."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from dualmem import EmbedderMismatch, InvalidInput, Memory, NotFound, Profile
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder, HashingEmbedder
from dualmem.memory import Filter
from dualmem.types import Node, Tenant
from dualmem.write.consolidate import Summarizer

LOVE = "I love sushi, I eat it every week."
NO_LONGER = "I no longer eat sushi since I became vegetarian."

SUPERSEDE = {
    "relation.supersedes": 0.9,  # the update supersedes when it is written
    "consolidate.contradiction": 0.9,
    "consolidate.obsolescence": 0.9,
    "consolidate.link_usefulness": 0.8,
    "consolidate.representation": "keep_separate",
}


def summarize(sources: Sequence[Node], representation: str) -> str:
    return f"{representation}: " + " / ".join(n.content for n in sources)


def open_mem(
    path: str,
    embedder: Embedder,
    table: dict[str, object],
    *,
    consolidation: str,
    profile: Profile | None = None,
    summarizer: Summarizer | None = None,
) -> Memory:
    full = {"relation.time": "unknown", "consolidate.representation": "uncertain", **table}
    prof = (profile or Profile.dualmem()).with_(write__consolidation=consolidation)
    ctl = ScriptedController(full, default=0.2)  # type: ignore[arg-type]
    return Memory.open(path, embedder=embedder, controller=ctl, profile=prof, summarizer=summarizer)


def test_contradicted_preference_is_superseded(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    with open_mem(memory_db("m.db"), minilm, SUPERSEDE, consolidation="off") as mem:
        old = mem.add(LOVE, user="u", speaker="user", at="2024-01-10T12:00:00Z")
        new = mem.add(NO_LONGER, user="u", speaker="user", at="2024-06-02T12:00:00Z")
        assert mem.get(old, user="u").valid_to is not None  # marked when written, never deleted
        report = mem.consolidate(user="u")
        assert report.calls == 1
        assert report.superseded == ()  # nothing left for the pass
        assert mem.get(new, user="u").valid_to is None
        assert any(e.label == "superseded_by" and e.source == old for e in mem.store.edges_of(new))
        ans = mem.answer("Does the user eat sushi?", user="u")
        assert ans.evidence[0].node.id == new
        assert "no longer" in ans.text
        assert [n.id for n in mem.history(new, user="u")] == [old, new]
        assert [n.id for n in mem.history(old, user="u")] == [old, new]
        # history is still queryable when the query asks about the past
        past = mem.search("What food did the user use to love before?", user="u")
        assert old in past.ids


def test_consolidation_records_decisions_and_links(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    with open_mem(memory_db("m.db"), minilm, SUPERSEDE, consolidation="off") as mem:
        mem.add(LOVE, user="u", at="2024-01-10T12:00:00Z")
        new = mem.add(NO_LONGER, user="u", at="2024-06-02T12:00:00Z")
        mem.consolidate(user="u")
        decisions = [d for d in mem.inspect(new, user="u").decisions if d.purpose == "consolidation"]
        keys = {d.key for d in decisions}
        assert keys == {
            "consolidate.redundancy",
            "consolidate.contradiction",
            "consolidate.obsolescence",
            "consolidate.link_usefulness",
            "consolidate.representation",
        }
        assert any(e.label == "related" and e.view == "semantic" for e in mem.store.edges_of(new))
        again = mem.consolidate(user="u")
        assert again.pairs == 0  # a judged pair is not judged again


@pytest.mark.parametrize(
    ("merge_p", "contradiction", "derived"), [(0.9, 0.1, True), (0.8, 0.1, False), (0.9, 0.9, False)]
)
def test_escalation_gate(
    memory_db: Callable[[str], str],
    minilm: Embedder,
    tmp_path: Path,
    merge_p: float,
    contradiction: float,
    derived: bool,
) -> None:
    table = {
        "consolidate.representation": {"merge": merge_p, "keep_separate": 1 - merge_p},
        "consolidate.contradiction": contradiction,
        "consolidate.obsolescence": 0.0,
    }
    with open_mem(memory_db("m.db"), minilm, table, consolidation="off", summarizer=summarize) as mem:
        a = mem.add(
            "Mira walks her dog Pepper in the park every morning.", user="u", at="2024-05-01T08:00:00Z"
        )
        b = mem.add("Every morning Mira takes Pepper to the park.", user="u", at="2024-05-08T08:00:00Z")
        report = mem.consolidate(user="u")
        assert bool(report.derived) is derived
        if derived:
            node = mem.get(report.derived[0], user="u")
            assert node.derived
            assert node.content.startswith("merge: ")
            sources = {e.target for e in mem.store.edges_of(node.id) if e.label == "derived_from"}
            assert sources == {a, b}
            assert mem.get(a, user="u").content.startswith("Mira walks")  # raw observations are kept


def test_periodic_inline_every_n_writes(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    profile = Profile.paper().with_(write__consolidate_every=3)
    with open_mem(memory_db("m.db"), minilm, SUPERSEDE, consolidation="inline", profile=profile) as mem:
        for i in range(5):
            mem.add(
                f"Note {i} about sushi and the weekly dinner plan.",
                user="u",
                at=f"2024-05-0{i + 1}T08:00:00Z",
            )
        assert mem.meter.stats.calls_for("consolidation") == 1
        mem.add("One more note about sushi.", user="u", at="2024-05-09T08:00:00Z")
        assert mem.meter.stats.calls_for("consolidation") == 2


def test_periodic_background_does_not_block(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    profile = Profile.paper().with_(write__consolidate_every=2)
    with open_mem(memory_db("m.db"), minilm, SUPERSEDE, consolidation="background", profile=profile) as mem:
        mem.add(LOVE, user="u", at="2024-01-10T12:00:00Z")
        mem.add(NO_LONGER, user="u", at="2024-06-02T12:00:00Z")
        mem.wait_for_consolidation(timeout=30)
        assert mem.meter.stats.calls_for("consolidation") == 1


def _everywhere(mem: Memory, node_id: str, text: str, user: str = "u") -> list[str]:
    """Every place a forgotten memory could still show up."""
    tenant = Tenant(user)
    vec = mem.embedder.embed([text])[0]
    places = {
        "node": mem.store.get_node(node_id) is not None,
        "vector": node_id in [i for i, _ in mem.store.vector_search(tenant, vec, 100)],
        "lexical": node_id in [i for i, _ in mem.store.lexical_search(tenant, text, 100)],
        "entity": node_id in [i for i, _ in mem.store.entity_search(tenant, ["sushi", "user"], 100)],
        "edges": bool(mem.store.edges_of(node_id)),
        "decisions": bool(mem.store.decisions_of(node_id)),
    }
    found = [place for place, there in places.items() if there]
    for n in mem.store.iter_nodes(tenant):
        if any(d.other_id == node_id for d in mem.store.decisions_of(n.id)):
            found.append("decision-other")
        if text in n.content:
            found.append(f"content-in-{n.id}")
    if node_id in mem.search(text, user=user, k=20).ids:
        found.append("search")
    if text in mem.answer(text, user=user).text:
        found.append("answer")
    return found


def test_forget_leaves_no_trace(memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path) -> None:
    table = dict(SUPERSEDE, **{"consolidate.representation": {"merge": 0.95, "keep_separate": 0.05}})
    table["consolidate.contradiction"] = 0.1
    with open_mem(memory_db("m.db"), minilm, table, consolidation="off", summarizer=summarize) as mem:
        old = mem.add(LOVE, user="u", speaker="user", at="2024-01-10T12:00:00Z")
        mem.add(NO_LONGER, user="u", speaker="user", at="2024-06-02T12:00:00Z")
        report = mem.consolidate(user="u")
        assert report.derived  # a summary quoting the fact exists before forgetting
        assert _everywhere(mem, old, LOVE)
        mem.forget(old, user="u")
        assert _everywhere(mem, old, LOVE) == []
        assert mem.store.get_node(report.derived[0]) is None  # the summary built from it is gone too
        exported = tmp_path / "out.jsonl"
        mem.export_jsonl(exported, user="u")
        assert LOVE not in exported.read_text()
        assert old not in exported.read_text()
        assert mem.consolidate(user="u").pairs == 0  # nothing left to bring it back
        with pytest.raises(NotFound):
            mem.forget(old, user="u")


def test_forget_by_filter_and_tenant(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    with open_mem(memory_db("m.db"), minilm, {}, consolidation="off") as mem:
        mem.add("Mira likes tea.", user="u", speaker="Mira", at="2024-01-01T00:00:00Z")
        mem.add("Jon likes coffee.", user="u", speaker="Jon", at="2024-02-01T00:00:00Z")
        mem.add(
            "Jon moved to Porto.", user="u", speaker="Jon", at="2024-03-01T00:00:00Z", metadata={"tag": "x"}
        )
        mem.add("Other user's memory.", user="v")
        assert mem.forget(user="u", where=Filter(speaker="jon", metadata={"tag": "x"})) == 1
        assert mem.count(user="u") == 2
        from dualmem.text.timeparse import parse_time

        assert mem.forget(user="u", where=Filter(since=parse_time("2024-01-15"))) == 1
        assert [n.content for n in mem.nodes(user="u")] == ["Mira likes tea."]
        assert mem.forget_all(user="u") == 1
        assert mem.count(user="u") == 0
        assert mem.count(user="v") == 1
        with pytest.raises(InvalidInput):
            mem.forget(user="u", where=Filter())


def test_update_keeps_history(memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path) -> None:
    with open_mem(memory_db("m.db"), minilm, {}, consolidation="off") as mem:
        first = mem.add("Mira lives in Lisbon.", user="u", speaker="Mira", at="2024-01-01T00:00:00Z")
        second = mem.update(first, "Mira lives in Porto.", user="u")
        assert second != first
        assert [n.content for n in mem.history(second, user="u")] == [
            "Mira lives in Lisbon.",
            "Mira lives in Porto.",
        ]
        assert mem.get(first, user="u").valid_to is not None
        assert mem.search("Where does Mira live?", user="u").evidence[0].node.id == second
        with pytest.raises(InvalidInput):
            mem.update(first, "again", user="u")
        with pytest.raises(NotFound):
            mem.update("nope", "x", user="u")


def test_export_import_round_trip(memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    again = tmp_path / "b.jsonl"
    with open_mem(memory_db("a.db"), minilm, SUPERSEDE, consolidation="off") as mem:
        mem.add(LOVE, user="u", speaker="user", at="2024-01-10T12:00:00Z", metadata={"k": [1, "x"]})
        mem.add(NO_LONGER, user="u", speaker="user", at="2024-06-02T12:00:00Z")
        mem.consolidate(user="u")
        mem.add("Someone else's note.", user="other")
        lines = mem.export_jsonl(src, user="u")
    assert lines > 3
    with open_mem(memory_db("b.db"), minilm, {}, consolidation="off") as mem:
        report = mem.import_jsonl(src, user="u")
        assert report.nodes == 2
        mem.export_jsonl(again, user="u")
        assert again.read_text() == src.read_text()
        assert mem.count(user="other") == 0
        with pytest.raises(InvalidInput):  # the same ids again: nothing is applied
            mem.import_jsonl(src, user="u")
        assert mem.count(user="u") == 2


def test_import_refuses_other_embedder_and_newer_format(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    src = tmp_path / "a.jsonl"
    with open_mem(memory_db("a.db"), minilm, {}, consolidation="off") as mem:
        mem.add(LOVE, user="u")
        mem.export_jsonl(src, user="u")
    with open_mem(memory_db("h.db"), HashingEmbedder(64), {}, consolidation="off") as mem:
        with pytest.raises(EmbedderMismatch):
            mem.import_jsonl(src, user="u")
        assert mem.count(user="u") == 0
    lines = src.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 99
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines, "{not json"]) + "\n")
    with open_mem(memory_db("c.db"), minilm, {}, consolidation="off") as mem:
        with pytest.raises(InvalidInput, match="newer"):
            mem.import_jsonl(newer, user="u")
        with pytest.raises(InvalidInput, match="malformed"):
            mem.import_jsonl(broken, user="u")
        assert mem.count(user="u") == 0


def test_batched_writes_get_one_pass_per_period(
    memory_db: Callable[[str], str], minilm: Embedder, tmp_path: Path
) -> None:
    profile = Profile.paper().with_(write__consolidate_every=20)
    ctl_table = dict(SUPERSEDE, **{"consolidate.obsolescence": 0.0, "consolidate.contradiction": 0.0})
    with open_mem(memory_db("m.db"), minilm, ctl_table, consolidation="inline", profile=profile) as mem:
        ids = mem.add_many([f"Day {i}: walked Biscuit by the canal." for i in range(45)], user="u")
        assert mem.meter.stats.calls_for("consolidation") == 2  # 45 writes: passes after 20 and 40
        judged = {d.node_id for i in ids for d in mem.store.decisions_of(i) if d.purpose == "consolidation"}
        assert judged  # the passes judged pairs among the period's own writes
        assert judged <= set(ids[:40])
