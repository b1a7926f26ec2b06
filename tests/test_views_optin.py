"""``write.views``: the builtin profile stores no relation-view edges; supersession is not a view.

The builtin profile writes neither deterministic (temporal order, shared entity) nor inferred nor
consolidation link edges, but a fact an update replaces still gets ``valid_to`` and its
``superseded_by`` edge (versions, ``history`` and ``forget`` follow it). Listing views opts back in,
through ``Profile.with_`` or a profile file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.control.scripted import ScriptedController
from dualmem.embed import Embedder
from dualmem.errors import ConfigError
from dualmem.types import VIEWS, Edge

OLD = "I live in Berlin, in a small flat in Kreuzberg."
NEW = "We finally moved to Hamburg last month, the new flat has a balcony."
FILLER = [
    ("user", "Can you help me plan a weekend in Rome? Anna from Berlin recommended it."),
    ("assistant", "Sure: day one the Colosseum and the Forum, day two the Vatican Museums, then Trastevere."),
    ("user", "What is a quick pasta recipe for two? Anna likes cacio e pepe."),
]


def _write(mem: Memory) -> tuple[list[str], str, str]:
    """The city update of tests/test_fact_updates.py, in one session: every id, the old and the new."""
    s = mem.scope("u")
    old = s.add(OLD, speaker="user", at="2024-01-10T10:00:00Z", session="s1")
    ids = [old]
    for i, (who, text) in enumerate(FILLER):
        ids.append(s.add(text, speaker=who, at=f"2024-02-1{i}T10:00:00Z", session="s1"))
    new = s.add(NEW, speaker="user", at="2024-03-10T10:00:00Z", session="s1")
    return [*ids, new], old, new


def _edges(mem: Memory, ids: list[str]) -> set[Edge]:
    return {e for i in ids for e in mem.store.edges_of(i)}


def test_the_builtin_profile_stores_only_supersession_edges(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None) as mem:
        assert mem.profile.name == "builtin"
        assert (mem.profile.write.views, mem.profile.read.views) == ((), ())
        ids, old, new = _write(mem)
        s = mem.scope("u")
        edges = _edges(mem, ids)
        assert {(e.view, e.label) for e in edges} == {("temporal", "superseded_by")}
        assert {(e.source, e.target) for e in edges} == {(old, new)}
        assert s.get(old).valid_to is not None
        assert s.get(new).valid_to is None
        assert [n.id for n in s.history(new)] == [old, new]
        # only the supersession question is asked (no view stored), and so recorded
        keys = {d.key for d in s.inspect(new).decisions if d.purpose == "relations"}
        assert keys == {"relation.supersedes"}
        found = s.search("Where do I live now?", k=5).evidence
        assert found[0].node.id == new, [e.node.content for e in found]
        assert old in [e.node.id for e in found]


def test_listing_the_views_stores_their_edges_again(minilm: Embedder, tmp_path: Path) -> None:
    profile = Profile.builtin().with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None, profile=profile) as mem:
        ids, old, _new = _write(mem)
        labels = {(e.view, e.label) for e in _edges(mem, ids)}
        assert {("temporal", "before"), ("entity", "shared_entity"), ("temporal", "superseded_by")} <= labels
        assert mem.scope("u").get(old).valid_to is not None


def test_only_the_listed_views_are_stored(minilm: Embedder, tmp_path: Path) -> None:
    profile = Profile.builtin().with_(write__views=("entity",))
    with Memory.open(tmp_path / "m.db", embedder=minilm, answerer=None, profile=profile) as mem:
        ids, _, _ = _write(mem)
        labels = {(e.view, e.label) for e in _edges(mem, ids)}
        assert ("entity", "shared_entity") in labels
        assert labels <= {("entity", "shared_entity"), ("entity", "alias"), ("temporal", "superseded_by")}


def test_consolidation_links_follow_the_views(minilm: Embedder, tmp_path: Path) -> None:
    table = {
        "relation.time": "unknown",
        "consolidate.link_usefulness": 0.9,
        "consolidate.representation": "keep_separate",
    }
    for views, links in (((), 0), (("semantic",), 1)):
        ctl = ScriptedController(table, default=0.1)  # type: ignore[arg-type]
        profile = Profile.dualmem().with_(write__views=views, write__consolidation="off")
        path = tmp_path / f"c{len(views)}.db"
        with Memory.open(path, embedder=minilm, controller=ctl, profile=profile) as m:
            a = m.add("I love sushi, I eat it every week.", user="u", at="2024-01-10T12:00:00Z")
            b = m.add("My favourite sushi place is near the station.", user="u", at="2024-02-10T12:00:00Z")
            report = m.consolidate(user="u")
            assert report.pairs == 1
            related = [e for e in _edges(m, [a, b]) if e.label == "related"]
            assert (report.links, len(related)) == (links, links)


def test_views_round_trip_through_a_profile_file(tmp_path: Path) -> None:
    doc = Profile.builtin().to_json()
    assert doc["write"]["views"] == []
    assert doc["read"]["views"] == []
    doc["write"]["views"] = ["semantic", "temporal", "causal", "entity"]
    doc["read"]["views"] = ["temporal", "entity"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    loaded = Profile.named(str(path))
    assert loaded.write.views == VIEWS
    assert loaded.read.views == ("temporal", "entity")
    assert Profile.paper().write.views == VIEWS
    assert Profile.dualmem().write.views == VIEWS


@pytest.mark.parametrize("section", ["write", "read"])
def test_an_unknown_view_is_a_config_error(section: str, tmp_path: Path) -> None:
    listed = Profile.builtin().with_(**{f"{section}__views": ["entity", "temporal"]})
    assert getattr(listed, section).views == ("entity", "temporal")  # a list is taken as a tuple
    hash(listed)
    with pytest.raises(ConfigError, match="list of views"):
        Profile.builtin().with_(**{f"{section}__views": "entity"})
    with pytest.raises(ConfigError, match="unknown views"):
        Profile.builtin().with_(**{f"{section}__views": ("semantic", "spatial")})
    doc = Profile.builtin().to_json()
    doc[section]["views"] = ["spatial"]
    with pytest.raises(ConfigError, match="spatial"):
        Profile.from_json(doc)
