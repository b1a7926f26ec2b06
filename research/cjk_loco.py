"""The CJK dev corpus in the scorer's cross-validation (issue 44): leave-one-corpus-out beside
within-corpus, the length features counted two ways, bigram BM25 in the same run.

Pools come from ``research.loco.load`` (the English corpora's builds and the CJK corpus's, each
with its own embedder: ``research.corpora``). Then, for each way of counting a CJK candidate's
length (``--lengths``; the columns ``log_len`` and ``short`` of the CJK pools are recomputed from
the candidates' texts, every other column is the pool's own):

- ``loco``: the scorer (LightGBM lambdarank, ``--trees``) fitted on the English corpora (and the
  shuffled copies of ``--augment``), tested on the CJK corpus;
- ``within``: each CJK fold (whole users) held out, the scorer fitted on every English corpus and
  the other CJK folds;
- ``cjk-only``: each CJK fold held out, fitted on the other CJK folds alone.

Reported per language and question family as ``bench/cjk/eval.py`` does: ``R@5`` (share of the
needed messages in the first 5), ``R@n`` (all within the first |needed|), ``first`` (the first
result is a needed message), for the fold's scorer over the pool (``dualmem-pool``), the pools'
``bm25`` (dualmem's lexical rule), ``dense``, ``hybrid`` and ``bm25-bigram`` (a plain FTS5 index
over CJK bigrams, the issue's baseline, as ``bench/cjk/eval.py`` builds it). With
``--english``: each English corpus held out with and without the CJK corpus in the training
(R@10, the figure of ``docs/benchmarks.md``): what adding the CJK corpus does to the others.

    python -m research.cjk_loco --builds research-out/builds --augment locomo agentchat \\
        --trees 300 --english --out research-out/cjk-loco
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dualmem.learn.boost import TreeSettings
from dualmem.read.pool import FEATURES
from research.cjk_bigrams import bigram_ranker, score
from research.corpora import ENGLISH, SHUFFLED, conversations
from research.cv import QueryPool, rank, recall_at_k
from research.cv_joint import Corpora
from research.loco import fit, load

__all__ = ["LENGTHS", "MODES", "bigram_ranker", "cjk_words", "main", "score", "with_lengths"]

_LEN, _SHORT = FEATURES.index("log_len"), FEATURES.index("short")

#: Han and kana: scripts written without spaces (Hangul is spaced by words, and counted as English)
_UNSPACED = re.compile(
    "[\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003ffff]+"
)
#: characters of a Chinese or Japanese word on average (a-priori, not fitted)
CHARS_PER_WORD = 1.5


def cjk_words(text: str) -> int:
    """``text``'s length in words: its whitespace words (English, Korean); with Han or kana, each
    run counts ``ceil(len / CHARS_PER_WORD)`` and the punctuation between runs nothing. (The pool
    counts whitespace words: a Chinese message is one. This count lost under the CV here.)"""
    if _UNSPACED.search(text) is None:
        return len(text.split())
    runs = _UNSPACED.findall(text)
    rest = [w for w in _UNSPACED.sub(" ", text).split() if any(map(str.isalnum, w))]  # not "，" alone
    return len(rest) + sum(math.ceil(len(r) / CHARS_PER_WORD) for r in runs)


#: how a candidate's length in words is counted: whitespace words (the pool's rule), or Han and
#: kana runs by their characters (``cjk_words``)
LENGTHS: Mapping[str, Callable[[str], int]] = {
    "spaces": lambda text: len(text.split()),
    "chars": cjk_words,
}


def with_lengths(pools: Sequence[QueryPool], count: Callable[[str], int]) -> list[QueryPool]:
    """``pools`` with ``log_len`` and ``short`` recomputed from each candidate's text by ``count``."""
    out = []
    for p in pools:
        words = np.array([count(t) for t in p.contents], dtype=np.float64)
        feats = p.features.copy()
        feats[:, _LEN] = [math.log1p(w) / 5.0 for w in words]
        feats[:, _SHORT] = words <= 8
        out.append(replace(p, features=feats))
    return out


def _cjk_rows(
    data: Corpora, held: Sequence[str], ranker: Any, mode: str, lengths: str, bigram: Mapping[str, Any]
) -> list[dict[str, Any]]:
    rows = []
    for conv in held:
        for p in data.pools[conv]:
            systems = [("dualmem-pool", rank(ranker, p)[0]), *p.baselines.items()]
            systems.append(("bm25-bigram", tuple(bigram[conv](p.question))))
            for system, ranked in systems:
                rows.append(
                    {
                        "mode": mode,
                        "lengths": lengths,
                        "system": system,
                        "conversation": conv,
                        "language": conv[:2],
                        "family": str(p.category),
                        **score(p.evidence, ranked),
                    }
                )
    return rows


def _train(data: Corpora, keep: Callable[[str], bool]) -> dict[str, list[QueryPool]]:
    """The pools of every conversation ``keep`` takes, by source corpus (the inner-CV groups)."""
    out: dict[str, list[QueryPool]] = {}
    for conv, ps in data.pools.items():
        if keep(conv):
            out.setdefault(data.corpus_of[conv].removesuffix(SHUFFLED), []).extend(ps)
    return out


MODES = ("loco", "within", "cjk-only")


