"""Cost of one user's memory as it grows (issue 13): add, search, RSS, disk, open, ANN recall.

Synthetic but realistic text: LoCoMo turns recombined with other names, places and dates. Each size
is built in a fresh SQLite file, then measured with the full ``Memory`` stack (builtin controller):

- ``add`` p50/p95 (one observation through the whole write path), ``search`` p50/p95 (the adaptive
  read path; ``search_second_pass``: other queries right after, once the first pass has read the
  file's hot pages in, as in a serving process), and the store's own vector / lexical top-10 next to
  the yardsticks measured in the same run: plain numpy top-k over the user's matrix and a bare FTS5
  ``MATCH ... ORDER BY rank LIMIT 10``;
- the CPU split of one search (``search_stages``: each store read, cold caches, and the rest);
- RSS after the searches, disk per memory (the file, its WAL and the ``.ann`` folder), open + first
  search in a fresh process, and recall@10 of the store's vector search against exact numpy.

Sizes up to ``--write-max`` are built through ``add_many`` (edges, decisions and all); larger ones are
bulk-loaded (nodes, entities, vectors; no edges or decisions) and then measured the same way: their
disk figure therefore leaves out edges and decisions. ``--embedder hashing`` avoids hours of MiniLM
for the largest sizes; embeddings are cached under ``--cache``.

    nice -n 10 python bench/scale.py --sizes 1000 10000 --out bench/results/scale
    nice -n 10 python bench/scale.py --sizes 100000 --embedder hashing --out bench/results/scale
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dualmem import Memory
from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder
from dualmem.plane import SQLiteStore
from dualmem.plane.ann import available as ann_available
from dualmem.text.entities import create_extractor
from dualmem.text.lexical import fts_query
from dualmem.text.temporal import ground
from dualmem.types import Node, Observation, Tenant, new_id

USER = "bench-user"
T0 = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
_NAMES = (
    "Amara Bela Chen Dario Elif Farid Gita Hana Ivo Jonas Kira Luca Mina Nadia Omar Priya Quinn Rosa "
    "Sami Tomas Uma Vera Wen Xavi Yara Zane Ayla Bram Cleo Dev Esme Finn Goran Hugo Ines Jade Kofi "
    "Lena Milo Noor Otto Pia Ravi Sora Teo Una Vik Wila Yuki Zofia"
)
_PLACES = (
    "Lisbon Nairobi Osaka Quito Tbilisi Hanoi Bergen Cusco Dakar Fes Graz Hobart Izmir Jaipur Kraków "
    "Leeds Lyon Malmö Oaxaca Porto Riga Seville Tartu Utrecht Valparaíso Windhoek Yerevan Zadar"
)
NAMES, PLACES = _NAMES.split(" "), _PLACES.split(" ")


# -- text -------------------------------------------------------------------------------------------
class Corpus:
    """LoCoMo turns and questions with their speakers' names swapped for random ones, and new dates."""

    def __init__(self, data: Path, seed: int) -> None:
        convs = load_conversations(data)
        self.turns = [(o.speaker or "", o.content) for c in convs for o in c.observations]
        self.questions = [qa.question for c in convs for qa in c.questions]
        names = {o.speaker for c in convs for o in c.observations if o.speaker}
        self._names = re.compile(
            r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b"
        )
        self._places = re.compile(r"\b(Sweden|Paris|London|California|Boston|New York|Canada|Italy|Spain)\b")
        self.rng = random.Random(seed)

    def _swap(self, text: str, cast: dict[str, str]) -> str:
        text = self._names.sub(lambda m: cast.setdefault(m.group(0), self.rng.choice(NAMES)), text)
        return self._places.sub(lambda _: self.rng.choice(PLACES), text)

    def observation(self, i: int) -> Observation:
        speaker, content = self.turns[self.rng.randrange(len(self.turns))]
        cast: dict[str, str] = {}
        who = cast.setdefault(speaker, self.rng.choice(NAMES)) if speaker else None
        at = T0 + dt.timedelta(days=self.rng.randrange(2000), minutes=self.rng.randrange(1440))
        return Observation(content=self._swap(content, cast), speaker=who, at=at, session=f"s{i // 20}")

    def query(self) -> str:
        return self._swap(self.rng.choice(self.questions), {})


# -- helpers ---------------------------------------------------------------------------------------
def pct(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
    }


