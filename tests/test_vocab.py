"""One vocabulary (issue 45 item 3): every public value type from ``dualmem.vocab``, the same object
as at its older import path; the wire layer (``dualmem.wire``) round-trips them for server and client;
the adapters import only public names."""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import dualmem
from dualmem import vocab

SRC = Path(dualmem.__file__).parent

#: where each value type was defined before the vocabulary; every one of these paths must keep working
OLD_PATHS = {
    "Filter": "dualmem.write.lifecycle",
    "Retrieval": "dualmem.read.trace",
    "Trace": "dualmem.read.trace",
    "SessionHit": "dualmem.read.trace",
    "Answer": "dualmem.memory",
    "Inspection": "dualmem.memory",
    "WriteReport": "dualmem.write.pipeline",
    "ConsolidationReport": "dualmem.write.consolidate",
    "BackfillReport": "dualmem.write.backfill",
    "ImportReport": "dualmem.plane.jsonl",
    "Decision": "dualmem.plane.base",
    "Node": "dualmem.types",
    "Edge": "dualmem.types",
    "Evidence": "dualmem.types",
    "Observation": "dualmem.types",
    "Tenant": "dualmem.types",
    "TemporalRef": "dualmem.types",
}

#: the adapters (issue 45: "adapters import only public names") and the package each may import freely
ADAPTERS = {"client.py": "dualmem.client", "server": "dualmem.server", "mcp_server": "dualmem.mcp_server",
            "integrations": "dualmem.integrations"}  # fmt: skip
#: the public modules an adapter may import from (and any module of the wire layer)
PUBLIC = {"dualmem", "dualmem.vocab", "dualmem.errors", "dualmem.client", "dualmem.server"}


@pytest.mark.parametrize("name", sorted(OLD_PATHS))
def test_every_value_type_is_in_the_vocabulary_and_at_its_old_path(name: str) -> None:
    old = getattr(importlib.import_module(OLD_PATHS[name]), name)
    assert getattr(vocab, name) is old
    assert name in vocab.__all__


def test_the_vocabulary_names_only_what_it_has_and_the_package_lends_it() -> None:
    missing = [n for n in vocab.__all__ if not hasattr(vocab, n)]
    assert missing == []
    for name in ("Filter", "Retrieval", "Answer", "WriteReport", "ConsolidationReport", "Decision"):
        assert getattr(dualmem, name) is getattr(vocab, name)


def _adapter_files() -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    for where, package in ADAPTERS.items():
        path = SRC / where
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        out += [(f, package) for f in files]
    return out


