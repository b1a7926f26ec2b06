"""Issue 49 items 7 and 8, the CLI's habits and shapes, each reproduction a test: global options after
the command, a closed pipe, a forget that matches nothing, ``update --at``, ``erase`` on a terminal,
``demo``'s timing once, the first progress line. Real SQLite files in tmp_path, the hashing embedder,
real subprocesses and pseudo-terminals."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.cli.main import main
from test_cli_dx import SRC, cli, pty_run

NOTES = ["Jon likes tea.", "Jon moved to Oslo.", "Mira rides a blue bike.", "Mira adopted a cat."]


@pytest.fixture
def db(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    path = str(tmp_path / "m.db")
    for i, text in enumerate(NOTES):
        code, _, _ = cli(capsys, "--db", path, "--user", "mira", "add", text, "--speaker", text.split()[0],
                         "--at", f"2024-05-1{i}T10:00:00Z")  # fmt: skip
        assert code == 0
    return path


# -- 7. global options anywhere ------------------------------------------------------------------------
def test_global_options_are_accepted_after_the_command(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code = main(["search", "bike", "--db", db, "--user", "mira", "--embedder", "hashing", "-q", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Mira rides a blue bike." in [e["node"]["content"] for e in json.loads(out)["evidence"]]
    # after the command it wins over the same option before it
    code = main(["--db", "/nowhere/x.db", "--embedder", "hashing", "stats", "--db", db, "--user", "mira"])
    assert (code, json.loads(capsys.readouterr().out)["nodes"]) == (0, 4)


def test_a_nested_command_takes_global_options_too(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, _ = cli(capsys, "check", "--db", db)
    assert (code, json.loads(out)["healthy"]) == (0, True)


def test_a_typo_after_the_command_is_still_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["search", "x", "--dbb", "m.db"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == "dualmem: unknown option '--dbb' (did you mean '--db'?)\n"


# -- 7. a reader that stops reading -------------------------------------------------------------------
def test_a_closed_pipe_is_no_traceback(db: str) -> None:
    read, write = os.pipe()
    os.close(read)  # like `| true`: nobody reads what the search prints
    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dualmem.cli.main", "--embedder", "hashing", "--db", db, "--user", "mira",
             "search", "bike", "--json"],
            stdout=write, stderr=subprocess.PIPE, env=env, check=False, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    assert b"Traceback" not in done.stderr
    assert done.stderr == b""
    assert done.returncode == 0


# -- 7. forget that matches nothing ---------------------------------------------------------------------
def test_a_filter_forget_matching_nothing_reports_0_in_a_script(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    code, out, err = cli(capsys, "--db", db, "--user", "mira", "forget", "--speaker", "nobody")
    assert (code, json.loads(out), err) == (0, {"forgotten": 0}, "")
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "stats")
    assert json.loads(out)["nodes"] == 4


# -- 7. update --at ---------------------------------------------------------------------------------------
def test_update_at_stamps_the_new_version_and_the_old_ones_end(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "list")
    old = next(n["id"] for n in json.loads(out)["items"] if n["content"] == "Jon moved to Oslo.")
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "update", old, "Jon moved to Bergen.",
                       "--at", "2024-06-01T09:00:00Z")  # fmt: skip
    assert code == 0
    new = json.loads(out)["new"]
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "history", new)
    versions = {v["id"]: v for v in json.loads(out)["versions"]}
    assert versions[new]["at"] == "2024-06-01T09:00:00Z"
    assert versions[old]["valid_to"] == "2024-06-01T09:00:00Z"  # not the wall clock


def test_update_in_python_ends_the_old_version_at_the_observation_time(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "p.db", embedder="hashing") as mem:
        old = mem.add("Jon lives in Oslo.", user="jon", at="2024-05-01")
        new = mem.update(old, "Jon lives in Bergen.", user="jon", at="2024-06-01")
        ended = next(n for n in mem.history(new, user="jon") if n.id == old)
        assert ended.valid_to is not None
        assert ended.valid_to.isoformat() == "2024-06-01T00:00:00+00:00"


# -- 7. erase and demo print what a person reads -------------------------------------------------------
def test_erase_prints_text_on_a_terminal_and_json_when_asked(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = pty_run(["--db", db, "erase"])
    assert code == 0
    assert out.startswith(f"{db}: erase complete (sqlite, ")
    assert "{" not in out
    code, out, _ = cli(capsys, "--db", db, "erase", "--json")
    assert (code, json.loads(out)["complete"]) == (0, True)


def test_demo_prints_its_timing_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "demo", "--format", "human")
    assert code == 0
    assert (out + err).count(" s\n") == 1, out + err
    assert "turns stored in" in out


# -- 7. the first progress line ----------------------------------------------------------------------------
def test_a_progress_line_before_the_first_report_says_starting() -> None:
    from dualmem._progress import Progress

    buf = io.StringIO()
    bar = Progress("ingest f", stream=buf, inline=False, interval=0.0, clock=lambda: 1.5)
    assert bar.tick()  # the heartbeat draws before the ingest reported anything
    line = buf.getvalue().splitlines()[-1]
    assert "0/0" not in line
    assert "0/s" not in line
    assert "starting" in line
    bar(128, 512)
    assert "128/512" in buf.getvalue().splitlines()[-1]


# -- 8. one shape per thing ---------------------------------------------------------------------------------
def test_a_forget_preview_has_one_shape_in_the_cli_and_over_http(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from dualmem.server import ServerSettings, create_app
    from dualmem.server.keys import KeyStore
    from test_server import auth

    code, out, _ = cli(
        capsys, "--db", db, "--user", "mira", "forget", "--speaker", "jon", "--dry-run", "--json"
    )
    assert code == 0
    from_cli = json.loads(out)
    with Memory.open(db, embedder="hashing") as mem:
        keys = KeyStore.open(tmp_path / "m.keys.db")
        app = create_app(mem, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
        with TestClient(app) as client:
            response = client.post("/v1/forget/preview", json={"speaker": "jon"}, headers=auth(keys, "mira"))
        keys.close()
    assert response.status_code == 200
    assert from_cli == response.json()
    assert from_cli["would_forget"] == 2
    assert {n["at"] for n in from_cli["items"]} == {"2024-05-10T10:00:00Z", "2024-05-11T10:00:00Z"}


def test_list_tells_replaced_memories_apart_and_filters_by_status(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    base = ("--db", db, "--user", "mira")
    _, out, _ = cli(capsys, *base, "list")
    old = next(n["id"] for n in json.loads(out)["items"] if n["content"] == "Jon moved to Oslo.")
    code, out, _ = cli(capsys, *base, "update", old, "Jon moved to Bergen.", "--at", "2024-06-01")
    new = json.loads(out)["new"]
    code, out, _ = cli(capsys, *base, "list", "--status", "superseded")
    assert (code, [n["id"] for n in json.loads(out)["items"]]) == (0, [old])
    code, out, _ = cli(capsys, *base, "list", "--status", "current")
    current = [n["id"] for n in json.loads(out)["items"]]
    assert new in current
    assert old not in current
    assert len(current) == 4
    code, out, _ = cli(capsys, *base, "list", "--status", "pending")
    assert json.loads(out)["items"] == []
    code, out, _ = cli(capsys, *base, "list", "--format", "human")
    line = next(x for x in out.splitlines() if x.startswith(old))
    assert line.endswith("[superseded 2024-06-01]")
    assert not next(x for x in out.splitlines() if x.startswith(new)).endswith("]")


def test_list_memories_refuses_an_unknown_status(tmp_path: Path) -> None:
    from dualmem.errors import InvalidInput

    with Memory.open(tmp_path / "s.db", embedder="hashing") as mem, pytest.raises(InvalidInput):
        mem.list_memories(user="u", status="done")  # type: ignore[arg-type]


def test_the_answer_json_says_which_memories_it_quotes(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "ask", "What does Mira ride?", "--json")
    doc = json.loads(out)
    assert code == 0
    assert not doc["abstained"]
    assert doc["used"]
    assert doc["used"][0] in {e["node"]["id"] for e in doc["evidence"]}


def test_supersession_edges_are_not_counted_as_temporal_edges(tmp_path: Path) -> None:
    from dualmem.control import create_controller
    from dualmem.embed import create_embedder
    from dualmem.plane.memory import InMemoryStore

    for store in ("sqlite", "memory"):
        if store == "sqlite":
            opened = Memory.open(tmp_path / "v.db", embedder="hashing")
        else:
            opened = Memory(
                InMemoryStore(), create_embedder("hashing"), create_controller("builtin"), answerer=None
            )
        with opened as mem:
            old = mem.add("Jon lives in Oslo.", user="jon", at="2024-05-01")
            before = mem.stats(user="jon")
            mem.update(old, "Jon lives in Bergen.", user="jon", at="2024-06-01")
            after = mem.stats(user="jon")
            assert after["edges_by_view"]["temporal"] == before["edges_by_view"]["temporal"], store
            assert (before["supersessions"], after["supersessions"]) == (0, 1), store


def test_inspect_names_the_other_memory_of_a_pair_decision(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    base = ("--db", db, "--user", "mira")
    _, out, _ = cli(capsys, *base, "list")
    last = json.loads(out)["items"][-1]["id"]
    code, out, _ = cli(capsys, *base, "inspect", last, "--json")
    pairs = [d for d in json.loads(out)["decisions"] if d["other_id"]]
    assert code == 0
    assert pairs, "the write judged its pairs with earlier memories"
    code, out, _ = cli(capsys, *base, "inspect", last, "--format", "human")
    rows = [line for line in out.splitlines() if line.startswith("  ") and pairs[0]["key"] in line]
    assert any(f"(with {pairs[0]['other_id']})" in row for row in rows)


def test_postgres_counts_supersession_edges_apart_too(pg_dsn: str) -> None:
    import os

    import psycopg
    from psycopg import sql

    from pg_server import with_schema

    schema = f"versions_{os.getpid()}"
    try:
        with Memory.open(with_schema(pg_dsn, schema), embedder="hashing", answerer=None) as mem:
            old = mem.add("Jon lives in Oslo.", user="jon", at="2024-05-01")
            before = mem.stats(user="jon")
            mem.update(old, "Jon lives in Bergen.", user="jon", at="2024-06-01")
            after = mem.stats(user="jon")
        assert after["edges_by_view"]["temporal"] == before["edges_by_view"]["temporal"]
        assert (before["supersessions"], after["supersessions"]) == (0, 1)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
