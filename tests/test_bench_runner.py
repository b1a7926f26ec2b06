"""The LoCoMo harness end to end on the tiny fixture (hashing embedder, builtin controller)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from dualmem.bench import ALL_SYSTEMS, BenchConfig, Endpoint, run_locomo
from dualmem.bench.locomo import system_spec
from dualmem.bench.metrics import recall_at_k
from dualmem.cli.bench import add_bench_arguments, bench_from_args
from dualmem.config import Profile
from dualmem.errors import ConfigError
from dualmem.types import VIEWS
from fakes.openai_server import FakeOpenAIServer, chat_text, prompt_text

TINY = Path(__file__).resolve().parent / "fixtures" / "locomo_tiny.json"


def test_arguments_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-test")
    parser = argparse.ArgumentParser()
    add_bench_arguments(parser)
    ns = parser.parse_args(
        ["--data", "d.json", "--systems", "dualmem", "bm25", "--judge", "http://127.0.0.1:9/v1",
         "--api-key-env", "MY_KEY", "--limit", "2", "--answerer", "extractive"]
    )  # fmt: skip
    cfg = bench_from_args(ns)
    assert cfg.systems == ("dualmem", "bm25")
    assert cfg.judges == (Endpoint("http://127.0.0.1:9/v1", "gpt-4o-mini", "sk-test"),)
    assert cfg.limit == 2
    assert "sk-test" not in json.dumps(cfg.public())
    default = bench_from_args(parser.parse_args(["--data", "d.json"]))
    assert default.systems == ALL_SYSTEMS
    assert default.judges == ()
    assert default.answerer == "none"


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="unknown system"):
        BenchConfig(data=TINY, systems=("nope",))
    with pytest.raises(ConfigError, match="needs an endpoint"):
        BenchConfig(data=TINY, answerer="chat")


def test_system_specs_change_the_profile() -> None:
    base = Profile.builtin()
    assert system_spec("no-write-control").profile(base).write.relations_enabled is False
    assert system_spec("no-read-control").profile(base).read.controller_enabled is False
    assert system_spec("no-causal").profile(base).read.views == ("semantic", "temporal", "entity")
    assert system_spec("dualmem").profile(base) == base


def _judge_reply(request: dict[str, Any]) -> dict[str, Any]:
    text = prompt_text(request)
    assert "category" not in text.lower().split("question:")[0]  # the judge sees no category
    if "SCORE:" in text:
        return chat_text("SCORE: 0.5", request=request)
    return chat_text("CORRECT", request=request)


def test_run_locomo_end_to_end_and_resume(tmp_path: Path) -> None:
    # every system but the view ablations, of which no-entity stands for all
    systems = (*(s for s in ALL_SYSTEMS if s.removeprefix("no-") not in VIEWS), "no-entity")
    assert systems == ("dualmem", "bm25", "dense", "hybrid", "full-context", "no-write-control",
                       "no-read-control", "no-entity")  # fmt: skip
    with FakeOpenAIServer(chat=_judge_reply) as server:
        cfg = BenchConfig(
            data=TINY,
            out=tmp_path / "out",
            systems=systems,
            embedder="hashing",
            answerer="extractive",
            judges=(Endpoint(server.base_url, "judge-model"),),
        )
        result = run_locomo(cfg, progress=False)
        first_requests = len(server.chat_requests())
        again = run_locomo(cfg, progress=False)
        assert len(server.chat_requests()) == first_requests  # judged records came from the cache

    assert len(result.records) == len(systems) * 6
    assert {b.build for b in result.builds} == {"full", "no-write-control"}
    assert not any(b.cached for b in result.builds)
    assert all(b.cached for b in again.builds)
    assert [r.to_json() for r in again.records] == [r.to_json() for r in result.records]
    assert first_requests == len(systems) * 6 * 2  # binary + continuous judge per answer

    for rec in result.records:
        if rec.system == "full-context":
            assert rec.retrieved == ()
            assert rec.recall == {}
            continue
        assert len(rec.retrieved) <= cfg.max_k
        assert rec.recall["5"] == recall_at_k(rec.retrieved, rec.gold_evidence, 5)
        assert rec.answer is not None
        assert rec.scores["judge_binary@judge-model"] == 1.0
        assert rec.scores["judge_score@judge-model"] == 0.5
        assert rec.e2e_ms is not None
        assert rec.retrieval_ms is not None
        assert rec.e2e_ms >= rec.retrieval_ms
    dualmem = [r for r in result.records if r.system == "dualmem"]
    assert all(r.trace["controller_calls"] >= 1 for r in dualmem)
    assert all(
        r.trace["stop_reason"] == "controller_off" for r in result.records if r.system == "no-read-control"
    )

    summary = result.summary
    assert list(summary["systems"]) == list(systems)
    assert summary["builds"]["full"]["turns"] == 10
    assert summary["systems"]["dualmem"]["qa"]["judge_binary@judge-model"]["all"]["mean"] == 1.0

    report = result.report.read_text()
    assert "| Multi-Hop | Temporal | Open-Domain | Single-Hop | Adversarial |" in report
    assert "## Efficiency" in report
    data = json.loads(result.results.read_text())
    assert len(data["records"]) == len(result.records)
    assert data["conversations"][0]["skipped_evidence"] == 1
    assert {p.name for p in result.plots} == {"recall_at_k.png", "latency.png", "build_time.png"}
    assert all(p.stat().st_size > 1000 for p in result.plots)


def test_without_answerer_full_context_is_skipped_and_answered_uses_stop_reason(tmp_path: Path) -> None:
    cfg = BenchConfig(
        data=TINY,
        out=tmp_path,
        systems=("dualmem", "bm25", "full-context"),
        embedder="hashing",
        max_questions=3,
    )
    result = run_locomo(cfg, progress=False)
    assert {r.system for r in result.records} == {"dualmem", "bm25"}
    assert len(result.records) == 6
    for rec in result.records:
        assert rec.answer is None
        assert rec.scores == {}
        if rec.system == "dualmem":
            assert rec.answered == (rec.trace["stop_reason"] == "sufficient")
        else:
            assert rec.answered is None
