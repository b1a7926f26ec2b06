"""Shuffled copies of a conversation (dualmem.learn.augment, ``dualmem calibrate --shuffled-copies``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualmem.cli.main import main
from dualmem.conversations import parse_conversations
from dualmem.learn.augment import SHUFFLED, shuffled_sessions


def conversation(n: int = 8) -> dict[str, object]:
    sessions = [
        {"id": f"s{s}", "date": f"2024-05-1{s}T10:00:00Z",
         "turns": [{"speaker": "Ana" if i % 2 else "Ben", "text": f"session {s} turn {i} about topic {i}",
                    "at": f"2024-05-1{s}T10:0{i}:00Z"} for i in range(n)]}
        for s in (1, 2)
    ]  # fmt: skip
    qs = [{"question": f"What about topic {i}?", "evidence": [f"s1:{i + 1}"]} for i in range(n)]
    return {"id": "c", "sessions": sessions, "questions": qs}


def test_a_copy_keeps_turns_and_questions_and_reorders_each_session() -> None:
    (conv,) = parse_conversations(conversation(), name="c")
    copy = shuffled_sessions(conv)
    assert copy.id == "c" + SHUFFLED
    assert copy.questions == conv.questions
    assert sorted(o.turn_id or "" for o in copy.observations) == sorted(
        o.turn_id or "" for o in conv.observations
    )
    assert [o.turn_id for o in copy.observations] != [o.turn_id for o in conv.observations]
    for s in ("s1", "s2"):  # every session keeps its turns, in another order, times still rising
        mine = [o for o in copy.observations if o.session == s]
        assert {o.turn_id for o in mine} == {o.turn_id for o in conv.observations if o.session == s}
        assert [o.at for o in mine] == sorted(o.at for o in mine if o.at is not None)
    assert shuffled_sessions(conv) == copy  # seeded: the same copy every time


def test_calibrate_fits_on_the_copies_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "c.json"
    data.write_text(json.dumps(conversation()))
    outs = []
    for extra in ([], ["--shuffled-copies", str(data)]):
        out = tmp_path / f"r{len(extra)}.json"
        argv = ["-q", "--json", "--embedder", "hashing", "calibrate", "--data", str(data), "--out", str(out),
                "--scorer", "linear", "--l2", "1", *extra]  # fmt: skip
        assert main(argv) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[1]["queries"] == 2 * outs[0]["queries"]
    bad = ["--embedder", "hashing", "calibrate", "--data", str(data), "--out", str(tmp_path / "x.json"),
           "--scorer", "linear", "--shuffled-copies", str(tmp_path / "other.json")]  # fmt: skip
    assert main(bad) == 2
    assert "not among --data" in capsys.readouterr().err
