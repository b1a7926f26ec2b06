"""``dualmem calibrate``: fit the builtin System One's candidate scorer (see dualmem.learn.calibrate)."""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

from dualmem.errors import InvalidInput

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit the builtin System One's candidate scorer from labelled queries or a teacher controller",
    )
    p.add_argument(
        "--data",
        type=Path,
        nargs="+",
        required=True,
        help="conversation files/dirs with questions (LoCoMo or dualmem format), or a JSONL of "
        '{"query", "relevant", "user"} against --db',
    )
    p.add_argument(
        "--out", type=Path, required=True, help="scorer file to write (dualmem.trees/1 or dualmem.ranker/1)"
    )
    p.add_argument(
        "--scorer",
        choices=["trees", "linear"],
        default="trees",
        help="boosted trees (lambdarank; fitting needs dualmem[learn]) or a logistic scorer (default trees)",
    )
    p.add_argument("--trees", type=int, default=None, help="tree count (default: leave-one-group-out choice)")
    p.add_argument(
        "--teacher",
        default=None,
        choices=["llm", "jev"],
        help="learn from this controller's relevance decisions instead of the labels",
    )
    p.add_argument("--teacher-url", default=None, help="API root of the teacher (llm: OpenAI-compatible)")
    p.add_argument("--teacher-model", default=None)
    p.add_argument(
        "--teacher-log", type=Path, default=None, help="JSON-lines record of every teacher decision"
    )
    p.add_argument("--per-query", type=int, default=20, help="candidates the teacher scores per query")
    p.add_argument(
        "--work", type=Path, default=None, help="where conversation memories are built (default temp)"
    )
    p.add_argument("--pool", type=int, default=50, help="vector and lexical depth of the pool (N)")
    p.add_argument("--window", type=int, default=2, help="session neighbours either side")
    p.add_argument(
        "--channels",
        nargs="*",
        default=[],
        metavar="NAME=SIZE",
        help="retrieval channels every pool is built with (read.channels: temporal, entity, causal, "
        "semantic), each its size",
    )
    p.add_argument(
        "--l2", type=float, default=None, help="linear: L2 strength (default: leave-one-group-out choice)"
    )
    p.add_argument(
        "--heads-out",
        type=Path,
        default=None,
        help="also fit the builtin's stop (sufficiency) and routing heads and the abstention gate from "
        "the labelled conversations and write them here (dualmem.heads/1)",
    )
    p.add_argument(
        "--shuffled-copies",
        type=Path,
        nargs="+",
        default=[],
        metavar="DATA",
        help="also fit the scorer on a copy of each conversation of these --data sources with every "
        "session's turns in a seeded random order (training only: neighbours that do not cohere, as "
        "a day's notes; dualmem.learn.augment)",
    )
    p.add_argument(
        "--write-heads-out",
        type=Path,
        default=None,
        help="also fit the builtin's write heads (relation.supersedes from the conversations' updates, "
        "relation.semantic from questions with several evidence turns) and write them here "
        "(dualmem.write-heads/1; each --data source is one group of the cross-validation)",
    )
    p.set_defaults(handler=cmd_calibrate)


def _checked_calibrate(args: argparse.Namespace) -> list[Path]:
    """``InvalidInput`` for options of ``calibrate`` that do not go together; the JSONL query files."""
    if args.per_query < 1 or args.pool < 1 or args.window < 0:
        raise InvalidInput("--per-query and --pool must be positive, --window not negative")
    if args.trees is not None and (args.trees < 1 or args.scorer != "trees"):
        raise InvalidInput("--trees needs a positive count and --scorer trees")
    if args.l2 is not None and (args.l2 < 0 or args.scorer != "linear"):
        raise InvalidInput("--l2 needs a non-negative strength and --scorer linear")
    if args.scorer == "trees":
        from dualmem.learn.boost import require_lightgbm

        require_lightgbm()  # a missing LightGBM fails before any memory is built
    jsonl = [p for p in args.data if p.suffix == ".jsonl"]
    if jsonl and len(jsonl) != len(args.data):
        raise InvalidInput("give either conversation files or JSONL query files, not both")
    if args.write_heads_out is not None and jsonl:
        raise InvalidInput(
            "--write-heads-out learns from labelled conversations", hint="give conversation files"
        )
    if args.heads_out is not None and (args.teacher or jsonl):
        raise InvalidInput(
            "--heads-out learns from labelled conversations",
            hint="drop --teacher and give conversation files",
        )
    return jsonl


