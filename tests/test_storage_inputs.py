"""Finding 6, case by case: each input the issue names gives a typed error (CLI: one line, exit 2)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.cli.main import main
from dualmem.errors import InvalidInput, UserError
from dualmem.memory import Filter
from export_seal import resealed_text
from test_deep_json import mem  # noqa: F401 - a fixture


def deep(n: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(n):
        value = {"k": value}
    return value


def test_lone_surrogates_are_invalid_input_and_store_nothing(mem: Memory) -> None:
    for call in (
        lambda: mem.add("tea \udcff", user="u"),
        lambda: mem.add("tea", user="u", speaker="\ud800"),
        lambda: mem.add("tea", user="u\udc80"),
        lambda: mem.add("tea", user="u", metadata={"k": "\udfff"}),
        lambda: mem.add_many([f"note {i}" for i in range(300)] + ["bad \udcff"], user="u"),
        lambda: mem.search("where \udcff", user="u"),
        lambda: mem.answer("where \udcff", user="u"),
        lambda: mem.get("\udcff", user="u"),
    ):
        with pytest.raises(InvalidInput, match="surrogate"):
            call()
    assert mem.count(user="u") == 0


def test_deep_or_odd_metadata_is_invalid_input(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="deeper"):
        mem.add("tea", user="u", metadata=deep(5000))
    for bad in ({"x": float("nan")}, {"x": b"bytes"}, {1: "int key"}, {"x": {1, 2}}):
        with pytest.raises(InvalidInput):
            mem.add("tea", user="u", metadata=bad)  # type: ignore[arg-type]
    assert mem.add("tea", user="u", metadata=deep(40)) != ""


@pytest.mark.parametrize("since", [dt.datetime(2024, 5, 1), "2024-05-01", dt.date(2024, 5, 1)])
def test_filter_since_takes_naive_datetimes_strings_and_dates(mem: Memory, since: object) -> None:
    mem.add("old tea", user="u", at="2024-04-01T00:00:00Z")
    mem.add("new tea", user="u", at="2024-06-01T00:00:00Z")
    assert mem.forget(user="u", where=Filter(since=since)) == 1  # type: ignore[arg-type]
    assert [n.content for n in mem.nodes(user="u")] == ["old tea"]


def test_filter_since_rejects_what_is_not_a_time(mem: Memory) -> None:
    with pytest.raises(UserError):
        mem.forget(user="u", where=Filter(since="not a date at all"))  # type: ignore[arg-type]


def test_chunk_size_must_be_positive(mem: Memory) -> None:
    for bad in (-1, 0, 1.5, True, "3"):
        with pytest.raises(InvalidInput, match="chunk_size"):
            mem.add_many(["tea"], user="u", chunk_size=bad)  # type: ignore[arg-type]
    assert mem.count(user="u") == 0


def _export(mem: Memory, path: Path) -> list[dict[str, object]]:
    mem.add("Mira bought a bike.", user="u", at="2024-05-01T10:00:00Z")
    mem.export_jsonl(path, user="u")
    mem.forget_all(user="u")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("status", "weird", "status"),
        ("content", 5, "content"),
        ("content", "", "empty"),
        ("content", "   ", "empty"),
        ("at", "2024-05-01T10:00:00", "time zone"),
        ("created_at", "2024-05-01T10:00:00", "time zone"),
        ("content", "x\udcff", "surrogate"),
    ],
)
def test_bad_import_records_are_user_errors(
    mem: Memory, tmp_path: Path, field: str, value: object, match: str
) -> None:
    docs = _export(mem, tmp_path / "e.jsonl")
    docs[1][field] = value
    (tmp_path / "bad.jsonl").write_text(resealed_text([json.dumps(d) for d in docs]))
    with pytest.raises(InvalidInput, match=match):
        mem.import_jsonl(tmp_path / "bad.jsonl", user="u")
    assert mem.count(user="u") == 0


def test_import_of_invalid_utf8_and_versions(mem: Memory, tmp_path: Path) -> None:
    docs = _export(mem, tmp_path / "e.jsonl")
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(b'{"kind": "header"}\n\xff\xfe\n')
    with pytest.raises(InvalidInput, match="UTF-8"):
        mem.import_jsonl(raw, user="u")
    docs[0]["version"] = "2"
    (tmp_path / "v.jsonl").write_text(resealed_text([json.dumps(d) for d in docs]))
    assert mem.import_jsonl(tmp_path / "v.jsonl", user="u").nodes == 1  # "2" reads as version 2
    mem.forget_all(user="u")
    docs[0]["version"] = 3
    (tmp_path / "v3.jsonl").write_text(resealed_text([json.dumps(d) for d in docs]))
    with pytest.raises(InvalidInput) as info:
        mem.import_jsonl(tmp_path / "v3.jsonl", user="u")
    assert "3" in str(info.value)
    assert "2 is newer than 2" not in str(info.value)


def test_cli_rejects_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--db", str(tmp_path / "m.db"), "--embedder", "hashing:64", "--user", "u"]
    assert main([*argv, "add", "tea \udcff"]) == 2  # argv bytes that are not UTF-8 arrive as surrogates
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "surrogate" in err
    assert main([*argv, "search", "\udcff"]) == 2
    capsys.readouterr()
    for timeout in ("-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as info:
            main(["--lock-timeout", timeout, *argv, "stats"])
        assert info.value.code == 2
        assert "lock-timeout" in capsys.readouterr().err
