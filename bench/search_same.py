"""Does a code change leave ``Memory.search`` exactly as it was? Dump, then compare.

``dump`` runs ``Memory.search`` over a set of queries on a database opened read-only (never
modified) and writes what each search returned: the ids in order, every score as its exact
``repr``, the view, round and edge of each hit, the stop reason, the controller calls and the rounds
the loop scored. Run it once per code tree (``PYTHONPATH=<tree>/src``) on the same file and queries,
then ``compare`` the two dumps: any difference in any field is reported, query by query.

Queries: ``--corpus`` draws ``bench/scale.py``'s synthetic queries (seeded: the same set in every
tree); ``--conversation`` takes every question of a LoCoMo conversation file (the builds under a
LoCoMo bench cache are of the dev conversations; the user id is the conversation's id).

    PYTHONPATH=/work/main/src python bench/search_same.py dump --db <copy>.db --corpus 200 \\
        --embedder hashing --user bench-user --out /tmp/x/main.json
    PYTHONPATH=$PWD/src python bench/search_same.py dump ... --out /tmp/x/branch.json
    python bench/search_same.py compare /tmp/x/main.json /tmp/x/branch.json

The write path's stored bytes: ``stored`` canonicalises a ``dualmem export`` file (every node id
replaced by its turn id, creation stamps dropped, records sorted) so that two builds of the same
conversation by two code trees can be compared with ``compare`` or ``cmp``:

    python bench/search_same.py stored /tmp/x/main.jsonl --out /tmp/x/main.stored.json

``--drop-key KEY ...`` leaves out the decision records of those keys: a tree that no longer asks a
question (issue 48: the builtin profile asks no relation-view question) is compared with its
baseline on everything else it stores.

``build`` writes such a database (and each conversation's export) from conversation files with one
tree's write path (``add_many`` per conversation, the builtin profile and controller, consolidation
inline so that two runs hold the same decisions; the user id is the conversation's id), so the same
file can then be dumped by both trees, and two trees' builds compared by ``stored``:

    PYTHONPATH=/work/main/src python bench/search_same.py build --conversation <file> \
        --embedder minilm --db /tmp/x/main.db --export /tmp/x/main.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path

from dualmem import Profile
from dualmem.conversations import load_conversations
from dualmem.embed import create_embedder
from dualmem.memory import Memory
from dualmem.read.trace import Retrieval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import Corpus


def record(found: Retrieval) -> dict[str, object]:
    """Everything a search returned that a caller can see, exact (JSON writes a float as its
    ``repr``): each hit's score, view, round, edge and whole node (its embedding as a digest), and
    the trace (route, anchors, every scored round, stop reason, calls)."""
    trace = found.trace
    return {
        "query": found.query,
        "hits": [
            {
                "id": e.node.id,
                "score": e.score,
                "view": e.view,
                "round": e.round,
                "via": None if e.via is None else [e.via.source, e.via.target, e.via.label],
                "refs": [dict(r.to_json()) for r in e.temporal_refs],
                "node": e.node.to_json(),
                "vector": None
                if e.node.embedding is None
                else hashlib.sha1(e.node.embedding.tobytes()).hexdigest(),
            }
            for e in found.evidence
        ],
        "route": trace.route,
        "anchors": [list(a) for a in trace.anchors],
        "rounds": [r.to_json() for r in trace.rounds],
        "stop": trace.stop_reason,
        "calls": trace.calls_by_purpose,
        "visited": trace.visited,
        "edges": trace.edges_inspected,
    }


def queries_of(args: argparse.Namespace) -> list[str]:
    if args.conversation is not None:
        return [qa.question for conv in load_conversations(args.conversation) for qa in conv.questions]
    corpus = Corpus(args.data, args.seed)
    return [corpus.query() for _ in range(args.corpus)]


def dump(args: argparse.Namespace) -> None:
    queries = queries_of(args)
    embedder = create_embedder(args.embedder)
    out = []
    profile = None if args.profile == "stored" else args.profile
    with Memory.open(args.db, embedder=embedder, answerer=None, profile=profile, read_only=True) as mem:
        mem.store.use_ann(mem.profile.ann_threshold)
        mem.search(
            "warm up", user=args.user, k=args.k
        )  # the model loaded: no first search hits the time limit
        for query in queries:
            out.append(record(mem.search(query, user=args.user, k=args.k)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out))
    print(f"{len(out)} searches -> {args.out}")


def build(args: argparse.Namespace) -> None:
    """A fresh database of every conversation of ``--conversation``; their exports, concatenated."""
    convs = [conv for path in args.conversation for conv in load_conversations(path)]
    embedder = create_embedder(args.embedder)
    base = Profile.named("builtin")  # consolidation inline: its passes land where the adds put them
    profile = dataclasses.replace(
        base, write=dataclasses.replace(base.write, consolidation=args.consolidation)
    )
    with Memory.open(args.db, embedder=embedder, controller="builtin", profile=profile) as mem:
        lines: list[str] = []
        for conv in convs:
            mem.add_many(conv.observations, user=conv.id)
        if args.export is not None:
            for conv in convs:
                part = args.export.with_name(f"{args.export.name}.{conv.id}")
                mem.export_jsonl(part, user=conv.id)
                lines += part.read_text().splitlines()
                part.unlink()
            args.export.write_text("".join(line + "\n" for line in lines))
    print(f"{sum(len(c.observations) for c in convs)} turns of {len(convs)} conversations -> {args.db}")


def compare(args: argparse.Namespace) -> int:
    a, b = json.loads(args.a.read_text()), json.loads(args.b.read_text())
    if len(a) != len(b):
        print(f"different query counts: {len(a)} vs {len(b)}")
        return 1
    differ = 0
    for x, y in zip(a, b, strict=True):
        if x != y:
            differ += 1
            keys = [k for k in x if x[k] != y.get(k)]
            print(f"DIFFERENT {x['query']!r}: {', '.join(keys)}")
    hits = sum(len(x["hits"]) for x in a)
    print(f"{len(a)} searches, {hits} hits compared: {len(a) - differ} identical, {differ} different")
    return 1 if differ else 0


_ID = re.compile(r"\b[0-9a-f]{24}\b")
#: when and how fast, not what; and the export trailer's digest, which covers the ids and stamps
_VOLATILE = frozenset({"created_at", "latency_ms", "sha256"})


def stored(args: argparse.Namespace) -> None:
    """A build's export with ids by turn and without write stamps, records sorted."""
    records = [json.loads(line) for line in args.export.read_text().splitlines() if line.strip()]
    dropped = set(args.drop_key or ())
    records = [r for r in records if not (r.get("kind") == "decision" and r.get("key") in dropped)]
    names = {r["id"]: r.get("turn_id") or r["id"] for r in records if "content" in r}

    def canonical(value: object) -> object:
        if isinstance(value, dict):
            return {k: canonical(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [canonical(v) for v in value]
        if isinstance(value, str):
            return _ID.sub(lambda m: names.get(m.group(0), "?" + m.group(0)[:0]), value)
        return value

    lines = sorted(json.dumps(canonical(r), sort_keys=True) for r in records)
    args.out.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    print(f"{len(lines)} records -> {args.out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--db", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--embedder", default="hashing")
    d.add_argument("--user", default="bench-user")
    d.add_argument("--corpus", type=int, default=100, help="synthetic queries (bench/scale.py's)")
    d.add_argument("--conversation", type=Path, default=None, help="a conversation file: its questions")
    d.add_argument("--data", type=Path, default=Path("../shared/data/locomo"))
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--k", type=int, default=10)
    d.add_argument(
        "--profile",
        default="builtin",
        help="the profile searched with (a preset or file); 'stored': the one the database was opened with",
    )
    b = sub.add_parser("build", help="write a database of a conversation file (and its export)")
    b.add_argument("--conversation", type=Path, nargs="+", required=True, help="conversation files")
    b.add_argument("--db", type=Path, required=True)
    b.add_argument("--embedder", default="minilm")
    b.add_argument("--export", type=Path, default=None)
    b.add_argument(
        "--consolidation",
        default="inline",
        choices=["inline", "background", "off"],
        help="inline (the default): the same passes in every run; background's depend on timing",
    )
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    st = sub.add_parser("stored", help="canonicalise a dualmem export (ids by turn, no stamps)")
    st.add_argument("export", type=Path)
    st.add_argument("--out", type=Path, required=True)
    st.add_argument("--drop-key", nargs="*", default=None, help="leave out the decisions of these keys")
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args)
        return 0
    if args.command == "build":
        build(args)
        return 0
    if args.command == "stored":
        stored(args)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
