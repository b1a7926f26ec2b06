"""An impact-ordered, tenant-partitioned BM25 index beside the SQLite store's FTS5 tables (schema v8).

FTS5's ``ORDER BY rank`` computes ``bm25()`` for every row that holds a query term (~3 µs a row) and
its doclists are rowid-ordered, so a top-k cannot stop early; and one FTS5 table holds every tenant's
rows, so a small tenant of a large shared file pays for the whole table. Above a size threshold the
store ranks from this derived, rebuildable index instead:

- **Postings** are keyed by (FTS table, user, term) and hold, per row, BM25's term-frequency part
  ``tf (k1 + 1) / (tf + k1 (1 - b + b D / avgdl))`` quantized to 16 bits, sorted by it descending and
  cut into blocks of growing size (``lex_blocks``; the first block of a list is small, so a rare term
  costs one short read). ``tf`` is the term's count over all columns, ``D`` the row's tokens and
  ``avgdl`` the mean over *the user's* rows; ``idf`` (``ln((N - n + 0.5) / (n + 0.5))``, 1e-6 when
  not positive) is applied at query time from the user's own ``N`` and ``n`` (``lex_stats``, each
  block's ``df``). A tenant's ranking thus never depends on another user's rows; for a one-user file
  it is FTS5's ``bm25()`` (k1 1.2, b 0.75, column weights 1). Terms, counts and lengths are read
  from FTS5 itself (fts5vocab 'instance' and the ``*_docsize`` table) at a build, and by the one index
  rule (``lexindex.terms``, which is FTS5's tokenizer's split and stem) for rows merged or rescored.
- **Query** (``top``): max-score over the blocks, highest ``idf x block maximum`` first, into a
  dense accumulator; it stops when no unread posting can lift a row into the top ``k`` (the k-th
  best partial score is at least every other row's bound: unseen rows' sum of the lists' next
  maxima, a seen row's score plus the next maxima of the lists it is not yet in), or when
  ``budget`` postings are read: then the best ``RESCORE x k`` rows by partial score are scored
  exactly from their text (as changed rows are, below) and ranked by that.
- **Freshness**: ``lex_built`` records the highest ``nodes.seq`` the build saw (``upto``). Rows
  written after it are ranked by FTS5 restricted to ``rowid > upto`` (FTS5 seeks by rowid) and
  merged. Triggers record every row at or below ``upto`` that is deleted, rewritten or inserted
  again (``lex_changes``): its postings are ignored and its current text, if any, is scored
  exactly here (its terms by the one index rule, ``lexindex.terms``). Everything is in the
  database file, so a rollback, another connection's commit and a repair keep it consistent; the
  store rebuilds the index when the delta and the changes pass ``REBUILD_SHARE`` of the built rows.

Scores of delta rows are FTS5's (``N`` and ``avgdl`` of the whole table): for a one-user file the
same as the index's up to the drift of the statistics since the build; for a shared file they are on
the whole table's scale until the next rebuild (bounded by the rebuild share).
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dualmem.plane import lexindex

__all__ = [
    "AUTO_BUILD",
    "BUDGET",
    "REBUILD_SHARE",
    "TABLES",
    "THRESHOLD",
    "V8",
    "Query",
    "build",
    "built",
    "needs_build",
    "purge",
    "search",
    "state",
    "tokenize",
    "top",
]

#: the FTS5 tables the index mirrors, by the integer ``tbl`` its rows carry
TABLES = {"nodes_fts": 0, "context_fts": 1}
K1, B = lexindex.K1, lexindex.B
#: a block's number is its run's number times RUN plus its place in the run (run 0: the build's)
RUN = 1 << 16
#: impacts (0, k1 + 1) are stored as 1..65535
_SCALE = 65535 / (K1 + 1)
#: a list's first block holds FIRST_BLOCK postings, each next one twice as many up to MAX_BLOCK
FIRST_BLOCK, MAX_BLOCK = 128, 8192
#: stores of at least THRESHOLD nodes rank lexical and context searches here; a query reads at most
#: BUDGET postings
THRESHOLD = 20_000
BUDGET = 100_000
#: a search the budget cut short rescores RESCORE x k of its best rows from their text (exact scores)
RESCORE = 4
#: the stop test runs each time the postings read grow by this factor (from 4 first blocks)
CHECK_GROWTH = 2.0
#: the index is stale once rows written or changed since the build pass this share of the built rows
#: (at least REBUILD_MIN): FTS5's bounded path ranks until it is rebuilt. No search builds it unless
#: the store allows it (``SQLiteStore.use_lexical_index(auto_build=N)``: stores of at most N nodes);
#: by default it is built by ``dualmem check --repair`` (``SQLiteStore.build_lexical_index``), since a
#: build takes seconds to minutes (~5 s at 20k nodes, ~20 s at 100k, 4-9 min at 1M on two cores) and
#: a store that keeps growing would stall a search on every rebuild
REBUILD_SHARE = 0.05
AUTO_BUILD = 0
REBUILD_MIN = 1000
#: a user's mean row length may drift this far (relative) from the one its postings were computed with
#: (``lex_users.norm``, after incremental merges) before a query rescores its best rows from their text
DRIFT = 1e-3

#: a row at or below the build's ``upto`` recorded once (NOT EXISTS, not OR IGNORE: an UPSERT's DO
#: UPDATE that fires the trigger imposes its ABORT on the trigger's INSERT, so OR IGNORE would fail
#: the second rewrite of a row's context)
_CHANGED = "INSERT INTO lex_changes (tbl, seq, user_id) SELECT {tbl}, {row}.seq, {user} " \
    "WHERE {row}.seq <= (SELECT upto FROM lex_built WHERE tbl = {tbl}) " \
    "AND NOT EXISTS (SELECT 1 FROM lex_changes WHERE tbl = {tbl} AND seq = {row}.seq);"  # fmt: skip
_OWNER = "(SELECT user_id FROM nodes WHERE seq = {row}.seq)"
V8: tuple[str, ...] = (
    "CREATE TABLE lex_built (tbl INTEGER PRIMARY KEY, upto INTEGER NOT NULL, rows INTEGER NOT NULL)",
    """CREATE TABLE lex_stats (
        tbl INTEGER NOT NULL, user_id TEXT NOT NULL, docs INTEGER NOT NULL, tokens INTEGER NOT NULL,
        PRIMARY KEY (tbl, user_id)) WITHOUT ROWID""",
    """CREATE TABLE lex_blocks (
        id INTEGER PRIMARY KEY, tbl INTEGER NOT NULL, user_id TEXT NOT NULL, term TEXT NOT NULL,
        block INTEGER NOT NULL, df INTEGER NOT NULL, top INTEGER NOT NULL,
        seqs BLOB NOT NULL, impacts BLOB NOT NULL)""",
    "CREATE UNIQUE INDEX lex_blocks_key ON lex_blocks (tbl, user_id, term, block, df, top)",
    "CREATE TABLE lex_changes (tbl INTEGER NOT NULL, seq INTEGER NOT NULL, user_id TEXT, "
    "PRIMARY KEY (tbl, seq)) WITHOUT ROWID",
    "CREATE TRIGGER lex_nodes_insert AFTER INSERT ON nodes BEGIN "
    f"{_CHANGED.format(tbl=0, row='new', user='new.user_id')} END",
    "CREATE TRIGGER lex_nodes_delete AFTER DELETE ON nodes BEGIN "
    f"{_CHANGED.format(tbl=0, row='old', user='old.user_id')} END",
    "CREATE TRIGGER lex_nodes_update AFTER UPDATE OF content, speaker ON nodes BEGIN "
    f"{_CHANGED.format(tbl=0, row='old', user='old.user_id')} END",
    "CREATE TRIGGER lex_context_insert AFTER INSERT ON node_context BEGIN "
    f"{_CHANGED.format(tbl=1, row='new', user=_OWNER.format(row='new'))} END",
    "CREATE TRIGGER lex_context_delete AFTER DELETE ON node_context BEGIN "
    f"{_CHANGED.format(tbl=1, row='old', user=_OWNER.format(row='old'))} END",
    "CREATE TRIGGER lex_context_update AFTER UPDATE OF text ON node_context BEGIN "
    f"{_CHANGED.format(tbl=1, row='old', user=_OWNER.format(row='old'))} END",
)

#: the text FTS5 indexes for a row of each table (external content), by rowid
_TEXT = {
    "nodes_fts": "SELECT seq, speaker, content FROM nodes WHERE seq IN ({marks})",
    "context_fts": "SELECT seq, text FROM node_context WHERE seq IN ({marks})",
}


@dataclass(frozen=True)
class Built:
    """The index of one FTS5 table: the highest seq it saw and how many rows it holds."""

    upto: int
    rows: int


def built(conn: sqlite3.Connection, table: str) -> Built | None:
    row = conn.execute("SELECT upto, rows FROM lex_built WHERE tbl = ?", (TABLES[table],)).fetchone()
    return None if row is None else Built(int(row[0]), int(row[1]))


def state(conn: sqlite3.Connection, table: str) -> str:
    """Where the index of ``table`` stands: ``"none"`` (never built), ``"stale"`` (rows written or
    changed since the build pass the rebuild share: searches rank with FTS5 until a build, since the
    delta and the changed rows it would rank without the index grow with every write), ``"purged"``
    (an erase dropped some users' postings: FTS5 ranks those users) or ``"fresh"``."""
    done = built(conn, table)
    if done is None:
        return "none"
    top_seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0])
    changed = int(
        conn.execute("SELECT COUNT(*) FROM lex_changes WHERE tbl = ?", (TABLES[table],)).fetchone()[0]
    )
    if (top_seq - done.upto) + changed > max(REBUILD_MIN, REBUILD_SHARE * done.rows):
        return "stale"
    purged = "SELECT 1 FROM lex_stats WHERE tbl = ? AND docs < 0 LIMIT 1"
    return "purged" if conn.execute(purged, (TABLES[table],)).fetchone() is not None else "fresh"