def cmd_calibrate(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.learn.calibrate import provenance

    jsonl = _checked_calibrate(args)
    records: list[Any] = []
    log = args.teacher_log.open("w", encoding="utf-8") if args.teacher_log else None
    try:
        record = (lambda row: log.write(json.dumps(row) + "\n")) if log else None
        examples = _from_db(args, jsonl, record) if jsonl else _from_conversations(args, record, records)
    finally:
        if log:
            log.close()
    if not examples:
        raise InvalidInput(
            "no usable queries in --data", hint="queries need relevant ids that are in the memory"
        )
    fitted, extra = _fit(args, examples)
    given: list[str] = getattr(args, "argv", None) or ["calibrate"]
    command = "dualmem " + " ".join(shlex.quote(a) for a in given)
    if args.teacher:
        extra["teacher"] = {"backend": args.teacher, "url": args.teacher_url, "model": args.teacher_model}
    prov = provenance(
        data=args.data,
        command=command,
        mode="teacher" if args.teacher else "labels",
        examples=examples,
        extra=extra,
    )
    ranker = fitted.with_provenance(prov)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    ranker.save(args.out)
    result: dict[str, Any] = {
        "out": str(args.out),
        "scorer": args.scorer,
        "queries": prov["queries"],
        "candidates": prov["candidates"],
    }
    if args.scorer == "trees":
        result["trees"] = len(ranker.trees)
    else:
        result["l2"] = extra["l2"]
    _extra_heads(args, ranker, records, prov, result)
    return result


def _extra_heads(
    args: argparse.Namespace, ranker: Any, records: list[Any], prov: dict[str, Any], result: dict[str, Any]
) -> None:
    """``--write-heads-out`` and ``--heads-out``: the heads fitted beside the scorer, into ``result``."""
    if args.write_heads_out is not None:
        from dualmem.learn.write_heads import fit_write_heads

        wheads = fit_write_heads(args.pair_rows, provenance={k: v for k, v in prov.items() if k != "groups"})
        args.write_heads_out.parent.mkdir(parents=True, exist_ok=True)
        wheads.save(args.write_heads_out)
        result["write_heads"] = {"out": str(args.write_heads_out), "heads": wheads.provenance["heads"]}
    if args.heads_out is not None:
        from dualmem.learn.calibrate import fit_learned_heads

        heads = fit_learned_heads(ranker, records, provenance={**prov, "ranker": str(args.out)})
        args.heads_out.parent.mkdir(parents=True, exist_ok=True)
        heads.save(args.heads_out)
        result["heads"] = {"out": str(args.heads_out), "fitted": sorted(heads.decisions)}
        result["heads"]["unsupported"] = dict(heads.unsupported)
        result["heads"]["abstention"] = heads.abstention is not None


def _fit(args: argparse.Namespace, examples: list[Any]) -> tuple[Any, dict[str, Any]]:
    """The scorer ``--scorer`` asks for, and what its provenance says of the fit."""
    from dualmem.learn.calibrate import choose_l2, fit_examples, fit_tree_examples

    extra: dict[str, Any] = {"pool": args.pool, "window": args.window, "embedder": args.embedder}
    if args.scorer == "trees":
        trees, chosen = fit_tree_examples(examples, trees=args.trees)
        return trees, {**extra, **trees.provenance, "inner_r10": chosen}
    l2 = args.l2 if args.l2 is not None else choose_l2(examples)
    return fit_examples(examples, l2=l2), {**extra, "scorer": "linear", "l2": l2}


def _views_on() -> Any:
    """The default profile with every relation view written and read (calibration builds)."""
    from dualmem.config import Profile
    from dualmem.types import VIEWS

    return Profile.builtin().with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)


