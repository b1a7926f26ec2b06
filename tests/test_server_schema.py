"""Schemathesis over the app's OpenAPI schema: bounded examples per operation; no 500s, every
status, content type and body as documented."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dualmem import Memory, Profile
from dualmem.server import ServerSettings, create_app
from dualmem.server.keys import KeyStore

schemathesis.serializer.alias("application/x-ndjson", "text/plain")  # POST /v1/import takes JSON Lines
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

# schemathesis reads the schema at collection time, so the app is built here (in memory, hashing
# embedder) and closed by the module fixture below
_MEMORY = Memory.open(
    ":memory:", embedder="hashing", profile=Profile.builtin().with_(write__consolidation="off")
)
_KEYS = KeyStore.open(":memory:")
_USER = {"Authorization": f"Bearer {_KEYS.create(user='fuzz')[1]}"}
_ADMIN = {"Authorization": f"Bearer {_KEYS.create(admin=True)[1]}"}
_MEMORY.add("Mira: my bike broke.", user="fuzz", speaker="Mira", at="2024-05-01")
_APP = create_app(_MEMORY, keys=_KEYS, settings=ServerSettings(rate_limit=None, consolidate_every=0))
schema = schemathesis.openapi.from_asgi("/openapi.json", _APP)


@pytest.fixture(scope="module", autouse=True)
def _close() -> Iterator[None]:
    yield
    _MEMORY.close()
    _KEYS.close()


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: Any) -> None:
    headers = _ADMIN if case.path.startswith("/v1/keys") else _USER
    case.call_and_validate(headers=headers, checks=CHECKS)
