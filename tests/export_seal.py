"""Sealing an export by hand, for the tests that edit a record on purpose to see the record refused.

An edited file fails its trailer's sha256 before any record is judged; :func:`resealed` writes the
trailer again by the format's rule (counts of each kind, sha256 of every line before the trailer,
each as UTF-8 followed by ``\\n``), computed here independently of ``dualmem.plane.jsonl``.
"""

from __future__ import annotations

import hashlib
import json

_COUNTED = {"nodes": "node", "chunks": "chunks", "edges": "edge", "decisions": "decision"}


def resealed(lines: list[str]) -> list[str]:
    """``lines`` without any trailer (and blank lines) they hold, then a trailer that fits them."""
    body = [line for line in lines if line.strip() and _kind(line) != "trailer"]
    kinds = [_kind(line) for line in body]
    digest = hashlib.sha256("".join(f"{line}\n" for line in body).encode("utf-8", "surrogatepass"))
    trailer = {"kind": "trailer", **{k: kinds.count(v) for k, v in _COUNTED.items()}}
    return [*body, json.dumps({**trailer, "sha256": digest.hexdigest()})]


def resealed_text(lines: list[str]) -> str:
    """:func:`resealed` as a file's text."""
    return "".join(f"{line}\n" for line in resealed(lines))


def _kind(line: str) -> object:
    try:
        doc = json.loads(line)
    except ValueError:
        return None  # not JSON: sealed all the same, for the importer to refuse by its line number
    return doc.get("kind") if isinstance(doc, dict) else None
