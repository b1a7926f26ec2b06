"""The ``dualmem`` command starts without the heavy modules: building its parser (``--version``, a
typo, ``--help``) imports no numpy, pydantic, httpx, onnxruntime, FastAPI nor the memory core; a
command loads what it uses when it runs. Speed itself is measured by bench/cli_startup.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "numpy",
    "pydantic",
    "httpx",
    "onnxruntime",
    "tokenizers",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "usearch",
    "dualmem.memory",
    "dualmem.plane",
    "dualmem.types",
    "dualmem.control",
    "dualmem.wire.schemas",
)

CHECK = """
import sys
{code}
heavy = {heavy!r}
print("loaded:" + ",".join(sorted(m for m in heavy if m in sys.modules)))
"""


def _loaded(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", CHECK.format(code=code, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), out.stdout
    return [m for m in last.removeprefix("loaded:").split(",") if m]


@pytest.mark.parametrize(
    "code",
    [
        "import dualmem",
        "import dualmem.cli.main",
        "from dualmem.cli.main import build_parser; build_parser()",
        # what `dualmem --version` runs, to the point where argparse exits
        "from dualmem.cli.main import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass",
        # a typo is answered without loading the memory core either
        "from dualmem.cli.main import main\ntry:\n    main(['serach', 'x'])\nexcept SystemExit:\n    pass",
    ],
)
def test_the_cli_starts_without_heavy_modules(code: str) -> None:
    assert _loaded(code) == []


def test_the_public_names_still_import_on_first_use() -> None:
    import dualmem

    assert dualmem.Memory.__name__ == "Memory"
    assert "Memory" in dir(dualmem)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        dualmem.nothing  # noqa: B018


def test_the_parsers_copies_of_core_constants_agree() -> None:
    """The CLI keeps three constants of heavy modules as literals (its parser needs them)."""
    from dualmem.bench.locomo import ALL_SYSTEMS
    from dualmem.cli import backend, bench, commands
    from dualmem.control.config import DEBIAS_MODES
    from dualmem.types import MAX_K

    assert commands.MAX_K == MAX_K
    assert backend.DEBIAS_MODES == DEBIAS_MODES
    assert bench.ALL_SYSTEMS == ALL_SYSTEMS


def test_a_command_that_embeds_nothing_loads_no_model(tmp_path: Path) -> None:
    """The MiniLM model is loaded on first use: ``list``, ``get``, ``stats`` on a MiniLM database
    import neither onnxruntime nor tokenizers (a search or an add does)."""
    db = str(tmp_path / "m.db")
    run = "from dualmem.cli.main import main\nassert main([{args}]) == 0"
    add = run.format(args=repr(["-q", "--db", db, "--user", "u", "add", "Mira rides a blue bike."])[1:-1])
    assert "onnxruntime" in _loaded(add)  # the write embedded the text
    for command in (["list"], ["stats"]):
        code = run.format(args=repr(["-q", "--db", db, "--user", "u", *command])[1:-1])
        loaded = _loaded(code)
        assert "onnxruntime" not in loaded, command
        assert "tokenizers" not in loaded, command
