"""Memories of the dev corpora built by the real write path, cached, with the pairs it judged.

``build(conv, out, controller=...)`` writes a conversation into ``out/<corpus>/<id>-<key>.sqlite``
with ``Memory.add_many`` (the product's write path, consolidation inline so a build is
deterministic). The key covers the conversation, the write profile, the System One's weights and
:data:`BUILD_VERSION` (bumped when the write path changes what it stores).

With ``record=True`` the builtin controller also keeps every candidate pair the write path sent it
(the relation requests: new memory x each discovered candidate) with the builtin's pair features
(``dualmem.control.builtin_features``), as ``Pair`` rows in ``<build>-pairs.pkl``: what a write head
is fitted on, exactly as the write path will ask it.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dualmem.config import Profile
from dualmem.control.builtin import BuiltinController, BuiltinWeights
from dualmem.control.builtin_features import Features
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.states import RelationState
from dualmem.conversations import Conversation
from dualmem.embed import Embedder, create_embedder
from dualmem.memory import Memory
from dualmem.types import VIEWS

__all__ = ["BUILD_VERSION", "Pair", "any_build", "build", "embedder", "load_pairs"]

#: bumped whenever the write path stores something else for the same input
BUILD_VERSION = "1"


@cache
def embedder(spec: str = "minilm") -> Embedder:
    return create_embedder(spec)


@dataclass(frozen=True, slots=True)
class Pair:
    """One judged pair: the new memory's turn, the candidate's turn, its rank among the candidates,
    and the builtin's pair features."""

    conversation: str
    new: str
    old: str
    rank: int
    features: Mapping[str, float]


class _Recorder(BuiltinController):
    def __init__(self, weights: BuiltinWeights | None) -> None:
        super().__init__(weights=weights)
        self.pairs: list[tuple[str, str, int, dict[str, float]]] = []

    def decide(self, batch: Batch) -> BatchResult:
        state = batch.typed
        if isinstance(state, RelationState) and batch.features is not None:
            feats = Features(state, batch.features)
            for i, cand in enumerate(state.candidates):
                self.pairs.append((state.new_memory.id, cand.memory.id, i, dict(feats.get("pair", i))))
        return super().decide(batch)


def open_build(path: Path, profile: Profile) -> Memory:
    """A build opened read-only to search it with ``profile`` (the builtin decider, no answerer)."""
    return Memory.open(
        path,
        embedder=embedder(),
        controller=BuiltinController(),
        answerer=None,
        profile=profile,
        read_only=True,
    )


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def views_profile() -> Profile:
    """The builtin profile with every relation view written and read: the research's base, so that
    the builds hold the views' edges and each view's ablation takes something away (the product's
    builtin profile stores and reads none; ``docs/benchmarks.md``)."""
    return Profile.builtin().with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)


def build_profile() -> Profile:
    return views_profile().with_(write__consolidation="inline")


def build(
    conv: Conversation,
    out: Path,
    *,
    weights: BuiltinWeights | None = None,
    profile: Profile | None = None,
    record: bool = False,
    tag: str = "",
    spec: str = "minilm",
) -> Path:
    """The conversation's build (made now, or the cached one). ``weights``: the builtin's weights
    (``None``: the packaged ones); ``spec``: the embedder (a key of its own unless MiniLM, so the
    English builds keep theirs)."""
    profile = profile or build_profile()
    from dualmem.control.builtin import default_weights

    used = weights or default_weights()
    key = _digest(
        [
            BUILD_VERSION,
            conv.id,
            [(o.turn_id, o.content, o.speaker, str(o.at)) for o in conv.observations],
            repr(profile.write),
            repr(used),
            tag,
            *([] if spec == "minilm" else [spec]),
        ]
    )
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
    path = out / f"{safe}-{key}.sqlite"
    pairs_path = path.with_name(path.stem + "-pairs.pkl")
    if path.exists() and (not record or pairs_path.exists()):
        return path
    out.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    part = path.with_name(path.name + ".part")
    Path(part).unlink(missing_ok=True)
    ctl = _Recorder(used)
    started = time.perf_counter()
    with Memory.open(part, embedder=embedder(spec), controller=ctl, answerer=None, profile=profile) as mem:
        mem.add_many(conv.observations, user=conv.id)
        turn = {n.id: n.turn_id or n.id for n in mem.nodes(user=conv.id)}
    if record:
        pairs = [Pair(conv.id, turn[a], turn[b], r, f) for a, b, r, f in ctl.pairs if a in turn and b in turn]
        with pairs_path.open("wb") as fh:
            pickle.dump(pairs, fh)
    part.rename(path)
    took = time.perf_counter() - started
    print(f"  built {conv.id}: {len(conv.observations)} turns in {took:.0f} s", file=sys.stderr)
    return path


def any_build(conv: Conversation, out: Path, spec: str = "minilm") -> Path:
    """A recorded build of ``conv`` under ``out`` whatever System One made it (the pairs the write
    path judges do not depend on its answers: candidate discovery reads no decision), else a new one."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in conv.id)
    for path in sorted(out.glob(f"{safe}-*.sqlite")):
        if path.with_name(path.stem + "-pairs.pkl").exists() and path.stem.count("-") == safe.count("-") + 1:
            return path
    return build(conv, out, record=True, spec=spec)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name == "Pair":  # written by ``python -m research.builds`` (as ``__main__.Pair``) or here
            return Pair
        return super().find_class(module, name)


def load_pairs(path: Path) -> list[Pair]:
    with path.with_name(path.stem + "-pairs.pkl").open("rb") as fh:
        pairs: list[Pair] = _Unpickler(fh).load()
    return pairs


def builds(convs: Sequence[Conversation], out: Path, **kw: Any) -> dict[str, Path]:
    return {c.id: build(c, out, **kw) for c in convs}


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from research.corpora import CORPORA, ENGLISH, conversations, embedder_of

    parser = argparse.ArgumentParser(description="build the dev corpora (cached) and record their pairs")
    parser.add_argument(
        "--corpora",
        nargs="+",
        default=list(ENGLISH),
        help=f"names among {', '.join(CORPORA)} (a -shuffled suffix: the copy)",
    )
    parser.add_argument("--out", type=Path, default=Path("research-out/builds"))
    parser.add_argument("--limit", type=int, default=None, help="conversations per corpus")
    ns = parser.parse_args(argv)
    for name in ns.corpora:
        for conv in conversations(name, ns.limit):
            build(conv, ns.out / name, record=True, spec=embedder_of(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