def needs_build(conn: sqlite3.Connection, table: str) -> bool:
    """No index yet, an erase purged users, or rows written or changed since the build pass the
    rebuild share."""
    return state(conn, table) != "fresh"


def purge(conn: sqlite3.Connection) -> None:
    """Before a commit that erased text: drop the postings of every user with a row deleted or
    rewritten since the build (they may hold the erased words), in both tables, and mark the users
    (``docs`` -1) so FTS5 ranks them until the next build. Nothing else names a deleted row's
    words: ``lex_changes`` holds seqs and users only."""
    if conn.execute("SELECT 1 FROM lex_built LIMIT 1").fetchone() is None:
        return
    users = [r[0] for r in conn.execute("SELECT DISTINCT user_id FROM lex_changes WHERE user_id IS NOT NULL")]
    for user in users:
        # the user's rows are indexed again by steps from their current text (``lex_users.cursor``;
        # ``_sqlite_impact_merge.rebuild_step``), with the mean row length the postings had
        conn.execute(
            "INSERT OR REPLACE INTO lex_users (tbl, user_id, norm, cursor, docs, tokens) "
            "SELECT t.tbl, ?, COALESCE((SELECT CASE WHEN s.docs > 0 THEN 1.0 * s.tokens / s.docs END "
            "FROM lex_stats s WHERE s.tbl = t.tbl AND s.user_id = ?), (SELECT u.norm FROM lex_users u "
            "WHERE u.tbl = t.tbl AND u.user_id = ?), 1.0), 0, 0, 0 FROM lex_built t",
            (user, user, user),
        )
        conn.execute("DELETE FROM lex_blocks WHERE tbl IN (0, 1) AND user_id = ?", (user,))
        conn.execute("UPDATE lex_stats SET docs = -1 WHERE user_id = ?", (user,))
        conn.execute("DELETE FROM lex_changes WHERE user_id = ?", (user,))


