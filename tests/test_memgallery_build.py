"""bench/memgallery/build.py: Mem-Gallery dialogues as dualmem conversations (one observation a round)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_scripts import load_bench
from dualmem.conversations import load_conversations

ROOT = Path(__file__).resolve().parents[1]
MEMGALLERY = ROOT.parent / "shared" / "data" / "memgallery"
REAL = "AI_Robotics_Automation_Future_Tech.json"

build = load_bench("memgallery/build.py")


@pytest.fixture
def memgallery_dir() -> Path:
    if not (MEMGALLERY / REAL).is_file():
        pytest.skip(
            f"Mem-Gallery data not found at {MEMGALLERY} (../shared/data/memgallery from the repo root)"
        )
    return MEMGALLERY


def _raw() -> dict[str, Any]:
    return {
        "character_profile": {"name": "Ines Duarte", "persona_summary": "a baker"},
        "multi_session_dialogues": [
            {
                "session_id": "D1",
                "date": "2024-06-17",
                "dialogues": [
                    {
                        "round": "D1:1",
                        "user": "My sourdough is flat.",
                        "assistant": "Feed the starter twice.",
                    },
                    {
                        "round": "D1:2",
                        "user": "Here are two loaves.",
                        "assistant": "The left one is underproofed.",
                        "image_id": ["D1:IMG_001", "D1:IMG_002"],
                        "image_caption": ["A pale flat loaf.", "A tall loaf with an open crumb."],
                    },
                ],
            },
            {
                "session_id": "D2",
                "date": "2024-07-02",
                "dialogues": [{"round": "D2:1", "user": "Rye next?", "assistant": "Start at 20% rye."}],
            },
        ],
        "human-annotated QAs": [
            {"point": "FR", "question": "What was wrong?", "answer": "Underproofed", "clue": ["D1:2"]},
            {
                "point": "VR",
                "question": "Which day was this picture discussed?",
                "answer": "2024-06-17",
                "clue": ["D1:1", "D1:2"],
                "question_image": "../image/x.png",
                "image_caption": "A flat loaf on a board.",
            },
            {"point": "AR", "question": "Did Ines mention her oven?", "answer": "Not mentioned.", "clue": []},
        ],
    }


def test_rounds_become_observations_with_captions_and_the_assistant_reply(tmp_path: Path) -> None:
    built = build.convert(_raw(), "bakery")
    assert [s["id"] for s in built["sessions"]] == ["D1", "D2"]
    assert [s["date"] for s in built["sessions"]] == ["2024-06-17", "2024-07-02"]
    second = built["sessions"][0]["turns"][1]
    assert second == {
        "id": "D1:2",
        "speaker": "Ines Duarte",
        "text": "Here are two loaves. [image: A pale flat loaf.] [image: A tall loaf with an open crumb.]"
        "\nAssistant: The left one is underproofed.",
    }
    questions = built["questions"]
    assert [q["category"] for q in questions] == ["FR", "VR", "AR"]
    assert (
        questions[1]["question"] == "Which day was this picture discussed? [image: A flat loaf on a board.]"
    )
    assert questions[1]["evidence"] == ["D1:1", "D1:2"]
    assert questions[2]["evidence"] == []
    path = tmp_path / "bakery.json"
    path.write_text(json.dumps(built), encoding="utf-8")
    (conv,) = load_conversations(path)
    assert conv.turn_ids == ("D1:1", "D1:2", "D2:1")
    assert conv.skipped_evidence == 0


def test_a_clue_naming_no_round_is_an_error() -> None:
    raw = _raw()
    raw["human-annotated QAs"][0]["clue"] = ["D9:1"]
    with pytest.raises(ValueError, match="D9:1"):
        build.convert(raw, "bakery")


def test_a_real_file_keeps_every_round_and_question(memgallery_dir: Path, tmp_path: Path) -> None:
    build.main(["--data", str(memgallery_dir), "--out", str(tmp_path)])
    raw = json.loads((memgallery_dir / REAL).read_text(encoding="utf-8"))
    (conv,) = load_conversations(tmp_path / REAL)
    rounds = [r["round"] for s in raw["multi_session_dialogues"] for r in s["dialogues"]]
    assert len(conv.observations) == len(rounds) == 185
    assert len(conv.questions) == len(raw["human-annotated QAs"]) == 57
    assert {o.speaker for o in conv.observations} == {"Julian Vance"}
    turn_ids = set(conv.turn_ids)
    assert conv.skipped_evidence == 0
    for qa in conv.questions:
        assert set(qa.evidence) <= turn_ids, qa.question
    assert sum(1 for qa in conv.questions if not qa.evidence) == 8  # the "Not mentioned." ones
    # the committed haystacks are what the converter writes
    committed = ROOT / "bench" / "memgallery" / "haystacks"
    for path in sorted(tmp_path.glob("*.json")):
        assert (committed / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
            path.name
        )
