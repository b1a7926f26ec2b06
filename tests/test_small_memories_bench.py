"""research/small_memories.py's slicing: two-session slices that keep only the questions they can answer."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from dualmem.conversations import load_conversations


def _bench() -> ModuleType:
    from research import small_memories

    return small_memories


def _turns(session: int, n: int) -> list[dict[str, str]]:
    return [{"speaker": "Ana" if i % 2 else "Ben", "dia_id": f"D{session}:{i}", "text": f"s{session} t{i}"}
            for i in range(1, n + 1)]  # fmt: skip


def test_slices_keep_the_questions_inside_them(tmp_path: Path) -> None:
    conv: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for s in range(1, 6):
        conv[f"session_{s}"] = _turns(s, 3)
        conv[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
    inside = [{"question": f"q{s}", "answer": "a", "evidence": [f"D{s}:1"], "category": 4} for s in (1, 2)]
    across = {"question": "both", "answer": "a", "evidence": ["D2:1", "D3:2"], "category": 1}
    late = [
        {"question": f"late{i}", "answer": "a", "evidence": ["D3:1", "D4:2"], "category": 1} for i in range(3)
    ]
    conv["qa"] = [
        *inside,
        {"question": "q1b", "answer": "a", "evidence": ["D1:2"], "category": 2},
        across,
        *late,
    ]
    src = tmp_path / "locomo"
    src.mkdir()
    (src / "conv-x.json").write_text(json.dumps(conv), encoding="utf-8")

    written = _bench().write_slices(src, tmp_path / "slices")

    # sessions 1-2 and 3-4 each have 3 questions inside; session 5 is left over (no pair)
    assert [p.name for p in written] == ["conv-x-s01.json", "conv-x-s03.json"]
    first = json.loads(written[0].read_text(encoding="utf-8"))
    assert sorted(k for k in first if k.startswith("session_") and not k.endswith("date_time")) == [
        "session_1", "session_2",
    ]  # fmt: skip
    assert [q["question"] for q in first["qa"]] == ["q1", "q2", "q1b"]  # "both" reaches session 3
    [loaded] = load_conversations(written[1])
    assert [q.question for q in loaded.questions] == ["late0", "late1", "late2"]
    assert set(loaded.turn_ids) == {f"D{s}:{i}" for s in (3, 4) for i in (1, 2, 3)}
