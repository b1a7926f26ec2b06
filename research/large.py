"""A large memory for one held-out user: its own memories plus thousands of distractor memories.

At the dev corpora's scale (20-700 memories a user) the candidate pool (vector, lexical and context
top-50 and session neighbours) already holds 97.5-99.9% of the gold (``docs/views.md``), so a
retrieval channel cannot *find* what the indexes missed. This module makes a user's memory large
enough that it can: the held-out user's own memories (questions and gold stay its own) plus whole
conversations of the other permitted users (LoCoMo dev, agent chats, Mem-Gallery, notes; never a
shuffled copy, which would repeat the held-out user's own turns), up to ``size`` memories.

Nothing is written again: the stored nodes of the existing builds (``research.builds``) are copied
through the store API (``iter_nodes`` -> ``put_nodes``, with their embeddings, entities, grounded
time references and chunk vectors; the store rebuilds the FTS5, entity and neighbour-context
indexes as it stores them) with each source conversation's own view edges, into a new SQLite file.
A distractor memory is changed only so that it is the held-out user's:

- its tenant is the held-out user; its session and turn ids get a prefix (``~k:``) so that they
  never equal a gold turn id and its sessions stay its own (session neighbours never cross);
- **speakers renamed** (``rename``): each source conversation's speakers, by frequency, become the
  held-out user's speakers in the same order (Jon -> Caroline, Gina -> Melanie), in the speaker
  field, the entities and the text (whole words; a multi-word name's first word too). Without this,
  another LoCoMo conversation's memories are trivially separable by name (every question names its
  speakers, and ``speaker`` is a pool feature). A role (``user``, ``assistant``, ``agent``) is never
  written into the text: a distractor named into a role keeps the names it mentions;
- **times shifted** (``shift``): by whole weeks, so that the conversation lies inside the held-out
  user's time span (at a seeded random place when it fits; else ending at its last day), so that a
  time window ("in May 2023") does not separate them either and the user's latest time (what
  "last weekend" grounds against) is unchanged. The text keeps the dates it states.

``python -m research.large`` builds the stores and measures on them (``evaluate``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dualmem.bench.metrics import CATEGORY_NAMES
from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController
from dualmem.control.ranker import Ranker
from dualmem.conversations import Conversation
from dualmem.embed import Embedder
from dualmem.learn.boost import TreeSettings
from dualmem.memory import Memory
from dualmem.plane import open_store
from dualmem.plane.base import MemoryStore
from dualmem.types import Edge, Node, Tenant, Vector
from research.builds import embedder as research_embedder
from research.corpora import ENGLISH, conversations, embedder_of
from research.cv import K_VALUES, CVConfig, _collect, _record, _rows, rank
from research.pools import QueryPool

__all__ = [
    "LARGE_VERSION",
    "Merged",
    "Source",
    "loco_rankers",
    "measure",
    "merge",
    "name_map",
    "pool_recall",
    "renamer",
    "settings",
    "sources",
    "speakers_by_count",
    "subsample",
    "summarize",
    "time_delta",
]

#: bumped whenever :func:`merge` stores something else for the same sources
LARGE_VERSION = "1"
#: speakers that are roles, not names: never written into a memory's text
ROLES = frozenset({"user", "assistant", "agent", "system"})
#: the prefix of a distractor's session and turn ids (``~k:``, k its source's place)
PREFIX = "~"


@dataclass(frozen=True, slots=True)
class Source:
    """One user's build: its corpus, the user (the conversation id) and the SQLite file."""

    corpus: str
    user: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.corpus}/{self.user}"


@dataclass(frozen=True, slots=True)
class Merged:
    """A merged store: the held-out user's own memories and the distractors added to them."""

    path: Path
    user: str
    own: int
    distractors: int
    sources: tuple[str, ...]  # the distractors' sources, in the order they were added

    @property
    def size(self) -> int:
        return self.own + self.distractors

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "user": self.user,
            "own": self.own,
            "distractors": self.distractors,
            "sources": list(self.sources),
        }


