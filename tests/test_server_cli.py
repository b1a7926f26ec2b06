"""``dualmem keys`` and ``dualmem serve`` from the command line (serve as a real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from dualmem.cli.main import main
from dualmem.client import Client
from server_support import free_port, wait_ready

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def test_keys_create_list_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    code, made = run_cli(capsys, "--db", db, "keys", "create", "--user", "mira", "--agent", "planner")
    assert code == 0
    assert isinstance(made, dict)
    assert made["token"].startswith("dmk_")
    assert made["key"]["user"] == "mira"
    assert made["key"]["agent"] == "planner"
    assert (tmp_path / "m.keys.db").exists()
    assert made["token"] not in (tmp_path / "m.keys.db").read_bytes().decode("latin-1")  # stored hashed
    code, admin = run_cli(capsys, "--db", db, "keys", "create", "--admin")
    assert code == 0
    assert isinstance(admin, dict)
    assert admin["key"]["admin"] is True
    assert admin["key"]["user"] is None
    code, listed = run_cli(capsys, "--db", db, "keys", "list")
    assert isinstance(listed, list)
    assert [k["id"] for k in listed] == [made["key"]["id"], admin["key"]["id"]]
    assert "token" not in json.dumps(listed)
    code, revoked = run_cli(capsys, "--db", db, "keys", "revoke", made["key"]["id"])
    assert code == 0
    assert isinstance(revoked, dict)
    assert revoked["revoked"]["revoked_at"] is not None
    assert main(["--db", db, "keys", "revoke", "ffffffff"]) == 2
    assert "no API key" in capsys.readouterr().err
    assert main(["--db", db, "keys", "create", "--admin", "--user", "x"]) == 2


def test_no_auth_is_refused_off_loopback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(tmp_path / "m.db"), "serve", "--host", "0.0.0.0", "--no-auth"]) == 2
    assert "--no-auth is refused" in capsys.readouterr().err


def test_dualmem_serve_runs_and_stops_gracefully(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "m.db")
    _, made = run_cli(capsys, "--db", db, "keys", "create", "--user", "mira")
    assert isinstance(made, dict)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [
        sys.executable,
        "-m",
        "dualmem.cli.main",
        "--db",
        db,
        "--embedder",
        "hashing",
        "serve",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, proc.stdout)
        with Client(url, made["token"]) as client:
            ids = client.add_many(["Mira: my bike broke.", "Mira: I bought a new one."])
            assert client.get(ids[0]).content == "Mira: my bike broke."
        assert httpx.get(f"{url}/v1/stats").status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 0
    assert main(["--db", db, "--embedder", "hashing", "--user", "mira", "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 2
