"""``dualmem hook capture``: Claude Code's PostToolUse and Stop events become memories, once each;
``--verbose`` on the read hooks explains an empty result. Real subprocesses, as Claude Code runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dualmem import Memory
from dualmem.cli.hook_capture import from_event, summarise_tool, transcript_turns
from dualmem.embed import HashingEmbedder

SRC = str(Path(__file__).resolve().parents[1] / "src")


def hook(db: Path, *args: str, stdin: str = "", user: str = "dev") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("DUALMEM_DB", None)
    env.pop("DUALMEM_USER", None)
    cmd = [sys.executable, "-m", "dualmem.cli.main", "--db", str(db), "--embedder", "hashing"]
    cmd += ["--user", user] if user else []
    cmd += ["hook", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, timeout=120, check=False)


def memories(db: Path, user: str = "dev") -> list[str]:
    with Memory.open(db, embedder=HashingEmbedder(256), read_only=True) as mem:
        return [n.content for n in mem.list_memories(user=user, limit=None)]


TOOL_EVENT = {
    "session_id": "sess-1",
    "transcript_path": "/nonexistent/t.jsonl",
    "cwd": "/w/orbitron",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "pytest -q tests/test_api.py", "description": "run the API tests"},
    "tool_response": {"stdout": "3 passed, 1 failed: test_retry_budget" + " x" * 2000, "stderr": ""},
    "tool_use_id": "toolu_01",
}


def test_a_tool_call_is_stored_once_bounded(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = hook(db, "capture", "--verbose", stdin=json.dumps(TOOL_EVENT))
    assert (first.returncode, first.stdout) == (0, "")
    assert first.stderr == "dualmem hook: PostToolUse: stored 1 memories (0 already there)\n"
    again = hook(db, "capture", "--verbose", stdin=json.dumps(TOOL_EVENT))
    assert again.stderr == "dualmem hook: PostToolUse: stored 0 memories (1 already there)\n"
    (text,) = memories(db)
    assert text.startswith(
        "Tool Bash: pytest -q tests/test_api.py; description: run the API tests -> 3 passed"
    )
    assert len(text) <= 1200
    assert text.endswith("…")
    with Memory.open(db, embedder=HashingEmbedder(256), read_only=True) as mem:
        (node,) = mem.list_memories(user="dev")
    assert (node.speaker, node.session, node.turn_id) == ("tool", "sess-1", "tool:toolu_01")
    assert node.metadata == {"hook": "PostToolUse", "project": "orbitron", "tool": "Bash"}


def test_a_tool_call_without_an_id_is_keyed_by_its_content() -> None:
    event = {k: v for k, v in TOOL_EVENT.items() if k != "tool_use_id"}
    one, two = from_event(event), from_event(json.loads(json.dumps(event)))
    assert one.observations[0].turn_id == two.observations[0].turn_id
    other = from_event({**event, "tool_input": {"command": "ls"}})
    assert other.observations[0].turn_id != one.observations[0].turn_id


def test_summaries_name_what_matters() -> None:
    assert summarise_tool("Edit", {"file_path": "src/a.py", "old_string": "x"}, {"ok": True}) == (
        'Tool Edit: file_path: src/a.py -> {"ok": true}'
    )
    assert (
        summarise_tool("Read", {"file_path": "README.md"}, None)
        == "Tool Read: file_path: README.md -> (nothing)"
    )
    assert len(summarise_tool("X", "a" * 5000, "b" * 5000, limit=300)) == 300


def _transcript(path: Path, entries: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + "{torn line", encoding="utf-8")
    return path


def _entry(kind: str, uuid: str, content: object, at: str, **extra: object) -> dict:  # type: ignore[type-arg]
    return {"type": kind, "uuid": uuid, "timestamp": at, "sessionId": "sess-1",
            "message": {"role": kind, "content": content}, **extra}  # fmt: skip


TRANSCRIPT = [
    _entry("user", "u1", "What port does the staging API use?", "2024-06-01T10:00:00Z"),
    _entry("assistant", "a1", [{"type": "text", "text": "It uses 8443."}], "2024-06-01T10:00:05Z"),
    _entry("user", "u2", "Please make the retry budget 5 attempts.", "2024-06-01T10:01:00Z"),
    _entry(
        "assistant",
        "a2",
        [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {}}],
        "2024-06-01T10:01:02Z",
    ),
    _entry(
        "user", "u3", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}], "2024-06-01T10:01:03Z"
    ),
    _entry(
        "assistant",
        "a3",
        [{"type": "text", "text": "Done: the retry budget is now 5."}],
        "2024-06-01T10:01:09Z",
    ),
    _entry("assistant", "a4", [{"type": "text", "text": "Tests pass."}], "2024-06-01T10:01:30Z"),
    _entry("user", "m1", "<command-name>/clear</command-name>", "2024-06-01T10:02:00Z", isMeta=True),
]


def test_transcript_turns_are_the_last_exchange(tmp_path: Path) -> None:
    turns = transcript_turns(_transcript(tmp_path / "t.jsonl", TRANSCRIPT))
    assert turns == [
        ("user", "u2", "2024-06-01T10:01:00Z", "Please make the retry budget 5 attempts."),
        ("assistant", "a3", "2024-06-01T10:01:09Z", "Done: the retry budget is now 5.\n\nTests pass."),
    ]
    assert transcript_turns(_transcript(tmp_path / "empty.jsonl", [])) == []


def test_stop_stores_the_last_turns_once(tmp_path: Path) -> None:
    db, transcript = tmp_path / "m.db", _transcript(tmp_path / "t.jsonl", TRANSCRIPT)
    event = {"session_id": "sess-1", "transcript_path": str(transcript), "hook_event_name": "Stop",
             "stop_hook_active": False, "cwd": "/w/orbitron"}  # fmt: skip
    for _ in range(2):
        done = hook(db, "capture", stdin=json.dumps(event))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert memories(db) == [
        "Please make the retry budget 5 attempts.",
        "Done: the retry budget is now 5.\n\nTests pass.",
    ]
    # the next exchange adds only its own turns; the read hook finds them
    more = [
        *TRANSCRIPT,
        _entry("user", "u9", "And the staging port?", "2024-06-01T11:00:00Z"),
        _entry("assistant", "a9", [{"type": "text", "text": "Still 8443."}], "2024-06-01T11:00:04Z"),
    ]
    _transcript(transcript, more)
    assert hook(db, "capture", stdin=json.dumps(event)).returncode == 0
    assert len(memories(db)) == 4
    found = hook(db, "user-prompt", stdin=json.dumps({"prompt": "what is the retry budget?"}))
    assert "retry budget is now 5" in found.stdout


@pytest.mark.parametrize(
    ("stdin", "user", "why"),
    [
        ("not json", "dev", "not JSON"),
        (json.dumps({"hook_event_name": "Notification", "message": "hi"}), "dev", "nothing to capture"),
        (json.dumps({"hook_event_name": "Stop", "session_id": "s"}), "dev", "without transcript_path"),
        (json.dumps(TOOL_EVENT), "", "no user given"),
    ],
)
def test_capture_failures_are_silent_unless_verbose(tmp_path: Path, stdin: str, user: str, why: str) -> None:
    db = tmp_path / "m.db"
    quiet = hook(db, "capture", stdin=stdin, user=user)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    loud = hook(db, "capture", "--verbose", stdin=stdin, user=user)
    assert (loud.returncode, loud.stdout) == (0, "")
    assert why in loud.stderr
    assert loud.stderr.count("\n") == 1
    assert not db.exists()  # nothing to store: no database made


def test_verbose_read_hooks_explain_an_empty_result(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert "no database at" in hook(db, "user-prompt", "--verbose", stdin="tabs?").stderr
    assert hook(db, "capture", stdin=json.dumps(TOOL_EVENT)).returncode == 0
    other = hook(db, "user-prompt", "--verbose", stdin="pytest results?", user="nobody")
    assert (other.returncode, other.stdout) == (0, "")
    assert other.stderr == f"dualmem hook: no memories for user 'nobody' in {db} (users there: dev)\n"
    start = hook(db, "session-start", "--verbose", stdin="{}", user="nobody")
    assert "no memories for user 'nobody'" in start.stderr
    miss = hook(db, "user-prompt", "--verbose", stdin="zebra quantum")
    assert miss.stderr.startswith("dualmem hook: nothing matched the prompt: 1 memories for user 'dev', ")
    assert hook(db, "user-prompt", stdin="zebra quantum").stderr == ""
