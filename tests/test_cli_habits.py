"""Issue 41, the CLI's habits: forgets that ask first (a real pseudo-terminal answers), a note when a
write creates a new database, one rule for a missing time (now, UTC), text from stdin or a file (a
1 MB observation included), one-line typed errors (export into a missing folder, a binary file),
``--version``, ``check --format human`` and ``--k`` suggesting ``-k``. Real SQLite files in tmp_path,
the hashing embedder (MiniLM where the size matters), real subprocesses and terminals."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.cli.main import main
from dualmem.memory import observed_at, stamped
from test_cli_dx import SAMPLE, SRC, cli, one_line_error, pty_run

NOTES = ["Jon likes tea.", "Jon moved to Oslo.", "Mira rides a blue bike.", "Mira adopted a cat."]


@pytest.fixture
def db(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    path = str(tmp_path / "m.db")
    for i, text in enumerate(NOTES):
        speaker = text.split()[0]
        code, _, _ = cli(capsys, "--db", path, "--user", "mira", "add", text, "--speaker", speaker,
                         "--at", f"2024-05-1{i}T10:00:00Z")  # fmt: skip
        assert code == 0
    return path


def count(capsys: pytest.CaptureFixture[str], db: str) -> int:
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "stats")
    assert code == 0
    return int(json.loads(out)["nodes"])


# -- 6. forget --all and filter forgets confirm ---------------------------------------------------------
@pytest.mark.parametrize("how", [("--all",), ("--speaker", "Jon"), ("--since", "2024-05-12")])
def test_a_bulk_forget_without_a_terminal_refuses_unless_told_yes(
    capsys: pytest.CaptureFixture[str], db: str, how: tuple[str, ...]
) -> None:
    err = one_line_error(*cli(capsys, "--db", db, "--user", "mira", "forget", *how))
    assert "would remove" in err
    assert "no terminal" in err
    assert "--yes" in err
    assert count(capsys, db) == 4  # nothing went
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "forget", *how, "--yes")
    assert code == 0
    assert json.loads(out)["forgotten"] == {"--all": 4, "--speaker": 2, "--since": 2}[how[0]]


def test_forget_by_id_stays_immediate(capsys: pytest.CaptureFixture[str], db: str) -> None:
    _, out, _ = cli(capsys, "--db", db, "--user", "mira", "list")
    first = json.loads(out)["items"][0]["id"]
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "forget", first)
    assert (code, json.loads(out)) == (0, {"forgotten": 1})
    assert count(capsys, db) == 3
    with pytest.raises(SystemExit):
        main(["forget", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "'forget ID' is immediate" in shown
    assert "one memory (forgotten at once, without asking)" in shown


def test_dry_run_shows_what_would_go_and_forgets_nothing(capsys: pytest.CaptureFixture[str], db: str) -> None:
    base = ("--db", db, "--user", "mira")
    _, out, _ = cli(capsys, *base, "list")
    ids = {n["content"]: n["id"] for n in json.loads(out)["items"]}
    code, out, _ = cli(capsys, *base, "update", ids["Jon moved to Oslo."], "Jon moved to Bergen.")
    assert code == 0
    newest = json.loads(out)["new"]
    code, out, _ = cli(capsys, *base, "forget", "--speaker", "jon", "--dry-run")
    assert code == 0
    plan = json.loads(out)
    # the old version goes with its correction: the same closure the forget removes
    assert plan["would_forget"] == 3 == len(plan["items"])  # HTTP's forget preview (issue 49)
    assert {m["id"] for m in plan["items"]} == {ids["Jon likes tea."], ids["Jon moved to Oslo."], newest}
    assert {m["content"] for m in plan["items"]} >= {"Jon likes tea.", "Jon moved to Bergen."}
    assert count(capsys, db) == 5
    code, out, _ = cli(capsys, *base, "forget", "--all", "--dry-run", "--format", "human")
    lines = out.splitlines()
    assert lines[0] == "would forget 5 memories (dry run: nothing forgotten)"
    assert any(ids["Mira adopted a cat."] in line and "Mira adopted a cat." in line for line in lines[1:])
    code, out, _ = cli(capsys, *base, "forget", ids["Jon likes tea."], "--dry-run")
    assert json.loads(out)["would_forget"] == 1
    assert count(capsys, db) == 5
    code, out, _ = cli(capsys, *base, "forget", "--speaker", "jon", "--yes")
    assert json.loads(out) == {"forgotten": plan["would_forget"]}


def test_a_terminal_is_asked_and_only_yes_forgets(capsys: pytest.CaptureFixture[str], db: str) -> None:
    args = ["--db", db, "--user", "mira", "forget", "--speaker", "Mira"]
    code, out = pty_run(args, answer="n")
    assert code == 0
    assert "forget --speaker Mira: 2 memories of user 'mira' would go for good:" in out
    assert "Mira rides a blue bike." in out
    assert "Forget 2 memories? [y/N]" in out
    assert "nothing forgotten" in out
    assert count(capsys, db) == 4
    code, out = pty_run(args, answer="")  # Enter alone is the default: no
    assert (code, count(capsys, db)) == (0, 4)
    code, out = pty_run(args, answer="y")
    assert code == 0
    assert "forgotten: 2" in out  # a terminal gets text
    assert count(capsys, db) == 2
    code, out = pty_run(["--db", db, "--user", "mira", "forget", "--all", "--yes"])  # --yes asks nothing
    assert (code, "[y/N]" in out, count(capsys, db)) == (0, False, 0)


# -- 7. a write that creates a database says so --------------------------------------------------------
def test_a_new_database_is_named_on_stderr_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    code, out, err = cli(capsys, "--db", str(db), "--user", "mira", "add", "Mira rides a blue bike.")
    assert code == 0
    assert err == f"dualmem: created new database at {db}\n"  # shown with -q too
    assert json.loads(out)["content"] == "Mira rides a blue bike."  # stdout stays clean JSON
    code, out, err = cli(capsys, "--db", str(db), "--user", "mira", "add", "Mira took the train.")
    assert (code, err) == (0, "")
    export = tmp_path / "mira.jsonl"
    assert cli(capsys, "--db", str(db), "--user", "mira", "export", str(export))[0] == 0
    for command, path in (("ingest", SAMPLE), ("import", export)):
        target = tmp_path / f"{command}.db"
        code, out, err = cli(capsys, "--db", str(target), "--user", "mira", command, str(path))
        assert code == 0, err
        assert err == f"dualmem: created new database at {target}\n"
        json.loads(out)


def test_bad_input_refused_by_add_or_ingest_creates_no_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    binary = tmp_path / "photo.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    for args in (
        ("ingest", str(binary)),
        ("ingest", str(tmp_path / "missing.json")),
        ("add", "--file", str(binary)),
        ("add", "   "),
        ("add", "text", "--at", "the day after never"),
    ):
        err = one_line_error(*cli(capsys, "--db", str(tmp_path / "new.db"), "--user", "mira", *args))
        assert "created new database" not in err
    assert not (tmp_path / "new.db").exists()


# -- 8. no time given is now (UTC), in the CLI as over HTTP and MCP -----------------------------------
def test_add_without_at_stores_now_in_utc(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = dt.datetime.now(dt.UTC)
    code, out, _ = cli(capsys, "--db", str(tmp_path / "m.db"), "--user", "mira", "add", "no time given")
    after = dt.datetime.now(dt.UTC)
    assert code == 0
    at = dt.datetime.fromisoformat(json.loads(out)["at"])
    assert at.utcoffset() == dt.timedelta(0)
    assert before <= at <= after
    code, out, _ = cli(
        capsys, "--db", str(tmp_path / "m.db"), "--user", "mira", "add", "old", "--at", "2020-01-02"
    )
    assert json.loads(out)["at"].startswith("2020-01-02T00:00:00")


def test_the_rule_is_one_function_below_the_adapters() -> None:
    now = dt.datetime(2024, 5, 14, 10, tzinfo=dt.UTC)
    assert observed_at(None, now) == now
    assert observed_at("2020-01-02", now) == "2020-01-02"
    assert stamped([{"text": "a"}, {"text": "b", "at": "2020-01-02"}], now) == [
        {"text": "a", "at": now},
        {"text": "b", "at": "2020-01-02"},
    ]
    pytest.importorskip("fastapi")
    from dualmem.server import service  # the HTTP app and the MCP server add through the service

    assert service.stamped is stamped
    with Memory.open(":memory:", embedder="hashing") as mem:  # the library stores what it is given
        assert mem.get(mem.add("no time", user="u"), user="u").at is None


# -- 9. text from stdin or a file, 1 MB included ----------------------------------------------------------
@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> io.BytesIO:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8"))
    return raw


def test_add_reads_stdin_for_a_dash_and_a_file_with_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stdin: io.BytesIO
) -> None:
    base = ("--db", str(tmp_path / "m.db"), "--user", "mira")
    stdin.write("Mira: the vet is Dr Økafor.\n".encode())
    stdin.seek(0)
    code, out, _ = cli(capsys, *base, "add", "-", "--speaker", "Mira")
    assert (code, json.loads(out)["content"]) == (0, "Mira: the vet is Dr Økafor.")
    note = tmp_path / "note.txt"
    note.write_text("Line one.\nLine two — ünïcode.\n\n", encoding="utf-8")
    code, out, _ = cli(capsys, *base, "add", "--file", str(note))
    assert (code, json.loads(out)["content"]) == (0, "Line one.\nLine two — ünïcode.")
    err = one_line_error(*cli(capsys, *base, "add", "text", "--file", str(note)))
    assert "one of them" in err
    err = one_line_error(*cli(capsys, *base, "add"))
    assert "'-' to read it from stdin" in err
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    err = one_line_error(*cli(capsys, *base, "add", "--file", str(latin1)))
    assert "is not UTF-8 text (byte 0xe9 at offset 3" in err
    assert count(capsys, str(tmp_path / "m.db")) == 2


def test_a_1_mb_observation_is_addable_through_stdin(tmp_path: Path) -> None:
    """A real process, a real pipe, the default MiniLM embedder: 1 MB does not fit in argv, it fits here."""
    sentence = "Mira rode her blue bicycle to the market on Tuesday and bought apples. "
    text = (sentence * (1_000_000 // len(sentence) + 1))[:1_000_000].rstrip()
    env = {**os.environ, "PYTHONPATH": SRC}
    cmd = [sys.executable, "-m", "dualmem.cli.main", "-q", "--json", "--db", str(tmp_path / "m.db"),
           "--user", "mira", "add", "-"]  # fmt: skip
    done = subprocess.run(cmd, input=text.encode(), capture_output=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["content"] == text
    with Memory.open(tmp_path / "m.db") as mem:
        (node,) = mem.nodes(user="mira")
        assert len(node.content) == len(text) > 990_000
        found = mem.search("Tuesday market apples", user="mira", k=1)
        assert [e.node.id for e in found.evidence] == [node.id]


def test_http_413_for_one_large_observation_names_the_per_observation_limit(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from dualmem.server import ServerSettings, create_app
    from dualmem.server.keys import KeyStore
    from dualmem.wire.schemas import MAX_TEXT
    from test_server import auth

    with Memory.open(tmp_path / "m.db", embedder="hashing") as mem:
        keys = KeyStore.open(tmp_path / "m.keys.db")
        app = create_app(mem, keys=keys, settings=ServerSettings(rate_limit=None, consolidate_every=0))
        with TestClient(app) as client:
            one = {"observations": [{"text": "x" * 1_100_000}]}
            response = client.post("/v1/memories", json=one, headers=auth(keys, "alice"))
        keys.close()
    assert response.status_code == 413
    doc = response.json()
    assert f"at most {MAX_TEXT} characters" in doc["hint"]
    assert "split a longer text into several observations" in doc["hint"]
    assert not doc["hint"].startswith("send fewer observations")


# -- 10. one-line typed errors, --version, check --format human, --k ---------------------------------------
def test_export_into_a_missing_folder_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], db: str) -> None:
    target = Path(db).parent / "no" / "such" / "folder" / "mira.jsonl"
    err = one_line_error(*cli(capsys, "--db", db, "--user", "mira", "export", str(target)))
    assert err == (
        f"dualmem: error: no folder {target.parent} to write mira.jsonl in "
        "(hint: create the folder first, or export to another path)\n"
    )
    assert not (Path(db).parent / "no").exists()
    err = one_line_error(*cli(capsys, "--db", db, "--user", "mira", "export", str(Path(db).parent)))
    assert "cannot write" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import dualmem

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"dualmem {dualmem.__version__}\n"


def test_check_honours_format_human(capsys: pytest.CaptureFixture[str], db: str) -> None:
    for args in (("check", "--format", "human"), ("--format", "human", "check")):
        code, out, _ = cli(capsys, "--db", db, *args)
        assert (code, out) == (0, f"{db}: healthy\n")
    code, out, _ = cli(capsys, "--db", db, "check")  # a pipe still gets the JSON it got
    assert (code, json.loads(out)) == (0, {"db": db, "healthy": True, "problems": []})
    code, out, _ = cli(capsys, "--db", db, "check", "--lexical-index", "--format", "human")
    assert code == 0
    assert out.startswith(f"db: {db}\nlexical_index: ")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["search", "x", "--k", "3"], "dualmem: unknown option '--k' (did you mean '-k'?)"),
        (["search", "x", "--k=3"], "dualmem: unknown option '--k' (did you mean '-k'?)"),
        (["search", "x", "---limit", "3"], "dualmem: unknown option '---limit' (did you mean '--limit'?)"),
    ],
)
def test_an_option_with_the_wrong_dashes_suggests_the_right_ones(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert (exited.value.code, capsys.readouterr().err) == (2, expected + "\n")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is binary, not text (a NUL byte at offset 8)"),
        ('{"sessions": "café"}'.encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 17"),
        ('{"x": 1}'.encode("utf-16"), "is binary, not text (a NUL byte at offset 3)"),
    ],
    ids=["png", "latin-1", "utf-16"],
)
def test_ingesting_a_binary_file_says_why(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "conversation.json"
    path.write_bytes(content)
    err = one_line_error(*cli(capsys, "--db", db, "--user", "mira", "ingest", str(path)))
    assert err.startswith(f"dualmem: error: {path} ")
    assert needle in err
    assert "(hint: a conversation file is JSON text in UTF-8" in err
    assert count(capsys, db) == 4


def test_bench_locomo_keeps_its_own_answerer_and_controller_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bench locomo`` has its own ``--answerer`` (default "none") and ``--controller``: the global
    check of plug-in names must not refuse them (it did: "unknown --answerer 'none'")."""
    missing = tmp_path / "nowhere.json"
    code = main(["bench", "locomo", "--data", str(missing), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "unknown --answerer" not in err
    assert code == 2
    assert "nowhere.json" in err
    code = main(["bench", "locomo", "--data", str(missing), "--controller", "llm", "--answerer", "chat"])
    err = capsys.readouterr().err
    assert "unknown --" not in err
    assert code == 2
    assert "DUALMEM_LLM_URL" in err
