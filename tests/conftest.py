"""Shared fixtures. Real parts: SQLite files, the ONNX embedder, local HTTP servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from dualmem.embed import Embedder, HashingEmbedder, MiniLMEmbedder
from fakes.fixtures import jev_server, openai_server  # noqa: F401
from pg_server import memory_db, pg_dsn, pg_store_factory  # noqa: F401

# the machine is shared and noisy: Hypothesis judges properties, not speed
settings.register_profile("dualmem", deadline=None)
settings.load_profile("dualmem")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO_DIR = SHARED_DATA / "locomo"


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real default embedder (int8 ONNX all-MiniLM-L6-v2), loaded once per session."""
    return MiniLMEmbedder()


@pytest.fixture
def hashing() -> Embedder:
    return HashingEmbedder(256)


@pytest.fixture
def locomo_dir() -> Path:
    if not LOCOMO_DIR.is_dir():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_DIR} (../shared/data/locomo from the repo root)")
    return LOCOMO_DIR


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"
