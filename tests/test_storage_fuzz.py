"""Finding 6: the public API and the CLI give success or a ``DualmemError`` — never a traceback — for
random unicode (lone surrogates included), bytes, deep nesting, odd numbers and timestamps, and a
failed call leaves the store exactly as it was."""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder
from dualmem.errors import DualmemError
from dualmem.memory import Filter
from export_seal import resealed_text

FUZZ = settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])

#: every code point, surrogates (category Cs) included
texts = st.text(st.characters(codec=None, blacklist_categories=()), max_size=40)


class Deep(dict):  # type: ignore[type-arg]
    """``{"k": [{"k": [...]}]}`` nested ``depth`` deep, printed short (reports must not recurse)."""

    def __init__(self, depth: int) -> None:
        value: object = "leaf"
        for i in range(depth):
            value = {"k": value} if i % 2 else [value]
        super().__init__(k=value)
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def nested(depth: int) -> object:
    return Deep(depth)


numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 10**9]),
)
times = st.one_of(
    st.none(),
    st.datetimes(),  # naive
    st.datetimes(timezones=st.just(dt.UTC)),
    st.dates(),
    texts,
    numbers,
    st.sampled_from(["2024-05-14T10:00:00Z", "8 May 2023", "yesterday", "", "9999-99-99"]),
)
values = st.one_of(
    texts,
    st.binary(max_size=20),
    numbers,
    st.none(),
    st.booleans(),
    st.integers(0, 6000).map(nested),
    st.lists(texts, max_size=3),
    st.dictionaries(texts, texts, max_size=3),
)
metadata = st.one_of(st.none(), st.dictionaries(texts, values, max_size=3), values)


def digest(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        rows = []
        for table in (
            "nodes",
            "vectors",
            "edges",
            "entities",
            "node_entities",
            "decision_sets",
            "write_keys",
        ):
            rows += [repr(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]
        return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass")).hexdigest()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    db = tmp_path_factory.mktemp("fuzz") / "m.db"
    prof = Profile.named("builtin").with_(write__consolidation="off")
    with Memory.open(db, embedder=HashingEmbedder(64), answerer="extractive", profile=prof) as m:
        m.add("Mira bought a red bike in May.", user="u", session="s", turn_id="1")
        yield m


def _db(mem: Memory) -> Path:
    return Path(mem.store.path)  # type: ignore[attr-defined]


def attempt(mem: Memory, call: Any, *args: Any, **kwargs: Any) -> None:
    """Run ``call``: success, or a DualmemError with the store unchanged."""
    before = digest(_db(mem))
    try:
        call(*args, **kwargs)
    except DualmemError:
        assert digest(_db(mem)) == before


@FUZZ
@given(text=st.one_of(texts, values), speaker=st.one_of(st.none(), texts, values), at=times, meta=metadata)
def test_add(mem: Memory, text: Any, speaker: Any, at: Any, meta: Any) -> None:
    attempt(mem, mem.add, text, user="u", speaker=speaker, at=at, session="s", metadata=meta)


@FUZZ
@given(user=st.one_of(texts, values), agent=st.one_of(st.none(), texts, values), text=texts)
def test_tenants(mem: Memory, user: Any, agent: Any, text: Any) -> None:
    attempt(mem, mem.add, text or "x", user=user, agent=agent)
    attempt(mem, mem.search, "bike", user=user, agent=agent)
    attempt(mem, mem.stats, user=user, agent=agent)


@FUZZ
@given(
    items=st.lists(
        st.one_of(texts, values, st.dictionaries(st.sampled_from(["text", "at", "speaker", "x"]), values)),
        max_size=6,
    ),
    chunk=st.one_of(numbers, st.none()),
)
def test_add_many(mem: Memory, items: list[Any], chunk: Any) -> None:
    kwargs = {} if chunk is None else {"chunk_size": chunk}
    attempt(mem, mem.add_many, items, user="u", **kwargs)


@FUZZ
@given(query=st.one_of(texts, values), k=st.one_of(numbers, values))
def test_search_and_answer(mem: Memory, query: Any, k: Any) -> None:
    attempt(mem, mem.search, query, user="u", k=k)
    attempt(mem, mem.answer, query, user="u", k=k)


@FUZZ
@given(node_id=st.one_of(texts, values), text=st.one_of(texts, values), at=times)
def test_by_id_calls(mem: Memory, node_id: Any, text: Any, at: Any) -> None:
    for call in (mem.get, mem.inspect, mem.history):
        attempt(mem, call, node_id, user="u")
    attempt(mem, mem.update, node_id, text, user="u", at=at)
    attempt(mem, mem.forget, node_id, user="v")


@FUZZ
@given(since=times, until=times, speaker=st.one_of(st.none(), texts, values), meta=metadata)
def test_forget_where(mem: Memory, since: Any, until: Any, speaker: Any, meta: Any) -> None:
    if mem.count(user="f") == 0:  # something to compare the filter's times and fields against
        mem.add("Mira had tea.", user="f", speaker="Mira", at="2024-05-01T10:00:00Z", metadata={"k": "v"})

    def go() -> None:
        mem.forget(user="f", where=Filter(since=since, until=until, speaker=speaker, metadata=meta))

    attempt(mem, go)


@FUZZ
@given(data=st.binary(max_size=300), text=texts)
def test_import_of_random_files(mem: Memory, tmp_path: Path, data: bytes, text: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    attempt(mem, mem.import_jsonl, path, user="u")
    header = (
        '{"kind": "header", "format": "dualmem.export", "version": 2, "embedder": "hashing-64", "dim": 64}'
    )
    body = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    path.write_text(f"{header}\n{body}\n")
    attempt(mem, mem.import_jsonl, path, user="u")
    path.write_text(resealed_text([header, *body.splitlines()]))  # whole by its trailer: records judged
    attempt(mem, mem.import_jsonl, path, user="u")


# -- the CLI: exit 0, 1 or 2 with one line, never a traceback ----------------------------------
argv_text = st.one_of(texts, st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape")))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    command=st.sampled_from(["add", "search", "ask", "inspect", "delete", "stats", "repair", "check"]),
    arg=argv_text,
    timeout=st.one_of(st.none(), argv_text, st.sampled_from(["-1", "nan", "inf", "1e309", "0", "2"])),
    extra=st.lists(argv_text, max_size=2),
)
def test_cli(
    mem: Memory,
    capsys: pytest.CaptureFixture[str],
    command: str,
    arg: str,
    timeout: str | None,
    extra: list[str],
) -> None:
    argv = ["--db", str(_db(mem)), "--embedder", "hashing:64", "--user", "u"]
    if timeout is not None:
        argv += ["--lock-timeout", timeout]
    argv += [command]
    if command in ("add", "search", "ask", "inspect", "delete"):
        argv.append(arg)
    argv += ["--at", extra[0]] if command == "add" and extra else []
    before = digest(_db(mem))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refusing the command line
        code = int(exc.code or 0)
        assert code == 2
    assert code in (0, 1, 2)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code != 0:
        assert digest(_db(mem)) == before
