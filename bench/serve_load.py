"""Load on one ``dualmem serve`` over loopback: concurrent clients mixing add and search.

1. Preloads one LoCoMo conversation (one tenant) into a fresh SQLite file, so searches run at LoCoMo
   scale, and creates one API key per client for that tenant.
2. ``steady``: starts ``dualmem serve`` (a subprocess on 127.0.0.1, an ephemeral port), runs
   ``--clients`` threads for ``--seconds``, each looping add (a new line) or search (a LoCoMo
   question, never its answer), then stops the server with SIGTERM and checks every acknowledged
   write is in the database with its text.
   Before that, the same add and search run in process one at a time (``in_process_baseline``),
   so the service's cost can be read as a ratio on a noisy machine.
3. ``kill``: the same, but the server is ``kill -9``-ed halfway and restarted; requests that fail
   while it is down are counted apart (they were never acknowledged); afterwards every
   acknowledged write must be present.

Prints JSON: requests/s, p50/p95/p99 per route, errors, acknowledged writes lost (target 0).
With ``--think-ms 0`` (the default) every client sends its next request as soon as the last one
answered (a closed loop that keeps the server saturated); ``--think-ms N`` pauses N ms on average.

    python bench/serve_load.py --data ../shared/data/locomo --conversation conv-26 --clients 16 --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dualmem import Memory
from dualmem.conversations import load_conversations
from dualmem.server.keys import KeyStore, keys_path_for

HOST = "127.0.0.1"  # loopback only, by design
TENANT = "locomo"


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"add": [], "search": []})
    errors: dict[str, int] = field(default_factory=dict)
    outage_failures: int = 0
    acked: dict[str, str] = field(default_factory=dict)  # node id -> text
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, kind: str) -> None:
        with self.lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1


class Server:
    """``dualmem serve`` as a subprocess we can SIGTERM or SIGKILL."""

    def __init__(self, db: Path, embedder: str, port: int, log: Path) -> None:
        self.db, self.embedder, self.port, self.log = db, embedder, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        src = str(Path(__file__).resolve().parents[1] / "src")
        env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
        cmd = [
            sys.executable, "-m", "dualmem.cli.main", "--db", str(self.db), "--embedder", self.embedder,
            "serve", "--host", HOST, "--port", str(self.port), "--rate-limit", "0", "--log-level", "warning",
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://{HOST}:{self.port}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}; see {self.log}")
            time.sleep(0.2)
        raise RuntimeError("the server did not become ready in 120 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)
        self.proc = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def client_loop(
    url: str, token: str, queries: list[str], until: float, n: int, tally: Tally, think: float
) -> None:
    rng = random.Random(n)
    i = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        while time.monotonic() < until:
            add = rng.random() < 0.5
            route = "add" if add else "search"
            started = time.perf_counter()
            try:
                if add:
                    text = f"client {n} note {i}: {rng.choice(queries)}"
                    r = http.post("/v1/memories", json={"observations": [{"text": text, "speaker": f"c{n}"}]})
                else:
                    r = http.post("/v1/search", json={"query": rng.choice(queries), "k": 10})
            except httpx.TransportError:
                with tally.lock:
                    tally.outage_failures += 1
                time.sleep(0.2)
                continue
            elapsed = time.perf_counter() - started
            if r.status_code >= 400:
                tally.error(f"{route} {r.status_code}")
                continue
            with tally.lock:
                tally.latencies[route].append(elapsed)
                if add:
                    tally.acked[r.json()["ids"][0]] = text
            i += 1
            if think:
                time.sleep(rng.uniform(0, 2 * think))


def run_phase(
    server: Server, tokens: list[str], queries: list[str], seconds: float, *, kill: bool, think: float
) -> Tally:
    tally = Tally()
    server.start()
    url = f"http://{HOST}:{server.port}"
    started = time.monotonic()
    until = started + seconds
    threads = [
        threading.Thread(target=client_loop, args=(url, tok, queries, until, n, tally, think), daemon=True)
        for n, tok in enumerate(tokens)
    ]
    for t in threads:
        t.start()
    if kill:
        time.sleep(seconds / 2)
        server.stop(signal.SIGKILL)
        time.sleep(1.0)
        server.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    server.stop(signal.SIGTERM)
    tally.errors["_elapsed_s"] = round(elapsed)
    return tally


def lost_writes(db: Path, embedder: str, acked: dict[str, str]) -> int:
    with Memory.open(db, embedder=embedder) as mem:
        scope = mem.scope(TENANT)
        stored = {n.id: n.content for n in scope.nodes()}
    return sum(1 for node_id, text in acked.items() if stored.get(node_id) != text)


def summary(tally: Tally, db: Path, embedder: str) -> dict[str, Any]:
    elapsed = tally.errors.pop("_elapsed_s")
    total = sum(len(v) for v in tally.latencies.values())
    out: dict[str, Any] = {
        "seconds": elapsed,
        "requests": total,
        "requests_per_s": round(total / max(elapsed, 1), 1),
        "errors": dict(tally.errors),
        "error_count": sum(tally.errors.values()),
        "failed_while_down": tally.outage_failures,
        "acknowledged_writes": len(tally.acked),
        "acknowledged_writes_lost": lost_writes(db, embedder, tally.acked),
    }
    for route, values in tally.latencies.items():
        out[route] = {
            "count": len(values),
            **{f"p{q}_ms": round(pct(values, q / 100) * 1000, 1) for q in (50, 95, 99)},
        }
    return out


def baseline(db: Path, embedder: str, queries: list[str], n: int = 30) -> dict[str, Any]:
    """The same operations in process, one at a time, no server: the floor on this machine now."""
    rng = random.Random(7)
    with Memory.open(db, embedder=embedder) as mem:
        scope = mem.scope("baseline")  # another tenant of the same file: clients never see it
        scope.add_many(f"warm-up {i}" for i in range(3))
        out: dict[str, Any] = {}
        for route in ("add", "search"):
            times = []
            for i in range(n):
                started = time.perf_counter()
                if route == "add":
                    scope.add(f"baseline note {i}: {rng.choice(queries)}")
                else:
                    mem.scope(TENANT).search(rng.choice(queries), k=10)
                times.append(time.perf_counter() - started)
            out[route] = {f"p{q}_ms": round(pct(times, q / 100) * 1000, 1) for q in (50, 95)}
    return out


def preload(db: Path, embedder: str, data: Path, conversation: str) -> tuple[int, list[str]]:
    convs = [c for c in load_conversations(data) if c.id == conversation]
    if not convs:
        raise SystemExit(f"no conversation {conversation!r} in {data}")
    conv = convs[0]
    with Memory.open(db, embedder=embedder) as mem:
        mem.scope(TENANT).add_many(conv.observations)
    queries = [q.question for q in conv.questions] or [o.content for o in conv.observations]
    return len(conv.observations), queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    ap.add_argument("--conversation", default="conv-26")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--phases", default="steady,kill", help="comma-separated: steady, kill")
    ap.add_argument(
        "--think-ms", type=float, default=0.0, help="mean pause between a client's requests (0: closed loop)"
    )
    args = ap.parse_args()
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600:
        raise SystemExit("--clients must be 1..64 and --seconds 1..600")
    results: dict[str, Any] = {"clients": args.clients, "embedder": args.embedder, "think_ms": args.think_ms}
    results["cores"] = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="dualmem-load-") as tmp:
        db = Path(tmp) / "load.db"
        started = time.perf_counter()
        turns, queries = preload(db, args.embedder, args.data, args.conversation)
        results["preload"] = {"conversation": args.conversation, "turns": turns,
                              "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
        results["in_process_baseline"] = baseline(db, args.embedder, queries)
        keys = KeyStore.open(keys_path_for(str(db)))
        tokens = [keys.create(user=TENANT, label=f"client {n}")[1] for n in range(args.clients)]
        keys.close()
        server = Server(db, args.embedder, free_port(), Path(tmp) / "server.log")
        try:
            for phase in args.phases.split(","):
                tally = run_phase(
                    server, tokens, queries, args.seconds, kill=phase == "kill", think=args.think_ms / 1000
                )
                results[phase] = summary(tally, db, args.embedder)
                print(f"{phase}: {json.dumps(results[phase])}", file=sys.stderr)
        finally:
            server.stop(signal.SIGKILL)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