# -- build --------------------------------------------------------------------------------------
def _varints(blob: bytes) -> int:
    """The sum of the varints of an FTS5 docsize record (one per column: the row's tokens; SQLite's
    varint: seven bits a byte, most significant first, the high bit set on every byte but the last)."""
    total = value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            total, value = total + value, 0
    return total


def _lengths(conn: sqlite3.Connection, table: str, upto: int) -> npt.NDArray[np.int64]:
    """Tokens of each row by seq (-1: no row)."""
    out = np.full(upto + 1, -1, dtype=np.int64)
    for seq, size in conn.execute(f"SELECT id, sz FROM {table}_docsize WHERE id <= ?", (upto,)):
        out[seq] = _varints(size)
    return out


def _owners(conn: sqlite3.Connection, upto: int) -> tuple[list[str], npt.NDArray[np.int32]]:
    """The users, and each seq's user as an index into them (-1: no node)."""
    users: dict[str, int] = {}
    owner = np.full(upto + 1, -1, dtype=np.int32)
    for seq, user in conn.execute("SELECT seq, user_id FROM nodes WHERE seq <= ?", (upto,)):
        owner[seq] = users.setdefault(user, len(users))
    return list(users), owner


def _instances(conn: sqlite3.Connection, table: str, batch: int) -> Iterator[tuple[list[str], Any, Any]]:
    """FTS5's token instances in batches of whole terms: (terms, term index per instance, row)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.lex_{table}_instances "
        f"USING fts5vocab (main, {table}, 'instance')"
    )
    cursor = conn.execute(f"SELECT term, doc FROM temp.lex_{table}_instances")
    terms: list[str] = []
    index: list[int] = []
    docs: list[int] = []
    while rows := cursor.fetchmany(65536):
        for term, doc in rows:
            if not terms or terms[-1] != term:
                if len(index) >= batch:
                    yield terms, np.asarray(index, dtype=np.int32), np.asarray(docs, dtype=np.int64)
                    terms, index, docs = [], [], []
                terms.append(term)
            index.append(len(terms) - 1)
            docs.append(doc)
    if terms:
        yield terms, np.asarray(index, dtype=np.int32), np.asarray(docs, dtype=np.int64)


def impacts(tf: Any, length: Any, avgdl: Any) -> Any:
    """BM25's term-frequency part, quantized (1..65535)."""
    part = tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))
    return np.clip(np.rint(part * _SCALE), 1, 65535).astype(np.uint16)


