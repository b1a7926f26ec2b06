"""Import refuses what a later read could not live with (issue 49, item 4).

Each bad field arrives in an otherwise whole export (its trailer resealed, as a hand-edited or
foreign file would be): a decision value NaN or Infinity (every later export of the tenant failed),
a NaN ``latency_ms`` (reported as a store outage, 503), a memory id "" (never readable nor
forgettable), of 100,000 characters or "../../etc", a repeated node id (refused with an empty list
in the message), a duplicated edge line (counted twice). Each is ``InvalidInput`` naming the line
(the CLI: one line, exit 2; HTTP: 422 problem JSON), and nothing stored changes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.errors import InvalidInput, UserError
from dualmem.plane.jsonl import _Seal
from dualmem.server.keys import KeyStore
from dualmem.types import Edge
from server_support import served_memory

QUIET = Profile.builtin().with_(write__consolidation="off")
Lines = list[str]


def exported(folder: Path, user: str = "u") -> Lines:
    """A whole export of three memories (with their decisions) and one semantic edge, trailer left off."""
    path = folder / "whole.jsonl"
    with Memory.open(folder / "whole.db", embedder="hashing", profile=QUIET) as mem:
        mem.add("User uses pip for packages.", user=user, at="2024-03-01")
        mem.add("User switched to uv instead of pip.", user=user, at="2024-03-20")
        mem.add("Mira adopted a cat named Tofu.", user=user)
        mem.export_jsonl(path, user=user)
    lines = path.read_text(encoding="utf-8").split("\n")[:-2]
    ids = [json.loads(line)["id"] for line in lines if json.loads(line)["kind"] == "node"]
    edge = {"kind": "edge", **Edge(ids[0], ids[1], "semantic", "related", 0.5).to_json()}
    return [*lines, json.dumps(edge, sort_keys=True)]


def sealed(lines: Lines) -> str:
    seal = _Seal()
    for line in lines:
        seal.add(line, json.loads(line)["kind"])
    return "".join(f"{line}\n" for line in [*lines, json.dumps(seal.trailer())])


def edit(lines: Lines, kind: str, **fields: object) -> Lines:
    """The first record of ``kind`` with ``fields`` replaced (NaN and Infinity written as JSON reads them)."""
    out, done = [], False
    for line in lines:
        doc = json.loads(line)
        if doc["kind"] == kind and not done:
            line, done = json.dumps({**doc, **fields}, sort_keys=True, allow_nan=True), True
        out.append(line)
    assert done
    return out


def renamed(lines: Lines, new_id: str) -> Lines:
    """Every mention of the first node's id (its line, its decisions, its edge) as ``new_id``."""
    old = next(json.loads(line)["id"] for line in lines if json.loads(line)["kind"] == "node")
    return [line.replace(json.dumps(old), json.dumps(new_id)) for line in lines]


def repeated(lines: Lines, kind: str) -> Lines:
    at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == kind)
    return [*lines[: at + 1], lines[at], *lines[at + 1 :]]


CASES: dict[str, tuple[Callable[[Lines], Lines], str]] = {
    "decision value NaN": (lambda ls: edit(ls, "decision", value=float("nan")), "finite"),
    "decision value Infinity": (lambda ls: edit(ls, "decision", value=float("inf")), "finite"),
    "decision value -Infinity": (lambda ls: edit(ls, "decision", value=float("-inf")), "finite"),
    "latency_ms NaN": (lambda ls: edit(ls, "decision", latency_ms=float("nan")), "finite"),
    "edge weight NaN": (lambda ls: edit(ls, "edge", weight=float("nan")), "finite"),
    "type weight NaN": (
        lambda ls: edit(
            ls, "node", types={"episodic": float("nan"), "semantic": 0, "procedural": 0, "preference": 0}
        ),
        "finite",
    ),
    "embedding with a NaN": (
        lambda ls: edit(
            ls, "node", embedding=base64.b64encode(np.full(256, np.nan, "<f4").tobytes()).decode()
        ),
        "finite",
    ),
    "node id empty": (lambda ls: renamed(ls, ""), "id"),
    "node id of 100,000 characters": (lambda ls: renamed(ls, "a" * 100_000), "id"),
    "node id ../../etc": (lambda ls: renamed(ls, "../../etc"), "id"),
    "node id with a control character": (lambda ls: renamed(ls, "ab\x00cd"), "id"),
    "node id with a backslash": (lambda ls: renamed(ls, "a\\b"), "id"),
    "node id of spaces": (lambda ls: renamed(ls, "   "), "id"),
    "repeated node": (lambda ls: repeated(ls, "node"), "repeats"),
    "duplicated edge line": (lambda ls: repeated(ls, "edge"), "repeats"),
    "duplicated decision line": (lambda ls: repeated(ls, "decision"), "repeats"),
}


