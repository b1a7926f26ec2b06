"""The package's import structure: one-way layers and no cycles (``[tool.importlinter]``).

``.ci/run`` runs ``lint-imports`` too; this test gives the same verdict to anyone who runs the
README's test command, with the broken contract in the failure message.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_imports_point_one_way_and_never_in_a_cycle() -> None:
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.fail("lint-imports is missing: install the dev extra (pip install -e '.[dev]')")
    done = subprocess.run([tool, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "one-way layers KEPT" in done.stdout
    assert "no import cycles KEPT" in done.stdout


def test_the_wheel_holds_no_research_code() -> None:
    """Cross-validation and experiments live in research/, outside the package (hatch ships src/dualmem)."""
    package = ROOT / "src" / "dualmem"
    assert not list(package.rglob("cv*.py"))
    assert (ROOT / "research" / "cv.py").is_file()
    assert '"src/dualmem"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
