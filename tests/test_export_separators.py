"""A backup holding line separators restores (issue 49, item 2).

JSON allows U+2028, U+2029 and U+0085 raw inside a string, and ``str.splitlines()`` splits on them
(and on \\v, \\f, \\x1c-\\x1e, \\r). Export escapes every one of them, so each record is one line by any
reading; import splits only on "\\n", so a file that holds them raw (an older export) restores too.
Through the Python API, the CLI (exit 0 both ways) and the HTTP service, the round trip is exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.plane.jsonl import _Seal
from dualmem.server.keys import KeyStore
from server_support import served_memory

QUIET = Profile.builtin().with_(write__consolidation="off")
SEPARATORS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r"
TEXTS = [
    "Mira's line\u2028separator note about the garden.",
    "A paragraph\u2029separator in Leo's recipe.",
    "The next-line\x85character from a Windows-1252 paste.",
    f"Every separator at once: [{SEPARATORS}] in one memory.",
]


def assert_one_record_a_line(text: str) -> None:
    assert not any(ch in text for ch in SEPARATORS), "a line separator was written raw"
    assert len(text.splitlines()) == text.count("\n")


def test_python_round_trip_escapes_every_separator(tmp_path: Path) -> None:
    export = tmp_path / "out.jsonl"
    with Memory.open(tmp_path / "a.db", embedder="hashing", profile=QUIET) as mem:
        for text in TEXTS:
            mem.add(text, user="u", speaker="Mi\u2028ra", metadata={"note\u2029": "x\x85y"})
        mem.export_jsonl(export, user="u")
    raw = export.read_text(encoding="utf-8")
    assert_one_record_a_line(raw)
    with Memory.open(tmp_path / "b.db", embedder="hashing", profile=QUIET) as mem:
        assert mem.import_jsonl(export, user="u").nodes == len(TEXTS)
        assert sorted(n.content for n in mem.nodes(user="u")) == sorted(TEXTS)
        assert {n.speaker for n in mem.nodes(user="u")} == {"Mi\u2028ra"}
        again = tmp_path / "again.jsonl"
        mem.export_jsonl(again, user="u")
    assert again.read_bytes() == export.read_bytes()


def test_import_splits_only_on_newline(tmp_path: Path) -> None:
    """An export written before the escaping (separators raw inside its strings) still restores."""
    export = tmp_path / "out.jsonl"
    with Memory.open(tmp_path / "a.db", embedder="hashing", profile=QUIET) as mem:
        for text in TEXTS:
            mem.add(text, user="u")
        mem.export_jsonl(export, user="u")
    lines = export.read_text(encoding="utf-8").split("\n")[:-2]  # the trailer and the final "" out
    seal = _Seal()
    raw_lines = []
    for line in lines:
        for ch in "\u2028\u2029\x85":
            line = line.replace(json.dumps(ch)[1:-1], ch)
        seal.add(line, json.loads(line)["kind"])
        raw_lines.append(line)
    assert any("\u2028" in line for line in raw_lines)
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(f"{line}\n" for line in [*raw_lines, json.dumps(seal.trailer())]), encoding="utf-8"
    )
    with Memory.open(tmp_path / "b.db", embedder="hashing", profile=QUIET) as mem:
        assert mem.import_jsonl(old, user="u").nodes == len(TEXTS)
        assert sorted(n.content for n in mem.nodes(user="u")) == sorted(TEXTS)


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    code = main(["-q", "--db", str(db), "--user", "mira", "--embedder", "hashing", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_round_trip_exits_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    for text in TEXTS:
        assert cli(capsys, src, "add", text)[0] == 0
    export = tmp_path / "mira.jsonl"
    assert cli(capsys, src, "export", str(export))[0] == 0
    assert_one_record_a_line(export.read_text(encoding="utf-8"))
    copy = tmp_path / "copy.db"
    code, out, err = cli(capsys, copy, "import", str(export))
    assert code == 0, err
    assert json.loads(out)["nodes"] == len(TEXTS)
    again = tmp_path / "again.jsonl"
    assert cli(capsys, copy, "export", str(again))[0] == 0
    assert again.read_bytes() == export.read_bytes()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    with served_memory(tmp_path) as running:
        yield running


def test_http_round_trip(served: tuple[str, KeyStore, Memory]) -> None:
    url, keys, mem = served
    _, token = keys.create(user="mira")
    body = {"observations": [{"text": t} for t in TEXTS]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        assert http.post("/v1/memories", json=body).status_code == 201
        exported = http.get("/v1/export")
        assert exported.status_code == 200
        assert_one_record_a_line(exported.text)
        assert http.post("/v1/forget", json={"all": True}).json() == {"forgotten": len(TEXTS)}
        r = http.post("/v1/import", content=exported.content)
        assert r.status_code == 200, r.text
        assert r.json()["nodes"] == len(TEXTS)
        assert sorted(n.content for n in mem.nodes(user="mira")) == sorted(TEXTS)
        assert http.get("/v1/export").content == exported.content
