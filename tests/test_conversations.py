"""Loading conversation files: dualmem's format, LoCoMo per-file and locomo10.json layouts."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest

from dualmem.conversations import FORMAT, load_conversations, load_observations, parse_conversations
from dualmem.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "locomo_tiny.json"
SAMPLE = ROOT / "src" / "dualmem" / "data" / "sample_conversation.json"
LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"

needs_locomo = pytest.mark.skipif(not LOCOMO.is_dir(), reason=f"LoCoMo data not found at {LOCOMO}")


def test_tiny_locomo_list_layout() -> None:
    [conv] = load_conversations(TINY)
    assert conv.id == "tiny-1"
    assert len(conv.observations) == 10  # session_3 has a date but no turns
    first = conv.observations[0]
    assert first.turn_id == "D1:1"
    assert first.session == "session_1"
    assert first.speaker == "Lena"
    assert first.source == "tiny-1"
    assert first.at == dt.datetime(2023, 3, 3, 9, 15, tzinfo=dt.UTC)
    assert conv.observations[5].at == dt.datetime(2023, 5, 20, 18, 40, tzinfo=dt.UTC)
    image = conv.observations[4]
    assert image.content == (
        "Look at Pixel sleeping on my keyboard! "
        "[shared an image: a photo of a grey kitten sleeping on a laptop keyboard]"
    )
    assert image.metadata["image_caption"].startswith("a photo of a grey kitten")


def test_tiny_locomo_questions_and_evidence_cleaning() -> None:
    [conv] = load_conversations(TINY)
    qs = conv.questions
    assert [q.category for q in qs] == [1, 2, 3, 4, 4, 5]
    assert qs[0].evidence == ("D1:2", "D1:4")  # "D1:4 " stripped
    assert qs[2].evidence == ("D2:4",)  # "D9:9" names no turn: dropped
    assert qs[4].evidence == ("D1:1", "D1:5")  # "D1:1; D1:5" split
    assert conv.skipped_evidence == 1
    assert qs[5].answer is None
    assert qs[5].adversarial_answer == "cello"


def test_per_file_layout_matches_list_layout(tmp_path: Path) -> None:
    sample = json.loads(TINY.read_text())[0]
    per_file = {**sample["conversation"], "qa": sample["qa"]}
    path = tmp_path / "conv-9.json"
    path.write_text(json.dumps(per_file))
    [a] = load_conversations(path)
    [b] = load_conversations(TINY)
    assert a.id == "conv-9"
    assert [o.content for o in a.observations] == [o.content for o in b.observations]
    assert a.questions == b.questions
    assert load_observations(path)[3].turn_id == "D1:4"


def test_sample_conversation_example() -> None:
    [conv] = load_conversations(SAMPLE)
    assert conv.id == "mira"
    assert len(conv.observations) >= 38
    by_text = {o.content: o for o in conv.observations}
    broke = by_text["My old bicycle broke."]
    bought = by_text["I bought a new bicycle yesterday because my old one broke."]
    assert broke.at == dt.datetime(2024, 5, 14, 8, 10, tzinfo=dt.UTC)
    assert bought.at == dt.datetime(2024, 5, 16, 19, 45, tzinfo=dt.UTC)
    assert {o.speaker for o in conv.observations} == {"Mira", "Assistant"}
    assert conv.skipped_evidence == 0
    assert all(q.evidence for q in conv.questions)


def test_simple_format_defaults_and_per_turn_time() -> None:
    data = {
        "sessions": [
            {
                "date": "2024-01-02",
                "turns": [
                    {"speaker": "A", "text": "hi"},
                    {"speaker": "B", "text": "yo", "at": "2024-01-03T10:00:00+02:00"},
                ],
            },
            {"id": "late", "turns": [{"speaker": "A", "text": "no date", "id": "x"}]},
        ],
        "questions": [{"question": "q?", "answer": 7, "evidence": ["s1:2", "nope"]}],
    }
    [conv] = parse_conversations(data, name="demo")
    a, b, c = conv.observations
    assert (a.turn_id, a.session, a.at) == ("s1:1", "s1", dt.datetime(2024, 1, 2, tzinfo=dt.UTC))
    assert b.at == dt.datetime(2024, 1, 3, 8, 0, tzinfo=dt.UTC)
    assert (c.turn_id, c.session, c.at) == ("x", "late", None)
    assert conv.questions[0].answer == "7"
    assert conv.questions[0].category == 4
    assert conv.skipped_evidence == 1


def test_directory_loads_every_json(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text(SAMPLE.read_text())
    (tmp_path / "a.json").write_text(TINY.read_text())
    (tmp_path / "notes.txt").write_text("ignored")
    assert [c.id for c in load_conversations(tmp_path)] == ["tiny-1", "mira"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"hello": 1}', "unknown conversation format"),
        ('{"format": "other/2", "sessions": []}', "unknown format"),
        ('{"sessions": [{"turns": [{"speaker": "A", "text": "  "}]}]}', r"sessions\[0\]\.turns\[0\]\.text"),
        ('{"speakers": ["A"], "sessions": [{"turns": [{"speaker": "B", "text": "x"}]}]}', "not in speakers"),
        ('{"sessions": [{"date": "someday", "turns": [{"speaker": "A", "text": "x"}]}]}', "date"),
        (
            '{"sessions": [{"turns": [{"speaker": "A", "text": "x", "id": "t"}, '
            '{"speaker": "A", "text": "y", "id": "t"}]}]}',
            "appears twice",
        ),
        ("[]", "empty list"),
    ],
)
def test_errors_are_one_line_invalid_input(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InvalidInput, match=message) as info:
        load_conversations(path)
    assert "\n" not in info.value.one_line()
    assert info.value.hint


_TURN = {"speaker": "A", "text": "x"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"sessions": []}, r"n: sessions: List should have at least 1 item"),
        ({"sessions": [{"turns": [{"text": "x"}]}]}, r"sessions\[0\]\.turns\[0\]\.speaker: Field required"),
        ({"sessions": [{"turns": [{"speaker": 3, "text": "x"}]}]},
         r"turns\[0\]\.speaker: Input should be a valid string"),
        ({"sessions": [{"turns": "x"}]}, r"sessions\[0\]\.turns: Input should be a valid list"),
        ({"sessions": [{"id": True, "turns": [_TURN]}]}, r"sessions\[0\]\.id: must be a non-empty string"),
        ({"sessions": [{"turns": [{**_TURN, "at": "someday"}]}]}, r"turns\[0\]\.at: "),
        ({"sessions": [{"turns": [_TURN]}], "questions": [{"question": " "}]}, r"questions\[0\]\.question"),
        ({"sessions": [{"turns": [_TURN]}], "questions": [{"question": "q", "category": [4]}]},
         r"questions\[0\]\.category"),
        ({"sessions": [{"turns": [_TURN]}], "speakers": ["A", ""]}, r"speakers\[1\]"),
        ({"speaker_a": "A", "session_1": [_TURN]}, r"session_1\[0\]\.dia_id: Field required"),
        ({"speaker_a": "A", "session_1": {"a": 1}}, r"session_1: Input should be a valid list"),
        ({"speaker_a": "A", "session_1": [{**_TURN, "dia_id": "D1", "text": " "}]}, r"turn D1 has no text"),
        ({"speaker_a": "A", "session_1": [{**_TURN, "dia_id": "D1"}], "session_1_date_time": "later"},
         r"session_1_date_time: "),
        ({"speaker_a": "A", "session_1": [{**_TURN, "dia_id": "D1"}], "qa": [{"answer": "x"}]},
         r"qa\[0\]\.question: Field required"),
        ({"speaker_a": "A", "session_1": []}, r"has no turns"),
    ],
)  # fmt: skip
def test_bad_fields_are_named_with_a_hint(data: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as info:
        parse_conversations(data, name="n")
    assert info.value.hint


def test_locomo_annotation_keys_and_extra_turn_fields_are_ignored() -> None:
    data = {
        "speaker_a": "A",
        "session_1": [{**_TURN, "dia_id": " D1:1 ", "img_url": ["u"], "re-download": True}],
        "session_1_summary": "ignored",
        "qa": [{"question": "q?", "answer": 2022, "evidence": "D1:1", "category": 2}],
    }
    [conv] = parse_conversations(data, name="n")
    assert conv.observations[0].turn_id == "D1:1"
    assert conv.questions[0].answer == "2022"
    assert conv.questions[0].evidence == ("D1:1",)


def test_missing_file() -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        load_conversations(Path("/nonexistent/conv.json"))


def test_format_constant_is_accepted() -> None:
    data = {"format": FORMAT, "sessions": [{"turns": [{"speaker": "A", "text": "x"}]}]}
    assert parse_conversations(data, name="n")[0].observations[0].content == "x"


EXPECTED = {
    "conv-26": (419, 199, (32, 37, 13, 70, 47)),
    "conv-30": (369, 105, (11, 26, 0, 44, 24)),
    "conv-41": (663, 193, (31, 27, 8, 86, 41)),
    "conv-42": (629, 260, (37, 40, 11, 111, 61)),
    "conv-43": (680, 242, (31, 26, 14, 107, 64)),
}


@pytest.mark.locomo
@needs_locomo
def test_shared_locomo_counts_match_readme() -> None:
    convs = {c.id: c for c in load_conversations(LOCOMO)}
    assert set(convs) == set(EXPECTED)
    for cid, (turns, questions, cats) in EXPECTED.items():
        conv = convs[cid]
        assert len(conv.observations) == turns, cid
        assert len(conv.questions) == questions, cid
        counts = Counter(q.category for q in conv.questions)
        assert tuple(counts.get(c, 0) for c in (1, 2, 3, 4, 5)) == cats, cid
        assert all(o.at is not None and o.turn_id for o in conv.observations)
        known = set(conv.turn_ids)
        assert all(e in known for q in conv.questions for e in q.evidence)
    # "D8:6; D9:17" is split into two real ids; "D10:19", "D" and "D:11:26" name no turn
    assert convs["conv-26"].skipped_evidence == 0
    assert convs["conv-42"].skipped_evidence == 2
    assert convs["conv-43"].skipped_evidence == 1


@pytest.mark.locomo
@needs_locomo
def test_shared_locomo_as_public_locomo10_list(tmp_path: Path) -> None:
    raw = json.loads((LOCOMO / "conv-30.json").read_text())
    sample = {"sample_id": "conv-30", "qa": raw.pop("qa"), "conversation": raw, "event_summary": {}}
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([sample]))
    [conv] = load_conversations(path)
    assert (conv.id, len(conv.observations), len(conv.questions)) == ("conv-30", 369, 105)
