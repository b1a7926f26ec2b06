"""``dualmem calibrate``: weights from labelled queries and from a teacher on a local fake server."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dualmem.cli.main import main
from dualmem.learn import LinearRanker, TreeRanker, load_ranker
from dualmem.learn.heads import HEAD_GROUPS, LearnedHeads
from dualmem.read.pool import FEATURES
from fakes.openai_server import FakeOpenAIServer, chat_logprobs, shown_options

PETS = ["dog Pepper", "cat Miso", "parrot Kiwi", "hamster Nibbles", "rabbit Clover", "turtle Shelly"]
FILLER = ["Nice weather today.", "How was work?", "I had pasta for lunch.", "The train was late again."]


def _conversation(name: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    turns, questions = [], []
    for i, pet in enumerate(PETS):
        kind, pet_name = pet.split()
        for j in range(3):
            turns.append(
                {"speaker": "Ana" if j % 2 else "Ben", "text": str(rng.choice(FILLER)), "id": f"{i}:{j}"}
            )
        turns.append(
            {"speaker": "Ana", "text": f"Guess what, I adopted a {kind} named {pet_name}!", "id": f"{i}:x"}
        )
        questions.append({"question": f"What is the name of the {kind} Ana adopted?", "answer": pet_name,
                          "evidence": [f"{i}:x"], "category": 4})  # fmt: skip
    return {
        "id": name,
        "sessions": [{"id": "s1", "date": "2024-05-14T10:00:00Z", "turns": turns}],
        "questions": questions,
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    d = tmp_path / "convs"
    d.mkdir()
    for i in range(2):
        (d / f"c{i}.json").write_text(json.dumps(_conversation(f"c{i}", i)), encoding="utf-8")
    return d


def test_calibrate_from_labels_writes_weights_with_provenance(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "w.json"
    code = main(["--embedder", "hashing:64", "-q", "calibrate", "--data", str(data), "--out", str(out),
                 "--scorer", "linear"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    ranker = LinearRanker.from_file(out)
    assert ranker.features == FEATURES
    prov = ranker.provenance
    assert prov["mode"] == "labels"
    assert prov["queries"] == 12
    assert prov["groups"] == ["c0", "c1"]
    assert prov["command"].startswith("dualmem ")
    assert "calibrate" in prov["command"]
    assert list(prov["data"]) == [str(data)]
    assert len(next(iter(prov["data"].values()))) == 64
    assert prov["l2"] in (0.3, 3.0, 30.0)
    # the answer turn shares the query's words: the fitted scorer must like lexical evidence
    assert dict(zip(ranker.features, ranker.weights, strict=True))["lex_q"] > 0


def test_calibrate_fits_trees_by_default_and_they_rank_the_answers(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "t.json"
    code = main(["--embedder", "hashing:64", "-q", "calibrate", "--data", str(data), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    ranker = load_ranker(out)
    assert isinstance(ranker, TreeRanker)
    prov = ranker.provenance
    assert prov["scorer"] == "trees"
    assert prov["trees"] == len(ranker.trees)
    # two groups: the count is chosen on each held-out conversation, every count scored
    assert {int(k) for k in prov["inner_r10"]} == {100, 200, 300, 400}
    assert prov["groups"] == ["c0", "c1"]
    given = tmp_path / "t50.json"
    assert main(["--embedder", "hashing:64", "-q", "calibrate", "--data", str(data), "--out", str(given),
                 "--trees", "50"]) == 0  # fmt: skip
    assert 1 <= len(load_ranker(given).trees) <= 50  # type: ignore[attr-defined]
    # and the builtin reads with it: every pet question finds its adoption turn first
    from dualmem import Memory
    from dualmem.control.builtin import BuiltinController
    from dualmem.conversations import load_conversations
    from dualmem.embed import create_embedder

    conv = load_conversations(data / "c0.json")[0]
    with Memory.open(tmp_path / "m.db", embedder=create_embedder("hashing:64"),
                     controller=BuiltinController(ranker=ranker)) as mem:  # fmt: skip
        mem.add_many(conv.observations, user="u")
        for q in conv.questions:
            top = mem.search(q.question, user="u", k=3).evidence
            assert top[0].node.turn_id in q.evidence


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--trees", "0"], "--trees"),
        (["--scorer", "linear", "--trees", "5"], "--trees"),
        (["--l2", "1"], "--l2"),
    ],
)
def test_calibrate_refuses_settings_of_the_other_scorer(
    data: Path, tmp_path: Path, capsys: Any, flags: list[str], match: str
) -> None:
    out = tmp_path / "w.json"
    cmd = ["--embedder", "hashing:64", "calibrate", "--data", str(data), "--out", str(out), *flags]
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert match in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_calibrate_heads_out_writes_heads_and_the_same_ranker(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    plain, out, heads_path = tmp_path / "plain.json", tmp_path / "w.json", tmp_path / "heads.json"
    base = [
        "--embedder",
        "hashing:64",
        "-q",
        "calibrate",
        "--data",
        str(data),
        "--scorer",
        "linear",
        "--l2",
        "3.0",
    ]
    assert main([*base, "--out", str(plain)]) == 0, capsys.readouterr().err
    assert main([*base, "--out", str(out), "--heads-out", str(heads_path)]) == 0, capsys.readouterr().err
    # one pool per question serves both: the relevance head is the one the plain run fits
    assert LinearRanker.from_file(out).weights == pytest.approx(LinearRanker.from_file(plain).weights)
    heads = LearnedHeads.from_file(heads_path)
    assert "--heads-out" in heads.provenance["command"]
    # twelve easy questions: every gold turn is in the top 10, no adversarial question, few edges,
    # so no head has the examples it needs and each says so
    assert not heads.decisions
    assert heads.abstention is None
    assert set(heads.unsupported) == {*HEAD_GROUPS, "abstention"}
    assert main([*base, "--out", str(out), "--heads-out", str(heads_path), "--teacher", "llm"]) == 2


def test_calibrate_from_a_jsonl_against_a_database(tmp_path: Path, capsys: Any) -> None:
    db = tmp_path / "m.db"
    base = ["--db", str(db), "--embedder", "hashing:64", "-q"]
    ids = []
    for i, pet in enumerate(PETS):
        for filler in FILLER[:2]:
            assert main([*base, "--user", "u", "add", filler, "--session", "s"]) == 0
        capsys.readouterr()
        assert (
            main([*base, "--user", "u", "add", f"I adopted a {pet}", "--session", "s", "--speaker", "Ana"])
            == 0
        )
        ids.append(json.loads(capsys.readouterr().out)["id"])
        del i
    queries = tmp_path / "q.jsonl"
    rows = [
        {"query": f"Which {p.split()[0]} was adopted?", "relevant": [ids[i]], "user": "u"}
        for i, p in enumerate(PETS)
    ]
    queries.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    out = tmp_path / "w.json"
    cmd = ["calibrate", "--data", str(queries), "--out", str(out), "--scorer", "linear", "--l2", "1"]
    assert main([*base, *cmd]) == 0
    prov = LinearRanker.from_file(out).provenance
    assert prov["queries"] == 6
    assert prov["l2"] == 1.0


def test_calibrate_rejects_bad_jsonl(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"query": "x", "relevant": "n1", "user": "u"}\n', encoding="utf-8")
    code = main(["--db", str(tmp_path / "m.db"), "--embedder", "hashing:64", "calibrate", "--data", str(bad),
                 "--out", str(tmp_path / "w.json")])  # fmt: skip
    assert code == 2
    assert "relevant" in capsys.readouterr().err


def _teacher(request: dict[str, Any]) -> dict[str, Any]:
    """A stand-in relevance model: yes when the asked-about candidate names an adopted animal."""
    text = request["messages"][-1]["content"]
    state = json.loads(text.split("State (JSON):\n", 1)[1].split("\n\nQuestion:", 1)[0])
    i = int(re.search(r"candidates\[(\d+)\]", text).group(1))  # type: ignore[union-attr]
    yes = "adopted" in state["candidates"][i]["content"]
    p = 0.9 if yes else 0.1
    # it answers by meaning, whichever order the options are shown in (the backend asks both orders)
    shown = {body.split(":", 1)[0]: tok for tok, body in shown_options(request)}
    return chat_logprobs({shown["Yes"]: math.log(p), shown["No"]: math.log(1 - p)}, request=request)


def test_calibrate_distils_a_teacher_and_records_its_decisions(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    out, log = tmp_path / "w.json", tmp_path / "teacher.jsonl"
    with FakeOpenAIServer(chat=_teacher) as server:
        code = main(["--embedder", "hashing:64", "-q", "calibrate", "--data", str(data), "--out", str(out),
                     "--teacher", "llm", "--teacher-url", server.base_url, "--teacher-model", "fake",
                     "--teacher-log", str(log), "--per-query", "8"])  # fmt: skip
        asked = len(server.chat_requests())
    assert code == 0, capsys.readouterr().err
    decisions = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    # one relevance question per shortlisted candidate, each read in both option orders (debiasing)
    assert len(decisions) == 12 * 8
    assert asked == 2 * len(decisions)
    assert {d["backend"] for d in decisions} == {"llm"}
    assert {round(d["relevance"], 2) for d in decisions} == {0.1, 0.9}
    ranker = load_ranker(out)  # the default scorer: trees over the teacher's yes/no (above 0.5)
    assert isinstance(ranker, TreeRanker)
    assert ranker.provenance["mode"] == "teacher"
    assert ranker.provenance["teacher"]["backend"] == "llm"


def test_calibrate_builds_the_pools_with_the_channels_it_is_given(
    data: Path, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "c.json"
    base = ["--embedder", "hashing:64", "-q", "calibrate", "--data", str(data), "--trees", "20"]
    code = main([*base, "--out", str(out), "--channels", "temporal=5", "entity=5"])
    assert code == 0, capsys.readouterr().err
    assert "--channels" in json.dumps(load_ranker(out).provenance)  # the command is recorded
    assert main([*base, "--out", str(out), "--channels", "entity"]) == 2
    assert "NAME=SIZE" in capsys.readouterr().err
    assert main([*base, "--out", str(out), "--channels", "causality=5"]) == 2
