"""The message weights chosen by cross-validation, leave-one-corpus-out beside within-corpus (issue 47).

A long message's plan (``dualmem.read.message``) fuses more lists with its focus's: the whole
message at ``MessageWeights.whole``, each context clause left out of the focus at ``.context``, and
a need of fewer than ``.self_contained`` content words is searched with its context. This script
searches every message-shaped query of the four dev corpora (``derive.py``'s shapes: wrapped,
unseen, multi, and the agent chats' message queries) with ``Memory.search`` at every point of a
grid of weights, and the clean questions once, BM25 over the same builds in the same run; then:

- **LOCO**: for each corpus, the weights that do best on the other three corpora (the mean over
  corpora of their message-shaped R@10) are scored on it;
- **within**: for each fold of each corpus (``research.corpora.fold_of``), the weights that do best
  on every other fold of every corpus are scored on it.

The scorer is never fitted on the corpus it ranks: each corpus is searched with the LightGBM scorer
fitted on the other three (``research.loco.fit`` over the candidate pools of the research builds,
no shuffled copies), in both columns; "off" is the same search with no message plan (the message
searched whole, as before issue 47). Builds are copied from ``--builds`` (read only) into
``--work``, where the pools, scorers and searches are cached.

    python bench/messages/cv.py --builds /work/research-out/builds --work /tmp/msg-cv \\
        --per-shape 40 --out bench/results/messages-cv.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]
sys.path.append(str(ROOT / "src"))

from dualmem.bench.metrics import recall_at_k  # noqa: E402
from dualmem.control.builtin import BuiltinController  # noqa: E402
from dualmem.control.trees import TreeRanker  # noqa: E402
from dualmem.memory import Memory  # noqa: E402
from dualmem.read import loop as read_loop  # noqa: E402
from dualmem.read import message  # noqa: E402
from dualmem.read.message import MessageWeights  # noqa: E402
from dualmem.read.sessions import add_up, diversify  # noqa: E402
from dualmem.text.clauses import split  # noqa: E402
from dualmem.types import Tenant  # noqa: E402

CORPORA: tuple[str, ...] = ("locomo", "agentchat", "memgallery", "notes")
MESSAGE_SHAPES: tuple[str, ...] = ("wrapped", "unseen", "multi", "message")
#: the grid searched: (whole, context, self_contained); each point is also scored at every
#: ``ADJACENT`` weight (``read.sessions.add_up`` re-sorts the scored turns after the search: its
#: input is recorded once per search and the weights applied to it here, exactly as the search would)
GRID: tuple[MessageWeights, ...] = (
    *(MessageWeights(w, c, 4) for w, c in itertools.product((0.25, 0.5, 1.0), (0.0, 0.25, 0.5, 1.0))),
    MessageWeights(0.25, 0.25, 2),
    MessageWeights(0.25, 0.25, 6),
    MessageWeights(0.0, 0.0, 4, whole_focus=True),
    MessageWeights(0.0, 0.5, 4, whole_focus=True),
)
ADJACENT: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 1.0)
#: and at every ``per_session`` cap (``read.sessions.diversify``, applied after ``add_up``, the same way)
CAPS: tuple[int, ...] = (0, 2, 3, 4)
OFF = "off"
add_up_of_run = read_loop._add_up


def key(w: MessageWeights) -> str:
    mode = "W" if w.whole_focus else "w"
    return f"{mode}{w.whole:g}-c{w.context:g}-s{w.self_contained}-a{w.adjacent:g}-d{w.per_session}"


def points() -> list[MessageWeights]:
    from dataclasses import replace

    return [replace(w, adjacent=a, per_session=d) for w in GRID for a in ADJACENT for d in CAPS]


def _copy_builds(src: Path, dst: Path, corpora: Sequence[str]) -> None:
    """The research builds ``src/<corpus>`` copied into ``dst`` (the pools' caches are written
    beside a build: ``src`` stays untouched)."""
    from research.corpora import conversations

    for name in corpora:
        (dst / name).mkdir(parents=True, exist_ok=True)
        for conv in conversations(name):
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
            if any((dst / name).glob(f"{safe}-*-pairs.pkl")):
                continue
            found = [
                p
                for p in sorted((src / name).glob(f"{safe}-*.sqlite"))
                if p.with_name(p.stem + "-pairs.pkl").exists() and p.stem.count("-") == safe.count("-") + 1
            ]
            if not found:
                raise SystemExit(f"no build of {name}/{conv.id} under {src}")
            for f in (found[0], found[0].with_name(found[0].stem + "-pairs.pkl")):
                shutil.copy2(f, dst / name / f.name)


def fold_scorers(work: Path, corpora: Sequence[str], trees: int) -> dict[str, TreeRanker]:
    """Each corpus's scorer, fitted on the other corpora's pools (cached under ``work/scorers``)."""
    from research.loco import fit, load

    from dualmem.learn.boost import TreeSettings

    out: dict[str, TreeRanker] = {}
    todo = [c for c in corpora if not (work / "scorers" / f"{c}-{trees}.json").exists()]
    if todo:
        data = load(work / "builds", list(CORPORA))
        for held in todo:
            train: dict[str, list[Any]] = {}
            for conv, pools in data.pools.items():
                if data.corpus_of[conv] != held:
                    train.setdefault(data.corpus_of[conv], []).extend(pools)
            started = time.perf_counter()
            ranker, _ = fit(train, TreeSettings(trees=trees, threads=1), choose=False)
            (work / "scorers").mkdir(parents=True, exist_ok=True)
            ranker.save(work / "scorers" / f"{held}-{trees}.json")
            print(f"  scorer without {held}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for c in corpora:
        out[c] = TreeRanker.from_file(work / "scorers" / f"{c}-{trees}.json")
    return out


def queries(corpora: Sequence[str], per_shape: int | None, clean: int | None = None) -> list[dict[str, Any]]:
    """The derived queries of ``corpora`` (``derive.py``): at most ``clean`` clean questions a corpus
    (every n-th, stable), the wrapped and unseen forms of at most ``per_shape`` of *those same*
    questions (so that wrapped and clean compare on one set), at most ``per_shape`` multi-request
    messages; the agent chats' message queries all."""
    from derive import derive_conversation
    from research.corpora import conversations, fold_of

    def every(items: list[dict[str, Any]], n: int | None) -> list[dict[str, Any]]:
        return items if n is None else items[:: max(1, len(items) // n)][:n]

    out: list[dict[str, Any]] = []
    for name in corpora:
        convs = conversations(name)
        folds = fold_of(name, [c.id for c in convs])
        mine: list[dict[str, Any]] = []
        for conv in sorted(convs, key=lambda c: c.id):
            turns = {o.turn_id for o in conv.observations if o.turn_id}
            for q in derive_conversation(name, conv.id, conv.questions, turns):
                mine.append({**q, "fold": folds[conv.id]})
        picked = every([q for q in mine if q["shape"] == "clean"], clean)
        wrapped = {(q["conversation"], q["source"][0]) for q in every(picked, per_shape)}
        out += picked
        out += [
            q
            for q in mine
            if q["shape"] in ("wrapped", "unseen") and (q["conversation"], q["source"][0]) in wrapped
        ]
        out += every([q for q in mine if q["shape"] == "multi"], per_shape)
        out += [q for q in mine if q["shape"] == "message"]
    return out


def _no_plan(*_: Any) -> None:
    """In place of ``understand``: no plan (the message searched whole, as before issue 47)."""
    return


def search_all(
    qs: Sequence[dict[str, Any]],
    work: Path,
    scorers: Mapping[str, TreeRanker | None],
    grid: Sequence[MessageWeights],
) -> list[dict[str, Any]]:
    """One row per query: R@10 of bm25, of the search with no plan, and at each grid point."""
    from research.builds import any_build, embedder, views_profile
    from research.corpora import conversations

    rows: list[dict[str, Any]] = []
    by_conv: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for q in qs:
        by_conv.setdefault((q["corpus"], q["conversation"]), []).append(q)
    convs = {(n, c.id): c for n in {q["corpus"] for q in qs} for c in conversations(n)}
    for (name, cid), mine in sorted(by_conv.items()):
        cache = work / ("searches-packaged" if scorers[name] is None else "searches") / name / f"{cid}.json"
        done: dict[str, dict[str, Any]] = {}
        if cache.exists():
            done = {r["query"]: r for r in json.loads(cache.read_text(encoding="utf-8"))}
        path = any_build(convs[name, cid], work / "builds" / name)
        ctl = BuiltinController(ranker=scorers[name])
        with Memory.open(
            path, embedder=embedder(), controller=ctl, answerer=None, profile=views_profile(), read_only=True
        ) as mem:
            turn = {n.id: n.turn_id or n.id for n in mem.nodes(user=cid)}

            def ranked(text: str) -> list[str]:
                return [turn.get(e.node.id, e.node.id) for e in mem.search(text, user=cid, k=20).evidence]  # noqa: B023

            def graded(text: str, w: MessageWeights, gold: Sequence[str]) -> dict[str, float]:
                """R@10 at ``w`` and at every ``ADJACENT`` weight and ``CAPS`` cap (one search)."""
                seen: list[tuple[list[Any], Any]] = []

                def capture(run: Any, scored: list[Any]) -> list[Any]:
                    seen.append((scored, run.pool.neighbours if run.pool is not None else {}))
                    return scored

                message.WEIGHTS = replace(w, adjacent=0.0, per_session=0)
                read_loop._add_up = capture  # type: ignore[assignment]
                try:
                    found = mem.search(text, user=cid, k=20).evidence  # noqa: B023
                finally:
                    read_loop._add_up = add_up_of_run
                    message.WEIGHTS = MessageWeights()
                out: dict[str, float] = {}
                for a, d in itertools.product(ADJACENT, CAPS):
                    got = list(found)
                    if seen and (a or d):
                        scored, near = seen[-1]
                        top = diversify(add_up(scored, near, a), d)[:20]
                        ids = {e.node.id for e in top}
                        got = top + [e for e in found if e.node.id not in ids][: 20 - len(top)]
                    ids_ = [turn.get(e.node.id, e.node.id) for e in got]  # noqa: B023
                    out[key(replace(w, adjacent=a, per_session=d))] = recall_at_k(ids_, gold, 10)
                return out

            for q in mine:
                row = done.get(q["query"]) or {**q, "clauses": len(split(q["query"])), "r10": {}}
                row["fold"] = q["fold"]
                r = row["r10"]
                if "bm25" not in r:
                    lex = mem.store.lexical_search(Tenant(cid), q["query"], 20)
                    r["bm25"] = recall_at_k([turn.get(i, i) for i, _ in lex], q["evidence"], 10)
                if OFF not in r:
                    read_loop.understand = _no_plan  # type: ignore[assignment]
                    try:
                        r[OFF] = recall_at_k(ranked(q["query"]), q["evidence"], 10)
                    finally:
                        read_loop.understand = message.understand
                for w in grid if row["clauses"] > 1 else ():
                    if key(w) not in r:
                        r.update(graded(q["query"], w, q["evidence"]))
                message.WEIGHTS = MessageWeights()
                done[q["query"]] = row
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(list(done.values())), encoding="utf-8")
        rows += [done[q["query"]] for q in mine]
        print(f"  {name}/{cid}: {len(mine)} queries", file=sys.stderr)
    return rows


def r10(row: Mapping[str, Any], system: str) -> float:
    """A row's R@10 under ``system`` (a grid key: a one-clause query takes the path with no plan)."""
    r = row["r10"]
    return float(r[system] if system in r else r[OFF])


def objective(rows: Iterable[Mapping[str, Any]], system: str) -> float:
    """The mean over corpora of their message-shaped queries' mean R@10 (each corpus counts once)."""
    per: dict[str, list[float]] = {}
    for row in rows:
        if row["shape"] in MESSAGE_SHAPES:
            per.setdefault(row["corpus"], []).append(r10(row, system))
    return statistics.fmean(statistics.fmean(v) for v in per.values())


#: a grid point may lower no training corpus's clean questions by more than this (the issue's bar)
CLEAN_SLACK = 0.01


def clean_ok(rows: Sequence[Mapping[str, Any]], system: str) -> bool:
    """Whether ``system`` keeps every corpus's clean questions within ``CLEAN_SLACK`` of the search
    with no plan (only clean questions of several clauses can differ)."""
    per: dict[str, list[float]] = {}
    for row in rows:
        if row["shape"] == "clean":
            per.setdefault(row["corpus"], []).append(r10(row, system) - r10(row, OFF))
    return all(statistics.fmean(v) >= -CLEAN_SLACK for v in per.values())


def choose(rows: Sequence[Mapping[str, Any]], grid: Sequence[str]) -> str:
    """The grid point with the best objective on ``rows`` among those that keep the clean questions
    (``clean_ok``; all of them when none does); ties: the earlier point. With no message-shaped row
    to choose on, the first point."""
    if not any(r["shape"] in MESSAGE_SHAPES for r in rows):
        return grid[0]
    allowed = [g for g in grid if clean_ok(rows, g)] or list(grid)
    return max(allowed, key=lambda g: (round(objective(rows, g), 6), -grid.index(g)))


def cross_validate(rows: Sequence[Mapping[str, Any]], grid: Sequence[str]) -> dict[str, Any]:
    """Each row's R@10 under the weights chosen without its corpus (LOCO) and without its fold
    (within), and the choices."""
    chosen: dict[str, dict[str, str]] = {"loco": {}, "within": {}}
    for c in sorted({r["corpus"] for r in rows}):
        chosen["loco"][c] = choose([r for r in rows if r["corpus"] != c], grid)
    for f in sorted({r["fold"] for r in rows}):
        chosen["within"][f] = choose([r for r in rows if r["fold"] != f], grid)
    table: dict[str, Any] = {}
    clean: dict[tuple[str, int], Mapping[str, Any] | None] = defaultdict(lambda: None)
    clean.update({(r["conversation"], r["source"][0]): r for r in rows if r["shape"] == "clean"})
    for c in sorted({r["corpus"] for r in rows}):
        for shape in ("clean", *MESSAGE_SHAPES):
            mine = [r for r in rows if r["corpus"] == c and r["shape"] == shape]
            if not mine:
                continue
            table.setdefault(c, {})[shape] = {
                "n": len(mine),
                "multi-clause": sum(r["clauses"] > 1 for r in mine),
                "bm25": statistics.fmean(r10(r, "bm25") for r in mine),
                OFF: statistics.fmean(r10(r, OFF) for r in mine),
                "hand-set": statistics.fmean(
                    r10(r, key(MessageWeights(0.25, 0.25, 4, 0.0, 0))) for r in mine
                ),
                "loco": statistics.fmean(r10(r, chosen["loco"][c]) for r in mine),
                "within": statistics.fmean(r10(r, chosen["within"][r["fold"]]) for r in mine),
            }
            same = [clean[r["conversation"], r["source"][0]] for r in mine if shape in ("wrapped", "unseen")]
            same = [r for r in same if r is not None]
            if same:  # the same questions asked clean, under the same choice
                table[c][shape]["clean, same questions"] = statistics.fmean(
                    r10(r, chosen["loco"][c]) for r in same
                )
    everywhere = choose(rows, grid)
    return {
        "chosen": chosen,
        "all": everywhere,
        "grid": {g: objective(rows, g) for g in grid},
        "table": table,
    }


def report(cv: Mapping[str, Any]) -> str:
    lines = [
        "| corpus | shape | n | bm25 | off | hand-set | within | LOCO | LOCO − bm25 | same, clean |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, shapes in cv["table"].items():
        for shape, s in shapes.items():
            same = s.get("clean, same questions")
            lines.append(
                f"| {c} | {shape} | {s['n']} ({s['multi-clause']}) | {s['bm25']:.3f} | {s[OFF]:.3f} | "
                f"{s['hand-set']:.3f} | {s['within']:.3f} | {s['loco']:.3f} | {s['loco'] - s['bm25']:+.3f} | "
                + (f"{same:.3f} |" if same is not None else "|")
            )
    lines.append("")
    lines.append(f"LOCO choices: {cv['chosen']['loco']}")
    lines.append(f"within choices: {cv['chosen']['within']}")
    lines.append(f"chosen on every corpus: {cv['all']}")
    best = sorted(cv["grid"].items(), key=lambda t: -t[1])
    lines.append("grid (objective on every corpus): " + ", ".join(f"{g} {v:.4f}" for g, v in best))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=Path, default=Path("/work/research-out/builds"), help="read only")
    parser.add_argument("--work", type=Path, default=Path("/tmp/msg-cv"))
    parser.add_argument("--corpora", nargs="*", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--per-shape", type=int, default=None, help="at most this many queries a shape")
    parser.add_argument("--clean", type=int, default=None, help="at most this many clean questions")
    parser.add_argument(
        "--packaged",
        action="store_true",
        help="the packaged scorer everywhere (in-sample: a quick look only)",
    )
    parser.add_argument("--trees", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None, help="write the table and choices here (JSON)")
    parser.add_argument("--rows", action="store_true", help="--out holds every query's row too")
    parser.add_argument(
        "--candidates",
        choices=["needs", "all"],
        default="needs",
        help="needs: the plan's configurations that search the needs (the cost bar: no whole-message "
        "embedding); all: also the whole message as the focus, and no plan",
    )
    ns = parser.parse_args(argv)
    _copy_builds(ns.builds, ns.work / "builds", ns.corpora if ns.packaged else CORPORA)
    scorers = dict.fromkeys(ns.corpora) if ns.packaged else fold_scorers(ns.work, ns.corpora, ns.trees)
    qs = queries(ns.corpora, ns.per_shape, ns.clean)
    rows = search_all(qs, ns.work, scorers, GRID)
    every = [key(w) for w in points()]
    if ns.candidates == "needs":
        every = [key(w) for w in points() if not w.whole_focus]
    else:
        every.append(OFF)
    cv = cross_validate(rows, every)
    text = report(cv)
    print(text)
    if ns.out is not None:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        keep = {"rows": rows} if ns.rows else {}  # rows quote LoCoMo's questions: never committed
        ns.out.write_text(json.dumps({**cv, **keep}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