def run_cjk(
    data: Corpora, settings: TreeSettings, lengths: Sequence[str], modes: Sequence[str] = MODES
) -> list[dict[str, Any]]:
    cjk = [c for c, name in data.corpus_of.items() if name == "cjk"]
    folds = sorted({data.fold_of[c] for c in cjk})
    bigram = {
        c.id: bigram_ranker({str(o.turn_id): o.content for o in c.observations}) for c in conversations("cjk")
    }
    original = {c: data.pools[c] for c in cjk}
    rows: list[dict[str, Any]] = []
    for name in lengths:
        for c in cjk:
            data.pools[c] = with_lengths(original[c], LENGTHS[name])
        plans: list[tuple[str, list[str], Callable[[str], bool]]] = [
            ("loco", cjk, lambda c: data.corpus_of[c] != "cjk"),
        ]
        for fold in folds:
            held = [c for c in cjk if data.fold_of[c] == fold]
            plans.append(("within", held, lambda c, fold=fold: data.fold_of.get(c) != fold))
            plans.append(
                (
                    "cjk-only",
                    held,
                    lambda c, fold=fold: data.corpus_of[c] == "cjk" and data.fold_of[c] != fold,
                )
            )
        for mode, held, keep in [plan for plan in plans if plan[0] in modes]:
            started = time.perf_counter()
            ranker, _ = fit(_train(data, keep), settings, choose=False)
            rows += _cjk_rows(data, held, ranker, mode, name, bigram)
            print(f"{name} {mode} {held[0]}..: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for c in cjk:
        data.pools[c] = original[c]
    return rows


def run_english(data: Corpora, settings: TreeSettings) -> list[dict[str, Any]]:
    """Each English corpus held out, the scorer fitted on the others without and with the CJK corpus."""
    rows: list[dict[str, Any]] = []
    for held in [c for c in ENGLISH if c in data.corpus_of.values()]:
        tests = [c for c, name in data.corpus_of.items() if name == held]
        for training in ("english", "english+cjk"):

            def keep(c: str, held: str = held, training: str = training) -> bool:
                source = data.corpus_of[c].removesuffix(SHUFFLED)
                return source != held and (training == "english+cjk" or source != "cjk")

            started = time.perf_counter()
            ranker, _ = fit(_train(data, keep), settings, choose=False)
            for conv in tests:
                for p in data.pools[conv]:
                    r10 = recall_at_k(rank(ranker, p)[0], p.evidence, 10)
                    if r10 is not None:
                        rows.append({"corpus": held, "training": training, "R@10": r10})
            print(f"english {held} {training}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return rows


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean measures by ``mode lengths system language[/family]``."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        for group in (r["language"], f"{r['language']}/{r['family']}"):
            groups[f"{r['mode']} {r['lengths']} {r['system']} {group}"].append(r)
    return {
        key: {"n": len(rs), **{m: round(sum(r[m] for r in rs) / len(rs), 3) for m in ("R@5", "R@n", "first")}}
        for key, rs in sorted(groups.items())
    }


def english_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        groups[f"{r['corpus']} {r['training']}"].append(r["R@10"])
    return {k: {"n": len(v), "R@10": round(sum(v) / len(v), 3)} for k, v in sorted(groups.items())}


def report(figures: Mapping[str, Mapping[str, float]], english: Mapping[str, Mapping[str, float]]) -> str:
    lines = [
        "| mode | lengths | system | group | n | R@5 | R@n | first |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, f in figures.items():
        mode, lengths, system, group = key.split(" ")
        if "/" in group and system != "dualmem-pool":
            continue
        lines.append(
            f"| {mode} | {lengths} | {system} | {group} | {f['n']:.0f} | {f['R@5']:.3f} | {f['R@n']:.3f} | "
            f"{f['first']:.3f} |"
        )
    if english:
        lines += ["", "| held-out English corpus | training | n | R@10 |", "|---|---|---|---|"]
        for key, f in english.items():
            corpus, training = key.split(" ")
            lines.append(f"| {corpus} | {training} | {f['n']:.0f} | {f['R@10']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--out", type=Path, default=Path("research-out/cjk-loco"))
    parser.add_argument("--english-corpora", nargs="*", default=list(ENGLISH), choices=list(ENGLISH))
    parser.add_argument("--augment", nargs="*", default=[], help="corpora whose shuffled copies train too")
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lengths", nargs="+", default=list(LENGTHS), choices=list(LENGTHS))
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES, help="CJK held out how")
    parser.add_argument("--english", action="store_true", help="also each English corpus held out ± CJK")
    parser.add_argument("--limit", type=int, default=None, help="conversations per corpus")
    ns = parser.parse_args(argv)
    data = load(ns.builds, [*ns.english_corpora, "cjk"], limit=ns.limit, augment=ns.augment)
    settings = TreeSettings(trees=ns.trees, threads=ns.threads)
    rows = run_cjk(data, settings, ns.lengths, ns.modes)
    english = run_english(data, settings) if ns.english else []
    figures, eng = summary(rows), english_summary(english)
    ns.out.mkdir(parents=True, exist_ok=True)
    text = report(figures, eng)
    (ns.out / "report.md").write_text(text, encoding="utf-8")
    (ns.out / "results.json").write_text(
        json.dumps({"figures": figures, "english": eng, "rows": rows}, ensure_ascii=False), encoding="utf-8"
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
