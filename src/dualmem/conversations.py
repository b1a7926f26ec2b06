"""Load conversation files into observations (and benchmark questions, when a file has them).

Two formats are read; ``load_conversations`` tells them apart by their keys.

**dualmem's conversation format** (``dualmem.conversation/1``), one JSON object::

    {
      "format": "dualmem.conversation/1",          # optional; if present it must be this value
      "id": "mira",                                # optional; defaults to the file name without .json
      "speakers": ["Mira", "Assistant"],           # optional; if given, every turn's speaker must be listed
      "sessions": [                                # required, in chronological order
        {
          "id": "s1",                              # optional; defaults to "s1", "s2", ... by position
          "date": "2024-05-14T10:00:00Z",          # optional; when the session took place
          "turns": [
            {"speaker": "Mira", "text": "My old bicycle broke.",
             "id": "s1:1",                         # optional; defaults to "<session id>:<n>" (n from 1)
             "at": "2024-05-14T10:02:00Z"}         # optional; defaults to the session's date
          ]
        }
      ],
      "questions": [                               # optional; for evaluation only
        {"question": "Why did Mira buy a bicycle?", "answer": "Her old one broke.",
         "evidence": ["s1:1"], "category": 4}      # category uses LoCoMo's numbering; default 4
      ]
    }

A file may also hold a JSON list of such objects. Times are anything ``dualmem.text.parse_time``
accepts (ISO 8601 with or without a zone, or LoCoMo's ``1:56 pm on 8 May, 2023``); a time without
a zone is taken as UTC. ``text`` and ``speaker`` are required and must be non-empty; turn ids must be
unique within a conversation.

**LoCoMo** (Maharana et al., 2024): either one conversation object per file (``speaker_a``,
``speaker_b``, ``session_K`` lists of turns, ``session_K_date_time``, ``qa``), or the public
``locomo10.json``, a list of samples ``{"sample_id", "conversation": {...}, "qa": [...]}``. A turn's
``dia_id`` becomes ``Observation.turn_id``, ``session_K`` its session; a shared image is kept as text:
``"<text> [shared an image: <blip_caption>]"``. Question evidence ids have stray spaces removed, a
``"D8:6; D9:17"`` list is split, and ids naming no turn are dropped and counted in
``Conversation.skipped_evidence``. Annotation keys (summaries, observations, events) are ignored.

A directory loads every ``*.json`` file in it, sorted by name.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dualmem.errors import InvalidInput
from dualmem.text.timeparse import parse_time
from dualmem.types import JSONValue, Observation

__all__ = [
    "FORMAT",
    "QA",
    "Conversation",
    "load_conversations",
    "load_observations",
    "parse_conversations",
]

FORMAT = "dualmem.conversation/1"
_SESSION_KEY = re.compile(r"session_(\d+)")
_ID_SPLIT = re.compile(r"[;,]")


@dataclass(frozen=True, slots=True)
class QA:
    """A benchmark question. ``answer`` is ``None`` for LoCoMo's adversarial (category 5) questions."""

    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns as observations, in order, and its questions (maybe none)."""

    id: str
    observations: tuple[Observation, ...]
    questions: tuple[QA, ...] = ()
    skipped_evidence: int = 0  # evidence ids that named no turn and were dropped

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(o.turn_id for o in self.observations if o.turn_id is not None)


# -- entry points ---------------------------------------------------------------------------------


def load_conversations(path: str | Path) -> list[Conversation]:
    """Every conversation in a file (either format) or in each ``*.json`` file of a directory."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise InvalidInput(f"no .json files in {path}")
        return [conv for file in files for conv in _load_file(file)]
    return _load_file(path)


def load_observations(path: str | Path) -> list[Observation]:
    """The observations of every conversation at ``path``, conversation after conversation."""
    return [obs for conv in load_conversations(path) for obs in conv.observations]


