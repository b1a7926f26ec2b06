"""The storage floor's contracts (issue 45): tests reach the stores through public names only.

A store's ``_*`` modules (``plane/sqlite/_sql.py``, ``plane/postgres/_lexical.py``, ...) are its own:
tests go through the ``MemoryStore`` protocol, its components and what each backend package exports
(``dualmem.plane.sqlite.__all__``, ``dualmem.plane.postgres.__all__``).
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PLANE = TESTS.parent / "src" / "dualmem" / "plane"

#: a private module of ``dualmem.plane`` named in a test: ``dualmem.plane._x``, ``dualmem.plane.sqlite._x``
#: (an import or a dotted string)
DOTTED = re.compile(r"dualmem\.plane(?:\.[A-Za-z0-9]\w*)*\._[A-Za-z0-9]\w*")
#: ``from dualmem.plane[.sub] import a, _x as y`` (a private module when ``_x`` is one of ``sub``'s files)
FROM = re.compile(r"from\s+dualmem\.plane((?:\.\w+)*)\s+import\s+(?:\(([^)]*)\)|([\w ,]+))")

#: the SQLite store's lexical-index algorithm tests still reading its private modules (budgeted
#: impact-ordered top-k against FTS5's exact ranking, term selection, rare-term probes): this list
#: may only shrink
STILL_PRIVATE = {
    "test_add_cost.py": 1,
    "test_lexical_bounded.py": 1,
    "test_lexical_index.py": 2,
    "test_lexical_terms.py": 2,
    "test_lexical_upkeep.py": 2,
    "test_write_cost.py": 1,
}


def private_imports(text: str) -> list[str]:
    found = [m.group(0) for m in DOTTED.finditer(text)]
    for m in FROM.finditer(text):
        folder = PLANE.joinpath(*m.group(1).split(".")[1:])
        names = m.group(2) if m.group(2) is not None else m.group(3)
        for name in (part.split()[0] for part in names.split(",") if part.split()):
            if name.startswith("_") and ((folder / f"{name}.py").is_file() or (folder / name).is_dir()):
                found.append(f"dualmem.plane{m.group(1)}.{name}")
    return found


def test_the_scan_finds_each_form() -> None:
    assert private_imports("from dualmem.plane._codec import x") == ["dualmem.plane._codec"]
    assert private_imports("from dualmem.plane.sqlite._sql import classify") == ["dualmem.plane.sqlite._sql"]
    assert private_imports("from dualmem.plane.sqlite import _impact as impact") == [
        "dualmem.plane.sqlite._impact"
    ]
    assert private_imports("from dualmem.plane import lexindex, _chunks") == ["dualmem.plane._chunks"]
    assert private_imports('monkeypatch.setattr("dualmem.plane.postgres._sql.X", 1)')
    assert not private_imports("from dualmem.plane.sqlite import MIGRATIONS, SQLiteStore")
    assert not private_imports("from dualmem.plane import codec, context\nstore._conn")
    assert not private_imports("from dualmem.plane.jsonl import _SEPARATORS")  # a name, not a module
    assert private_imports("from dualmem.plane.sqlite import (\n    SQLiteStore,\n    _tx,\n)") == [
        "dualmem.plane.sqlite._tx"
    ]


def test_no_test_imports_a_private_plane_module() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        hits = private_imports(path.read_text(encoding="utf-8"))
        if hits:
            found[path.relative_to(TESTS).as_posix()] = len(hits)
    assert found == STILL_PRIVATE, found