def speakers_by_count(nodes: Iterable[Node]) -> list[str]:
    """The speakers of ``nodes`` (not derived ones), most frequent first (ties by name)."""
    counts = Counter(n.speaker for n in nodes if n.speaker and not n.derived)
    return [s for s, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def name_map(source: Sequence[str], held: Sequence[str]) -> dict[str, str]:
    """Each source speaker -> the held-out speaker of the same rank (cycling when fewer)."""
    if not held:
        return {}
    return {s: held[i % len(held)] for i, s in enumerate(source)}


def renamer(mapping: Mapping[str, str]) -> Callable[[str], str]:
    """A function that renames the names of ``mapping`` in a text: whole words, all at once (so that
    John -> Tim and Maria -> John do not chain), a multi-word name's first word too. Roles are never
    renamed in text nor written into it."""
    words: dict[str, str] = {}
    for old, new in mapping.items():
        if old.lower() in ROLES or new.lower() in ROLES or old == new:
            continue
        words[old] = new
        first_old, first_new = old.split()[0], new.split()[0]
        if " " in old and first_old not in words:
            words[first_old] = first_new
    if not words:
        return lambda text: text
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b"
    )
    return lambda text: pattern.sub(lambda m: words[m.group(1)], text)


def time_delta(
    held: tuple[dt.datetime, dt.datetime], source: tuple[dt.datetime, dt.datetime], rng: random.Random
) -> dt.timedelta:
    """Whole weeks that move ``source``'s span inside ``held``'s: at a random place when it fits,
    else ending on ``held``'s last day; never past that day."""
    room = (held[1] - held[0]) - (source[1] - source[0])
    start = held[0] + room * rng.random() if room > dt.timedelta(0) else held[1] - (source[1] - source[0])
    weeks = (start - source[0]) // dt.timedelta(weeks=1)
    return dt.timedelta(weeks=weeks)


def _span(nodes: Iterable[Node]) -> tuple[dt.datetime, dt.datetime] | None:
    times = [n.at for n in nodes if n.at is not None]
    return (min(times), max(times)) if times else None


def _moved(value: dt.datetime | None, delta: dt.timedelta) -> dt.datetime | None:
    return None if value is None else value + delta


def _distractor(
    node: Node,
    *,
    tenant: Tenant,
    prefix: str,
    names: Mapping[str, str],
    text: Callable[[str], str],
    delta: dt.timedelta,
) -> Node:
    lowered = {old.lower(): new.lower() for old, new in names.items() if old.lower() not in ROLES}
    entities = tuple(dict.fromkeys(lowered.get(e, e) for e in node.entities))
    refs = tuple(
        replace(r, expression=text(r.expression), start=r.start + delta, end=r.end + delta)
        for r in node.temporal_refs
    )
    return replace(
        node,
        tenant=tenant,
        content=text(node.content),
        speaker=names.get(node.speaker, node.speaker) if node.speaker else node.speaker,
        session=None if node.session is None else prefix + node.session,
        turn_id=None if node.turn_id is None else prefix + node.turn_id,
        entities=entities,
        temporal_refs=refs,
        at=_moved(node.at, delta),
        valid_from=_moved(node.valid_from, delta),
        valid_to=_moved(node.valid_to, delta),
    )


def _read(store: MemoryStore, user: str) -> tuple[list[Node], dict[str, Vector], list[Edge]]:
    """A user's nodes (time order), their chunk vectors and the edges among them."""
    nodes = list(store.iter_nodes(Tenant(user)))
    ids = {n.id for n in nodes}
    chunks = store.vectors.get_chunks(ids, Tenant(user))
    edges: dict[tuple[str, str, str, str], Edge] = {}
    for n in nodes:
        for e in store.edges_of(n.id):
            if e.source in ids and e.target in ids:
                edges[(e.source, e.target, e.view, e.label)] = e
    return nodes, chunks, [edges[k] for k in sorted(edges)]