def build(conn: sqlite3.Connection, table: str, *, batch: int = 1_000_000) -> int:
    """Rebuild the index of FTS5 ``table`` from FTS5 itself (inside the caller's write); its postings."""
    tbl = TABLES[table]
    upto = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0])
    users, owner = _owners(conn, upto)
    length = _lengths(conn, table, upto)
    held = (length >= 0) & (owner >= 0)
    docs = np.bincount(owner[held], minlength=len(users))
    tokens = np.bincount(owner[held], weights=length[held], minlength=len(users))
    avgdl = np.where(docs > 0, tokens / np.maximum(docs, 1), 1.0)
    for name in ("lex_blocks", "lex_stats", "lex_changes", "lex_built", "lex_users"):
        conn.execute(f"DELETE FROM {name} WHERE tbl = ?", (tbl,))
    shape = _Shape(tbl, users, owner, length, avgdl)
    postings = sum(_write_batch(conn, shape, *part) for part in _instances(conn, table, batch))
    conn.executemany(
        "INSERT INTO lex_stats (tbl, user_id, docs, tokens) VALUES (?, ?, ?, ?)",
        [(tbl, user, int(docs[i]), int(tokens[i])) for i, user in enumerate(users) if docs[i] > 0],
    )
    conn.execute("INSERT INTO lex_built (tbl, upto, rows) VALUES (?, ?, ?)", (tbl, upto, int(held.sum())))
    return postings


@dataclass(frozen=True)
class _Shape:
    """What a build knows of the rows: each seq's user (index into ``users``) and tokens, the users'
    mean tokens a row."""

    tbl: int
    users: list[str]
    owner: Any
    length: Any
    avgdl: Any