def _imports(text: str) -> list[tuple[str, str, int]]:
    """(module, name, line) of every ``from dualmem... import name`` and ``import dualmem...``."""
    out: list[tuple[str, str, int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [(node.module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names]
    return [(m, n, line) for m, n, line in out if m == "dualmem" or m.startswith("dualmem.")]


def private_imports(text: str, where: str, package: str) -> list[str]:
    """What the module ``text`` (at ``where``, an adapter of ``package``) imports that is not public."""
    bad: list[str] = []
    for module, name, line in _imports(text):
        if module == package or module.startswith(package + "."):
            continue
        at = f"{where}:{line} {module}{'.' + name if name else ''}"
        public_module = module in PUBLIC or module == "dualmem.wire" or module.startswith("dualmem.wire.")
        if not public_module or (name.startswith("_") and name != "__version__"):
            bad.append(at)
            continue
        owner = importlib.import_module(module)
        # ``from dualmem.wire import schemas``: a public submodule
        submodule = hasattr(owner, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None
        if name and not hasattr(owner, name) and not submodule:
            bad.append(at)
    return bad


def test_adapters_import_only_public_names() -> None:
    files = _adapter_files()
    assert len(files) >= 15  # client, server (with ui), MCP, integrations
    bad = [
        b
        for f, package in files
        for b in private_imports(f.read_text(encoding="utf-8"), str(f.relative_to(SRC)), package)
    ]
    assert bad == []


def test_the_scan_finds_a_private_import() -> None:
    text = (
        "from dualmem.write.lifecycle import Filter\n"
        "from dualmem.vocab import Node\n"
        "from dualmem._closing import Closing\n"
        "from dualmem.server.keys import KeyStore\n"
        "from dualmem.wire import schemas\n"
        "from dualmem.vocab import NoSuchName\n"
    )
    assert private_imports(text, "server/probe.py", "dualmem.server") == [
        "server/probe.py:1 dualmem.write.lifecycle.Filter",
        "server/probe.py:3 dualmem._closing.Closing",
        "server/probe.py:6 dualmem.vocab.NoSuchName",
    ]
    assert private_imports(text, "mcp_server/probe.py", "dualmem.mcp_server")[2] == (
        "mcp_server/probe.py:4 dualmem.server.keys.KeyStore"
    )


def test_the_wire_layer_round_trips_values_for_both_sides() -> None:
    from dualmem.wire import decode, encode, schemas

    report = vocab.WriteReport(("a", "b"), ("b",), 3, "timeout")
    assert decode.write_report_from(schemas.repair_out(report)) == report
    back = vocab.BackfillReport(4, {"entity": 2}, ("x",), ("entity",))
    assert decode.backfill_from(schemas.backfill_out(back)) == back
    when = dt.datetime(2024, 5, 14, 10, tzinfo=dt.UTC)
    where = vocab.Filter(speaker="Mira", since=when, metadata={"topic": "bikes"})
    fields = encode.filter_fields(where)
    assert fields == {"speaker": "Mira", "since": when.isoformat(), "metadata": {"topic": "bikes"}}
    assert schemas.FilterFields.model_validate(fields).where() == where
    obs = vocab.Observation(content="My bicycle broke.", speaker="Mira", at=when, session="s1")
    doc = schemas.ObservationIn.model_validate(encode.observation_in(obs))
    assert (doc.text, doc.speaker, doc.session) == ("My bicycle broke.", "Mira", "s1")
    with pytest.raises(dualmem.InvalidInput):
        encode.observation_in(3)  # type: ignore[arg-type]


def test_the_client_reads_the_wire_not_the_server() -> None:
    text = (SRC / "client.py").read_text(encoding="utf-8")
    modules = {m for m, _, _ in _imports(text)}
    assert not {m for m in modules if m.startswith("dualmem.server")}
    assert {"dualmem.wire"} <= modules  # ``from dualmem.wire import decode, encode, schemas``


def _server_codes() -> set[str]:
    """Every problem code the server's sources send as a literal (``ApiProblem``, ``BodyProblem``,
    ``problem_response`` and the exception handlers' tables)."""
    text = "\n".join(f.read_text(encoding="utf-8") for f in sorted((SRC / "server").glob("*.py")))
    calls = re.findall(r'(?:Problem|problem_response)\(\s*\d+,\s*"([a-z-]+)"', text)
    handlers = re.findall(r'\(\d+, "([a-z-]+)"\)|\d+: "([a-z-]+)"|get\(exc\.status_code, "([a-z-]+)"\)', text)
    return set(calls) | {c for group in handlers for c in group if c}


def test_every_problem_code_the_server_sends_is_an_error_the_client_knows() -> None:
    from dualmem.wire import decode

    codes = _server_codes()
    assert {"unauthorized", "too-deep", "malformed-json", "invalid-input", "not-found"} <= codes
    known = {cls.code for cls in (getattr(dualmem.errors, n) for n in dualmem.errors.__all__)}
    assert codes - known - set(decode.HTTP_PROBLEMS) == {"http-error"}  # by its status
    conflict = decode.error_from(409, {"code": "idempotency-conflict", "detail": "reused", "hint": "new key"})
    assert type(conflict) is dualmem.Conflict
    assert (str(conflict.message), conflict.hint) == ("reused", "new key")
    assert type(decode.error_from(403, None, "Forbidden")) is dualmem.AuthError
    assert type(decode.error_from(503, ["not", "a", "document"])) is dualmem.RuntimeFailure
    assert type(decode.error_from(404, {"code": "not-found", "detail": "gone"})) is dualmem.NotFound
    assert type(decode.error_from(418, {"code": "http-error"})) is dualmem.UserError
