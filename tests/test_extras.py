"""Optional dependencies: the jev backend's packages are an extra, and its absence is a clear ConfigError."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from dualmem.control import create_controller
from dualmem.errors import ConfigError

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    return {
        r.split(">")[0].split("<")[0].split("~")[0].split("=")[0].split("[")[0].strip() for r in requirements
    }


def test_jev_packages_are_an_extra_and_dev_keeps_them() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert {"typesafe-sdk", "httpx2"}.isdisjoint(_names(project["dependencies"]))
    assert _names(extras["jev"]) == {"typesafe-sdk", "httpx2"}
    assert "dualmem[jev]" in extras["dev"]  # the tests need them: dev installs everything


def test_missing_sdk_is_a_config_error_with_the_extra_as_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "dualmem.control.jev", raising=False)
    monkeypatch.setitem(sys.modules, "typesafe_sdk", None)  # what `import typesafe_sdk` meets when absent
    with pytest.raises(ConfigError) as caught:
        create_controller("jev", api_key="k")
    assert "typesafe-sdk" in str(caught.value)
    assert caught.value.hint == "pip install 'dualmem[jev]'"
    monkeypatch.delitem(sys.modules, "dualmem.control.jev", raising=False)  # no half-imported module left
