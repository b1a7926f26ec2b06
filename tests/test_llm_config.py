"""Issue 12, finding 1: backend options reach the llm backend through a typed config, not the environment.

Against a local fake OpenAI-compatible server; the CLI runs in-process (``dualmem.cli.main.main``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from dualmem import LLMConfig, Memory, OpenOptions
from dualmem.cli.bench import add_bench_arguments, bench_from_args
from dualmem.cli.main import main
from dualmem.control import create_controller
from dualmem.control.config import JevConfig, is_local_url
from dualmem.control.llm import LLMController
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError
from fakes.openai_server import FakeOpenAIServer


def test_open_with_llm_and_no_settings_is_a_config_error_even_with_the_env_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DUALMEM_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DUALMEM_LLM_MODEL", "m")
    with pytest.raises(ConfigError) as info:
        Memory.open(embedder=HashingEmbedder(8), controller="llm")
    assert "LLMConfig" in (info.value.hint or "")  # the hint says how: LLMConfig(...) or .from_env()


def test_from_env_reads_every_setting_and_overrides_win() -> None:
    env = {
        "DUALMEM_LLM_URL": "http://127.0.0.1:8080/v1",
        "DUALMEM_LLM_MODEL": "qwen",
        "DUALMEM_LLM_KEY": "sk-1",
        "DUALMEM_LLM_TIMEOUT": "12.5",
        "DUALMEM_LLM_CONCURRENCY": "2",
        "DUALMEM_LLM_RETRIES": "0",
        "DUALMEM_LLM_CONTEXT": "2048",
        "DUALMEM_LLM_DEBIAS": "none",
    }
    cfg = LLMConfig.from_env(env, retries=5)
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.timeout_s) == (
        "http://127.0.0.1:8080/v1",
        "qwen",
        "sk-1",
        12.5,
    )
    assert (cfg.concurrency, cfg.retries, cfg.context_tokens, cfg.debias) == (2, 5, 2048, "none")
    assert cfg.retry.attempts == 6
    assert "sk-1" not in repr(cfg)
    assert "sk-1" not in json.dumps(cfg.public())


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({}, "DUALMEM_LLM_URL and DUALMEM_LLM_MODEL"),
        ({"DUALMEM_LLM_URL": "http://h/v1"}, "DUALMEM_LLM_MODEL"),
        (
            {"DUALMEM_LLM_URL": "http://h/v1", "DUALMEM_LLM_MODEL": "m", "DUALMEM_LLM_TIMEOUT": "soon"},
            "number",
        ),
        ({"DUALMEM_LLM_URL": "h:8080", "DUALMEM_LLM_MODEL": "m"}, "http"),
        (
            {"DUALMEM_LLM_URL": "http://h/v1", "DUALMEM_LLM_MODEL": "m", "DUALMEM_LLM_CONCURRENCY": "0"},
            "positive",
        ),
        ({"DUALMEM_LLM_URL": "http://h/v1", "DUALMEM_LLM_MODEL": "m", "DUALMEM_LLM_DEBIAS": "x"}, "debias"),
    ],
)
def test_bad_or_missing_settings_are_config_errors_with_a_hint(env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        LLMConfig.from_env(env)
    assert info.value.hint or "must" in str(info.value)


def test_jev_config_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="TYPESAFE_API_KEY"):
        JevConfig.from_env({})
    assert JevConfig.from_env({"TYPESAFE_API_KEY": "k", "DUALMEM_JEV_RETRIES": "1"}).retry.attempts == 2


def test_local_urls() -> None:
    assert is_local_url("http://127.0.0.1:8080/v1")
    assert is_local_url("http://localhost/v1")
    assert is_local_url("http://[::1]:8000/v1")
    assert not is_local_url("https://api.example.com/v1")
    assert not is_local_url("http://10.0.0.2/v1")


def test_memory_open_with_a_typed_config_uses_the_server(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        cfg = LLMConfig(base_url=server.base_url, model="fake-model", timeout_s=5, retries=0, debias="none")
        with Memory.open(tmp_path / "m.db", embedder=HashingEmbedder(8), controller="llm",
                         options=OpenOptions(controller=cfg)) as mem:  # fmt: skip
            assert isinstance(mem.controller, LLMController)
            assert mem.controller.concurrency == 1  # a loopback server
            mem.add("Mira: my bike is blue.", user="u")
            assert mem.stats(user="u")["pending"] == 0
        assert server.chat_requests()


def test_a_config_for_the_wrong_backend_is_refused() -> None:
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ConfigError, match="cannot take a LLMConfig"):
        create_controller("jev", config=cfg)
    with pytest.raises(ConfigError, match="not both"):
        create_controller("llm", config=cfg, timeout=3)


def test_cli_flags_configure_the_llm_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("DUALMEM_LLM_URL", raising=False)
    monkeypatch.setenv("DUALMEM_LLM_MODEL", "fake-model")  # flags and env combine; flags win
    db = str(tmp_path / "cli.db")
    with FakeOpenAIServer() as server:
        args = ["--db", db, "--user", "mira", "--embedder", "hashing:8", "--controller", "llm",
                "--llm-url", server.base_url,
                "--llm-timeout", "5", "--llm-retries", "0", "--llm-debias", "none",
                "--llm-context", "4096"]  # fmt: skip
        assert main([*args, "add", "Mira: my bike is blue."]) == 0
        assert server.chat_requests()
    capsys.readouterr()
    assert main(["--db", db, "--embedder", "hashing:8", "--controller", "llm", "stats"]) == 2
    assert "--llm-url" in capsys.readouterr().err  # missing URL: one line, a hint, exit 2


def test_bench_takes_the_same_llm_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DUALMEM_LLM_URL", raising=False)
    parser = argparse.ArgumentParser()
    add_bench_arguments(parser)
    ns = parser.parse_args(
        ["--data", str(tmp_path), "--controller", "llm", "--llm-url", "http://127.0.0.1:8080/v1",
         "--llm-model", "q", "--llm-timeout", "9", "--llm-concurrency", "1", "--llm-context", "2048"]
    )  # fmt: skip
    config = bench_from_args(ns)
    assert config.llm is not None
    assert (config.llm.timeout_s, config.llm.concurrency, config.llm.context_tokens) == (9.0, 1, 2048)
    assert config.public()["llm"] == config.llm.public()
    with pytest.raises(ConfigError):
        bench_from_args(parser.parse_args(["--data", str(tmp_path), "--controller", "llm"]))


def test_jev_from_a_typed_config(jev_server: Any) -> None:
    from dualmem.control.questions import Batch, Noul

    cfg = JevConfig(api_key="k", base_url=jev_server.url, retries=0, max_concurrency=2)
    with create_controller("jev", config=cfg) as ctl:  # type: ignore[attr-defined]
        assert ctl.concurrency == 2
        q = Noul("typing.episodic", "Does observation describe an event?", "An event.", "No event.")
        outcomes = ctl.decide_each([Batch(state={"observation": "x"}, questions={"e": q})] * 2)  # type: ignore[attr-defined]
    assert all(0.0 <= o.noul("e") <= 1.0 for o in outcomes)