def timed(fn: Callable[[int], object], count: int) -> list[float]:
    out = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return round(pages * resource.getpagesize() / 2**20, 1)


def disk_bytes(path: Path) -> int:
    files = [path, Path(f"{path}-wal"), *Path(f"{path}.ann").glob("*")]
    return sum(p.stat().st_size for p in files if p.is_file())


def embeddings(embedder_name: str, texts: list[str], cache: Path, key: str) -> np.ndarray:
    cache.mkdir(parents=True, exist_ok=True)
    file = cache / f"emb-{embedder_name}-{key}.npy"
    if file.is_file():
        return np.load(file)
    embedder = create_embedder(embedder_name)
    rows = np.concatenate([embedder.embed(texts[i : i + 2048]) for i in range(0, len(texts), 2048)])
    np.save(file, rows)
    return rows


# -- build -----------------------------------------------------------------------------------------
def build_bulk(path: Path, corpus: Corpus, n: int, args: argparse.Namespace, users: list[str]) -> float:
    """Nodes (entities, temporal refs, vectors) straight into the store: no edges, no decisions."""
    observations = [corpus.observation(i) for i in range(n)]
    texts = [f"{o.speaker}: {o.content}" if o.speaker else o.content for o in observations]
    vectors = embeddings(args.embedder, texts, args.cache, f"{args.seed}-{n}")
    extractor = create_extractor("regex")
    start = time.perf_counter()
    with SQLiteStore.open(path) as store:
        store.bind_embedder(create_embedder(args.embedder).name, int(vectors.shape[1]))
        for offset in range(0, n, 5000):
            part = range(offset, min(n, offset + 5000))
            store.put_nodes(
                [
                    Node(
                        id=new_id(),
                        tenant=Tenant(users[i % len(users)]),
                        content=observations[i].content,
                        at=observations[i].at,
                        speaker=observations[i].speaker,
                        session=observations[i].session,
                        entities=extractor.extract(observations[i].content, speaker=observations[i].speaker),
                        temporal_refs=ground(observations[i].content, observations[i].at),
                        embedding=vectors[i],
                        status="complete",
                    )
                    for i in part
                ]
            )
    return time.perf_counter() - start


def build_write(path: Path, corpus: Corpus, n: int, args: argparse.Namespace) -> float:
    observations = [corpus.observation(i) for i in range(n)]
    start = time.perf_counter()
    with Memory.open(path, embedder=args.embedder, answerer=None, profile="builtin") as mem:
        mem.add_many(observations, user=USER)
    return time.perf_counter() - start


# -- measure ---------------------------------------------------------------------------------------
def yardsticks(path: Path, queries: list[str], qvecs: np.ndarray, user: str) -> dict[str, object]:
    """Plain numpy top-10 over ``user``'s whole matrix, and bare FTS5 (no tenant filter: every row of
    the table), on the same file."""
    conn = sqlite3.connect(path)
    try:
        blobs = [r[0] for r in conn.execute("SELECT blob FROM vectors WHERE user_id = ?", (user,))]
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        numpy_ms = timed(lambda i: np.argpartition(-(matrix @ qvecs[i]), 10)[:10], len(queries))
        fts = [fts_query(q) for q in queries]
        fts_ms = timed(
            lambda i: (
                conn.execute(
                    "SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY rank LIMIT 10", (fts[i],)
                ).fetchall()
                if fts[i]
                else None
            ),
            len(queries),
        )
        exact = [np.argsort(-(matrix @ q))[:10] for q in qvecs]
        tenth = [float(matrix[e[-1]] @ q) for e, q in zip(exact, qvecs, strict=True)]
        ids = [r[0] for r in conn.execute("SELECT node_id FROM vectors WHERE user_id = ?", (user,))]
    finally:
        conn.close()
    exact_ids = [{ids[j] for j in e} for e in exact]
    return {"numpy": pct(numpy_ms), "fts5": pct(fts_ms), "exact": exact_ids, "tenth": tenth}


