"""docs/architecture.md stays true to the code: its layer diagram is the import-linter contract's
list in order, its folder table names every part of the package, and it names every Store
capability protocol."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from dualmem.plane import base

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end != -1 else None]


def test_the_layer_diagram_is_the_import_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    block = _section("The layers").split("```")[1]
    drawn = [line.split("  ")[1].strip() if line.startswith("  ") else "" for line in block.splitlines()]
    drawn = [d for d in drawn if d]
    assert len(drawn) == len(layers)
    for line, layer in zip(drawn, layers, strict=True):
        first = re.split(r"[ |:]+", layer.strip())[0]
        assert line.startswith(first), (line, layer)


def test_the_folder_table_names_every_part_of_the_package() -> None:
    table = _section("Each folder's job")
    package = ROOT / "src" / "dualmem"
    parts = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {"data"}
    modules = {p.stem for p in package.glob("*.py")} - {"__init__"}
    for name in sorted(parts):
        assert f"`{name}/`" in table or f"`{name}/` (package)" in table, name
    for name in sorted(modules):
        assert f"`{name}.py`" in table, name


def test_every_store_capability_is_named() -> None:
    section = _section("The Store: a core and its capabilities")
    protocols = [
        n
        for n in base.__all__
        if n[0].isupper()
        and not n.isupper()
        and n not in ("Candidate", "Decision", "NodeContext", "StoreStats")
    ]
    missing = [n for n in protocols if f"`{n}`" not in section]
    assert not missing, missing