def test_the_whole_file_imports(tmp_path: Path) -> None:
    """The base the cases damage is accepted as it is: each refusal below is that case's doing."""
    path = tmp_path / "ok.jsonl"
    path.write_text(sealed(exported(tmp_path)), encoding="utf-8")
    with Memory.open(tmp_path / "t.db", embedder="hashing", profile=QUIET) as mem:
        report = mem.import_jsonl(path, user="u")
        assert (report.nodes, report.edges) == (3, 1)
        assert mem.export_jsonl(tmp_path / "back.jsonl", user="u") > 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_import_refuses_the_bad_field_and_stores_nothing(tmp_path: Path, case: str) -> None:
    damage, phrase = CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(sealed(damage(exported(tmp_path))), encoding="utf-8")
    with Memory.open(tmp_path / "t.db", embedder="hashing", profile=QUIET) as mem:
        kept = mem.add("Leo likes tea.", user="u")
        before = mem.export_jsonl(tmp_path / "b.jsonl", user="u")
        with pytest.raises(InvalidInput) as caught:
            mem.import_jsonl(path, user="u")
        assert isinstance(caught.value, UserError)
        message = str(caught.value)
        assert message.startswith("line "), message
        assert phrase in message, message
        assert "[]" not in message
        assert len(message) < 400, message  # a 100,000-character id is not echoed whole
        assert [n.id for n in mem.nodes(user="u")] == [kept]
        assert mem.export_jsonl(tmp_path / "after.jsonl", user="u") == before  # exports still work
        assert (tmp_path / "after.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    code = main(["-q", "--db", str(db), "--user", "u", "--embedder", "hashing", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", ["decision value Infinity", "node id empty", "repeated node"])
def test_cli_refuses_in_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    damage, phrase = CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(sealed(damage(exported(tmp_path))), encoding="utf-8")
    db = tmp_path / "t.db"
    assert cli(capsys, db, "add", "Leo likes tea.")[0] == 0
    code, out, err = cli(capsys, db, "import", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    assert phrase in err, err
    code, out, _ = cli(capsys, db, "stats")
    assert json.loads(out)["nodes"] == 1


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, KeyStore, Memory]]:
    (tmp_path / "srv").mkdir()
    with served_memory(tmp_path / "srv") as running:
        yield running


@pytest.mark.parametrize("case", ["latency_ms NaN", "decision value NaN", "node id ../../etc"])
def test_http_refuses_with_422_not_503(
    served: tuple[str, KeyStore, Memory], tmp_path: Path, case: str
) -> None:
    url, keys, mem = served
    _, token = keys.create(user="u")
    damage, phrase = CASES[case]
    body = sealed(damage(exported(tmp_path))).encode()
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        assert (
            http.post("/v1/memories", json={"observations": [{"text": "Leo likes tea."}]}).status_code == 201
        )
        r = http.post("/v1/import", content=body)
        assert r.status_code == 422, r.text
        assert "retry-after" not in r.headers
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] == "invalid-input"
        assert phrase in r.json()["detail"]
        assert mem.count(user="u") == 1
        assert http.get("/v1/export").status_code == 200


def test_the_id_rule_takes_what_dualmem_makes() -> None:
    from dualmem.types import MAX_NODE_ID_CHARS, check_node_id, new_id

    for value in (new_id(), "a", "x" * MAX_NODE_ID_CHARS, "n42", "mem:2024-03-01.a_b"):
        check_node_id(value, "id")
    for value in (
        "",
        "x" * (MAX_NODE_ID_CHARS + 1),
        "../etc",
        "a/b",
        "a\\b",
        "a\nb",
        "a\x85b",
        " a",
        ".",
        "..",
    ):
        with pytest.raises(InvalidInput):
            check_node_id(value, "id")


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_put_nodes_names_a_repeated_id(tmp_path: Path, backend: str) -> None:
    import numpy as np

    from dualmem.plane.memory import InMemoryStore
    from dualmem.plane.sqlite import SQLiteStore
    from dualmem.types import Node, Tenant

    store = InMemoryStore() if backend == "memory" else SQLiteStore.open(tmp_path / "s.db")
    try:
        store.bind_embedder("e", 4)
        vec = np.ones(4, dtype=np.float32) / 2
        nodes = [
            Node(id="n1", tenant=Tenant("u"), content=f"text {i}", at=None, embedding=vec) for i in range(2)
        ]
        with pytest.raises(InvalidInput, match=r"repeated in the batch: \['n1'\]"):
            store.put_nodes(nodes)
        store.put_nodes(nodes[:1])
        with pytest.raises(InvalidInput, match=r"already stored: \['n1'\]"):
            store.put_nodes(nodes[:1])
    finally:
        store.close()