def open_first_search(
    path: Path, embedder: str, queries: list[str], user: str, threshold: int
) -> dict[str, float]:
    """Fresh processes: Memory.open + the first search (model load included), the search alone, the
    process's RSS after every query was searched (resident anonymous memory and resident file pages:
    the memory-mapped index and the model), and the bare store (open + one vector top-10, no model):
    what a CLI call pays before any work, and what a serving process holds."""
    code = (
        "import time,sys\nt0=time.perf_counter()\nfrom dualmem import Memory\nt1=time.perf_counter()\n"
        f"m=Memory.open({str(path)!r}, embedder={embedder!r}, answerer=None, profile='builtin')\n"
        f"m.store.use_ann({threshold})\nm.embedder.embed(['warm up the model'])\nt2=time.perf_counter()\n"
        f"m.search({queries[-1]!r}, user={user!r}, k=10)\nt3=time.perf_counter()\n"
        f"for q in {queries!r}:\n    m.search(q, user={user!r}, k=10)\n"
        "kb={l.split(':')[0]: int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('Rss')}\n"
        "print((t3-t1)*1000, (t2-t1)*1000, (t3-t2)*1000, kb['RssAnon'], kb['RssFile'] + kb['RssShmem'])\n"
        "m.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    total, opened, first, anon_kb, file_kb = (float(x) for x in out.stdout.split())
    bare = (
        "import time\nimport numpy as np\nimport onnxruntime\n"
        "from dualmem.plane import SQLiteStore\n"
        "from dualmem.types import Tenant\nt0=time.perf_counter()\n"
        f"s=SQLiteStore.open({str(path)!r})\ns.use_ann({threshold})\n"
        "q=np.ones(s.get_meta('embedder')['dim'], dtype=np.float32)\nq/=np.linalg.norm(q)\n"
        f"s.vector_search(Tenant({user!r}), q, 10)\nprint((time.perf_counter()-t0)*1000)\ns.close()\n"
    )
    store = subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True, check=True)
    return {
        "open_first_search_ms": round(total, 1),
        "open_ms": round(opened, 1),
        "first_search_ms": round(first, 1),
        "serving_rss_mb": round((anon_kb + file_kb) / 1024, 1),
        "serving_rss_anon_mb": round(anon_kb / 1024, 1),
        "serving_rss_file_mb": round(file_kb / 1024, 1),
        "store_open_first_vector_ms": round(float(store.stdout.split()[-1]), 1),
    }


def measure(
    path: Path, corpus: Corpus, n: int, args: argparse.Namespace, user: str = USER
) -> dict[str, object]:
    """Every figure for ``user`` of the file at ``path`` (``n``: the memories the file holds)."""
    queries = [corpus.query() for _ in range(args.queries)]
    embedder = create_embedder(args.embedder)
    qvecs = embedder.embed(queries)
    out: dict[str, object] = {"n": n}
    sticks = yardsticks(path, queries, qvecs, user)
    exact, tenth = sticks.pop("exact"), sticks.pop("tenth")
    assert isinstance(exact, list)
    assert isinstance(tenth, list)
    stage(out, numpy_topk=sticks["numpy"], bare_fts5=sticks["fts5"])
    with Memory.open(path, embedder=embedder, answerer=None, profile="builtin") as mem:
        threshold = mem.profile.ann_threshold if args.ann_threshold is None else args.ann_threshold
        mem.store.use_ann(threshold)
        tenant = Tenant(user)
        store = mem.store
        # a store above the lexical index's auto-build size is built explicitly (as `check --repair`
        # does): a bulk-loaded file has none, and the last run's forgotten adds purged it
        start = time.perf_counter()
        rebuilt = any(state in ("none", "stale", "purged") for state in store.lexical_index_state().values())
        if rebuilt:
            store.build_lexical_index()
        stage(
            out,
            lexical_index_build_s=round(time.perf_counter() - start, 1),
            lexical_index_rebuilt=rebuilt,
            lexical_index=store.lexical_index_state(),
        )
        lex_ms = timed(lambda i: store.lexical_search(tenant, queries[i], 10), len(queries))
        ctx_ms = timed(lambda i: store.context_search(tenant, queries[i], 10), len(queries))
        stage(out, store_lexical=pct(lex_ms), store_context=pct(ctx_ms))
        # the first vector search loads the exact matrix, or opens (on a bulk-loaded file: builds) the index
        first = timed(lambda i: store.vector_search(tenant, qvecs[i], 10), 1)[0]
        vec_ms = timed(lambda i: store.vector_search(tenant, qvecs[i], 10), len(queries))
        hits = [store.vector_search(tenant, q, 10) for q in qvecs]
        recall = sum(len({j for j, _ in a} & b) for a, b in zip(hits, exact, strict=True)) / (
            10 * len(queries)
        )
        # ties count: a hit scoring at least the exact 10th best is as good (hashing vectors tie a lot)
        tied = sum(sum(s >= t - 1e-5 for _, s in a) for a, t in zip(hits, tenth, strict=True)) / (
            10 * len(queries)
        )
        stage(
            out,
            first_vector_search_ms=round(first, 1),
            store_vector=pct(vec_ms),
            ann_recall_at_10=round(recall, 4),
            ann_recall_at_10_ties=round(tied, 4),
            ann_used=ann_available() and 0 < threshold <= store.count(tenant),
            ann_threshold=threshold,
        )
        search_ms = timed(lambda i: mem.search(queries[i], user=user, k=10), len(queries))
        stage(out, search=pct(search_ms), rss_mb=rss_mb())
        # a serving process's figure: other queries, after the first pass has read the file's hot
        # pages in (the first pass above is the file's first read after the build and the ANN build)
        again = Corpus(args.data, args.seed + 7919)
        later = [again.query() for _ in range(args.queries)]
        later_ms = timed(lambda i: mem.search(later[i], user=user, k=10), len(later))
        stage(out, search_second_pass=pct(later_ms))
        stage(out, search_stages=search_stages(mem, queries, user))
        extra = [corpus.observation(n + i) for i in range(args.adds)]
        added: list[str] = []
        add_ms = timed(
            lambda i: added.append(
                mem.add(extra[i].content, user=user, speaker=extra[i].speaker, at=extra[i].at)
            ),
            args.adds,
        )
        stage(
            out,
            add=pct(add_ms),
            peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        )
    out["disk_bytes_per_memory"] = round(disk_bytes(path) / (n + args.adds))
    # after the in-process searches, which built the approximate index a bulk-loaded file lacks
    out.update(open_first_search(path, args.embedder, queries, user, threshold))
    # a kept file is a fixture that later runs reuse: the timed adds are forgotten again
    with Memory.open(path, embedder=embedder, answerer=None, profile="builtin") as mem:
        for node_id in added:
            mem.forget(node_id, user=user)
    return out


