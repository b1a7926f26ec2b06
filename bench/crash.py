"""Crash harness: ``kill -9`` at random points during writes, then check nothing acknowledged was lost.

Each run starts a fresh database (seeded by this process), then a worker subprocess that repeats one
operation — add, add_many, ingest, update, forget, consolidate or import — and appends a line to a
log file *before* each call (``begin``) and *after* it returns (``ack``). At a random moment the
worker gets SIGKILL. This process then verifies the database:

- it opens, and ``check`` finds nothing but (at most) pending nodes;
- **lost**: acknowledged writes that are not there (an added id, an update's new version, an
  imported node), or acknowledged forgets that came back;
- **duplicated**: after the killed ingest is run again to the end (resumed), turns stored twice;
- **half-applied**: a call whose effects are partly there (an update whose new version exists while
  the old one is still current, an add_many or import batch partly stored, a forget chain partly gone).

The hashing embedder keeps it fast: the point is the store and the write path, not the model.

    PYTHONPATH=src .venv/bin/python bench/crash.py --runs 42 --seed 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from dualmem import Memory, Profile
from dualmem.errors import DualmemError, NotFound
from dualmem.plane import SQLiteStore

OPS = ("add", "add_many", "ingest", "update", "forget", "consolidate", "import")
USER = "crash"
EMBEDDER = "hashing:64"
TURNS = 600  # turns of the ingested conversation (three chunks of 256: a kill can fall between)
SEED_NODES = 40
MARKER = re.compile(r"^(mk|tm|im)\d")  # the unique word every written text carries


#: export files the import worker loads, one per operation
EXPORTS = 40


def open_memory(db: Path) -> Memory:
    return Memory.open(db, embedder=EMBEDDER, controller="builtin", answerer=None)


# -- the worker (a subprocess that gets killed) ---------------------------------------------------
class Log:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, op: str, **data: Any) -> None:
        os.write(self._fd, (json.dumps({"kind": kind, "op": op, **data}) + "\n").encode())


def work(op: str, db: Path, log: Log, files: Path, seed: int) -> None:
    rng = random.Random(seed)
    memory = open_memory(db)
    log.write("ready", op)
    if op == "ingest":
        log.write("begin", op)

        def chunk_done(done: int, total: int) -> None:  # after each chunk's commit
            log.write("progress", op, done=done, total=total)

        ids = memory.ingest(files / "conversation.json", user=USER, on_progress=chunk_done)
        log.write("ack", op, n=len(ids))
        memory.close()
        return
    seeded = [n.id for n in memory.nodes(user=USER)]
    parent = os.getppid()
    for i in range(100_000):
        if os.getppid() != parent:  # the harness is gone: stop rather than write forever
            break
        if not _one(op, memory, log, files=files, rng=rng, seeded=seeded, i=i, marker=f"mk{seed}x{i}"):
            break
    memory.close()
    log.write("done", op)


def _one(
    op: str,
    memory: Memory,
    log: Log,
    *,
    files: Path,
    rng: random.Random,
    seeded: list[str],
    i: int,
    marker: str,
) -> bool:
    """One operation ``op`` of the worker's loop, logged before (begin) and after (ack); False when
    there is nothing left to do."""
    if op == "add":
        log.write("begin", op, marker=marker)
        node_id = memory.add(f"note {marker} about tea", user=USER, session="s", turn_id=f"t{i}")
        log.write("ack", op, marker=marker, id=node_id)
    elif op == "add_many":
        markers = [f"{marker}n{j}" for j in range(12)]
        log.write("begin", op, markers=markers)
        ids = memory.add_many([f"batch {m} of notes" for m in markers], user=USER, chunk_size=5)
        log.write("ack", op, markers=markers, ids=ids)
    elif op == "update":
        k = rng.randrange(len(seeded))
        log.write("begin", op, old=seeded[k], marker=marker)
        new = memory.update(seeded[k], f"corrected {marker} fact", user=USER)
        log.write("ack", op, old=seeded[k], new=new, marker=marker)
        seeded[k] = new
    elif op == "forget":
        if not seeded:
            return False
        victim = seeded.pop(rng.randrange(len(seeded)))
        log.write("begin", op, id=victim)
        memory.forget(victim, user=USER)
        log.write("ack", op, id=victim)
    elif op == "consolidate":
        ids = memory.add_many([f"fact {marker}n{j} about the garden" for j in range(4)], user=USER)
        log.write("ack", "add_many", markers=[f"{marker}n{j}" for j in range(4)], ids=ids)
        log.write("begin", op)
        report = memory.consolidate(user=USER)
        log.write("ack", op, report=str(report)[:200])
    elif op == "import":
        if i >= EXPORTS:
            return False
        path = files / f"export{i}.jsonl"
        ids = [json.loads(line)["id"] for line in path.read_text().splitlines() if '"node"' in line]
        log.write("begin", op, file=path.name, ids=ids)
        memory.import_jsonl(path, user=USER)
        log.write("ack", op, file=path.name, ids=ids)
    return True


# -- the harness -------------------------------------------------------------------------------
def make_files(folder: Path) -> None:
    """A conversation to ingest and 40 small exports (distinct ids) to import."""
    turns = [
        {
            "speaker": "Mira" if i % 2 else "Sam",
            "text": f"turn tm{i}z about the harbor and tea",
            "id": f"s1:{i}",
        }
        for i in range(TURNS)
    ]
    conversation = {"id": "crash", "sessions": [{"id": "s1", "date": "2024-05-14T10:00:00Z", "turns": turns}]}
    (folder / "conversation.json").write_text(json.dumps(conversation))
    for k in range(EXPORTS):
        db = folder / f"src{k}.db"
        with open_memory(db) as memory:
            memory.add_many([f"imported im{k}n{j} memory" for j in range(6)], user=USER)
            memory.wait_for_consolidation()
            memory.export_jsonl(folder / f"export{k}.jsonl", user=USER)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)


def seed_db(db: Path, op: str) -> None:
    if op in ("ingest", "import", "add", "add_many"):
        return
    with open_memory(db) as memory:
        memory.add_many([f"seed fact sd{i}q about the river" for i in range(SEED_NODES)], user=USER)
        memory.wait_for_consolidation()


def read_log(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by the kill
            continue
    return out


def run_worker(
    op: str, db: Path, log: Path, files: Path, seed: int, kill_after: float | None, *, wait_for: str = "ready"
) -> bool:
    """Run one worker; SIGKILL it ``kill_after`` seconds after it logs ``wait_for``. True if killed."""
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        op,
        "--db",
        str(db),
        "--log",
        str(log),
        "--files",
        str(files),
    ]
    proc = subprocess.Popen([*cmd, "--seed", str(seed)], stderr=subprocess.DEVNULL)
    if kill_after is None:
        proc.wait(timeout=600)
        return False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(e["kind"] == wait_for for e in read_log(log)):
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    time.sleep(kill_after)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return killed


def verify(op: str, db: Path, events: list[dict[str, Any]]) -> dict[str, Any]:
    out: Counter[str] = Counter()
    try:
        store = SQLiteStore.open(db)
    except DualmemError as exc:
        return {"open_failed": 1, "error": exc.one_line()}
    try:
        report = store.check()
        out["pending"] = next((p.count for p in report.problems if p.kind == "pending_nodes"), 0)
        out["integrity_problems"] = sum(p.count for p in report.problems if p.kind != "pending_nodes")
        nodes = {n.id: n for n in store.iter_nodes(None)}
        superseded = {
            e.source
            for node_id in nodes
            for e in store.edges_of(node_id, ["temporal"])
            if e.label == "superseded_by" and e.source == node_id
        }
        queue = store.get_meta("consolidation:queue")
        out["passes_queued_at_kill"] = len(queue) if isinstance(queue, list) else 0
    finally:
        store.close()
    if op == "ingest":
        out["ingest_stored_at_kill"] = stored = sum(
            1 for n in nodes.values() if MARKER.match(n.content.split()[1])
        )
        chunks = [e["done"] for e in events if e["kind"] == "progress"]
        out["ingest_acknowledged_at_kill"] = acked_turns = max(chunks, default=0)
        out["lost"] += max(acked_turns - stored, 0)
    texts = Counter(word for n in nodes.values() for word in set(n.content.split()))
    acked = [e for e in events if e["kind"] == "ack"]
    begun = [e for e in events if e["kind"] == "begin"]
    for e in acked:
        _count_ack(out, e, nodes, superseded)
    last = begun[-1] if begun and _unacked(events) else None
    if last is not None:
        out["half_applied"] += _half_applied(last, nodes, superseded, texts)
    for marker, count in texts.items():
        if MARKER.match(marker) and count > 1:
            out["duplicated"] += count - 1
    if op == "ingest":
        out["acknowledged"] = TURNS if acked else 0
    out["passes_lost"] = _resume_passes(db) if out["passes_queued_at_kill"] else 0
    return dict(out)


def _count_ack(out: Counter[str], e: dict[str, Any], nodes: dict[str, Any], superseded: set[str]) -> None:
    """What one acknowledged operation must have left in the database: counted as acknowledged, and
    as lost or half applied where it did not."""
    if e["op"] == "add":
        out["acknowledged"] += 1
        out["lost"] += e["id"] not in nodes
    elif e["op"] == "add_many":
        out["acknowledged"] += len(e["ids"])
        out["lost"] += sum(1 for i in e["ids"] if i not in nodes)
    elif e["op"] == "update":
        out["acknowledged"] += 1
        out["lost"] += e["new"] not in nodes
        out["half_applied"] += e["old"] in nodes and e["old"] not in superseded
    elif e["op"] == "forget":
        out["acknowledged"] += 1
        out["lost"] += e["id"] in nodes
    elif e["op"] == "import":
        out["acknowledged"] += len(e["ids"])
        out["lost"] += sum(1 for i in e["ids"] if i not in nodes)
    elif e["op"] == "consolidate":
        out["acknowledged"] += 1


def _resume_passes(db: Path) -> int:
    """Open the memory again (inline passes): every pass the killed process left queued must run."""
    prof = Profile.named("builtin").with_(write__consolidation="inline")
    Memory.open(db, embedder=EMBEDDER, controller="builtin", answerer=None, profile=prof).close()
    with SQLiteStore.open(db) as store:
        queue = store.get_meta("consolidation:queue")
    return len(queue) if isinstance(queue, list) else 0


def _unacked(events: list[dict[str, Any]]) -> bool:
    for e in reversed(events):
        if e["kind"] in ("begin", "ack"):
            return e["kind"] == "begin"
    return False


def _half_applied(
    last: dict[str, Any], nodes: dict[str, Any], superseded: set[str], texts: Counter[str]
) -> int:
    """The call that was running when the kill came: all of it or none of it must be there."""
    if last["op"] == "update":
        new_there = texts.get(last["marker"], 0) > 0
        old_current = last["old"] in nodes and last["old"] not in superseded
        return int(new_there and old_current)
    if last["op"] == "add_many":
        there = [texts.get(m, 0) > 0 for m in last["markers"]]
        return int(any(there) and not all(there))
    if last["op"] == "import":
        there = [i in nodes for i in last["ids"]]
        return int(any(there) and not all(there))
    return 0


def resume_ingest(db: Path, log: Path, files: Path, seed: int) -> dict[str, int]:
    """Run the killed ingest again to its end; every turn must be stored exactly once."""
    run_worker("ingest", db, log, files, seed, None)
    with SQLiteStore.open(db) as store:
        words = Counter(
            w for n in store.iter_nodes(None) for w in set(n.content.split()) if w.startswith("tm")
        )
    return {
        "ingest_missing": sum(1 for i in range(TURNS) if words.get(f"tm{i}z", 0) == 0),
        "ingest_duplicated": sum(c - 1 for c in words.values() if c > 1),
    }


def harness(runs: int, seed: int, workdir: Path) -> dict[str, Any]:
    rng = random.Random(seed)
    files = workdir / "files"
    files.mkdir(parents=True, exist_ok=True)
    make_files(files)
    per_op: dict[str, Counter[str]] = {op: Counter() for op in OPS}
    for run in range(runs):
        op = OPS[run % len(OPS)]
        db, log = workdir / f"run{run}.db", workdir / f"run{run}.log"
        seed_db(db, op)
        # an ingest is killed anywhere in its first seconds, or (every other one) after a chunk committed
        mid_ingest = op == "ingest" and (run // len(OPS)) % 2 == 1
        delay = rng.uniform(0.0, 4.0) if op == "ingest" else rng.uniform(0.05, 1.5)
        wait_for = "progress" if mid_ingest else "ready"
        killed = run_worker(op, db, log, files, seed * 1000 + run, delay, wait_for=wait_for)
        result = verify(op, db, read_log(log))
        if op == "ingest":
            result.update(resume_ingest(db, log, files, seed * 1000 + run))
        stats = per_op[op]
        stats["runs"] += 1
        stats["killed"] += killed
        stats.update({k: v for k, v in result.items() if isinstance(v, int)})
        print(f"run {run:3d} {op:11s} killed={killed} {result}", file=sys.stderr)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    totals: Counter[str] = Counter()
    for stats in per_op.values():
        totals.update(stats)
    return {
        "runs": runs,
        "seed": seed,
        "per_op": {k: dict(v) for k, v in per_op.items()},
        "total": dict(totals),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=42)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--worker", choices=OPS, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--files", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work(args.worker, args.db, Log(args.log), args.files, args.seed)
        return 0
    with tempfile.TemporaryDirectory(prefix="dualmem-crash-") as tmp:
        result = harness(args.runs, args.seed, args.workdir or Path(tmp))
    print(json.dumps(result, indent=2))
    bad = result["total"]
    failed = any(
        bad.get(k, 0) for k in ("open_failed", "integrity_problems", "lost", "half_applied", "passes_lost")
    )
    return 1 if failed or bad.get("ingest_duplicated", 0) or bad.get("ingest_missing", 0) else 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except NotFound as exc:  # pragma: no cover - a worker racing its own kill
        print(exc.one_line(), file=sys.stderr)
        raise SystemExit(3) from exc
