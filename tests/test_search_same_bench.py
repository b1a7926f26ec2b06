"""bench/search_same.py: two dumps of the same searches compare equal; any changed field is found."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from dualmem import Memory, Profile
from dualmem.control.builtin import BuiltinController
from dualmem.embed import Embedder
from dualmem.plane import SQLiteStore

BENCH = Path(__file__).resolve().parents[1] / "bench"
CONVERSATION = {
    "id": "mira",
    "sessions": [
        {
            "date": "2024-05-14T10:00:00Z",
            "turns": [
                {"speaker": "Mira", "text": "My old bicycle broke on the way to work."},
                {"speaker": "Jon", "text": "Oh no, did you get a new one?"},
                {"speaker": "Mira", "text": "Yes, a red one from the shop near the station."},
                {"speaker": "Jon", "text": "I adopted a border collie called Pepper."},
            ],
        }
    ],
    "questions": [
        {"question": "What broke on the way to work?", "answer": "a bicycle", "evidence": ["s1:1"]},
        {"question": "What did Jon adopt?", "answer": "a dog", "evidence": ["s1:4"]},
        {"question": "Where is the shop?", "answer": "near the station", "evidence": ["s1:3"]},
    ],
}


def _module() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("search_same_bench", BENCH / "search_same.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dumps_of_the_same_code_are_identical_and_a_changed_score_is_found(
    tmp_path: Path, hashing: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    same = _module()
    conv = tmp_path / "mira.json"
    conv.write_text(json.dumps(CONVERSATION))
    db = tmp_path / "m.db"
    with Memory(
        SQLiteStore.open(db), hashing, BuiltinController(), answerer=None, profile=Profile.builtin()
    ) as mem:
        mem.ingest(conv, user="mira")
    before = db.stat().st_mtime_ns
    common = ["--db", str(db), "--embedder", "hashing", "--user", "mira", "--conversation", str(conv)]
    assert same.main(["dump", *common, "--out", str(tmp_path / "a.json")]) == 0
    assert same.main(["dump", *common, "--out", str(tmp_path / "b.json")]) == 0
    assert db.stat().st_mtime_ns == before  # opened read-only
    a = json.loads((tmp_path / "a.json").read_text())
    assert len(a) == 3
    assert all(r["hits"] for r in a)
    assert same.main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "3 identical, 0 different" in capsys.readouterr().out
    a[1]["hits"][0]["score"] = a[1]["hits"][0]["score"] + 1e-12  # one last bit of one score
    (tmp_path / "c.json").write_text(json.dumps(a))
    assert same.main(["compare", str(tmp_path / "b.json"), str(tmp_path / "c.json")]) == 1
    out = capsys.readouterr().out
    assert "DIFFERENT 'What did Jon adopt?': hits" in out
    assert "2 identical, 1 different" in out


def test_stored_builds_of_the_same_conversation_compare_equal_and_a_change_is_found(
    tmp_path: Path, hashing: Embedder
) -> None:
    """``stored``: two builds differ in ids and write stamps only; their canonical forms are equal."""
    same = _module()
    conv = tmp_path / "mira.json"
    conv.write_text(json.dumps(CONVERSATION))
    outs = []
    for name in ("a", "b"):
        with Memory(
            SQLiteStore.open(tmp_path / f"{name}.db"), hashing, BuiltinController(), answerer=None,
            profile=Profile.builtin(),
        ) as mem:  # fmt: skip
            mem.ingest(conv, user="mira")
            export = tmp_path / f"{name}.jsonl"
            mem.scope("mira").export_jsonl(export)
        out = tmp_path / f"{name}.stored.json"
        assert same.main(["stored", str(export), "--out", str(out)]) == 0
        outs.append(out.read_text())
    assert (tmp_path / "a.jsonl").read_text() != (tmp_path / "b.jsonl").read_text()  # other ids, stamps
    assert outs[0] == outs[1]
    assert "s1:3" in outs[0]  # ids by turn
    assert "created_at" not in outs[0]
    changed = (tmp_path / "b.jsonl").read_text().replace("a red one", "a blue one")
    (tmp_path / "b.jsonl").write_text(changed)
    assert same.main(["stored", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "c.json")]) == 0
    assert (tmp_path / "c.json").read_text() != outs[0]


def test_build_writes_the_same_stored_bytes_twice(tmp_path: Path) -> None:
    """``build`` (consolidation inline): two builds of one conversation file store the same records."""
    same = _module()
    conv = tmp_path / "mira.json"
    conv.write_text(json.dumps(CONVERSATION))
    outs = []
    for name in ("a", "b"):
        export = tmp_path / f"{name}.jsonl"
        argv = ["build", "--conversation", str(conv), "--db", str(tmp_path / f"{name}.db"), "--embedder",
                "hashing", "--export", str(export)]  # fmt: skip
        assert same.main(argv) == 0
        out = tmp_path / f"{name}.stored.json"
        assert same.main(["stored", str(export), "--out", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    assert "Pepper" in outs[0]