#: the store reads of one Memory.search, timed by ``search_stages``
_SEARCH_STAGES = (
    "lexical_search",
    "context_search",
    "vector_search",
    "get_nodes",
    "node_context",
    "candidates",
)


def search_stages(mem: Memory, queries: list[str], user: str) -> dict[str, float]:
    """Where one ``Memory.search`` spends its CPU (p50 ms per query): each store read it makes (the
    store's methods wrapped on the class for this pass only, after the timed searches), ``other``
    (query embedding, features, scoring, ranking) and ``total``. The decoded-node and context caches
    are emptied before each query, as a large memory's candidates are rarely cached."""
    # the lexical reads go through the store's lexical component (``store.lexical.search(field, ...)``:
    # "nodes" is ``lexical_search``, "context" ``context_search``); the others through the store's class
    lexical_cls = type(mem.store.lexical)
    by_field = {"nodes": "lexical_search", "context": "context_search"}
    on_lexical = set(by_field.values())
    stages = [name for name in _SEARCH_STAGES if name in on_lexical or hasattr(SQLiteStore, name)]
    spent = dict.fromkeys(stages, 0.0)
    saved = {name: getattr(SQLiteStore, name) for name in stages if name not in on_lexical}

    def wrap(name: str) -> Callable[..., object]:
        def inner(*args: object, **kwargs: object) -> object:
            start = time.process_time()
            try:
                return saved[name](*args, **kwargs)
            finally:
                spent[name] += time.process_time() - start

        return inner

    saved_search = lexical_cls.search

    def lexical_search(self: object, field: str, *args: object, **kwargs: object) -> object:
        start = time.process_time()
        try:
            return saved_search(self, field, *args, **kwargs)
        finally:
            spent[by_field.get(field, "lexical_search")] += time.process_time() - start

    samples: dict[str, list[float]] = {name: [] for name in (*stages, "other", "total")}
    for name in saved:
        setattr(SQLiteStore, name, wrap(name))
    setattr(lexical_cls, "search", lexical_search)  # noqa: B010
    try:
        for query in queries:
            for cache in ("_nodes", "_contexts"):
                getattr(mem.store, cache, {}).clear()
            before = dict(spent)
            start = time.process_time()
            mem.search(query, user=user, k=10)
            total = time.process_time() - start
            parts = {name: spent[name] - before[name] for name in stages}
            for name, value in parts.items():
                samples[name].append(1000 * value)
            samples["other"].append(1000 * (total - sum(parts.values())))
            samples["total"].append(1000 * total)
    finally:
        for name, fn in saved.items():
            setattr(SQLiteStore, name, fn)
        setattr(lexical_cls, "search", saved_search)  # noqa: B010
    return {f"{name}_cpu_p50_ms": round(statistics.median(v), 2) for name, v in samples.items()}


