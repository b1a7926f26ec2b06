"""Import is all or nothing (issue 41, item 1): an export proves itself whole by its trailer.

Through the CLI and a live HTTP service: a file cut short (``head -n 20``), reordered, edited, without
its trailer, or of format version 1 is refused with a one-line error (exit 2) or problem JSON, nothing
is stored, and a failed CLI import into a new ``--db`` leaves no database file behind. A whole file
round-trips byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.server.keys import KeyStore
from server_support import served_memory

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"
QUIET = Profile.builtin().with_(write__consolidation="off")


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    code = main(["-q", "--db", str(db), "--user", "mira", "--embedder", "hashing", *args])
    out, err = capsys.readouterr()
    return code, out, err


def broken_copies(lines: list[str]) -> dict[str, tuple[list[str], str]]:
    """Each way of damaging an export, with a phrase the refusal must hold."""
    v1 = [json.dumps({**json.loads(lines[0]), "version": 1}), *lines[1:-1]]
    node = json.loads(lines[3])
    edited = [*lines[:3], json.dumps({**node, "content": node["content"] + "!"}, sort_keys=True), *lines[4:]]
    return {
        "head -n 20": (lines[:20], "cut short"),
        "no trailer": (lines[:-1], "cut short"),
        "one node dropped": ([*lines[:5], *lines[6:]], "trailer says"),
        "two lines swapped": ([lines[0], lines[2], lines[1], *lines[3:]], "sha256"),
        "one text edited": (edited, "sha256"),
        "version 1": (v1, "version 1"),
    }


def test_cli_refuses_every_damaged_export_and_a_failed_import_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "src.db"
    assert cli(capsys, src, "ingest", str(SAMPLE))[0] == 0
    export = tmp_path / "mira.jsonl"
    assert cli(capsys, src, "export", str(export))[0] == 0
    lines = export.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 20
    existing = tmp_path / "existing.db"
    assert cli(capsys, existing, "add", "Leo likes tea.")[0] == 0
    for name, (damaged, phrase) in broken_copies(lines).items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text("".join(f"{line}\n" for line in damaged), encoding="utf-8")
        fresh = tmp_path / "sub" / "new.db"
        code, out, err = cli(capsys, fresh, "import", str(bad))
        assert (code, out) == (2, ""), name
        assert err.count("\n") == 1, (name, err)
        assert phrase in err, (name, err)
        assert list(tmp_path.glob("sub*")) == [], name  # no database file, no folder made for it
        code, _, err = cli(capsys, existing, "import", str(bad))
        assert code == 2, name
        _, out, _ = cli(capsys, existing, "stats")
        assert json.loads(out)["nodes"] == 1, name  # the database that was there is untouched

    copy = tmp_path / "copy.db"
    code, out, _ = cli(capsys, copy, "import", str(export))
    assert code == 0
    assert json.loads(out)["nodes"] == sum(json.loads(line)["kind"] == "node" for line in lines)
    again = tmp_path / "again.jsonl"
    assert cli(capsys, copy, "export", str(again))[0] == 0
    assert again.read_bytes() == export.read_bytes()  # the round trip is exact


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    with served_memory(tmp_path) as running:
        yield running


def test_http_import_refuses_every_damaged_export_and_stores_nothing(
    served: tuple[str, KeyStore, Memory],
) -> None:
    url, keys, mem = served
    _, token = keys.create(user="mira")
    sessions = json.loads(SAMPLE.read_text(encoding="utf-8"))["sessions"]
    turns = [t for session in sessions for t in session["turns"]][:24]
    body = {"observations": [{"text": t["text"], "speaker": t["speaker"]} for t in turns]}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        assert http.post("/v1/memories", json=body).status_code == 201
        exported = http.get("/v1/export")
        assert exported.status_code == 200
        lines = exported.text.splitlines()
        assert http.post("/v1/forget", json={"all": True}).json() == {"forgotten": 24}
        for name, (damaged, phrase) in broken_copies(lines).items():
            r = http.post("/v1/import", content="".join(f"{line}\n" for line in damaged).encode())
            assert r.status_code == 422, (name, r.text)
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.json()["code"] == "invalid-input"
            assert phrase in r.json()["detail"], (name, r.json())
            assert mem.count(user="mira") == 0, name
        assert http.post("/v1/import", content=exported.content).json()["nodes"] == 24
        assert http.get("/v1/export").content == exported.content
