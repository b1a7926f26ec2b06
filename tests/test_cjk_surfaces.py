"""Chinese memories on every surface with the multilingual embedder: the CLI (human output holds the
characters, no \\u escapes; the offline Chinese demo), a search in Chinese over HTTP on a real
uvicorn, and over MCP (the SDK's in-process client)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")

import httpx
from mcp import Client

from dualmem import Memory, Profile, Tenant
from dualmem.cli.main import main
from dualmem.mcp_server import build_mcp
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.service import Service
from server_support import anyio_backend, live_server  # noqa: F401 - fixtures

QUIET = Profile.builtin().with_(write__consolidation="off")
NOTES = [
    ("我在阿里巴巴工作，做前端开发。", "2024-05-02T10:00:00Z"),
    ("我女儿朵朵最喜欢吃草莓。", "2024-05-03T10:00:00Z"),
    ("上周六我买了一辆新自行车。", "2024-05-16T10:00:00Z"),
]
QUESTION = "朵朵喜欢吃什么水果？"
WANTED = "我女儿朵朵最喜欢吃草莓。"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    keys = KeyStore.open(tmp_path / "m.keys.db")
    with Memory.open(tmp_path / "m.db", embedder="multilingual", profile=QUIET) as mem:
        yield Service(mem, keys, consolidate_every=0)
    keys.close()


def test_cli_shows_chinese_as_itself(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(tmp_path / "zh.db")
    cli = ["--db", db, "--user", "lin", "--embedder", "multilingual"]
    for text, at in NOTES:
        assert main(["-q", *cli, "add", text, "--at", at]) == 0
    capsys.readouterr()
    assert main([*cli, "search", QUESTION, "-k", "1"]) == 0
    out = capsys.readouterr().out
    assert WANTED in out
    assert "\\u" not in out
    assert main([*cli, "search", QUESTION, "-k", "1", "--json"]) == 0
    raw = capsys.readouterr().out
    assert WANTED in raw  # JSON with the characters themselves (ensure_ascii=False)
    assert json.loads(raw)["evidence"][0]["node"]["content"] == WANTED


def test_the_chinese_demo_runs_offline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["-q", "--db", str(tmp_path / "unused.db"), "demo", "--lang", "zh", "--json"]) == 0
    answers = {a["question"]: a for a in json.loads(capsys.readouterr().out)["answers"]}
    fruit = answers["朵朵喜欢吃什么水果？"]
    assert not fruit["abstained"]
    assert "草莓" in fruit["answer"]
    job = answers["小林现在在哪家公司上班？"]
    assert "腾讯" in job["answer"]  # the current job: the change superseded 阿里巴巴
    assert main(["-q", "--db", str(tmp_path / "unused.db"), "demo", "--lang", "zh"]) == 0
    human = capsys.readouterr().out
    assert "Q: 朵朵喜欢吃什么水果？" in human
    assert "\\u" not in human


def test_a_chinese_search_over_http(service: Service) -> None:
    _, token = service.keys.create(user="lin")
    app = create_app(
        service.memory, keys=service.keys, settings=ServerSettings(rate_limit=None, consolidate_every=0)
    )
    headers = {"Authorization": f"Bearer {token}"}
    with live_server(app) as url, httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        body = {"observations": [{"text": t, "at": at, "speaker": "user"} for t, at in NOTES]}
        assert http.post("/v1/memories", json=body).status_code == 201
        r = http.post("/v1/search", json={"query": QUESTION, "k": 1})
        assert r.status_code == 200, r.text
        assert r.json()["evidence"][0]["node"]["content"] == WANTED
        assert WANTED.encode("utf-8") in r.content  # UTF-8 on the wire, not \\u escapes
        ans = http.post("/v1/answer", json={"query": QUESTION}).json()
        assert "草莓" in ans["text"]


async def _call(c: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await c.call_tool(name, args)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\\u" not in text  # the text the model reads holds the characters themselves
    assert result.structured_content is not None
    return dict(result.structured_content)


@pytest.mark.anyio
async def test_a_chinese_search_over_mcp(service: Service) -> None:
    async with Client(build_mcp(service, tenant=Tenant("lin"))) as c:
        for text, at in NOTES:
            await _call(c, "add", {"text": text, "at": at, "speaker": "user"})
        found = await _call(c, "search", {"query": QUESTION, "k": 1})
        assert found["evidence"][0]["node"]["content"] == WANTED
        answer = await _call(c, "answer", {"query": QUESTION})
        assert "草莓" in answer["text"]


def test_the_readme_chinese_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if '"multilingual"' in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"Memory": Memory})
    assert "腾讯" in capsys.readouterr().out  # the current job, the older one superseded