def _write(
    target: MemoryStore, nodes: Sequence[Node], chunks: Mapping[str, Vector], edges: Sequence[Edge]
) -> None:
    kept = {n.id for n in nodes}
    with target.transaction():
        target.put_nodes(list(nodes))
        target.vectors.put_chunks({i: v for i, v in chunks.items() if i in kept})
        target.put_edges([e for e in edges if e.source in kept and e.target in kept])


def sources(builds: Path, corpora: Sequence[str]) -> list[Source]:
    """Every user of the builds of ``corpora`` under ``builds`` (``builds/<corpus>/*.sqlite``, read
    only), in file order: the held-out users and the distractors' sources."""
    out: list[Source] = []
    for corpus in corpora:
        for path in sorted((builds / corpus).glob("*.sqlite")):
            store = open_store(path, read_only=True)
            try:
                out += [Source(corpus, user, path) for user in store.meta.users()]
            finally:
                store.close()
    return out


def _key(held: Source, distractors: Sequence[Source], **settings: object) -> str:
    parts = [LARGE_VERSION, held.name, held.path.name, [(d.name, d.path.name) for d in distractors], settings]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def merge(
    held: Source,
    distractors: Sequence[Source],
    out: Path,
    *,
    size: int,
    seed: int = 0,
    rename: bool = True,
    shift: bool = True,
) -> Merged:
    """The held-out user's memory with whole distractor conversations (in a seeded random order; the
    last one cut to its first memories in time) until it holds ``size`` memories or they run out;
    made in ``out`` now, or the cached one. The distractors exclude ``held`` itself."""
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    others = [d for d in distractors if d.name != held.name]
    key = _key(held, others, size=size, seed=seed, rename=rename, shift=shift)
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in held.name)
    path = out / f"{safe}-{key}.sqlite"
    manifest = path.with_suffix(".json")
    if path.exists() and manifest.exists():
        doc = json.loads(manifest.read_text(encoding="utf-8"))
        return Merged(path, doc["user"], doc["own"], doc["distractors"], tuple(doc["sources"]))
    out.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{part}{suffix}").unlink(missing_ok=True)
    rng = random.Random(seed)
    order = list(others)
    rng.shuffle(order)
    tenant = Tenant(held.user)
    target = open_store(part)
    added: list[str] = []
    try:
        source = open_store(held.path, read_only=True)
        try:
            bound = source.meta.get("embedder")
            info = bound if isinstance(bound, dict) else {}
            name, dim = info.get("name"), info.get("dim")
            if isinstance(name, str) and isinstance(dim, int):
                target.meta.bind_embedder(name, dim)
            own, own_chunks, own_edges = _read(source, held.user)
        finally:
            source.close()
        _write(target, own, own_chunks, own_edges)
        held_speakers = speakers_by_count(own)
        held_span = _span(own)
        count = len(own)
        for k, src in enumerate(order):
            if count >= size:
                break
            store = open_store(src.path, read_only=True)
            try:
                nodes, chunks, edges = _read(store, src.user)
            finally:
                store.close()
            names = name_map(speakers_by_count(nodes), held_speakers) if rename else {}
            span = _span(nodes)
            delta = time_delta(held_span, span, rng) if shift and held_span and span else dt.timedelta(0)
            text = renamer(names)
            moved = [
                _distractor(n, tenant=tenant, prefix=f"{PREFIX}{k}:", names=names, text=text, delta=delta)
                for n in nodes[: size - count]
            ]
            _write(target, moved, chunks, edges)
            count += len(moved)
            added.append(src.name)
    finally:
        target.close()
    part.rename(path)
    for suffix in ("-wal", "-shm"):  # a clean close leaves none; if one is left it goes with the file
        if Path(f"{part}{suffix}").exists():
            Path(f"{part}{suffix}").rename(f"{path}{suffix}")
    merged = Merged(path, held.user, len(own), count - len(own), tuple(added))
    manifest.write_text(json.dumps(merged.to_json(), indent=1), encoding="utf-8")
    return merged