def _write_batch(conn: sqlite3.Connection, shape: _Shape, terms: list[str], index: Any, rows: Any) -> int:
    """Postings of a batch of whole terms: (term, row) counts -> impacts -> blocks per (user, term)."""
    tbl, users, owner, length = shape.tbl, shape.users, shape.owner, shape.length
    n = len(index)
    first = np.ones(n, dtype=bool)
    first[1:] = (index[1:] != index[:-1]) | (rows[1:] != rows[:-1])
    starts = np.flatnonzero(first)
    tf = np.diff(np.append(starts, n)).astype(np.float64)
    term, seq = index[starts], rows[starts]
    inside = seq < len(owner)
    term, seq, tf = term[inside], seq[inside], tf[inside]
    user = owner[seq]
    keep = (user >= 0) & (length[seq] >= 0)
    term, seq, tf, user = term[keep], seq[keep], tf[keep], user[keep]
    quant = impacts(tf, length[seq], shape.avgdl[user])
    order = np.lexsort((seq, -quant.astype(np.int32), user, term))
    term, seq, user, quant = term[order], seq[order], user[order], quant[order]
    edge = np.flatnonzero(np.diff(term) | np.diff(user)) + 1
    bounds = np.concatenate(([0], edge, [len(term)]))
    out: list[tuple[Any, ...]] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        name, who, df, size, block = terms[int(term[lo])], users[int(user[lo])], hi - lo, FIRST_BLOCK, 0
        while lo < hi:  # every block of a list carries the list's df
            end = min(hi, lo + size)
            seqs, quants = seq[lo:end].astype("<i4").tobytes(), quant[lo:end].astype("<u2").tobytes()
            out.append((tbl, who, name, block, df, int(quant[lo]), seqs, quants))
            lo, block, size = end, block + 1, min(MAX_BLOCK, size * 2)
    conn.executemany(
        "INSERT INTO lex_blocks (tbl, user_id, term, block, df, top, seqs, impacts) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        out,
    )
    return len(seq)


# -- query --------------------------------------------------------------------------------------
def idf(docs: int, df: int) -> float:
    """FTS5 bm25()'s idf (1e-6 when not positive): ``lexindex.idf``."""
    return lexindex.idf(docs, df)


@dataclass
class _List:
    """One query term's posting list of the tenant: its weight and its blocks' maxima and ids."""

    weight: float
    tops: list[float]
    ids: list[int]


@dataclass(frozen=True)
class Query:
    """A tenant's query: its user, its terms as FTS5 indexes them (and as an FTS5 OR expression),
    how many rows it wants and how many postings it may read."""

    user: str
    tokens: tuple[str, ...]
    expression: str
    k: int
    budget: int


@dataclass(frozen=True)
class Ranked:
    """The index's best rows, best first; whether no unread posting could change which they are
    (``settled``), the postings read, and the statistics of the user's rows the scores used."""

    seqs: list[int]
    scores: list[float]
    settled: bool
    read: int
    weights: dict[str, float]
    docs: int
    avgdl: float
    drift: bool = False


