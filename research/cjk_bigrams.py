"""The CJK eval's bigram BM25 and its measures, shared by ``bench/cjk/eval.py`` and
``research/cjk_loco.py`` (bench may import research; research never imports bench)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence

__all__ = ["bigram_ranker", "bigrams", "score"]

_CJK = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"([{_CJK}]+)|([A-Za-z0-9]+)")


def bigrams(text: str) -> list[str]:
    """CJK runs as overlapping bigrams (a one-character run as itself); Latin words lowercased."""
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        run, word = m.group(1), m.group(2)
        if run is None:
            out.append(word.lower())
        elif len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def bigram_ranker(texts: Mapping[str, str], k: int = 10) -> Callable[[str], list[str]]:
    """A plain SQLite FTS5 index (``unicode61``, BM25) of ``texts`` (id -> text) over CJK bigrams,
    the query the OR of its bigrams: the issue's "bigram BM25"; ranks the top ``k`` ids."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, body, tokenize='unicode61')")
    db.executemany(
        "INSERT INTO t(id, body) VALUES (?, ?)", [(i, " ".join(bigrams(s))) for i, s in texts.items()]
    )

    def ranked(query: str) -> list[str]:
        tokens = list(dict.fromkeys(bigrams(query)))
        if not tokens:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
        rows = db.execute("SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid LIMIT ?", (match, k))
        return [r[0] for r in rows]

    return ranked


def score(evidence: Sequence[str], ranked: Sequence[str]) -> dict[str, float]:
    """One question's measures: recall in the top 5, all evidence in the top n, evidence first."""
    needed = set(evidence)
    return {
        "R@5": len(needed & set(ranked[:5])) / len(needed),
        "R@n": float(needed <= set(ranked[: len(needed)])),
        "first": float(bool(ranked) and ranked[0] in needed),
    }