def _settings(args: argparse.Namespace) -> Any:
    from dualmem.read.pool import PoolSettings

    channels = []
    for spec in args.channels:
        name, _, size = spec.partition("=")
        if not size.isdigit():
            raise InvalidInput(f"--channels takes NAME=SIZE (e.g. temporal=20), got {spec!r}")
        channels.append((name, int(size)))
    from dualmem.config import checked_channels

    checked_channels([n for n, _ in channels])
    return PoolSettings(args.pool, args.window, tuple(channels))


def _meter(args: argparse.Namespace) -> Any:
    from dualmem.control import create_controller
    from dualmem.control.meter import Meter

    options = {"base_url": args.teacher_url, "model": args.teacher_model}
    return Meter(create_controller(args.teacher, **{k: v for k, v in options.items() if v}))


def _from_db(args: argparse.Namespace, files: list[Path], record: Any) -> list[Any]:
    from dualmem.cli.options import open_memory
    from dualmem.learn.calibrate import examples_from_labels, examples_from_teacher, read_labelled_jsonl

    queries = [q for f in files for q in read_labelled_jsonl(f)]
    with open_memory(args) as mem:
        if args.teacher:
            return examples_from_teacher(
                mem.store, mem.embedder, _meter(args), queries,
                per_query=args.per_query, settings=_settings(args), record=record,
            )  # fmt: skip
        return examples_from_labels(mem.store, mem.embedder, queries, settings=_settings(args))


def _from_conversations(args: argparse.Namespace, record: Any, records: list[Any]) -> list[Any]:
    """The relevance head's examples of every conversation; with ``--heads-out`` every question's
    pool also goes to ``records`` (adversarial questions marked as ones to decline)."""
    from dualmem.conversations import load_conversations
    from dualmem.embed import create_embedder
    from dualmem.learn.calibrate import (
        LabelledQuery,
        examples_from_labels,
        examples_from_teacher,
        pool_records,
        record_example,
    )
    from dualmem.memory import Memory

    convs = [(str(path), c, c.id) for path in args.data for c in load_conversations(path)]
    if args.shuffled_copies:
        from dualmem.learn.augment import shuffled_sessions

        copied = {str(p) for p in args.shuffled_copies}
        if not copied <= {str(p) for p in args.data}:
            raise InvalidInput("--shuffled-copies names a source that is not among --data")
        # a copy is held out with its source (its group) in the inner cross-validation
        convs += [(path, shuffled_sessions(c), c.id) for path, c, _ in list(convs) if path in copied]
    embedder = create_embedder(args.embedder)
    examples: list[Any] = []
    args.pair_rows = []
    with tempfile.TemporaryDirectory(prefix="dualmem-calibrate-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for source, conv, group in convs:
            queries = [
                LabelledQuery(q.question, frozenset(q.evidence), conv.id, group)
                for q in conv.questions
                if q.evidence and (args.teacher or q.category != 5)
            ]
            safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
            # with the views' edges: the routing heads learn from what they link (pool_records)
            with Memory.open(work / f"{safe}.sqlite", embedder=embedder, profile=_views_on()) as mem:
                if mem.count(user=conv.id) != len(conv.observations):
                    mem.forget_all(user=conv.id)
                    mem.add_many(conv.observations, user=conv.id)
                if args.write_heads_out is not None and group == conv.id:  # not from a copy
                    from dualmem.learn.write_heads import conversation_rows

                    args.pair_rows += conversation_rows(mem.store, conv, source)
                if args.teacher:
                    examples += examples_from_teacher(
                        mem.store, mem.embedder, _meter(args), queries,
                        per_query=args.per_query, settings=_settings(args), record=record,
                    )  # fmt: skip
                elif args.heads_out is not None:  # one pool per question serves every head
                    every = [
                        LabelledQuery(q.question, frozenset(q.evidence), conv.id, group, q.category == 5)
                        for q in conv.questions
                    ]
                    found = pool_records(mem.store, mem.embedder, every, settings=_settings(args))
                    records += found
                    examples += [e for r in found if (e := record_example(r)) is not None]
                else:
                    examples += examples_from_labels(
                        mem.store, mem.embedder, queries, settings=_settings(args)
                    )
    return examples