def stage(out: dict[str, object], **figures: object) -> None:
    """Record ``figures`` and print them at once (a long run keeps what it measured)."""
    out.update(figures)
    print(json.dumps({"n": out["n"], **figures}), file=sys.stderr, flush=True)


def built(args: argparse.Namespace, name: str, build: Callable[[Path], float]) -> tuple[Path, float | None]:
    """The database file ``name`` under ``--keep`` (built once, then reused: ``None`` seconds), or
    built in the temporary folder."""
    folder = args.keep or Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    path, done = folder / f"{name}.db", folder / f"{name}.built"
    if args.keep is not None and done.is_file():
        return path, None
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    seconds = build(path)
    done.write_text(f"{seconds}\n")
    return path, seconds


def run_size(n: int, args: argparse.Namespace) -> dict[str, object]:
    corpus = Corpus(args.data, args.seed)
    mode = "write" if n <= args.write_max else "bulk"
    path, seconds = built(
        args,
        f"{mode}-{args.embedder}-{args.seed}-{n}",
        lambda p: (
            build_write(p, corpus, n, args) if mode == "write" else build_bulk(p, corpus, n, args, [USER])
        ),
    )
    result = measure(path, corpus, n, args)
    result.update(build=mode, embedder=args.embedder)
    if seconds is not None:
        result.update(build_s=round(seconds, 1), build_per_s=round(n / seconds, 1))
    return result


def run_users(users: int, per_user: int, args: argparse.Namespace) -> dict[str, object]:
    """``users`` tenants of ``per_user`` memories in one file; measured for one of them (the FTS5
    yardstick still ranks every tenant's rows)."""
    corpus = Corpus(args.data, args.seed)
    names = [f"user-{i:04d}" for i in range(users)]
    total = users * per_user
    path, seconds = built(
        args,
        f"users-{args.embedder}-{args.seed}-{users}x{per_user}",
        lambda p: build_bulk(p, corpus, total, args, names),
    )
    result = measure(path, corpus, total, args, user=names[users // 2])
    result.update(users=users, per_user=per_user, build="bulk", embedder=args.embedder)
    if seconds is not None:
        result.update(build_s=round(seconds, 1), build_per_s=round(total / seconds, 1))
    return result


def plot(results: list[dict[str, object]], file: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["n"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label in (
        ("add", "add p50"),
        ("search", "search p50"),
        ("search_second_pass", "search p50, second pass"),
        ("store_vector", "store vector top-10"),
        ("numpy_topk", "numpy top-10 (yardstick)"),
        ("store_lexical", "store lexical top-10"),
        ("store_context", "store context top-10"),
        ("bare_fts5", "bare FTS5 (yardstick)"),
    ):
        if all(key in r for r in results):
            ax.plot(sizes, [r[key]["p50_ms"] for r in results], marker="o", label=label)  # type: ignore[index]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories of one user")
    ax.set_ylabel("ms (p50)")
    ax.set_title("dualmem cost vs memory size")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(file, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000])
    parser.add_argument("--users", type=int, default=0, help="also N users x --per-user memories")
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--write-max", type=int, default=10_000, help="sizes above are bulk-loaded")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--ann-threshold", type=int, default=None, help="override the profile's (ANN recall at small sizes)"
    )
    parser.add_argument("--adds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/scale-cache"))
    parser.add_argument("--tmp", default=None, help="folder for the temporary databases")
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep the built databases in this folder and reuse them"
    )
    parser.add_argument("--out", type=Path, default=None, help="write OUT.json (and OUT.png)")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="dualmem-scale-", dir=args.tmp) as folder:
        args.folder = folder
        for n in args.sizes:
            results.append(run_size(n, args))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
            for stale in Path(folder).iterdir():  # one size's file at a time
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        report: dict[str, object] = {"sizes": results, "ann_extra": ann_available()}
        if args.users:
            report["tenants"] = run_users(args.users, args.per_user, args)
            print(json.dumps(report["tenants"]), file=sys.stderr, flush=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(text + "\n")
        if len(results) > 1:
            plot(results, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