# -- the measurement --------------------------------------------------------------------------------


def settings(channels: Sequence[tuple[str, int]]) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """The channel settings a run compares: ``off`` (none), ``on`` (all of ``channels``) and, with two
    or more, each channel removed in turn (``no-NAME``)."""
    chans = tuple(channels)
    out: list[tuple[str, tuple[tuple[str, int], ...]]] = [("off", ())]
    if chans:
        out.append(("on", chans))
    if len(chans) > 1:
        out += [(f"no-{name}", tuple(c for c in chans if c[0] != name)) for name, _ in chans]
    return out


def subsample(conv: Conversation, limit: int | None, seed: int = 0) -> Conversation:
    """``conv`` with at most ``limit`` of its scored questions (a category other than 5 and some
    evidence), drawn at random (seeded by ``seed`` and the conversation), kept in their order."""
    scored = [i for i, qa in enumerate(conv.questions) if qa.category != 5 and qa.evidence]
    if limit is not None and len(scored) > limit:
        rng = random.Random(f"{seed}:{conv.id}")
        scored = sorted(rng.sample(scored, limit))
    return replace(conv, questions=tuple(conv.questions[i] for i in scored))


def pool_recall(pool: QueryPool) -> float:
    """The share of the question's evidence turns that its pool holds."""
    held = set(pool.turn_ids)
    return sum(t in held for t in pool.evidence) / len(pool.evidence)


def measure(
    conv: Conversation,
    merged: Merged,
    corpus: str,
    channels: Sequence[tuple[str, int]],
    *,
    embedder: Embedder,
    profile: Profile | None = None,
    rankers: Mapping[str, Ranker] | None = None,
    k: int = 20,
    search: bool = True,
) -> list[dict[str, Any]]:
    """Every question of ``conv`` on its merged store, for each channel setting (:func:`settings`):
    the pool's recall of the gold (``pool <setting>``, with ``pool_recall`` and ``pool_size``),
    ``Memory.search`` with the shipped scorer (``search <setting>``: ``read.channels`` the setting's
    names, ``read.channel_budget`` their sizes' sum, the builtin route choosing), the pool ranked by
    ``rankers[setting]`` when given (``loco <setting>``), and bm25 / dense / hybrid once. ``search``
    off: the pools and the baselines only (a scale curve of pool recall)."""
    base = profile or Profile.builtin()
    rows: list[dict[str, Any]] = []
    for label, chans in settings(channels):
        names = tuple(c for c, _ in chans)
        read = base.with_(read__channels=names, read__channel_budget=sum(n for _, n in chans) or 40)
        cfg = CVConfig(data=Path("."), handset=False, pool=50, window=2, channels=chans)
        with Memory.open(
            merged.path,
            embedder=embedder,
            controller=BuiltinController(),
            answerer=None,
            profile=read,
            read_only=True,
        ) as mem:
            pools = _rows(_collect(conv, mem, cfg))
            extra = {"corpus": corpus, "size": merged.size}
            for p in pools:
                rows.append(
                    {
                        **_record(f"pool {label}", corpus, p, p.turn_ids),
                        **extra,
                        "pool_recall": pool_recall(p),
                        "pool_size": len(p.turn_ids),
                    }
                )
                if label == "off":
                    rows += [{**_record(s, corpus, p, r), **extra} for s, r in p.baselines.items()]
                if search:
                    found = mem.search(p.question, user=conv.id, k=k).evidence
                    ranked = [e.node.turn_id or f"node:{e.node.id}" for e in found]
                    rows.append({**_record(f"search {label}", corpus, p, ranked), **extra})
                if rankers is not None and label in rankers:
                    rows.append({**_record(f"loco {label}", corpus, p, rank(rankers[label], p)[0]), **extra})
    return rows


