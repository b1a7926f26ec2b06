"""A filter answered by a store's own index (``LinkIndex.select_nodes``), exactly as ``Filter.matches``.

Each condition of a :class:`Selection` becomes two SQL expressions over the node row: a *candidate*
one (every row that may match passes it) and an *exact* one (only rows that surely match pass it).
The store reads the rows that pass every candidate expression, with whether they pass every exact
one; the few that are only candidates (a speaker outside ASCII, a time equal to a bound's epoch, a
metadata value that is a list, a mapping, a fraction or a very large integer) are read as nodes and
checked with ``Selection.matches`` itself. The expressions are written once here for both SQL
dialects (SQLite and PostgreSQL); the conditions map onto the node table's columns (``session``,
``at_ts``, ``speaker``) and, for metadata, onto the stored JSON text.

Why each condition is exact:

- ``session``: text equality, as Python's.
- ``speaker``: Python compares ``(speaker or "").lower()``. For a stored speaker of ASCII only,
  SQL's ASCII lowering (SQLite's ``lower``, PostgreSQL's ``lower`` under ``COLLATE "C"``) is
  Python's; a speaker with any other character is a candidate only.
- ``since``/``until``: ``at_ts`` is ``codec.epoch(at)``, and ``epoch`` is monotone (exact
  microseconds divided, correctly rounded), so ``at_ts > epoch(since)`` means ``at > since`` and
  ``at_ts < epoch(since)`` means ``at < since``; an equal epoch is a candidate only.
- ``metadata``: a key asked to be ``None`` matches a missing key or a JSON null; a string matches
  the same string; a bool, an integer or an integral float of magnitude at most 2**53 matches any
  JSON number or boolean of that value (Python's ``True == 1 == 1.0``). Anything else is a
  candidate when the key holds a value of a type that could compare equal. PostgreSQL reads the
  stored JSON text with ``->`` only (its raw text: a string compares as ``codec.dump_json`` of the
  filter's value, which wrote it); a row whose JSON holds ``\u0000`` is a candidate only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from dualmem.plane import codec
from dualmem.types import JSONValue, Node

__all__ = ["Selection", "SqlSelection", "compile_selection", "finish"]

Dialect = Literal["sqlite", "postgres"]

#: integers (and integral floats) up to this magnitude are exact as an SQLite integer and a float8
_EXACT_INT = 2**53


class Selection(Protocol):
    """The shape of ``dualmem.vocab.Filter`` that a store answers (read-only attributes)."""

    @property
    def speaker(self) -> str | None: ...
    @property
    def session(self) -> str | None: ...
    @property
    def since(self) -> dt.datetime | None: ...
    @property
    def until(self) -> dt.datetime | None: ...
    @property
    def metadata(self) -> Mapping[str, JSONValue] | None: ...
    def matches(self, node: Node) -> bool: ...


@dataclass(slots=True)
class SqlSelection:
    """``WHERE`` conditions (candidate), the ``exact`` expression and the parameters of each, in
    the order they appear in ``SELECT n.id, <exact> ... WHERE <tenant> AND <candidate>``."""

    candidate: list[str] = field(default_factory=list)
    candidate_params: list[Any] = field(default_factory=list)
    exact: list[str] = field(default_factory=list)
    exact_params: list[Any] = field(default_factory=list)

    def add(self, candidate: str, cparams: Sequence[Any], exact: str, eparams: Sequence[Any]) -> None:
        self.candidate.append(candidate)
        self.candidate_params.extend(cparams)
        self.exact.append(exact)
        self.exact_params.extend(eparams)

    def where(self) -> str:
        return " AND ".join(f"({c})" for c in self.candidate) or "1=1"

    def sure(self) -> str:
        return " AND ".join(f"({e})" for e in self.exact) or "1=1"


def _ascii(text: str) -> bool:
    return text.isascii()


def compile_selection(
    where: Selection, dialect: Dialect, enc: Callable[[str], Any] = lambda s: s
) -> SqlSelection:
    """The SQL of ``where`` over ``nodes n``; ``enc`` maps a text parameter to its stored form."""
    ph = "?" if dialect == "sqlite" else "%s"
    out = SqlSelection()
    if where.session is not None:
        out.add(f"n.session = {ph}", [enc(where.session)], "1=1", [])
    if where.speaker is not None:
        _speaker(out, where.speaker, dialect, ph, enc)
    if where.since is not None:
        since = codec.epoch(where.since)
        out.add(f"n.at_ts >= {ph}", [since], f"n.at_ts > {ph}", [since])
    if where.until is not None:
        until = codec.epoch(where.until)
        out.add(f"n.at_ts <= {ph}", [until], f"n.at_ts < {ph}", [until])
    for key, value in (where.metadata or {}).items():
        if dialect == "sqlite":
            _sqlite_metadata(out, key, value)
        else:
            _postgres_metadata(out, key, value)
    return out


def _speaker(out: SqlSelection, speaker: str, dialect: Dialect, ph: str, enc: Callable[[str], Any]) -> None:
    if dialect == "sqlite":
        other = "length(CAST(n.speaker AS BLOB)) != length(n.speaker)"
        lowered = "lower(COALESCE(n.speaker, ''))"
    else:
        other = "octet_length(n.speaker) != char_length(n.speaker)"
        lowered = "lower(COALESCE(n.speaker, '') COLLATE \"C\")"
    target = speaker.lower()
    if not _ascii(target):  # an ASCII speaker lowers to ASCII: only another speaker can match
        out.add(
            f"COALESCE({other}, FALSE)" if dialect == "postgres" else f"COALESCE({other}, 0)", [], "1=0", []
        )
        return
    ascii_only = f"NOT COALESCE({other}, {'FALSE' if dialect == 'postgres' else '0'})"
    out.add(
        f"{lowered} = {ph} OR NOT ({ascii_only})",
        [enc(target)],
        f"{ascii_only} AND {lowered} = {ph}",
        [enc(target)],
    )


def _number(value: JSONValue) -> int | None:
    """``value`` as the integer SQL compares exactly (bools and integral floats too), or None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) <= _EXACT_INT:
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT_INT:
        return int(value)
    return None


