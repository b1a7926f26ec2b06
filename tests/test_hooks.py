"""``dualmem hook session-start`` / ``user-prompt``: what a coding agent gets as context, and silence on
every failure. The main paths run as real subprocesses, the way Claude Code runs them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.cli.hook import HookInput, read_input
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder

SRC = str(Path(__file__).resolve().parents[1] / "src")
QUIET = Profile.builtin().with_(write__consolidation="off")
NOTES = [
    ("I prefer tabs over spaces and I always want type hints in Python code.", "2024-05-01"),
    ("To release dualmem, run the CI script, then tag the commit and push the tag.", "2024-05-02"),
    ("The orbitron project talks to the payments API through a retrying client.", "2024-05-03"),
    ("Our staging database for orbitron lives on the host db-stage-2.", "2024-05-04"),
    ("We had pancakes at the tea house on Saturday.", "2024-05-05"),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with Memory.open(path, embedder=HashingEmbedder(256), profile=QUIET) as mem:
        scope = mem.scope("dev")
        ids = [scope.add(text, speaker="dev", at=at) for text, at in NOTES]
        scope.update(ids[3], "Our staging database for orbitron moved to the host db-stage-3.")
        mem.add("Someone else's orbitron secret: the root password is hunter2.", user="other")
    return path


def hook(db: Path, *args: str, stdin: str = "", user: str = "dev") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("DUALMEM_DB", None)
    cmd = [sys.executable, "-m", "dualmem.cli.main", "--db", str(db), "--user", user, "--embedder", "hashing"]
    cmd += ["hook", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_user_prompt_from_claude_code_json(db: Path) -> None:
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": "/w/orbitron",
               "prompt": "Which host is the orbitron staging database on?"}  # fmt: skip
    done = hook(db, "user-prompt", stdin=json.dumps(payload))
    assert done.returncode == 0
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == "# dualmem: memories related to this prompt"
    assert "db-stage-3" in lines[1]
    assert "db-stage-2" not in done.stdout  # superseded by the update
    assert "hunter2" not in done.stdout  # another user's memory
    assert all(line.startswith("- [2024-05-") for line in lines[1:])


def test_session_start_prints_project_preferences_and_recent(db: Path) -> None:
    payload = {
        "session_id": "s1",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": "/w/orbitron",
    }
    done = hook(db, "session-start", "--limit", "6", stdin=json.dumps(payload))
    assert done.returncode == 0
    assert done.stderr == ""
    out = done.stdout
    assert out.startswith("# dualmem: what memory holds for user dev, project orbitron\n")
    project = out.split("On orbitron:\n", 1)[1].split(":\n", 1)[0]
    assert "payments API" in project
    assert "db-stage-3" in project
    assert "I prefer tabs" in out.split("Preferences and conventions:\n", 1)[1]
    assert "pancakes" in out.split("Recent:\n", 1)[1]
    assert "hunter2" not in out
    assert "db-stage-2" not in out
    assert len([line for line in out.splitlines() if line.startswith("- ")]) <= 6 + 2


def test_failures_are_silent_unless_verbose(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    done = hook(missing, "user-prompt", stdin="anything at all")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not missing.exists()  # a hook never creates a memory
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    done = hook(broken, "session-start", stdin='{"cwd": "/w/p"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    loud = hook(broken, "user-prompt", "--verbose", stdin="the prompt")
    assert loud.returncode == 0
    assert loud.stdout == ""
    assert loud.stderr.startswith("dualmem hook: ")
    assert len(loud.stderr.strip().splitlines()) == 1


def test_full_mode_runs_the_adaptive_search(db: Path) -> None:
    done = hook(db, "user-prompt", "--full", stdin="how do I release dualmem?")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "tag the commit" in done.stdout


def run_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], db: Path, *args: str, stdin: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["--db", str(db), "--user", "dev", "--embedder", "hashing", "hook", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plain_text_empty_input_and_no_match(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(monkeypatch, capsys, db, "user-prompt", stdin="tabs or spaces?\n")
    assert (code, err) == (0, "")
    assert "I prefer tabs" in out
    for stdin in ("", "   \n", '{"prompt": ""}', '{"session_id": "s"}'):
        assert run_in_process(monkeypatch, capsys, db, "user-prompt", stdin=stdin) == (0, "", "")
    assert run_in_process(monkeypatch, capsys, db, "user-prompt", stdin="zebra quantum") == (0, "", "")
    broken = db.with_name("broken.db")
    broken.write_bytes(b"not a database" * 100)
    assert run_in_process(monkeypatch, capsys, broken, "user-prompt", stdin="tabs") == (0, "", "")
    assert run_in_process(monkeypatch, capsys, broken, "user-prompt", "--full", stdin="tabs") == (0, "", "")
    code, out, err = run_in_process(monkeypatch, capsys, db, "user-prompt", "--prompt", "pancakes", stdin="")
    assert "tea house" in out
    # another user sees only their own memories
    code = main(["--db", str(db), "--user", "nobody", "hook", "session-start", "--project", "orbitron"])
    assert (code, capsys.readouterr().out) == (0, "")


def test_read_input_accepts_json_and_text() -> None:
    assert read_input('{"prompt": "hi", "cwd": "/a/b"}') == HookInput("hi", "/a/b")
    assert read_input('{"prompt": 3, "cwd": ""}') == HookInput()
    assert read_input("{not json") == HookInput(prompt="{not json")
    assert read_input("  plain words \n") == HookInput(prompt="plain words")
    assert read_input('["a list"]') == HookInput(prompt='["a list"]')


def test_a_chatty_prompt_is_searched_by_its_need(db: Path) -> None:
    """The whole prompt's words favour the small talk's memory; the hook's quick search drops the chatter
    first (``dualmem.read.message``) and finds what the question asks."""
    from dualmem.plane import open_store
    from dualmem.read.quick import quick_search
    from dualmem.types import Tenant

    prompt = (
        "Morning! We had pancakes at the tea house again on Saturday, so good. "
        "Which host is the orbitron staging database on? Thanks!"
    )
    store = open_store(str(db))
    try:
        tenant = Tenant("dev")
        whole = store.get_nodes([store.lexical_search(tenant, prompt, 1)[0][0]], tenant)
        assert "pancakes" in next(iter(whole.values())).content  # the chatter wins as one text
        found = quick_search(store, tenant, prompt, 2)
    finally:
        store.close()
    assert "db-stage-3" in found[0].content


def test_user_prompt_searches_the_need_of_a_chatty_message(db: Path) -> None:
    """The hook's read side understands the whole prompt (issue 47): its small talk shares words
    with an unrelated memory, which the whole text would rank second; the need's are first."""
    prompt = (
        "Morning! We had pancakes at the tea house on Saturday again, so good. "
        "Which host is the orbitron staging database on? Thanks!"
    )
    done = hook(db, "user-prompt", "--limit", "2", stdin=json.dumps({"prompt": prompt}))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "db-stage-3" in lines[1]
    assert "pancakes" not in done.stdout
    whole = hook(
        db, "user-prompt", "--limit", "2", stdin="pancakes tea house Saturday orbitron staging database host"
    )
    assert "pancakes" in whole.stdout  # the same words as one clause: the small talk's memory comes in
