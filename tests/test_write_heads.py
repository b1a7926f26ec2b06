"""Write heads fitted to labels (dualmem.learn.write_heads, ``dualmem calibrate --write-heads-out``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.control.builtin import BuiltinController
from dualmem.conversations import load_conversations, parse_conversations
from dualmem.embed import Embedder
from dualmem.errors import ConfigError, InvalidInput
from dualmem.learn.write_heads import (
    FORMAT,
    MIN_POSITIVES,
    WriteHeads,
    conversation_labels,
    conversation_rows,
    fit_write_heads,
)

TOOLS = [
    ("package manager", "pip", "uv"),
    ("orchestrator", "Airflow", "Dagster"),
    ("database", "MySQL", "PostgreSQL"),
    ("CI", "Jenkins", "GitHub Actions"),
    ("editor", "Vim", "VS Code"),
    ("cloud", "Heroku", "Fly.io"),
    ("test runner", "nose", "pytest"),
    ("bundler", "webpack", "Vite"),
]


def scenario(i: int) -> dict[str, object]:
    """A project's notes: four tools, two of them replaced later, and a note on another attribute."""
    name = f"proj{i}"
    picked = [TOOLS[(i + k) % len(TOOLS)] for k in range(4)]
    turns = [{"id": f"n{k + 1}", "speaker": "agent", "text": f"{name} uses {old} as its {what}."}
             for k, (what, old, _) in enumerate(picked)]  # fmt: skip
    turns.append({"id": "n5", "speaker": "agent", "text": f"{name} has a weekly release on Fridays."})
    turns.append(
        {"id": "n6", "speaker": "agent", "text": f"{name} switched from {picked[0][1]} to {picked[0][2]}."}
    )
    turns.append(
        {
            "id": "n7",
            "speaker": "agent",
            "text": f"{name} no longer uses {picked[1][1]}; it moved to {picked[1][2]}.",
        }
    )
    turns.append({"id": "n8", "speaker": "agent", "text": f"{name} also added a nightly build."})
    day = [{"id": "d1", "date": f"2024-03-0{1 + i % 9}T09:00:00Z", "turns": turns[:5]},
           {"id": "d2", "date": f"2024-04-0{1 + i % 9}T09:00:00Z", "turns": turns[5:]}]  # fmt: skip
    return {
        "id": name,
        "sessions": day,
        "updates": [{"new": "n6", "old": "n1"}, {"new": "n7", "old": "n2"}],
        "non_updates": [{"new": "n8", "old": "n5"}],
        "questions": [{"question": f"What does {name} deploy and test with?", "evidence": ["n3", "n4"]}],
    }


def test_labels_come_from_updates_chains_and_multi_turn_evidence() -> None:
    data = {
        "id": "c",
        "sessions": [{"turns": [{"speaker": "a", "text": t} for t in ("x1", "x2", "x3", "x4", "x5")]}],
        "updates": [{"new": "s1:2", "old": "s1:1"}, {"new": "s1:3", "old": "s1:2"}],
        "non_updates": [{"new": "s1:5", "old": "s1:1"}],
        "questions": [
            {"question": "now?", "evidence": ["s1:4", "s1:3"], "category": "knowledge_update"},
            {"question": "both?", "evidence": ["s1:1", "s1:4"]},
        ],
    }
    (conv,) = parse_conversations(data, name="c")
    updates, hard, related = conversation_labels(conv)
    # a chain: the last version replaces every earlier one; a knowledge update names (new, old)
    chain = {("s1:2", "s1:1"), ("s1:3", "s1:2"), ("s1:3", "s1:1")}
    assert updates == chain | {("s1:4", "s1:3"), ("s1:4", "s1:2"), ("s1:4", "s1:1")}
    assert hard == {("s1:5", "s1:1")}
    assert {("s1:1", "s1:4"), ("s1:4", "s1:1"), ("s1:3", "s1:4")} <= related


def test_a_label_naming_no_turn_is_refused() -> None:
    data = {
        "id": "c",
        "sessions": [{"turns": [{"speaker": "a", "text": "x"}]}],
        "updates": [{"new": "s1:1", "old": "s9:9"}],
    }
    with pytest.raises(InvalidInput, match=r"updates\[0\] names no turn 's9:9'"):
        parse_conversations(data, name="c")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory, hashing_module: Embedder) -> list[object]:
    out: list[object] = []
    path = tmp_path_factory.mktemp("wh") / "m.db"
    with Memory.open(path, embedder=hashing_module, answerer=None) as mem:
        for i in range(12):
            (conv,) = parse_conversations(scenario(i), name=f"proj{i}")
            mem.add_many(conv.observations, user=conv.id)
            out += conversation_rows(mem.store, conv, "a" if i % 2 else "b")
    return out