def _lists(
    conn: sqlite3.Connection, tbl: int, user: str, tokens: Sequence[str], docs: int
) -> tuple[list[_List], dict[str, float]]:
    lists: list[_List] = []
    weights: dict[str, float] = {}
    for token in dict.fromkeys(tokens):
        blocks = conn.execute(
            "SELECT df, top, id, block FROM lex_blocks WHERE tbl = ? AND user_id = ? AND term = ? "
            "ORDER BY top DESC, block",
            (tbl, user, token),
        ).fetchall()
        # a list is the union of its runs (``_sqlite_impact_merge``): each of a run's blocks carries
        # the run's postings
        df = sum({b[3] // RUN: b[0] for b in blocks}.values())
        weights[token] = idf(docs, df)
        if blocks:
            lists.append(_List(weights[token], [b[1] / _SCALE for b in blocks], [b[2] for b in blocks]))
    return lists, weights


def _settled(acc: Any, mask: Any, seen: Any, bounds: list[float], k: int) -> bool:
    """No unread posting can lift a row into the top ``k`` of the partial scores ``acc``, nor tie
    its k-th (FTS5 orders equal scores by rowid: an unread row of the k-th score may come first)."""
    if len(seen) < k:
        return False
    values = acc[seen]
    n = len(values)
    order = np.argpartition(values, n - k)
    kth = float(values[order[n - k]])
    total = sum(bound for bound in bounds if bound > 0)
    if kth <= total:  # an unread row could tie the k-th (ties go to the lower seq): read on
        return False
    rest = np.ones(n, dtype=bool)
    rest[order[n - k :]] = False
    near = np.flatnonzero(rest & (values + total >= kth))  # only these could reach the k-th
    if not len(near):
        return True
    lift = np.zeros(len(near))
    have = mask[seen[near]]
    for bit, bound in enumerate(bounds):
        if bound > 0:
            lift += np.where(have & np.uint32(1 << bit), 0.0, bound)
    return bool((values[near] + lift).max() < kth)


def top(conn: sqlite3.Connection, table: str, query: Query, *, upto: int, changed: Sequence[int]) -> Ranked:
    """The user's ``query.k`` best rows of the index (max-score, see the module; ``RESCORE`` times
    as many, by partial scores, when the budget stopped it); the postings of the rows ``changed``
    are ignored."""
    tbl, user, k = TABLES[table], query.user, query.k
    stats = conn.execute(
        "SELECT docs, tokens FROM lex_stats WHERE tbl = ? AND user_id = ?", (tbl, user)
    ).fetchone()
    docs, avgdl = (int(stats[0]), stats[1] / max(1, stats[0])) if stats else (0, 1.0)
    held = conn.execute("SELECT norm FROM lex_users WHERE tbl = ? AND user_id = ?", (tbl, user)).fetchone()
    drift = held is not None and abs(float(held[0]) - avgdl) > DRIFT * avgdl
    lists, weights = _lists(conn, tbl, user, query.tokens[:32], docs)
    acc = np.zeros(upto + 1, dtype=np.float64)
    mask = np.zeros(upto + 1, dtype=np.uint32)
    dead = np.asarray([s for s in changed if s <= upto], dtype=np.int64)
    acc[dead] = -np.inf
    bounds = [item.weight * item.tops[0] for item in lists]
    heap = [(-bound, i, 0) for i, bound in enumerate(bounds)]
    heapq.heapify(heap)
    seen: list[Any] = []
    spent, check, settled = 0, 4 * FIRST_BLOCK, False
    while heap and spent < query.budget and not settled:
        _, i, block = heapq.heappop(heap)
        item = lists[i]
        blob = conn.execute(
            "SELECT seqs, impacts FROM lex_blocks WHERE id = ?", (item.ids[block],)
        ).fetchone()
        seqs = np.frombuffer(blob[0], dtype="<i4")
        acc[seqs] += item.weight / _SCALE * np.frombuffer(blob[1], dtype="<u2")
        seen.append(seqs[mask[seqs] == 0])
        mask[seqs] |= np.uint32(1 << i)
        spent += len(seqs)
        bounds[i] = item.weight * item.tops[block + 1] if block + 1 < len(item.ids) else 0.0
        if bounds[i] > 0:
            heapq.heappush(heap, (-bounds[i], i, block + 1))
        if heap and spent >= check:
            check = int(spent * CHECK_GROWTH)
            seen = [np.concatenate(seen)]  # one array from here on: each check copies only what is new
            settled = _settled(acc, mask, seen[0], bounds, k)
    settled = settled or not heap
    pool = np.concatenate(seen) if seen else np.zeros(0, dtype=np.int64)
    pool = pool[np.isfinite(acc[pool])]
    k = k if settled and not drift else RESCORE * k  # inexact scores: the caller rescores a wider pool
    if len(pool) > k:  # every row of the k-th score stays in: ties go to the lower seq, as in FTS5
        kth = np.partition(acc[pool], len(pool) - k)[len(pool) - k]
        pool = pool[acc[pool] >= kth]
    best = pool[np.lexsort((pool, -acc[pool]))][:k]
    return Ranked(best.tolist(), acc[best].tolist(), settled, spent, weights, docs, avgdl, drift)


def tokenize(
    conn: sqlite3.Connection, table: str, seqs: Sequence[int], terms: Sequence[str] | None = None
) -> tuple[dict[int, int], list[Any]]:
    """The rows' token counts (by seq) and ``(seq, term, tf)`` of their current text, by the one
    index rule (``lexindex.terms`` of each column; only ``terms`` when given)."""
    wanted = None if terms is None else set(terms)
    length: dict[int, int] = {}
    counts: list[Any] = []
    for start in range(0, len(seqs), 500):
        part = list(seqs[start : start + 500])
        query = _TEXT[table].format(marks=",".join("?" * len(part)))
        for row in conn.execute(query, part):
            seq = int(row[0])
            found = [term for text in row[1:] if text is not None for term in lexindex.terms(text)]
            length[seq] = len(found)
            held = Counter(found)
            counts += [(seq, term, tf) for term, tf in held.items() if wanted is None or term in wanted]
    counts.sort(key=lambda count: (count[1], count[0]))  # by term, then row: scores sum in one order
    return length, counts


def rescore(
    conn: sqlite3.Connection, table: str, seqs: Sequence[int], ranked: Ranked
) -> list[tuple[int, float]]:
    """BM25 of the rows ``seqs`` as they are now (``tokenize``), with the index's statistics: the
    rows the index holds stale postings of."""
    if not seqs or not ranked.weights:
        return []
    length, counts = tokenize(conn, table, seqs, sorted(ranked.weights))
    score: dict[int, float] = {}
    for doc, term, tf in counts:
        score[doc] = score.get(doc, 0.0) + ranked.weights[term] * lexindex.weight(
            tf, length[doc], ranked.avgdl
        )
    return sorted(score.items())


def search(
    conn: sqlite3.Connection, table: str, where: tuple[str, list[Any]], query: Query
) -> list[tuple[str, float]] | None:
    """Top-k ``(node id, score)`` of the tenant (``where`` over ``nodes n``) from the index, the rows
    written since it was built (FTS5, ``rowid > upto``) and the rows changed since (rescored);
    ``None`` when the index cannot answer (not built, or a narrower tenant than its user left it
    short of ``k`` rows while postings were unread): the caller ranks with FTS5."""
    done = built(conn, table)
    if done is None:
        return None
    tbl = TABLES[table]
    clause, params = where
    stats = conn.execute(
        "SELECT docs FROM lex_stats WHERE tbl = ? AND user_id = ?", (tbl, query.user)
    ).fetchone()
    if stats is not None and stats[0] < 0:  # purged by an erase: FTS5 ranks the user until a rebuild
        return None
    changed = [int(r[0]) for r in conn.execute("SELECT seq FROM lex_changes WHERE tbl = ?", (tbl,))]
    narrow = clause.count("?") > 1
    k = query.k
    wide = dataclasses.replace(query, k=4 * k) if narrow else query
    ranked = top(conn, table, wide, upto=done.upto, changed=changed)
    found: dict[int, tuple[str, float]] = {}
    admit = f"SELECT n.seq, n.id FROM json_each(?) w CROSS JOIN nodes n ON n.seq = w.value WHERE {clause}"
    score = dict(zip(ranked.seqs, ranked.scores, strict=True))
    if not ranked.settled or ranked.drift:  # partial or drifted scores: the pool scored from its text
        score.update(rescore(conn, table, ranked.seqs, ranked))
    for seq, node_id in conn.execute(admit, [json.dumps(ranked.seqs), *params]):
        found[int(seq)] = (node_id, score[int(seq)])
    if narrow and len(found) < k and (len(ranked.seqs) >= wide.k or not ranked.settled):
        return None  # the agent's or run's rows may lie past the user's best: FTS5 ranks them
    if changed:
        live = dict(conn.execute(admit, [json.dumps(changed), *params]).fetchall())
        for seq, value in rescore(conn, table, list(live), ranked):
            found[seq] = (live[seq], value)
    fresh = conn.execute(
        f"SELECT n.seq, n.id, -bm25({table}) AS score FROM {table} CROSS JOIN nodes n "
        f"ON n.seq = {table}.rowid WHERE {table} MATCH ? AND {table}.rowid > ? AND {clause} "
        "ORDER BY score DESC, n.seq LIMIT ?",
        [query.expression, done.upto, *params, k],
    )
    for seq, node_id, value in fresh:
        found[int(seq)] = (node_id, float(value))
    best = sorted(found.items(), key=lambda item: (-item[1][1], item[0]))[:k]
    return [(node_id, value) for _, (node_id, value) in best]
