"""The CLI: JSON on stdout, one-line errors with the right exit codes, nothing stored lost on bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dualmem.cli.main import main

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "dualmem" / "data" / "sample_conversation.json"


def run(
    capsys: pytest.CaptureFixture[str], db: Path, *args: str, embedder: str = "hashing"
) -> tuple[int, str, str]:
    code = main(["-q", "--db", str(db), "--user", "mira", "--embedder", embedder, *args])
    out, err = capsys.readouterr()
    return code, out, err


def data(out: str) -> dict:  # type: ignore[type-arg]
    return json.loads(out)  # type: ignore[no-any-return]


def minilm(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    return run(capsys, db, *args, embedder="minilm")


def test_add_search_inspect_stats_delete(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the real embedder: the write heads are fitted to its cosines (under the hashing one, the
    # second note would read as an update of the first, and a delete takes the chain)
    db = tmp_path / "m.db"
    code, out, _ = minilm(
        capsys, db, "add", "My old bicycle broke.", "--speaker", "Mira", "--at", "2024-05-14T10:00:00Z"
    )
    assert code == 0
    first = data(out)["id"]
    code, out, _ = minilm(
        capsys,
        db,
        "add",
        "I bought a new bicycle yesterday because my old one broke.",
        "--speaker",
        "Mira",
        "--at",
        "2024-05-16 10:00",
    )
    assert code == 0
    second = data(out)
    assert second["temporal_refs"][0]["start"] == "2024-05-15"
    code, out, _ = minilm(capsys, db, "search", "why did Mira buy a bicycle?", "-k", "2")
    assert code == 0
    found = data(out)
    assert {e["node"]["id"] for e in found["evidence"]} == {first, second["id"]}
    assert found["summary"]["stop_reason"]
    code, out, _ = minilm(capsys, db, "search", "bicycle", "--trace")
    assert code == 0
    assert "stop:" in out
    assert "route:" in out
    code, out, _ = minilm(capsys, db, "inspect", second["id"])
    assert code == 0
    keys = {d["key"] for d in data(out)["decisions"]}
    # the builtin profile stores no view: of the relation questions only supersession is asked
    assert "relation.supersedes" in keys
    assert "relation.semantic" not in keys
    code, out, _ = minilm(capsys, db, "stats")
    assert data(out)["nodes"] == 2
    code, out, _ = minilm(capsys, db, "delete", first)
    assert code == 0
    code, out, _ = minilm(capsys, db, "stats")
    assert data(out)["nodes"] == 1


def test_ingest_ask_and_lifecycle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, out, _ = run(capsys, db, "ingest", str(SAMPLE))
    assert code == 0
    assert data(out)["stored"] == 40
    code, out, _ = run(capsys, db, "ask", "What is the name of Mira's dog?")
    assert code == 0
    assert "Biscuit" in data(out)["text"]
    code, out, _ = run(capsys, db, "consolidate")
    assert code == 0
    assert data(out)["calls"] in (0, 1)
    code, out, _ = run(capsys, db, "forget", "--speaker", "Assistant", "--yes")
    assert code == 0
    forgotten = data(out)["forgotten"]
    assert forgotten > 0
    export = tmp_path / "mira.jsonl"
    code, out, _ = run(capsys, db, "export", str(export))
    assert code == 0
    assert "Assistant" not in export.read_text()
    code, out, _ = run(capsys, tmp_path / "copy.db", "import", str(export))
    assert code == 0
    assert data(out)["nodes"] == 40 - forgotten


def test_update_and_history(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _, out, _ = run(capsys, db, "add", "Mira lives in Lisbon.", "--speaker", "Mira")
    old = data(out)["id"]
    code, out, _ = run(capsys, db, "update", old, "Mira lives in Utrecht.")
    assert code == 0
    new = data(out)["new"]
    _, out, _ = run(capsys, db, "history", new)
    assert [v["content"] for v in data(out)["versions"]] == [
        "Mira lives in Lisbon.",
        "Mira lives in Utrecht.",
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("add", "   "), "content is empty"),
        (("add", "hello", "--at", "the day after never"), "cannot read a time"),
        (("search", ""), "query is empty"),
        (("inspect", "no-such-id"), "no memory with id"),
        (("delete", "no-such-id"), "no memory with id"),
        (("forget",), "exactly one of"),
        (("ingest", "/nonexistent/file.json"), "no such"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_keeps_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    db = tmp_path / "m.db"
    run(capsys, db, "add", "Something worth keeping.")
    code, out, err = run(capsys, db, *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("dualmem: error: ")
    assert needle in err.lower()
    _, out, _ = run(capsys, db, "stats")
    assert data(out)["nodes"] == 1


def test_missing_user_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["-q", "--db", str(tmp_path / "m.db"), "--user", " ", "--embedder", "hashing", "add", "x"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "user" in err


def test_other_embedder_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    run(capsys, db, "add", "Built with hashing.")
    code, _, err = run(capsys, db, "add", "Now with another embedder.", embedder="hashing:64")
    assert code == 2
    assert "embedder" in err
    _, out, _ = run(capsys, db, "stats")
    assert data(out)["nodes"] == 1


def test_corrupt_database_is_a_runtime_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    db.write_bytes(b"this is not a database at all" * 100)
    before = db.read_bytes()
    code, out, err = run(capsys, db, "stats")
    assert code == 1
    assert out == ""
    assert err.startswith("dualmem: failed: ")
    assert db.read_bytes() == before


def test_locked_database_is_a_runtime_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    run(capsys, db, "add", "Kept.")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code = main(
            [
                "-q",
                "--db",
                str(db),
                "--lock-timeout",
                "0.2",
                "--embedder",
                "hashing",
                "--user",
                "mira",
                "add",
                "blocked",
            ]
        )
        _, err = capsys.readouterr()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1
    assert "lock" in err.lower()
    _, out, _ = run(capsys, db, "stats")
    assert data(out)["nodes"] == 1


def test_demo_runs_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["-q", "--db", str(tmp_path / "unused.db"), "demo", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    result = json.loads(out)
    assert result["stored"] == 40
    answers = {a["question"]: a for a in result["answers"]}
    bike = answers["When did Mira buy a new bicycle, and why?"]
    assert "15 May 2024" in bike["answer"]
    assert answers["What is the name of Mira's cat?"]["abstained"]
    assert "stored 40 turns" in err


def test_every_tenant_command_takes_the_tenant_flags() -> None:
    from dualmem.cli.main import build_parser

    parser = build_parser()
    tenant_commands = (
        "add ingest search ask answer get list stats delete inspect repair consolidate update history forget "
        "export import"
    )
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in tenant_commands.split():
        flags = {o for a in sub.choices[name]._actions for o in a.option_strings}  # type: ignore[union-attr]
        assert {"--user", "--agent", "--run"} <= flags, name
    helps = {a.dest: a.help for a in sub._choices_actions}  # type: ignore[attr-defined]
    assert "alias of 'forget ID'" in helps["delete"]


def test_tenant_flags_scope_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    base = ["-q", "--db", str(db), "--embedder", "hashing"]

    def cli(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
        code = main([*base, *args])
        out, _ = capsys.readouterr()
        return code, (json.loads(out) if code == 0 else {})

    code, mine = cli("add", "Alice's locker code is 4471.", "--user", "alice", "--agent", "helper")
    assert code == 0
    code, _ = cli("--user", "bob", "add", "Bob's bike is blue.")
    assert code == 0
    for command in ("inspect", "history", "delete"):
        assert cli(command, mine["id"], "--user", "bob")[0] == 2
        assert cli(command, mine["id"], "--user", "alice", "--agent", "other")[0] == 2
    assert cli("update", mine["id"], "stolen", "--user", "bob")[0] == 2
    assert cli("forget", mine["id"], "--user", "alice", "--run", "r9")[0] == 2
    assert cli("stats", "--user", "alice")[1]["nodes"] == 1
    assert cli("stats", "--user", "alice", "--agent", "other")[1]["nodes"] == 0
    assert cli("stats", "--all-users")[1]["nodes"] == 2
    assert cli("repair", "--all-users")[1] == {"repaired": 0, "still_pending": 0}
    code, updated = cli("update", mine["id"], "Alice's locker code is 9902.", "--user", "alice")
    assert code == 0
    versions = cli("history", updated["new"], "--user", "alice", "--agent", "helper")[1]["versions"]
    assert [v["id"] for v in versions] == [mine["id"], updated["new"]]
    exported = tmp_path / "alice.jsonl"
    assert cli("export", str(exported), "--user", "alice")[0] == 0
    assert cli("import", str(exported), "--user", "bob")[0] == 2  # another tenant's file is refused
    code, gone = cli("delete", mine["id"], "--user", "alice")  # the alias removes the whole chain
    assert (code, gone["forgotten"]) == (0, 2)
    assert cli("stats", "--user", "alice")[1]["nodes"] == 0
    assert cli("import", str(exported), "--user", "alice")[1]["nodes"] == 2
    assert (
        cli("search", "locker code", "--user", "bob")[1]["evidence"][0]["node"]["content"]
        == "Bob's bike is blue."
    )


@pytest.mark.slow
def test_graph_cache_saves_the_optimised_graph_and_later_calls_use_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db, cache = tmp_path / "m.db", tmp_path / "graphs"
    code, out, _ = run(
        capsys, db, "--graph-cache", str(cache), "add", "Mira fixed her bicycle.", embedder="minilm"
    )
    assert code == 0
    stored = data(out)["id"]
    saved = sorted(p.name for p in cache.iterdir())
    assert any(name.endswith(".onnx") for name in saved)
    stamps = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    code, out, _ = run(capsys, db, "--graph-cache", str(cache), "search", "bicycle", embedder="minilm")
    assert code == 0
    assert data(out)["evidence"][0]["node"]["id"] == stored
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == stamps  # opened, not rewritten


def test_graph_cache_is_a_minilm_setting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    run(capsys, db, "add", "Built with hashing.")
    code, out, err = run(capsys, db, "--graph-cache", str(tmp_path / "g"), "add", "Refused.")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "graph-cache" in err
    assert not (tmp_path / "g").exists()
    # the variable only applies to MiniLM: another embedder opens as before
    monkeypatch.setenv("DUALMEM_GRAPH_CACHE", str(tmp_path / "g"))
    code, out, _ = run(capsys, db, "add", "Stored.")
    assert code == 0
    _, out, _ = run(capsys, db, "stats")
    assert data(out)["nodes"] == 2
    assert not (tmp_path / "g").exists()
