"""The service and its OpenAPI schema agree: schemathesis 4 (its CLI, every phase and every check)
over every route of the real app, served by uvicorn on 127.0.0.1.

Bounded and reproducible: a few examples per operation, a fixed seed, deterministic generation, no
example database. Failures it found before the schema and the server were made to agree (issue 41):
``{"all": 0}``, ``"trace": 0`` and ``"offset": false`` accepted; ``since: ""``, ``{}`` on
``/v1/forget`` and times in PATCH bodies refused though the schema allowed them; ``OPTIONS`` and
other methods answered 405 with an ``Allow`` header naming one route's methods.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

from dualmem import Memory, Profile
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore
from dualmem.server.routes_inspector import inspector_router
from schemathesis_hooks import USER
from server_support import live_server

TESTS = Path(__file__).parent
EXAMPLES = 12
SEED = 41


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """The whole app (the API, the inspector's routes, the docs) over a small memory of ``USER``."""
    quiet = Profile.builtin().with_(write__consolidation="off")
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=quiet) as mem:
        keys = KeyStore.open(tmp_path / "m.keys.db")
        user = keys.create(user=USER)[1]
        admin = keys.create(admin=True, label="schemathesis")[1]
        mem.add("Mira: my bike broke.", user=USER, speaker="Mira", at="2024-05-01")
        mem.add("Mira: I bought a new bike.", user=USER, speaker="Mira", at="2024-05-03")
        settings = ServerSettings(rate_limit=None, consolidate_every=0)
        app = create_app(mem, keys=keys, settings=settings, routers=[inspector_router()])
        with live_server(app) as url:
            yield url, user, admin
        keys.close()


def _config(path: Path, user: str, admin: str) -> Path:
    """Every request carries the user key; key management (``/v1/keys``) the admin key."""
    path.write_text(
        f"""
hooks = "schemathesis_hooks"
headers = {{ Authorization = "Bearer {user}" }}

[generation]
database = "none"

# a warning (say, every request of an operation refused as unauthorized) fails the run too
[warnings]
fail-on = true

# a body over the size limit is refused before it is parsed: 413, a rejection like 400 or 422
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5XX"]

[[operations]]
include-path-regex = "^/v1/keys"
headers = {{ Authorization = "Bearer {admin}" }}
""",
        encoding="utf-8",
    )
    return path


def test_every_route_conforms_to_the_schema(served: tuple[str, str, str], tmp_path: Path) -> None:
    url, user, admin = served
    config = _config(tmp_path / "schemathesis.toml", user, admin)
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color"),
        *("run", f"{url}/openapi.json", "--checks", "all", "--workers", "1"),
        *("--max-examples", str(EXAMPLES), "--seed", str(SEED), "--generation-deterministic"),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-12_000:]
    assert "No issues found" in report, report[-12_000:]
