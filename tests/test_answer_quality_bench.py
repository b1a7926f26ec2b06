"""bench/answer_quality.py at a tiny size: the loaders, the metrics, and one run end to end over
small corpora written here (LoCoMo and Mem-Gallery formats) and the bundled sample conversation."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import load_bench


@pytest.fixture(scope="module")
def aq() -> ModuleType:
    return load_bench("answer_quality.py")


def test_contained_is_a_run_of_normalised_words(aq: ModuleType) -> None:
    assert aq.contained('Mira said on 15 May 2024: "I bought it."', "15 May, 2024")
    assert aq.contained("It was Dr. Okafor!", "dr okafor")
    assert not aq.contained("In 2023 we moved.", "3")  # whole words only
    assert not aq.contained("May 15", "15 May")  # in order
    assert aq.content_recall("Fedora on a ThinkPad", "Fedora (with GNOME), on a ThinkPad") == pytest.approx(
        2 / 3
    )
    assert aq.content_recall("anything", "Yes") is None  # one content word: contained decides


def _memgallery(path: Path) -> Path:
    data = {
        "character_profile": {"name": "Maya"},
        "multi_session_dialogues": [
            {"session_id": "D1", "date": "2024-06-24", "dialogues": [
                {"round": "D1:1", "user": "I started baking lemon cookies.", "assistant": "Zest helps."},
                {"round": "D1:2", "user": "I brought lemon cookies to my coworkers.", "assistant": "Nice!",
                 "image_caption": ["a plate of cookies"]},
            ]},
            {"session_id": "D2", "date": "2024-07-02", "dialogues": [
                {"round": "D2:1", "user": "My oven runs hot, so I bake at 170 °C.", "assistant": "Good."},
            ]},
        ],
        "human-annotated QAs": [
            {"point": "FR", "question": "What snack did Maya bring for her coworkers?",
             "answer": "Lemon cookies.", "session_id": ["D1"], "clue": ["D1:2"]},
            {"point": "AR", "question": "Did Maya bake bread?", "answer": "Not mentioned.", "clue": []},
        ],
    }  # fmt: skip
    path.mkdir(parents=True)
    (path / "Baking.json").write_text(json.dumps(data), encoding="utf-8")
    return path


def _locomo(path: Path) -> Path:
    turns = [
        ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("Melanie", "That sounds great! I ran a charity race for mental health last Saturday."),
        ("Caroline", "My friend Jonna helped me set up my new counseling website."),
        ("Melanie", "I painted a lake sunrise last year, it's special to me."),
    ]
    conv = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(turns, 1)],
    }
    conv["qa"] = [
        {"question": "Who helped Caroline set up her counseling website?", "answer": "Jonna",
         "evidence": ["D1:3"], "category": 4},
        {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What did Caroline paint last year?", "evidence": ["D1:4"], "category": 5,
         "adversarial_answer": "a lake sunrise"},
    ]  # fmt: skip
    path.mkdir(parents=True)
    (path / "conv-x.json").write_text(json.dumps(conv), encoding="utf-8")
    return path


def test_memgallery_rounds_are_observations_and_clues_are_evidence(aq: ModuleType, tmp_path: Path) -> None:
    [conv] = aq.load_memgallery(_memgallery(tmp_path / "mg"))
    assert conv.id == "Baking"
    assert [o.turn_id for o in conv.observations] == ["D1:1", "D1:2", "D2:1"]
    assert conv.observations[1].content == "I brought lemon cookies to my coworkers.\nNice!"
    day = conv.observations[2].at
    assert day is not None
    assert day.date().isoformat() == "2024-07-02"
    assert conv.observations[0].speaker is None
    first, second = conv.questions
    assert (first.answer, first.evidence, first.category) == ("Lemon cookies.", ("D1:2",), "FR")
    assert (second.evidence, second.category) == ((), "AR")


def test_a_tiny_run_compares_before_and_after_on_the_same_evidence(aq: ModuleType, tmp_path: Path) -> None:
    sample = resources.files("dualmem.data").joinpath("sample_conversation.json")
    with resources.as_file(sample) as chats:
        report = aq.main([
            "--locomo", str(_locomo(tmp_path / "locomo")), "--agentchat", str(chats),
            "--memgallery", str(_memgallery(tmp_path / "mg")), "--cache", str(tmp_path / "cache"),
            "--before", "HEAD", "--limit", "1", "--questions", "4", "--out", str(tmp_path / "r.json"),
        ])  # fmt: skip
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["summary"] == report["summary"]
    summary = report["summary"]
    assert set(summary) == {"locomo", "agentchat", "memgallery"}
    for corpus in summary.values():
        assert set(corpus) == {"before", "after"}
    locomo = summary["locomo"]["after"]
    assert (locomo["questions"], locomo["adversarial_n"]) == (2, 1)  # category 5 is scored apart
    assert locomo["contained"] == 1.0  # Jonna, and the day before 8 May 2023
    rows = report["answers"]
    assert len(rows) == 2 * (3 + 4 + 2)
    by_question = {(r["answerer"], r["question"]): r for r in rows}
    who = by_question[("after", "Who helped Caroline set up her counseling website?")]
    assert "Jonna" in who["answer"]
    assert who["contained"]
    # a rerun reads the cached builds and evidence and gives the same answers
    again = aq.main([
        "--locomo", str(tmp_path / "locomo"), "--agentchat", "", "--memgallery", "",
        "--cache", str(tmp_path / "cache"), "--before", "none", "--limit", "1", "--questions", "4",
    ])  # fmt: skip
    assert [r["answer"] for r in again["answers"]] == [
        r["answer"] for r in rows if r["corpus"] == "locomo" and r["answerer"] == "after"
    ]


def test_help_and_a_missing_corpus(
    aq: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as done:
        aq.parse_args(["--help"])
    assert done.value.code == 0
    assert "--limit" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no such corpus"):
        aq.main(["--locomo", str(tmp_path / "nope"), "--agentchat", "", "--memgallery", ""])