def loco_rankers(
    builds: Path,
    held: str,
    channels: Sequence[tuple[str, int]],
    *,
    cache: Path,
    trees: int = 200,
    train: Sequence[str] = ("locomo", "agentchat", "memgallery", "notes"),
) -> dict[str, Ranker]:
    """For each channel setting, the pool scorer (LightGBM lambdarank, ``trees`` trees) fitted on the
    dev-scale pools of the corpora other than ``held`` (``research.loco.load``, cached in ``cache``):
    the leave-one-corpus-out scorer, fitted where the pool holds the gold and tested where it need
    not. A removed channel that ``research.loco.drop_channel`` knows is dropped from the pools of all
    channels (as ``research.loco --drop-channel``); another is loaded with the setting's channels."""
    from research import loco

    out: dict[str, Ranker] = {}
    others = [c for c in train if c != held]
    full = tuple(channels)
    for label, chans in settings(channels):
        dropped = label.removeprefix("no-") if label.startswith("no-") else None
        if dropped in loco.CHANNEL_COLUMNS:
            data = loco.load(builds, others, channels=full, cache=cache)
            pools = {c: [loco.drop_channel(p, dropped) for p in ps] for c, ps in data.pools.items()}
        else:
            data = loco.load(builds, others, channels=chans, cache=cache)
            pools = dict(data.pools)
        groups: dict[str, list[QueryPool]] = {}
        for conv, ps in pools.items():
            groups.setdefault(data.corpus_of[conv], []).extend(ps)
        out[label], _ = loco.fit(groups, TreeSettings(trees=trees, threads=1), choose=False)
    return out


