"""Pytest fixtures over the network-edge fakes. Import them in tests/conftest.py:

from fakes.fixtures import jev_server, openai_server  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.jev_mock import JevMock
from fakes.openai_server import FakeOpenAIServer

__all__ = ["jev_server", "openai_server"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server; script it with ``.chat = ...``, ``.fail(...)``."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def jev_server() -> Iterator[JevMock]:
    """A running jevcompat reference mock (no auth, no faults); ``.url`` is its root, ``.cfg`` its config."""
    with JevMock() as server:
        yield server
