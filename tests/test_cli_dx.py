"""Issue 28, the CLI's developer experience: reads never create a database, the tenant is required,
``stats --all-users`` lists the tenants, readable output on a terminal, get/list and filters, typo
suggestions, progress. Real SQLite files in tmp_path, the hashing embedder, real subprocesses."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dualmem.cli.main import main

SRC = str(Path(__file__).resolve().parents[1] / "src")
SAMPLE = Path(SRC) / "dualmem" / "data" / "sample_conversation.json"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["-q", "--embedder", "hashing", *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, out: str, err: str, expected: int = 2) -> str:
    assert (code, out) == (expected, "")
    assert err.count("\n") == 1, err
    return err


READS = [
    ("search", "bike"),
    ("ask", "bike?"),
    ("answer", "bike?"),
    ("get", "some-id"),
    ("list",),
    ("stats",),
    ("inspect", "some-id"),
    ("history", "some-id"),
    ("export", "out.jsonl"),
    ("update", "some-id", "text"),
    ("forget", "--all"),
    ("consolidate",),
    ("repair",),
]


@pytest.mark.parametrize("args", READS, ids=lambda a: a[0])
def test_a_read_refuses_a_missing_database_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...]
) -> None:
    db = tmp_path / "nowhere" / "m.db"
    err = one_line_error(*cli(capsys, "--db", str(db), "--user", "mira", *args))
    assert (
        err
        == f"dualmem: error: no database at {db} (hint: add something first or check --db (or DUALMEM_DB))\n"
    )
    assert not db.parent.exists()


def test_stats_all_users_and_check_and_migrate_refuse_a_missing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    assert "no database at" in one_line_error(*cli(capsys, "--db", str(db), "stats", "--all-users"))
    assert "no database at" in one_line_error(*cli(capsys, "--db", str(db), "check"))
    assert "no database at" in one_line_error(
        *cli(capsys, "migrate", "--from", str(db), "--to", str(tmp_path / "to.db"))
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_writes_create_the_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "new" / "m.db"
    code, out, _ = cli(capsys, "--db", str(db), "--user", "mira", "add", "Mira rides a blue bike.")
    assert code == 0
    assert db.is_file()
    assert json.loads(out)["content"] == "Mira rides a blue bike."


def test_a_missing_user_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DUALMEM_USER", raising=False)
    db = tmp_path / "m.db"
    assert cli(capsys, "--db", str(db), "--user", "mira", "add", "Kept.")[0] == 0
    for args in (("add", "x"), ("search", "x"), ("stats",), ("list",), ("get", "x")):
        err = one_line_error(*cli(capsys, "--db", str(db), *args))
        assert err == "dualmem: error: no user given (hint: pass --user NAME or set DUALMEM_USER)\n"
    monkeypatch.setenv("DUALMEM_USER", "mira")
    code, out, _ = cli(capsys, "--db", str(db), "stats")
    assert (code, json.loads(out)["nodes"]) == (0, 1)


def test_a_user_without_memories_is_named_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    cli(capsys, "--db", db, "--user", "mira", "add", "Mira rides a blue bike.")
    code, out, err = cli(capsys, "--db", db, "--user", "mria", "search", "bike")
    assert code == 0
    assert json.loads(out)["evidence"] == []  # stdout stays the JSON it was
    assert err == f"dualmem: note: 'mria' has no memories in {db}; users there: mira\n"


def test_stats_all_users_lists_each_tenant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    for user, extra in (("mira", ()), ("mira", ("--agent", "coder")), ("mira", ("--agent", "coder")),
                        ("jon", ("--run", "r1"))):  # fmt: skip
        assert cli(capsys, "--db", db, "--user", user, *extra, "add", f"note of {user} {extra}")[0] == 0
    code, out, _ = cli(capsys, "--db", db, "stats", "--all-users")
    assert code == 0
    stats = json.loads(out)
    assert stats["nodes"] == 4
    assert stats["users"] == [
        {"user": "jon", "memories": 1, "tenants": [{"agent": None, "run": "r1", "memories": 1}]},
        {
            "user": "mira",
            "memories": 3,
            "tenants": [
                {"agent": None, "run": None, "memories": 1},
                {"agent": "coder", "run": None, "memories": 2},
            ],
        },
    ]


# -- readable output on a terminal, JSON in a pipe ---------------------------------------------------
@pytest.fixture
def sample_db(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    db = str(tmp_path / "m.db")
    assert cli(capsys, "--db", db, "--user", "mira", "ingest", str(SAMPLE))[0] == 0
    return db


def test_format_human_renders_search_answer_add_get_list_stats(
    capsys: pytest.CaptureFixture[str], sample_db: str
) -> None:
    base = ("--db", sample_db, "--user", "mira")
    code, out, _ = cli(capsys, *base, "search", "bicycle", "-k", "3", "--format", "human")
    lines = out.splitlines()
    assert (code, lines[0]) == (0, "3 memories for: bicycle")
    assert lines[1].startswith("  1. 0.")
    assert "  2024-05-1" in lines[1]
    assert " Mira: " in lines[1]
    assert lines[-1].startswith("(stop: ")
    code, out, _ = cli(capsys, *base, "--format", "human", "answer", "What is the name of Mira's dog?")
    assert code == 0
    assert "Biscuit" in out.splitlines()[0]
    assert "\nevidence:\n  1. " in out
    code, out, _ = cli(capsys, *base, "add", "Mira took the train.", "--format", "human")
    assert out.startswith("added ")
    new = out.split()[1]
    code, out, _ = cli(capsys, *base, "get", new, "--format", "human")
    assert out.splitlines()[0] == f"id: {new}"
    assert out.endswith("\nMira took the train.\n")
    code, out, _ = cli(capsys, *base, "list", "--limit", "2", "--format", "human")
    assert len(out.splitlines()) == 3
    assert out.splitlines()[-1] == "(more: --offset 2)"
    code, out, _ = cli(capsys, *base, "stats", "--format", "human")
    assert out.startswith("memories: 41 (0 pending)\n")
    code, out, _ = cli(capsys, *base, "--format", "human", "search", "bicycle", "--json")
    assert json.loads(out)["trace"]["rounds"] is not None  # --json wins, with the full trace


def pty_run(args: list[str], *, answer: str | None = None) -> tuple[int, str]:
    """The CLI as a real process whose stdout and stderr are a pseudo-terminal. With ``answer`` its
    stdin is the terminal too, and ``answer`` is typed (with Enter) once a ``[y/N]`` prompt shows."""
    import pty
    import select
    import subprocess
    import time

    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "120"}
    env.pop("DUALMEM_USER", None)
    main_fd, child_fd = pty.openpty()
    cmd = [sys.executable, "-m", "dualmem.cli.main", "--embedder", "hashing", *args]
    stdin = child_fd if answer is not None else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=child_fd, stderr=child_fd, env=env)
    os.close(child_fd)
    seen = b""
    deadline = time.monotonic() + 120  # a safety net against a hang, not a timing assertion
    while time.monotonic() < deadline:
        if not select.select([main_fd], [], [], 1.0)[0]:
            continue
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        seen += data
        if answer is not None and b"[y/N]" in seen:
            os.write(main_fd, answer.encode() + b"\n")
            answer = None
    else:
        proc.kill()
    os.close(main_fd)
    return proc.wait(timeout=120), seen.decode().replace("\r\n", "\n")


def test_a_terminal_gets_text_and_a_pipe_gets_json(
    capsys: pytest.CaptureFixture[str], sample_db: str
) -> None:
    code, out = pty_run(["-q", "--db", sample_db, "--user", "mira", "search", "new bicycle", "-k", "2"])
    assert code == 0
    assert out.startswith("2 memories for: new bicycle\n")
    assert "Mira: I bought a new bicycle yesterday" in out
    code, out, _ = cli(capsys, "--db", sample_db, "--user", "mira", "search", "new bicycle", "-k", "2")
    assert set(json.loads(out)) == {"query", "evidence", "summary", "trace", "sessions"}  # POST /v1/search


def test_ingest_on_a_terminal_draws_progress_on_stderr(tmp_path: Path) -> None:
    code, out = pty_run(["--db", str(tmp_path / "p.db"), "--user", "mira", "ingest", str(SAMPLE)])
    assert code == 0
    assert "ingest sample_conversation.json [" in out
    assert "40/40" in out
    assert "stored: 40" in out


def test_demo_ends_with_readable_questions_and_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(capsys, "--db", str(tmp_path / "unused.db"), "demo")
    assert code == 0
    assert "stored 40 turns" not in err  # the report says it (issue 49: once)
    assert out.startswith("dualmem demo: 40 turns stored in ")
    assert "Q: When did Mira buy a new bicycle, and why?\nA: " in out
    assert "15 May 2024" in out.split("Q: When did Mira buy a new bicycle, and why?", 1)[1].split("Q:")[0]
    assert "Q: What is the name of Mira's cat?\nA: " in out
    assert len(out.splitlines()) < 40
    assert not (tmp_path / "unused.db").exists()


# -- get, list, filters ---------------------------------------------------------------------------------
def test_get_and_list_with_filters_and_paging(capsys: pytest.CaptureFixture[str], sample_db: str) -> None:
    base = ("--db", sample_db, "--user", "mira")

    def listed(*args: str) -> list[dict]:  # type: ignore[type-arg]
        code, out, err = cli(capsys, *base, "list", *args)
        assert code == 0, err
        return json.loads(out)["items"]  # type: ignore[no-any-return]

    everything = listed("--limit", "1000")
    assert len(everything) == 40
    assert [n["at"] for n in everything] == sorted(n["at"] for n in everything)
    assert listed("--limit", "5", "--offset", "3") == everything[3:8]
    mira = listed("--speaker", "mira", "--limit", "1000")
    assert mira
    assert {n["speaker"] for n in mira} == {"Mira"}
    s2 = listed("--session", "s2")
    assert s2
    assert {n["session"] for n in s2} == {"s2"}
    window = listed("--since", "2024-05-14", "--until", "2024-05-15")
    assert window
    assert all(n["at"].startswith("2024-05-14") for n in window)
    assert listed("--metadata", "nothing=here") == []
    _code, out, _ = cli(capsys, *base, "get", everything[0]["id"])
    assert json.loads(out) == everything[0]
    err = one_line_error(*cli(capsys, *base, "get", "no-such-id"))
    assert "no memory with id" in err
    err = one_line_error(*cli(capsys, *base, "list", "--metadata", "novalue"))
    assert "KEY=VALUE" in err


def test_search_and_answer_take_the_filters(capsys: pytest.CaptureFixture[str], sample_db: str) -> None:
    base = ("--db", sample_db, "--user", "mira")
    code, out, _ = cli(capsys, *base, "search", "bicycle", "--speaker", "Assistant")
    found = json.loads(out)["evidence"]
    assert code == 0
    assert found
    assert {e["node"]["speaker"] for e in found} == {"Assistant"}
    code, out, _ = cli(capsys, *base, "answer", "What broke?", "--since", "2024-06-01")
    assert code == 0
    assert all(e["node"]["at"] >= "2024-06-01" for e in json.loads(out)["evidence"])


# -- typos ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["serach", "x"], "dualmem: unknown command 'serach' (did you mean 'search'?)"),
        (["search", "x", "--lmit", "3"], "dualmem: unknown option '--lmit' (did you mean '--limit'?)"),
        (
            ["--controler", "jev", "stats"],
            "dualmem: unknown option '--controler' (did you mean '--controller'?)",
        ),
        (["--controller", "jevv", "stats"], "dualmem: unknown --controller 'jevv' (did you mean 'jev'?)"),
        (
            ["hook", "sesion-start"],
            "dualmem hook: unknown command 'sesion-start' (did you mean 'session-start'?)",
        ),
        (["zzzzzz"], "dualmem: unknown command 'zzzzzz' (see dualmem --help)"),
    ],
)
def test_typos_get_one_line_with_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert (exited.value.code, out, err) == (2, "", expected + "\n")


def test_a_missing_argument_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["get"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err == "dualmem get: error: the following arguments are required: id (see dualmem get --help)\n"


# -- progress -------------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_throttled_by_time_not_by_count() -> None:
    import io

    from dualmem._progress import Progress, due

    assert due(0.0, 2.0, 2.0)
    assert not due(0.0, 1.99, 2.0)
    clock, buf = FakeClock(), io.StringIO()
    bar = Progress("import x", 1000, stream=buf, inline=False, clock=clock)
    assert bar.interval == 2.0  # a log gets a line every 2 s at most
    for i in range(1, 500):
        clock.now = i * 0.001  # 499 reports within half a second: one line
        bar.set(i)
    assert buf.getvalue().count("\n") == 1
    clock.now = 2.5
    bar.set(600)
    assert buf.getvalue().count("\n") == 2
    assert not bar.tick()  # drawn 0 s ago
    clock.now = 3.4
    assert not bar.tick()
    clock.now = 3.6  # nothing reported for 1.1 s: the heartbeat draws (elapsed moves on)
    assert bar.tick()
    assert buf.getvalue().splitlines()[-1].startswith("import x [")
    assert buf.getvalue().splitlines()[-1].endswith("3.6s")
    bar.set(1000)  # the last state is always drawn
    assert "1000/1000" in buf.getvalue().splitlines()[-1]
    bar.close()
    assert "\r" not in buf.getvalue()


def test_progress_shows_with_the_flag_or_on_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import argparse

    from dualmem.cli.options import progress_enabled

    assert progress_enabled(argparse.Namespace(progress=True, quiet=False))
    assert not progress_enabled(argparse.Namespace(progress=False, quiet=False))  # stderr is captured
    code = main(["--progress", "--embedder", "hashing", "--db", str(tmp_path / "m.db"), "--user", "u",
                 "ingest", str(SAMPLE)])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 0
    *_, progress, note = err.splitlines()
    assert progress.startswith("ingest sample_conversation.json [" + "#" * 30 + "] 40/40")
    assert note == f"dualmem: created new database at {tmp_path / 'm.db'}"  # said once it worked
    assert "\r" not in err  # not a terminal: whole lines
    code = main(
        ["--embedder", "hashing", "--db", str(tmp_path / "m.db"), "--user", "u", "ingest", str(SAMPLE)]
    )
    assert (code, capsys.readouterr().err) == (0, "")
