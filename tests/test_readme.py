"""The README's Python example runs as written (offline, real embedder, a file in a temp directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "the README has a Python example"
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {})
    assert (tmp_path / "memory.db").exists()


def _section(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {name}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_readme_cli_block_is_one_valid_command_a_line() -> None:
    """Pasted line by line, every command of the CLI section parses (no ``get ID | list ...``
    shorthand that a shell would run as a pipe)."""
    import shlex

    from dualmem.cli.main import build_parser

    (block,) = re.findall(r"```bash\n(.*?)```", _section("CLI"), flags=re.S)[:1]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) >= 20
    for line in lines:
        words = shlex.split(line, comments=True)
        if "<" in words:  # a redirection is the shell's, not an argument
            words = words[: words.index("<")]
        assert words[0] == "dualmem", line
        assert "|" not in words, line
        if words[1:] == ["--version"]:
            continue
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as exc:  # pragma: no cover - the message names the line
            raise AssertionError(f"README command does not parse: {line}") from exc


def test_readme_says_what_ci_does_and_where_locomo_comes_from() -> None:
    text = README.read_text(encoding="utf-8")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    quick = _section("Quick start (fresh machine, Python ≥ 3.11)")
    for needle, in_script in (("chromium", "chromium"), ("libgomp1", "libgomp1"), ("PostgreSQL", "postgres")):
        assert needle in quick
        assert in_script in ci
    gates = ci.split("# --- gates ---", 1)[1]
    for tool in re.findall(r"^\.venv/bin/([\w-]+(?: format| check)?)", gates, flags=re.M):
        assert f"`{tool}" in quick, tool  # every gate CI runs is named
    assert "runs exactly that test command" not in text
    assert "../shared/" not in text  # data a new user does not have
    assert "https://github.com/snap-research/locomo" in _section("CLI")


def test_readme_ends_with_the_licence() -> None:
    headings = re.findall(r"^## (.+)$", README.read_text(encoding="utf-8"), flags=re.M)
    assert headings[-1] == "Licence"
    assert headings.count("Licence") == 1