def parse_conversations(data: object, *, name: str) -> list[Conversation]:
    """Conversations from already-decoded JSON; ``name`` is the default id and the error prefix."""
    items = data if isinstance(data, list) else [data]
    if not items:
        raise InvalidInput(f"{name}: the file holds an empty list")
    out: list[Conversation] = []
    for index, item in enumerate(items):
        label = name if len(items) == 1 else f"{name}[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{label}: expected a JSON object, got {type(item).__name__}")
        out.append(_parse_one(item, name=name if len(items) == 1 else f"{name}-{index}", label=label))
    return out


def _load_file(path: Path) -> list[Conversation]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path.name}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    return parse_conversations(data, name=path.stem)


def _parse_one(item: dict[str, Any], *, name: str, label: str) -> Conversation:
    if "sessions" in item:
        return _parse_simple(item, name=name, label=label)
    if "conversation" in item and isinstance(item["conversation"], dict):
        conv = dict(item["conversation"])
        conv.setdefault("qa", item.get("qa", []))
        return _parse_locomo(conv, name=str(item.get("sample_id") or name), label=label)
    if "speaker_a" in item or any(_SESSION_KEY.fullmatch(k) for k in item):
        return _parse_locomo(item, name=str(item.get("sample_id") or name), label=label)
    raise InvalidInput(
        f"{label}: unknown conversation format",
        hint=f'use {{"format": "{FORMAT}", "sessions": [...]}} or a LoCoMo file',
    )


# -- dualmem.conversation/1 -----------------------------------------------------------------------


def _parse_simple(item: dict[str, Any], *, name: str, label: str) -> Conversation:
    fmt = item.get("format", FORMAT)
    if fmt != FORMAT:
        raise InvalidInput(f"{label}: unknown format {fmt!r}", hint=f"expected {FORMAT!r}")
    conv_id = _opt_str(item.get("id"), f"{label}: id") or name
    speakers = item.get("speakers")
    if speakers is not None and not (
        isinstance(speakers, list) and all(isinstance(s, str) and s.strip() for s in speakers)
    ):
        raise InvalidInput(f"{label}: speakers must be a list of names")
    sessions = item["sessions"]
    if not isinstance(sessions, list) or not sessions:
        raise InvalidInput(f"{label}: sessions must be a non-empty list")
    observations: list[Observation] = []
    for position, session in enumerate(sessions, start=1):
        if not isinstance(session, dict):
            raise InvalidInput(f"{label}: session {position} is not an object")
        observations.extend(
            _simple_session(session, position=position, conv_id=conv_id, speakers=speakers, label=label)
        )
    _check_unique(observations, label)
    questions, skipped = _parse_questions(item.get("questions", []), observations, label=label)
    return Conversation(conv_id, tuple(observations), questions, skipped)


def _simple_session(
    session: dict[str, Any], *, position: int, conv_id: str, speakers: list[str] | None, label: str
) -> list[Observation]:
    sid = _opt_str(session.get("id"), f"{label}: session {position} id") or f"s{position}"
    where = f"{label}: session {sid}"
    date = _time(session.get("date"), where=f"{where} date")
    turns = session.get("turns")
    if not isinstance(turns, list):
        raise InvalidInput(f"{where}: turns must be a list")
    out: list[Observation] = []
    for n, turn in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            raise InvalidInput(f"{where}: turn {n} is not an object")
        text, speaker = turn.get("text"), turn.get("speaker")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"{where}: turn {n} has no text")
        if not isinstance(speaker, str) or not speaker.strip():
            raise InvalidInput(f"{where}: turn {n} has no speaker")
        if speakers is not None and speaker not in speakers:
            raise InvalidInput(f"{where}: turn {n} speaker {speaker!r} is not in speakers")
        turn_id = _opt_str(turn.get("id"), f"{where}: turn {n} id") or f"{sid}:{n}"
        at = _time(turn.get("at"), where=f"{where} turn {turn_id}") or date
        out.append(
            Observation(content=text, at=at, speaker=speaker, source=conv_id, session=sid, turn_id=turn_id)
        )
    return out


# -- LoCoMo ---------------------------------------------------------------------------------------


