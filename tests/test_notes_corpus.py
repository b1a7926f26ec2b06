"""The notes corpus (bench/notes): its checker passes on every scenario, names what is wrong in a broken
file, and the product loader reads every scenario. No embedding here: the baseline's scoring is tested
on given rankings."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench_scripts import BENCH, load_bench
from dualmem.conversations import load_conversations

SRC = BENCH / "notes" / "src"
check = load_bench("notes/check.py")
baseline = load_bench("notes/baseline.py")
Scenario = dict[str, Any]


def _scenario(name: str = "coding-01") -> Scenario:
    data: Scenario = json.loads((SRC / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, data: Scenario) -> Path:
    path = tmp_path / f"{data['id']}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _first(data: Scenario, category: str, *, chained: bool = False) -> Scenario:
    return next(
        q for q in data["questions"] if q["category"] == category and (not chained or len(q["stale"]) > 1)
    )


def test_the_checker_passes_on_the_whole_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(SRC.glob("*.json"))
    result = check.check([SRC])
    assert result.problems == []
    assert set(result.stats) == {f.stem for f in files}
    assert check.main([str(SRC)]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split()[:3] == ["domain", "scen", "notes"]
    assert {"coding", "support", "all"} <= {line.split()[0] for line in table.splitlines()[1:]}


def test_the_corpus_holds_what_the_issue_asks_of_its_share() -> None:
    stats = check.check([SRC]).stats
    mine = [s for name, s in stats.items() if name.startswith(("coding-", "support-"))]
    assert len(mine) >= 27
    assert sum(s.updates for s in mine) >= 110
    assert all(s.questions["control"] >= 2 for s in mine)
    assert sum(s.low_overlap for s in mine) / sum(s.updates for s in mine) >= 0.3


def test_the_product_loader_reads_every_scenario() -> None:
    files = sorted(SRC.glob("*.json"))
    conversations = load_conversations(SRC)
    assert [c.id for c in conversations] == [f.stem for f in files]
    for conv, path in zip(conversations, files, strict=True):
        raw = json.loads(path.read_text(encoding="utf-8"))
        notes = [t for s in raw["sessions"] for t in s["turns"]]
        assert [o.turn_id for o in conv.observations] == [t["id"] for t in notes]
        assert [o.speaker for o in conv.observations] == [t["speaker"] for t in notes]
        assert all(o.at is not None for o in conv.observations)
        assert conv.skipped_evidence == 0
        assert [q.evidence for q in conv.questions] == [tuple(q["evidence"]) for q in raw["questions"]]


def _bad_stale(data: Scenario) -> None:
    _first(data, "current")["stale"].append("n999")


def _backwards(data: Scenario) -> None:
    update = data["updates"][0]
    update["old"], update["new"] = update["new"], update["old"]


def _missing_stale(data: Scenario) -> None:
    _first(data, "current", chained=True)["stale"].pop(0)


def _control_that_changed(data: Scenario) -> None:
    _first(data, "control")["evidence"] = [data["updates"][0]["old"]]


def _no_current_question(data: Scenario) -> None:
    head = _first(data, "current")["evidence"][0]
    data["questions"] = [q for q in data["questions"] if head not in q["evidence"]]


def _late_note(data: Scenario) -> None:
    data["sessions"][0]["turns"][1]["at"] = data["sessions"][0]["turns"][0]["at"]


def _sessions_out_of_order(data: Scenario) -> None:
    data["sessions"][1]["date"] = data["sessions"][0]["date"]


def _renumbered(data: Scenario) -> None:
    data["sessions"][0]["turns"][1]["id"] = "n7b"


def _unknown_why(data: Scenario) -> None:
    data["non_updates"][0]["why"] = "looks similar"


def _suggestion_supersedes(data: Scenario) -> None:
    turns = [t for s in data["sessions"] for t in s["turns"]]
    user = next(i for i, t in enumerate(turns) if t["speaker"] == "user")
    later = next(t for t in turns[user:] if t["speaker"] == "assistant")
    update = {"old": turns[user]["id"], "new": later["id"], "subject": "user", "attribute": "anything"}
    data["updates"].append(update)


BROKEN: list[tuple[Callable[[Scenario], None], str, str]] = [
    (_bad_stale, "coding-01", "questions[0].stale: n999 names no note"),
    (_backwards, "coding-01", "is not later than old"),
    (_missing_stale, "coding-02", "stale must list every older version; missing n3"),
    (_control_that_changed, "coding-01", "a control question's evidence must never change, but n1 does"),
    (_no_current_question, "coding-01", "the chain ending in 'n11' (older: n1) has no current question"),
    (_late_note, "coding-01", "note 'n2': at 2024-03-04T09:22:00Z is not after the previous note"),
    (_sessions_out_of_order, "coding-01", "sessions[1]: date 2024-03-04T09:00:00Z is not after the previous"),
    (_renumbered, "coding-01", "ids run n1..nN in order, so this one must be 'n2'"),
    (_unknown_why, "coding-01", "why 'looks similar' is not one of"),
    (_suggestion_supersedes, "coding-05", "is an assistant's suggestion; it never supersedes the user's"),
]


@pytest.mark.parametrize(("breakage", "name", "message"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_the_checker_names_what_is_wrong_in_a_broken_file(
    breakage: Callable[[Scenario], None],
    name: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = copy.deepcopy(_scenario(name))
    assert check.check([_write(tmp_path, data)]).ok  # intact, it passes
    breakage(data)
    path = _write(tmp_path, data)
    assert check.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert f"error: {name}.json: " in err
    assert message in err, err


def test_a_file_the_product_loader_rejects_fails_with_the_loaders_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _scenario()
    data["sessions"][1]["turns"][0]["text"] = "   "
    assert check.main([str(_write(tmp_path, data))]) == 1
    assert "the product loader rejects it" in capsys.readouterr().err


def test_an_empty_folder_is_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main([str(tmp_path)]) == 1
    assert "no scenario files found" in capsys.readouterr().err


def test_help_describes_the_checker(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        check.main(["--help"])
    assert stop.value.code == 0
    assert "Validate the notes corpus" in capsys.readouterr().out


def test_overlap_counts_content_words_only() -> None:
    old = "User installs Python packages with pip."
    assert check.content_words(old) == {"install", "python", "package", "pip"}
    assert len(check.content_words(old) & check.content_words("The user switched to uv.")) == 0


def test_baseline_scores_a_ranking() -> None:
    current = {"category": "current", "evidence": ["n9"], "stale": ["n2", "n5"]}
    scored = baseline.score(current, ["n5", "n9", "n1"])
    assert scored == {
        "rank": 2,
        "stale_ranks": [None, 1],
        "current_first": False,
        "current_top3": True,
        "stale_above": True,
    }
    assert baseline.score(current, ["n9", "n2"])["stale_above"] is False
    assert baseline.score(current, ["n2"])["stale_above"] is True  # the current one never came back
    assert baseline.score({"category": "history", "evidence": ["n2"]}, ["n1", "n3", "n4", "n2"]) == {
        "rank": 4,
        "old_top3": False,
    }
    assert baseline.score({"category": "control", "evidence": ["n4"]}, ["n4"])["control_first"] is True


def test_baseline_bm25_ranks_the_matching_note_first() -> None:
    notes = {
        "n1": "Harvest orchestrates jobs with Airflow.",
        "n2": "The user prefers tabs.",
        "n3": "Tidepool deploys to Netlify.",
        "n4": "Standup is at ten.",
    }
    rank = baseline._bm25(notes)
    assert rank("which orchestrator runs harvest jobs?")[0] == "n1"
    assert rank("tabs or spaces?")[0] == "n2"
    assert rank("nothing in common") == ["n1", "n2", "n3", "n4"]  # ties keep note order