@pytest.fixture(scope="module")
def hashing_module() -> Embedder:
    from dualmem.embed import HashingEmbedder

    return HashingEmbedder(256)


def test_the_judged_pairs_carry_the_labels(rows: list[object]) -> None:
    updates = [r for r in rows if r.update]  # type: ignore[attr-defined]
    assert len(updates) >= MIN_POSITIVES  # every labelled update pair was judged by the write path
    assert {(r.new, r.old) for r in updates} == {("n6", "n1"), ("n7", "n2")}  # type: ignore[attr-defined]
    assert any(r.hard for r in rows)  # type: ignore[attr-defined]


def test_fitted_heads_supersede_at_write_time(
    rows: list[object], hashing_module: Embedder, tmp_path: Path
) -> None:
    heads = fit_write_heads(rows, provenance={"command": "test"})  # type: ignore[arg-type]
    assert "relation.supersedes" in heads.decisions
    info = heads.provenance["heads"]["relation.supersedes"]
    assert info["fitted"] is True
    assert 0.0 < info["threshold"] < 1.0
    path = tmp_path / "heads.json"
    heads.save(path)
    assert json.loads(path.read_text())["format"] == FORMAT
    again = WriteHeads.from_file(path)
    assert again.decisions == heads.decisions
    # a new project, never fitted on: its replaced tool is superseded when the update is written
    ctl = BuiltinController(weights=again.weights())
    with Memory.open(tmp_path / "n.db", embedder=hashing_module, controller=ctl, answerer=None) as mem:
        (conv,) = parse_conversations(scenario(40), name="proj40")
        ids = dict(
            zip(
                (o.turn_id for o in conv.observations), mem.add_many(conv.observations, user="u"), strict=True
            )
        )
        ended = {o for o, i in ids.items() if mem.get(i, user="u").valid_to is not None}
    assert "n1" in ended
    assert "n5" not in ended  # "also added" adds beside what stands


def test_a_bad_heads_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('{"format": "other"}')
    with pytest.raises(ConfigError, match=r"not a dualmem\.write-heads/1 file"):
        WriteHeads.from_file(path)
    path.write_text(
        json.dumps({"format": FORMAT, "decisions": {"relation.supersedes": {"weights": {"nope": 1}}}})
    )
    with pytest.raises(ConfigError, match="unknown features"):
        WriteHeads.from_file(path)


def test_calibrate_writes_the_write_heads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for group in ("a", "b"):
        folder = tmp_path / group
        folder.mkdir()
        for i in range(6):
            k = i * 2 + (group == "a")
            (folder / f"p{k}.json").write_text(json.dumps(scenario(k)))
    out, heads = tmp_path / "ranker.json", tmp_path / "write.json"
    data = [str(tmp_path / "a"), str(tmp_path / "b")]
    argv = ["-q", "--json", "--embedder", "hashing", "calibrate", "--data", *data,
            "--out", str(out), "--scorer", "linear", "--write-heads-out", str(heads)]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["write_heads"]["heads"]["relation.supersedes"]["fitted"] is True
    fitted = WriteHeads.from_file(heads)
    assert "relation.supersedes" in fitted.decisions
    assert fitted.provenance["groups"] == sorted([str(tmp_path / "a"), str(tmp_path / "b")])


def test_calibrate_refuses_write_heads_from_query_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text('{"query": "x", "relevant": ["a"], "user": "u"}\n')
    argv = ["--db", str(tmp_path / "m.db"), "calibrate", "--data", str(q), "--out", str(tmp_path / "r.json"),
            "--scorer", "linear", "--write-heads-out", str(tmp_path / "w.json")]  # fmt: skip
    code = main(argv)
    assert code == 2
    assert "labelled conversations" in capsys.readouterr().err


def test_every_notes_scenario_loads_its_labels() -> None:
    notes = Path(__file__).resolve().parents[1] / "bench" / "notes" / "src"
    convs = load_conversations(notes)
    assert sum(len(c.updates) for c in convs) >= 150
    assert all(u for c in convs for u in c.updates)
    assert Profile.builtin().write.supersede_threshold is not None