def _parse_locomo(conv: Mapping[str, Any], *, name: str, label: str) -> Conversation:
    keys = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.fullmatch(key)) is not None)
    observations: list[Observation] = []
    for _, key in keys:
        turns = conv[key]
        if not isinstance(turns, list):
            raise InvalidInput(f"{label}: {key} is not a list of turns")
        date = _time(conv.get(f"{key}_date_time"), where=f"{label}: {key}_date_time")
        observations.extend(
            _locomo_turn(turn, session=key, at=date, source=name, where=f"{label}: {key}") for turn in turns
        )
    if not observations:
        raise InvalidInput(f"{label}: the LoCoMo conversation has no turns")
    _check_unique(observations, label)
    qa = conv.get("qa", [])
    questions, skipped = _parse_questions(qa, observations, label=label)
    return Conversation(name, tuple(observations), questions, skipped)


def _locomo_turn(
    turn: object, *, session: str, at: dt.datetime | None, source: str, where: str
) -> Observation:
    if not isinstance(turn, dict):
        raise InvalidInput(f"{where}: a turn is not an object")
    dia_id, speaker = turn.get("dia_id"), turn.get("speaker")
    if not isinstance(dia_id, str) or not dia_id.strip():
        raise InvalidInput(f"{where}: a turn has no dia_id")
    if not isinstance(speaker, str) or not speaker.strip():
        raise InvalidInput(f"{where}: turn {dia_id} has no speaker")
    text = str(turn.get("text") or "").strip()
    metadata: dict[str, JSONValue] = {}
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shared an image: {caption.strip()}]".strip()
        metadata["image_caption"] = caption.strip()
    if not text:
        raise InvalidInput(f"{where}: turn {dia_id} has no text")
    return Observation(
        content=text,
        at=at,
        speaker=speaker,
        source=source,
        session=session,
        turn_id=dia_id.strip(),
        metadata=metadata,
    )


# -- shared helpers -------------------------------------------------------------------------------


def _parse_questions(
    raw: object, observations: Sequence[Observation], *, label: str
) -> tuple[tuple[QA, ...], int]:
    if not isinstance(raw, list):
        raise InvalidInput(f"{label}: questions must be a list")
    known = {o.turn_id for o in observations}
    out: list[QA] = []
    skipped = 0
    for n, q in enumerate(raw, start=1):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not q["question"].strip():
            raise InvalidInput(f"{label}: question {n} has no question text")
        ids, dropped = _evidence_ids(q.get("evidence", []), known)
        skipped += dropped
        category = q.get("category", 4)
        if not isinstance(category, int) or isinstance(category, bool):
            raise InvalidInput(f"{label}: question {n} category must be an integer")
        out.append(
            QA(
                question=q["question"].strip(),
                answer=_answer(q.get("answer")),
                evidence=ids,
                category=category,
                adversarial_answer=_answer(q.get("adversarial_answer")),
            )
        )
    return tuple(out), skipped


def _evidence_ids(raw: object, known: set[str | None]) -> tuple[tuple[str, ...], int]:
    if not isinstance(raw, list):
        raw = [raw]
    ids: list[str] = []
    dropped = 0
    for item in raw:
        for part in _ID_SPLIT.split(str(item)):
            cleaned = re.sub(r"\s+", "", part)
            if not cleaned:
                continue
            if cleaned in known:
                if cleaned not in ids:
                    ids.append(cleaned)
            else:
                dropped += 1
    return tuple(ids), dropped


def _answer(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _time(value: object, *, where: str) -> dt.datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str | int | float):
        raise InvalidInput(f"{where}: a time must be a string or a number")
    try:
        return parse_time(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}", hint=exc.hint) from exc


def _opt_str(value: object, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    raise InvalidInput(f"{where} must be a non-empty string")


def _check_unique(observations: Iterable[Observation], label: str) -> None:
    seen: set[str] = set()
    for obs in observations:
        if obs.turn_id in seen:
            raise InvalidInput(f"{label}: turn id {obs.turn_id!r} appears twice")
        seen.add(obs.turn_id or "")
