"""The leave-one-conversation-out CV harness on small conversations (hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from research.cv import (
    VIEW_ABLATIONS,
    CVConfig,
    load_links,
    load_pools,
    read_variant,
    run_cv,
    summarize_cv,
)
from research.cv_heads import heads_cv, heads_search

from dualmem.learn.heads import HEAD_GROUPS

PETS = ["dog Pepper", "cat Miso", "parrot Kiwi", "hamster Nibbles", "rabbit Clover"]
FILLER = ["Nice weather today.", "How was work?", "I had pasta for lunch.", "The train was late again."]


def _conversation(name: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sessions = []
    questions: list[dict[str, Any]] = []
    for i, pet in enumerate(PETS):
        kind, pet_name = pet.split()
        turns = [
            {"speaker": "Ana" if j % 2 else "Ben", "text": str(rng.choice(FILLER)), "id": f"{i}:{j}"}
            for j in range(3)
        ]
        turns.insert(
            1, {"speaker": "Ana", "text": f"Guess what, I adopted a {kind} named {pet_name}!", "id": f"{i}:x"}
        )
        sessions.append({"id": f"s{i}", "date": f"2024-05-{10 + i}T10:00:00Z", "turns": turns})
        questions.append({"question": f"What is the name of the {kind} Ana adopted?", "answer": pet_name,
                          "evidence": [f"{i}:x"], "category": 4})  # fmt: skip
    questions.append(
        {"question": "What is the name of Ben's horse?", "answer": None, "evidence": ["0:x"], "category": 5}
    )
    return {"id": name, "sessions": sessions, "questions": questions}


def _conversations(tmp_path: Path, n: int = 3) -> Path:
    """A folder of ``n`` small conversations (``c0.json``, ...) under ``tmp_path``."""
    data = tmp_path / "convs"
    data.mkdir()
    for i in range(n):
        (data / f"c{i}.json").write_text(json.dumps(_conversation(f"c{i}", i)), encoding="utf-8")
    return data


@pytest.mark.slow
def test_cv_reports_every_fold_and_system_from_one_run(tmp_path: Path) -> None:
    data = _conversations(tmp_path)
    cfg = CVConfig(data=data, out=tmp_path / "out", embedder="hashing:64", ablations=("no-speaker",),
                   view_ablations=("expansion", "all-edges", "versions"))  # fmt: skip
    result = run_cv(cfg, progress=False, log=lambda _m: None)
    assert result.report is not None
    assert result.report.exists()
    assert set(result.folds) == {"c0", "c1", "c2"}
    summary = summarize_cv(result.rows)
    reach = {"dualmem-pool +reach", "dualmem-pool +reach routed", "dualmem-pool +reach multi-hop"} | {
        f"dualmem-pool +reach no-{v}" for v in ("semantic", "temporal", "causal", "entity")
    }
    systems = {"dualmem", "dualmem-pool", "dualmem-pool no-speaker", "dualmem no-expansion",
               "dualmem all-edges", "dualmem no-versions", "bm25", "dense", "hybrid",
               "dualmem-handset"} | reach  # fmt: skip
    assert set(summary) == systems
    for name in systems:
        s = summary[name]
        assert s["all"]["n"] == 15  # 5 questions of categories 1-4 per held-out conversation
        assert set(s["fold"]) == {"c0", "c1", "c2"}
        assert 0.0 <= s["all"]["R@10"] <= 1.0
    # the answer turns share the question's words: the fitted scorer finds them
    assert summary["dualmem"]["all"]["R@5"] >= summary["dense"]["all"]["R@5"]
    for fold in result.abstention.values():
        assert fold["correct_abstention_5"] is not None
        assert fold["false_abstention_1_4"] is not None
        # the learned gate is fitted on the training folds; the answerer's own abstentions stay
        assert fold["learned_gate_correct_5"] is not None
        assert fold["learned_gate_correct_5"] >= fold["correct_abstention_5"]
        assert 0.0 <= fold["gate_threshold"] <= 1.0
    assert all("reach" in f and "multi_hop_theta" in f["reach"] for f in result.folds.values())
    # the loop ranks by its fold's scorer: never below the pool ranking it starts from (the versions
    # rule may then reorder: here the hashing embedder makes each adoption look like an update)
    for k in ("R@1", "R@5", "R@10", "R@20"):
        assert summary["dualmem no-versions"]["all"][k] >= summary["dualmem-pool"]["all"][k] - 1e-9
    assert "dualmem (Memory.search)" in result.latency
    text = result.report.read_text(encoding="utf-8")
    assert "leave-one-conversation-out" in text
    assert "| bm25 |" in text


@pytest.mark.slow
def test_heads_cv_and_the_loop_with_fold_fitted_heads(tmp_path: Path) -> None:
    data = _conversations(tmp_path)
    cfg = CVConfig(data=data, out=tmp_path / "out", embedder="hashing:64", handset=False)
    paths: dict[str, Path] = {}
    pools = load_pools(cfg, progress=False, paths=paths)
    links = load_links(cfg, pools, paths)
    auc = heads_cv(cfg, pools, links, paths)
    assert set(auc) == {"c0", "c1", "c2"}
    for fold in auc.values():
        assert set(fold) == set(HEAD_GROUPS)
        # ten easy questions per training fold: no head has the examples it needs, each says why
        assert all(h["learned_auc"] is None and h["unsupported"] for h in fold.values())
    rows, stats = heads_search(cfg, pools, links, paths, limit=2)
    assert set(stats) == {"dualmem", "dualmem +heads"}
    assert len(rows) == 2 * 3 * 2
    assert all(len(s["calls"]) == 6 and sum(s["stops"].values()) == 6 for s in stats.values())


def test_read_variants_change_one_setting_each() -> None:
    from research.builds import views_profile

    from dualmem.errors import DualmemError

    base = views_profile()  # the research's base: every view on (the builtin profile reads none)
    assert read_variant(base, None) == base
    assert read_variant(base, "views").read.views == ()
    assert read_variant(base, "expansion").read.expansion is False
    assert read_variant(base, "entity").read.views == ("semantic", "temporal", "causal")
    assert read_variant(base, "all-edges").read.edges_per_node is None
    assert all(read_variant(base, v) != base for v in VIEW_ABLATIONS)
    with pytest.raises((ValueError, DualmemError)):
        read_variant(base, "nonsense")


@pytest.mark.slow
def test_joint_cv_fits_one_scorer_over_two_corpora(tmp_path: Path) -> None:
    from research.cv_joint import Corpus, JointConfig, run_joint, summarize

    dirs = {"persona": tmp_path / "persona", "agent": tmp_path / "agent"}
    for d in dirs.values():
        d.mkdir()
    for i in range(2):
        (dirs["persona"] / f"p{i}.json").write_text(json.dumps(_conversation(f"p{i}", i)), encoding="utf-8")
    for i in range(4):
        conv = _conversation(f"a{i}", 10 + i)
        for q in conv["questions"]:
            q["category"] = "single_session_user" if q["category"] == 4 else q["category"]
        (dirs["agent"] / f"a{i}.json").write_text(json.dumps(conv), encoding="utf-8")
    cfg = JointConfig(
        corpora=(Corpus("persona", dirs["persona"]), Corpus("agent", dirs["agent"], folds=2)),
        out=tmp_path / "out",
        embedder="hashing:64",
        views=("expansion",),
    )
    result = run_joint(cfg, progress=False, log=lambda _m: None)
    assert result.report is not None
    assert "## agent" in result.report.read_text(encoding="utf-8")
    assert set(result.folds) == {"persona/p0", "persona/p1", "agent/fold0", "agent/fold1"}
    summary = summarize(result.rows)
    assert set(summary) == {"persona", "agent"}
    systems = {"dualmem", "dualmem-pool", "random-s1", "dualmem no-expansion", "bm25", "dense", "hybrid"}
    for corpus, n in (("persona", 10), ("agent", 20)):
        assert set(summary[corpus]) == systems
        assert all(s["n"] == n for s in summary[corpus].values())
    assert set(summary["agent"]["dualmem"]["categories"]) == {"single_session_user"}
    assert summary["agent"]["dualmem"]["R@1"] > summary["agent"]["random-s1"]["R@1"]
    # the default scorer is trees, their count chosen per fold by inner CV; linear on request
    assert all(f["scorer"] == "trees" and f["trees"] in f["inner_r10"] for f in result.folds.values())
    from dataclasses import replace

    linear = run_joint(
        replace(cfg, scorer="linear", views=(), random_seed=None), progress=False, log=lambda _m: None
    )
    assert all(f["scorer"] == "linear" and "lex_q" in f["weights"] for f in linear.folds.values())
    assert "L2" in linear.report.read_text(encoding="utf-8")  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="unknown scorer"):
        run_joint(replace(cfg, scorer="forest"), progress=False, log=lambda _m: None)
