"""The four dev corpora, their folds, and the labels the research harnesses read beside the questions.

- ``locomo``: the five LoCoMo dev conversations (``../shared/data/locomo``), one fold each.
- ``agentchat``: dualmem's user-assistant transcripts (``bench/agentchat/haystacks``), 4 folds.
- ``memgallery``: Mem-Gallery's 20 dialogues converted by ``bench/memgallery/build.py`` (one
  observation a round), 5 folds.
- ``notes``: dualmem's short agent notes (``bench/notes/src``), 5 folds.
- ``cjk``: the Chinese, Japanese and Korean dev corpus (``bench/cjk/src``, 14 users), 5 folds of
  users; built and searched with the multilingual embedder (MiniLM is English-only).

Folds are fixed (sorted conversation ids dealt round-robin), so every harness holds out the same
conversations. Within-corpus CV holds out one fold of one corpus and fits on every other fold of
every corpus; leave-one-corpus-out (LOCO) holds out a whole corpus and fits on the other three.

Labels beyond the questions' evidence (read from the raw files; the product loader ignores them):

- ``stale``: a notes question's superseded versions (for "stale above current");
- update pairs ``(new turn, old turn)``: the notes' ``updates``; agent chats' ``knowledge_update``
  and ``contradiction`` questions (evidence: the latest turn, then the older one);
- hard non-update pairs: the notes' ``non_updates``;
- co-evidence groups: the evidence turns of one question that spans several turns (multi-hop and
  multi-session questions), whose turns the write path should relate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from dualmem.conversations import Conversation, load_conversations

__all__ = [
    "CORPORA",
    "ENGLISH",
    "ROOT",
    "Corpus",
    "Labels",
    "conversations",
    "embedder_of",
    "fold_of",
    "labels",
]

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


@dataclass(frozen=True, slots=True)
class Corpus:
    name: str
    data: Path
    folds: int | None  # None: one conversation per fold
    embedder: str = "minilm"  # the embedder its memories are built and searched with

    def available(self) -> bool:
        return self.data.exists()


CORPORA: Mapping[str, Corpus] = {
    "locomo": Corpus("locomo", SHARED / "locomo", None),
    "agentchat": Corpus("agentchat", ROOT / "bench" / "agentchat" / "haystacks", 4),
    "memgallery": Corpus("memgallery", ROOT / "bench" / "memgallery" / "haystacks", 5),
    "notes": Corpus("notes", ROOT / "bench" / "notes" / "src", 5),
    "cjk": Corpus("cjk", ROOT / "bench" / "cjk" / "src", 5, embedder="multilingual"),
}
#: the corpora a run takes when none are named (the CJK corpus joins by name: ``--corpora ... cjk``)
ENGLISH = ("locomo", "agentchat", "memgallery", "notes")


def embedder_of(name: str) -> str:
    """The embedder spec of a corpus (or of its shuffled copy)."""
    return CORPORA[name.removesuffix(SHUFFLED)].embedder


#: question categories whose evidence turns belong together (co-evidence): LoCoMo multi-hop (1),
#: agent chats' multi-session, Mem-Gallery questions with several clue rounds in several sessions
CO_EVIDENCE = frozenset({1, "multi_session"})
#: agent-chat categories whose evidence is (latest version, older version)
UPDATE_CATEGORIES = frozenset({"knowledge_update", "contradiction"})


@cache
def conversations(name: str, limit: int | None = None) -> tuple[Conversation, ...]:
    if name.endswith(SHUFFLED):
        return tuple(shuffled(c) for c in conversations(name.removesuffix(SHUFFLED), limit))
    corpus = CORPORA[name]
    return tuple(load_conversations(corpus.data)[:limit])


#: a training-only variant of a corpus: its conversations' shuffled copies (``dualmem.learn.augment``)
SHUFFLED = "-shuffled"


def shuffled(conv: Conversation) -> Conversation:
    from dualmem.learn.augment import shuffled_sessions

    return shuffled_sessions(conv)


def fold_of(name: str, ids: Sequence[str]) -> dict[str, str]:
    """Each conversation's fold name (``corpus/fold``); a shuffled copy is in its source's fold."""
    if name.endswith(SHUFFLED):
        base = name.removesuffix(SHUFFLED)
        plain = fold_of(base, [i.removesuffix(SHUFFLED) for i in ids])
        return {i: plain[i.removesuffix(SHUFFLED)] for i in ids}
    corpus = CORPORA[name]
    if corpus.folds is None:
        return {c: f"{name}/{c}" for c in ids}
    return {c: f"{name}/fold{i % corpus.folds}" for i, c in enumerate(sorted(ids))}


@dataclass(slots=True)
class Labels:
    """What a conversation's raw file says beyond the product's questions."""

    updates: list[tuple[str, str]] = field(default_factory=list)  # (new turn, old turn)
    non_updates: list[tuple[str, str]] = field(default_factory=list)
    co_evidence: list[tuple[str, ...]] = field(default_factory=list)
    stale: dict[int, tuple[str, ...]] = field(default_factory=dict)  # question index -> stale turns


def _raw(path: Path) -> Iterator[dict[str, object]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    yield from data if isinstance(data, list) else [data]


@cache
def labels(name: str) -> dict[str, Labels]:
    """Every conversation's labels, by conversation id."""
    out: dict[str, Labels] = {}
    convs = {c.id: c for c in conversations(name)}
    raw: dict[str, dict[str, object]] = {}
    corpus = CORPORA[name]
    files = sorted(corpus.data.glob("*.json")) if corpus.data.is_dir() else [corpus.data]
    for path in files:
        for item in _raw(path):
            raw[str(item.get("id") or item.get("sample_id") or path.stem)] = item
    for cid, conv in convs.items():
        lab = out[cid] = Labels()
        item = raw.get(cid, {})
        for u in item.get("updates", []) or []:  # type: ignore[union-attr]
            lab.updates.append((str(u["new"]), str(u["old"])))  # type: ignore[index]
        for u in item.get("non_updates", []) or []:  # type: ignore[union-attr]
            lab.non_updates.append((str(u["new"]), str(u["old"])))  # type: ignore[index]
        questions = item.get("questions", []) or []
        for i, qa in enumerate(conv.questions):
            q = questions[i] if i < len(questions) and isinstance(questions, list) else {}
            stale = q.get("stale") if isinstance(q, dict) else None
            if stale:
                lab.stale[i] = tuple(str(s) for s in stale)
            if qa.category in UPDATE_CATEGORIES and len(qa.evidence) >= 2:
                lab.updates.append((qa.evidence[0], qa.evidence[1]))
            if len(qa.evidence) >= 2 and (qa.category in CO_EVIDENCE or _spans_sessions(conv, qa.evidence)):
                lab.co_evidence.append(qa.evidence)
    return out


def _spans_sessions(conv: Conversation, evidence: Sequence[str]) -> bool:
    """Mem-Gallery and agent chats: clue turns in two or more sessions (multi-session questions)."""
    session = {o.turn_id: o.session for o in conv.observations}
    return len({session.get(t) for t in evidence}) >= 2
