"""Issue 28: JSON nested too deep is a typed user error everywhere dualmem reads it, never a
``RecursionError`` (which no reader caught: a plain 500 over HTTP).

Limits (docs/storage.md, "Bad input"): a document read from a file or an import line holds at most
``MAX_DOCUMENT_DEPTH`` (100) nested arrays/objects; metadata nests at most ``MAX_JSON_DEPTH`` (64)
levels below its top-level mapping.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem import _json as bounded_json
from dualmem.cli.main import main
from dualmem.control.weights import read_weights
from dualmem.conversations import load_conversations
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError, InvalidInput
from dualmem.types import MAX_JSON_DEPTH
from export_seal import resealed_text

HUGE = "[" * 100_000 + "]" * 100_000  # json.loads alone: RecursionError


def lists(levels: int) -> str:
    return "[" * levels + "]" * levels


def mappings(levels: int) -> dict[str, object]:
    """``levels`` nested mappings: ``{"k": {"k": ... {}}}``."""
    value: dict[str, object] = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    prof = Profile.named("builtin").with_(write__consolidation="off")
    with Memory.open(
        tmp_path / "m.db", embedder=HashingEmbedder(64), answerer="extractive", profile=prof
    ) as m:
        yield m


def test_the_document_limit_and_where_it_is_passed() -> None:
    assert bounded_json.MAX_DOCUMENT_DEPTH == 100
    assert bounded_json.loads(lists(100)) == json.loads(lists(100))
    assert bounded_json.loads('{"a": "' + "[" * 500 + '"}') == {"a": "[" * 500}  # brackets in text
    inside = '{"a": "[\\"]", "b": ' + lists(150) + "}"  # the object is level 1, a string skipped
    for text, at in ((lists(101), 100), (HUGE, 100), (inside, inside.index("[[") + 99)):
        with pytest.raises(json.JSONDecodeError, match="deeper than 100") as info:
            bounded_json.loads(text)
        assert info.value.pos == at  # the bracket that opens level 101
    with pytest.raises(json.JSONDecodeError):
        bounded_json.loads("[1,")  # still a plain decode error


def _export(mem: Memory, path: Path) -> list[str]:
    mem.add("Mira bought a bike.", user="u", at="2024-05-01T10:00:00Z")
    mem.add("Mira sold the bike.", user="u", at="2024-05-02T10:00:00Z")
    mem.export_jsonl(path, user="u")
    mem.forget_all(user="u")
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("where", [1, 2, "end"])
def test_a_deep_import_line_is_invalid_input_and_imports_nothing(
    mem: Memory, tmp_path: Path, where: int | str
) -> None:
    lines = _export(mem, tmp_path / "e.jsonl")
    at = len(lines) if where == "end" else int(where)
    lines.insert(at, HUGE)  # the trailer no longer fits, but the line is refused before it is judged
    (tmp_path / "deep.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=rf"line {at + 1} .*deeper than 100") as info:
        mem.import_jsonl(tmp_path / "deep.jsonl", user="u")
    assert info.value.hint
    assert mem.count(user="u") == 0


def test_import_metadata_just_under_and_over_the_limit(mem: Memory, tmp_path: Path) -> None:
    lines = _export(mem, tmp_path / "e.jsonl")
    node = json.loads(lines[1])
    node["metadata"] = {"k": mappings(MAX_JSON_DEPTH)}  # 64 levels below the top: accepted
    (tmp_path / "ok.jsonl").write_text(resealed_text([lines[0], json.dumps(node)]))
    assert mem.import_jsonl(tmp_path / "ok.jsonl", user="u").nodes == 1
    exported = tmp_path / "again.jsonl"
    mem.export_jsonl(exported, user="u")  # and round-trips
    mem.forget_all(user="u")
    assert mem.import_jsonl(exported, user="u").nodes == 1
    mem.forget_all(user="u")
    node["metadata"] = {"k": mappings(MAX_JSON_DEPTH + 1)}
    (tmp_path / "over.jsonl").write_text(resealed_text([lines[0], json.dumps(node)]))
    with pytest.raises(InvalidInput, match=r"line 2 .*metadata nests deeper than 64"):
        mem.import_jsonl(tmp_path / "over.jsonl", user="u")
    assert mem.count(user="u") == 0


def test_add_metadata_just_under_and_over_the_limit(mem: Memory) -> None:
    assert mem.add("tea", user="u", metadata={"k": mappings(MAX_JSON_DEPTH)}) != ""
    for deep in ({"k": mappings(MAX_JSON_DEPTH + 1)}, {"k": [["x"] * 2] * 2, "d": mappings(100_000)}):
        with pytest.raises(InvalidInput, match="deeper than 64"):
            mem.add("coffee", user="u", metadata=deep)
    assert mem.count(user="u") == 1


def test_cli_import_of_a_deep_file_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--db", str(tmp_path / "m.db"), "--embedder", "hashing:64", "--user", "u"]
    (tmp_path / "deep.jsonl").write_text(HUGE + "\n")
    assert main([*argv, "import", str(tmp_path / "deep.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "deeper than 100" in err


def test_other_json_files_refuse_deep_documents(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(HUGE)
    with pytest.raises(InvalidInput, match="deeper than 100"):
        load_conversations(deep)
    with pytest.raises(ConfigError, match="not a JSON profile"):
        Profile.load(deep)
    with pytest.raises(ConfigError, match="deeper than 100"):
        read_weights(HUGE, source="w.json")
    nested = tmp_path / "nested.json"  # parses (under ~1,000 levels), refused before it is walked
    nested.write_text(json.dumps({"conversations": json.loads(lists(300))}))
    with pytest.raises(InvalidInput, match="deeper than 100"):
        load_conversations(nested)