def _mean(xs: Iterable[float | None]) -> float | None:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else None


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per corpus and system: n, R@1/5/10/20, MRR and R@10 by category; for the pool rows, the pool's
    recall of the gold and its size, overall and by category; the memories a user held."""
    out: dict[str, Any] = {}
    for corpus, system in dict.fromkeys((r["corpus"], r["system"]) for r in rows):  # in the order run
        mine = [r for r in rows if (r["corpus"], r["system"]) == (corpus, system)]
        cats = sorted({str(r["category"]) for r in mine})
        entry: dict[str, Any] = {
            "n": len(mine),
            "memories": _mean([r["size"] for r in mine]),
            **{f"R@{k}": _mean([r["recall"][str(k)] for r in mine]) for k in K_VALUES},
            "MRR": _mean([r["mrr"] for r in mine]),
            "R@10 by category": {
                c: _mean([r["recall"]["10"] for r in mine if str(r["category"]) == c]) for c in cats
            },
        }
        if "pool_recall" in mine[0]:
            entry["pool recall"] = _mean([r["pool_recall"] for r in mine])
            entry["pool size"] = _mean([r["pool_size"] for r in mine])
            entry["pool recall by category"] = {
                c: _mean([r["pool_recall"] for r in mine if str(r["category"]) == c]) for c in cats
            }
        out.setdefault(corpus, {})[system] = entry
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(summary: Mapping[str, Any]) -> str:
    """Markdown tables: per corpus, R@10 (pool recall for the pool rows) overall and by category."""
    lines: list[str] = []
    for corpus, systems in summary.items():
        cats = sorted({c for s in systems.values() for c in s["R@10 by category"]})
        names = [CATEGORY_NAMES.get(int(c), c) if c.isdigit() else c for c in cats]
        n = max(s["n"] for s in systems.values())
        memories = max(s["memories"] or 0 for s in systems.values())
        lines += [
            f"### {corpus} ({n} questions, {memories:.0f} memories a user on average)",
            "",
            "| system | all | MRR | " + " | ".join(str(x) for x in names) + " |",
            "|---" * (len(cats) + 3) + "|",
        ]
        for system, s in systems.items():
            pool = "pool recall by category" in s
            key = "pool recall by category" if pool else "R@10 by category"
            first = s["pool recall"] if pool else s["R@10"]
            mrr = f"{s['pool size']:.0f} cand." if pool else _cell(s["MRR"])
            lines.append(
                f"| {system} | {_cell(first)} | {mrr} | "
                + " | ".join(_cell(s[key].get(c)) for c in cats)
                + " |"
            )
        lines.append("")
    lines.append("`pool X` rows: the share of the gold the pool holds (and its mean size); others: R@10.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="large-memory evaluation (research.large)")
    parser.add_argument("--builds", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--out", type=Path, default=Path("research-out/large"), help="stores and results")
    parser.add_argument(
        "--held", nargs="+", default=["locomo", "agentchat"], help="corpora of the held-out users"
    )
    parser.add_argument("--users", type=int, default=None, help="held-out users per corpus (the first N)")
    parser.add_argument(
        "--distractors", nargs="+", default=list(ENGLISH), help="corpora the distractor memories come from"
    )
    parser.add_argument("--size", type=int, default=8000, help="memories a held-out user ends with")
    parser.add_argument("--limit", type=int, default=40, help="questions per held-out user (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-rename", action="store_true", help="keep the distractors' speaker names")
    parser.add_argument("--no-shift", action="store_true", help="keep the distractors' times")
    parser.add_argument(
        "--channels", nargs="*", default=["temporal=20", "entity=20"], help="retrieval channels: NAME=SIZE"
    )
    parser.add_argument("--loco", action="store_true", help="also the LOCO pool scorer fitted at dev scale")
    parser.add_argument("--pool-only", action="store_true", help="pools and baselines only, no Memory.search")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument(
        "--train-cache", type=Path, default=None, help="dev-scale pools (default OUT/train-cache)"
    )
    parser.add_argument("--name", default="run", help="results go to OUT/NAME")
    ns = parser.parse_args(argv)
    channels = [(c.split("=")[0], int(c.split("=")[1])) for c in ns.channels]
    every = sources(ns.builds, sorted(set(ns.distractors) | set(ns.held)))
    pool = [s for s in every if s.corpus in ns.distractors]
    rows: list[dict[str, Any]] = []
    for corpus in ns.held:
        rankers = None
        if ns.loco:
            rankers = loco_rankers(
                ns.builds, corpus, channels, cache=ns.train_cache or ns.out / "train-cache", trees=ns.trees
            )
        spec = embedder_of(corpus)
        for conv in conversations(corpus)[: ns.users]:
            held = next(s for s in every if s.corpus == corpus and s.user == conv.id)
            started = time.perf_counter()
            merged = merge(
                held,
                pool,
                ns.out / "stores",
                size=ns.size,
                seed=ns.seed,
                rename=not ns.no_rename,
                shift=not ns.no_shift,
            )
            built = time.perf_counter() - started
            asked = subsample(conv, ns.limit, ns.seed)
            rows += measure(
                asked,
                merged,
                corpus,
                channels,
                embedder=research_embedder(spec),
                rankers=rankers,
                search=not ns.pool_only,
            )
            took = time.perf_counter() - started
            print(
                f"  {corpus}/{conv.id}: {merged.own} own + {merged.distractors} distractors "
                f"(store {built:.0f} s), {len(asked.questions)} questions, {took:.0f} s",
                file=sys.stderr,
            )
            _save(ns.out / ns.name, vars(ns), rows)  # after each user: a run cut short keeps what it did
    print(_save(ns.out / ns.name, vars(ns), rows))
    return 0


def _save(out: Path, args: Mapping[str, object], rows: Sequence[Mapping[str, Any]]) -> str:
    """``results.json`` (the arguments, the summary, every row) and ``report.md`` in ``out``."""
    summary = summarize(rows)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"args": {k: str(v) for k, v in args.items()}, "summary": summary, "rows": rows}
    (out / "results.json").write_text(json.dumps(doc, default=str), encoding="utf-8")
    text = report(summary)
    (out / "report.md").write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    sys.exit(main())