def _sqlite_metadata(out: SqlSelection, key: str, value: JSONValue) -> None:
    each = "SELECT 1 FROM json_each(n.metadata) j WHERE j.key = ?"
    number = _number(value)
    if value is None:
        out.add(f"NOT EXISTS ({each} AND j.type != 'null')", [key], "1=1", [])
    elif isinstance(value, str):
        out.add(f"EXISTS ({each} AND j.type = 'text' AND j.value = ?)", [key, value], "1=1", [])
    elif number is not None:
        types = "('integer', 'real', 'true', 'false')"
        out.add(f"EXISTS ({each} AND j.type IN {types} AND j.value = ?)", [key, number], "1=1", [])
    else:
        types = (
            "('integer', 'real', 'true', 'false')"
            if isinstance(value, int | float)
            else "('array', 'object')"
        )
        out.add(f"EXISTS ({each} AND j.type IN {types})", [key], "1=0", [])


#: a stored metadata text holding the escape ``\u0000``: PostgreSQL's JSON functions refuse to
#: unescape it, so the row's JSON is read with it replaced, and the row is a candidate only
_NUL = "strpos(n.metadata, '\\u0000') > 0"
_JSON = "replace(n.metadata, '\\u0000', '\\u0001')::json"


def _postgres_metadata(out: SqlSelection, key: str, value: JSONValue) -> None:
    item = f"({_JSON} -> %s)"
    kind = f"json_typeof{item}"
    number = _number(value)
    exact = True
    params: list[Any]
    if value is None:
        cond, params = f"{item} IS NULL OR {kind} = 'null'", [key, key]
    elif isinstance(value, str):
        # ``->`` keeps the stored text, ``codec.dump_json``'s: deterministic and one-to-one on strings
        cond, params = f"{kind} = 'string' AND {item}::text = %s", [key, key, codec.dump_json(value)]
    elif number is not None:
        # ``->`` and its raw text only: ``->>`` would unescape every string it meets
        cond = f"(CASE WHEN {kind} = 'number' THEN {item}::text::float8 END) = %s"
        params = [key, key, float(number)]
        if number in (0, 1):
            cond += f" OR ({kind} = 'boolean' AND {item}::text = %s)"
            params += [key, key, "true" if number else "false"]
    else:
        kinds = "('number', 'boolean')" if isinstance(value, int | float) else "('array', 'object')"
        cond, params, exact = f"{kind} IN {kinds}", [key], False
    out.add(f"{_NUL} OR ({cond})", params, f"NOT {_NUL}" if exact else "FALSE", [])


def finish(
    rows: Sequence[tuple[str, Any]], where: Selection, load: Callable[[list[str]], Mapping[str, Node]]
) -> list[str]:
    """The ids of ``rows`` (id, sure), in their order, that match: a sure row does; the others are
    loaded (``load``) and checked by ``where.matches``."""
    unsure = [node_id for node_id, sure in rows if not sure]
    kept: set[str] = set()
    if unsure:
        kept = {node_id for node_id, node in load(unsure).items() if where.matches(node)}
    return [node_id for node_id, sure in rows if sure or node_id in kept]
