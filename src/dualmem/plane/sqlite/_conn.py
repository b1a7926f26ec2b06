"""Opening the SQLite file: connection settings, durability, read-only and immutable modes.

Settings applied to every writable connection (they are per connection, so every process sets them):

- ``journal_mode = WAL``: readers never block the writer, the writer never blocks readers.
- ``synchronous = NORMAL`` (default) or ``FULL``: in WAL mode NORMAL survives a killed process but may
  lose the last commits on power loss or an OS crash; FULL syncs the WAL on every commit.
- ``secure_delete = ON``: deleted rows are overwritten with zeros, not left in free pages.
- ``journal_size_limit``: the WAL is truncated back to this size after a checkpoint.
- ``mmap_size`` (every connection, read-only ones too; off by default): reads of the file's first
  ``mmap_size`` bytes go through a memory map instead of a ``read()`` into SQLite's page cache. The
  mapped pages are the OS's page cache, shared and reclaimable, but they count in the process's RSS
  (as ``RssFile``); an I/O error while reading a mapped page is a ``SIGBUS``, not an error SQLite
  can report (SQLite's own caveat), so a file on unreliable storage is better opened with ``0``.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from dualmem.errors import ConfigError, DatabaseCorrupt, DualmemError, ReadOnlyStore
from dualmem.plane.sqlite import _sql as sql
from dualmem.plane.sqlite._rule import register

__all__ = ["JOURNAL_SIZE_LIMIT", "MMAP_SIZE", "Synchronous", "check_mmap_size", "connect"]

log = logging.getLogger("dualmem")

Synchronous = Literal["normal", "full"]
#: bytes the WAL keeps after a checkpoint (larger WALs are truncated back to this)
JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024
#: bytes of the file read through a memory map by default: none. A 100k-memory search was 1.5-4.6 ms
#: (4-10%) faster with 256 MiB, inside the run's noise, for ~220 MB more resident file pages
#: (docs/decisions/013-sqlite-mmap.md); the setting is there for a user who wants the trade
MMAP_SIZE = 0


def check_mmap_size(value: object) -> int:
    """``value`` as a memory-map size in bytes, or a ``ConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"mmap_size must be a whole number of bytes >= 0, got {value!r}",
            hint="e.g. 268435456 (256 MiB), or 0 to read the file without a memory map",
        )
    return value


def _writable(target: str, *, timeout: float, synchronous: Synchronous) -> sqlite3.Connection:
    if synchronous not in ("normal", "full"):
        raise ConfigError(f"unknown synchronous setting {synchronous!r}", hint="use 'normal' or 'full'")
    if target != ":memory:" and not Path(target).parent.is_dir():
        raise ConfigError(f"cannot create {target}: its folder does not exist", hint="create it first")
    try:
        conn = sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _open_error(target, exc) from exc
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA page_size = 8192")  # new files only: 5 MiniLM vectors a page, not 2
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
    except sqlite3.Error as exc:
        conn.close()
        raise _open_error(target, exc) from exc
    except UnicodeDecodeError as exc:  # a damaged schema byte or pragma answer
        conn.close()
        raise DatabaseCorrupt(
            f"open {target}: the schema does not decode as UTF-8 ({exc.reason})",
            hint="run 'dualmem check', restore a backup, or point dualmem at another file",
        ) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _open_error(target: str, exc: sqlite3.Error) -> DualmemError:
    error = sql.classify(f"open {target}", exc)
    if error.code in ("read-only", "config-error") and Path(target).is_file():
        return ReadOnlyStore(
            f"cannot open {target} for writing: the file or its folder is read-only",
            hint="open it read-only (read_only=True, --read-only) or fix the permissions",
        )
    return error


def _uri(path: Path, *, immutable: bool) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro" + ("&immutable=1" if immutable else "")


def _probe(uri: str, timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _read_only(target: str, *, timeout: float) -> sqlite3.Connection:
    path = Path(target)
    if target == ":memory:" or not path.is_file():
        raise ConfigError(f"no database at {target} to open read-only", hint="check the path")
    try:
        return _probe(_uri(path, immutable=False), timeout)
    except sqlite3.OperationalError as exc:
        # a WAL database whose folder we cannot write (no -shm to create): open it as immutable
        if sql.classify("open", exc).code not in ("read-only", "config-error", "store-error"):
            raise sql.classify(f"open {target}", exc) from exc
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        log.warning("%s is read-only and has a WAL; commits not yet checkpointed are not visible", target)
    with sql.translated(f"open {target} read-only"):
        return _probe(_uri(path, immutable=True), timeout)


def connect(
    target: str,
    *,
    timeout: float,
    read_only: bool = False,
    synchronous: Synchronous = "normal",
    mmap_size: int = MMAP_SIZE,
) -> sqlite3.Connection:
    """A connection with dualmem's settings (module docstring); ``read_only`` never writes the file."""
    check_mmap_size(mmap_size)
    if read_only:
        conn = _read_only(target, timeout=timeout)
    else:
        conn = _writable(target, timeout=timeout, synchronous=synchronous)
    register(conn)  # the lexical index rule's SQL functions (the FTS5 triggers call them)
    if target != ":memory:":
        try:
            with sql.translated(f"open {target}"):
                conn.execute(f"PRAGMA mmap_size = {mmap_size}")
        except BaseException:
            conn.close()
            raise
    return conn
