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
         "evidence": ["s1:1"], "category": 4}      # LoCoMo's numbering (default 4) or a name
      ],
      "updates": [                                 # optional; labels for fitting (dualmem calibrate)
        {"new": "s2:3", "old": "s1:1"}             # turn s2:3 replaces what turn s1:1 stated
      ],
      "non_updates": [{"new": "s2:4", "old": "s1:1"}]  # optional: looks like one, is not
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

Both formats are read through pydantic models (this is a file boundary); a bad file raises
``InvalidInput`` naming the file and the field path (``sessions[0].turns[2].text``), with a hint.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, StrictInt, StrictStr

from dualmem import _json as bounded_json
from dualmem._boundary import describe_error
from dualmem.errors import InvalidInput
from dualmem.text.textfile import read_text_file
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
_FILE_HINT = "a conversation file is JSON text in UTF-8: dualmem's format or LoCoMo's"
_ID_SPLIT = re.compile(r"[;,]")
_SIMPLE_HINT = f"see the {FORMAT} format in the docs of dualmem.conversations"
_LOCOMO_HINT = "a LoCoMo conversation has session_K lists of {speaker, dia_id, text} turns"


# -- the file models ------------------------------------------------------------------------------


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string")
    return value


def _opt_id(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return str(value).strip()
    raise ValueError("must be a non-empty string")


def _when(value: object) -> dt.datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str | int | float):
        raise ValueError("a time must be a string or a number")
    try:
        return parse_time(value)
    except InvalidInput as exc:
        raise ValueError(exc.message) from exc


Text = Annotated[StrictStr, AfterValidator(_nonblank)]
OptId = Annotated[str | None, PlainValidator(_opt_id)]
When = Annotated[dt.datetime | None, PlainValidator(_when)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)  # annotation keys are ignored


class _Turn(_Model):
    speaker: Text
    text: Text
    id: OptId = None
    at: When = None


class _Session(_Model):
    id: OptId = None
    date: When = None
    turns: list[_Turn]


class _Question(_Model):
    question: Text
    answer: Any = None
    evidence: Any = Field(default_factory=list)
    category: StrictInt | Annotated[StrictStr, Field(min_length=1, max_length=64)] = 4
    adversarial_answer: Any = None


class _Pair(_Model):
    new: Text
    old: Text


class _Simple(_Model):
    format: StrictStr = FORMAT
    id: OptId = None
    speakers: list[Text] | None = None
    sessions: Annotated[list[_Session], Field(min_length=1)]
    questions: list[_Question] = Field(default_factory=list)
    updates: list[_Pair] = Field(default_factory=list)
    non_updates: list[_Pair] = Field(default_factory=list)


class _LocomoTurn(_Model):
    dia_id: Text
    speaker: Text
    text: StrictStr | None = None
    blip_caption: StrictStr | None = None


_M = TypeVar("_M")


def _validate(adapter: pydantic.TypeAdapter[_M], value: object, *, label: str, path: str, hint: str) -> _M:
    try:
        return adapter.validate_python(value)
    except pydantic.ValidationError as exc:
        raise InvalidInput(f"{label}: {describe_error(exc, path)}", hint=hint) from exc


_SIMPLE = pydantic.TypeAdapter(_Simple)
_LOCOMO_TURNS = pydantic.TypeAdapter(list[_LocomoTurn])
_QUESTIONS = pydantic.TypeAdapter(list[_Question])
_WHEN = pydantic.TypeAdapter(When)


@dataclass(frozen=True, slots=True)
class QA:
    """A benchmark question. ``answer`` is ``None`` for LoCoMo's adversarial (category 5) questions."""

    question: str
    answer: str | None
    evidence: tuple[str, ...]
    category: int | str  # LoCoMo's numbering (1-5), or a corpus's own category name
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns as observations, in order, and its questions (maybe none)."""

    id: str
    observations: tuple[Observation, ...]
    questions: tuple[QA, ...] = ()
    skipped_evidence: int = 0  # evidence ids that named no turn and were dropped
    #: labelled write decisions, (new turn id, old turn id): the new turn replaces what the old one
    #: stated (``updates``), or looks like it does and does not (``non_updates``)
    updates: tuple[tuple[str, str], ...] = ()
    non_updates: tuple[tuple[str, str], ...] = ()

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
            raise InvalidInput(f"no .json files in {path}", hint="point at a .json file or a folder of them")
        return [conv for file in files for conv in _load_file(file)]
    return _load_file(path)


def load_observations(path: str | Path) -> list[Observation]:
    """The observations of every conversation at ``path``, conversation after conversation."""
    return [obs for conv in load_conversations(path) for obs in conv.observations]


def parse_conversations(data: object, *, name: str) -> list[Conversation]:
    """Conversations from already-decoded JSON; ``name`` is the default id and the error prefix."""
    items = data if isinstance(data, list) else [data]
    if not items:
        raise InvalidInput(f"{name}: the file holds an empty list", hint="put one conversation object in it")
    out: list[Conversation] = []
    for index, item in enumerate(items):
        label = name if len(items) == 1 else f"{name}[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(
                f"{label}: expected a JSON object, got {type(item).__name__}",
                hint="a conversation file holds an object or a list of objects",
            )
        out.append(_parse_one(item, name=name if len(items) == 1 else f"{name}-{index}", label=label))
    return out


def _load_file(path: Path) -> list[Conversation]:
    raw = read_text_file(path, hint=_FILE_HINT)
    try:
        data = bounded_json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path.name}: not valid JSON (line {exc.lineno}: {exc.msg})", hint="fix the JSON syntax there"
        ) from exc
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
    conv = _validate(_SIMPLE, item, label=label, path="", hint=_SIMPLE_HINT)
    conv_id = conv.id or name
    observations: list[Observation] = []
    for position, session in enumerate(conv.sessions, start=1):
        sid = session.id or f"s{position}"
        for n, turn in enumerate(session.turns, start=1):
            if conv.speakers is not None and turn.speaker not in conv.speakers:
                raise InvalidInput(
                    f"{label}: sessions[{position - 1}].turns[{n - 1}].speaker {turn.speaker!r} "
                    "is not in speakers",
                    hint="list every speaker in speakers, or leave speakers out",
                )
            observations.append(
                Observation(
                    content=turn.text,
                    at=turn.at or session.date,
                    speaker=turn.speaker,
                    source=conv_id,
                    session=sid,
                    turn_id=turn.id or f"{sid}:{n}",
                )
            )
    _check_unique(observations, label)
    questions, skipped = _questions(conv.questions, observations)
    known = {o.turn_id for o in observations}
    pairs = []
    for field_name, given in (("updates", conv.updates), ("non_updates", conv.non_updates)):
        for k, pair in enumerate(given):
            for end in (pair.new, pair.old):
                if end not in known:
                    raise InvalidInput(
                        f"{label}: {field_name}[{k}] names no turn {end!r}", hint="use the turns' ids"
                    )
        pairs.append(tuple((p.new, p.old) for p in given))
    return Conversation(conv_id, tuple(observations), questions, skipped, pairs[0], pairs[1])


# -- LoCoMo ---------------------------------------------------------------------------------------


def _parse_locomo(conv: Mapping[str, Any], *, name: str, label: str) -> Conversation:
    keys = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.fullmatch(key)) is not None)
    observations: list[Observation] = []
    for _, key in keys:
        turns = _validate(_LOCOMO_TURNS, conv[key], label=label, path=key, hint=_LOCOMO_HINT)
        stamp = f"{key}_date_time"
        date = _validate(_WHEN, conv.get(stamp), label=label, path=stamp, hint=_LOCOMO_HINT)
        observations.extend(
            _locomo_turn(turn, session=key, at=date, source=name, where=f"{label}: {key}[{i}]")
            for i, turn in enumerate(turns)
        )
    if not observations:
        raise InvalidInput(f"{label}: the LoCoMo conversation has no turns", hint=_LOCOMO_HINT)
    _check_unique(observations, label)
    qa = _validate(_QUESTIONS, conv.get("qa", []), label=label, path="qa", hint=_LOCOMO_HINT)
    questions, skipped = _questions(qa, observations)
    return Conversation(name, tuple(observations), questions, skipped)


def _locomo_turn(
    turn: _LocomoTurn, *, session: str, at: dt.datetime | None, source: str, where: str
) -> Observation:
    text = (turn.text or "").strip()
    metadata: dict[str, JSONValue] = {}
    caption = (turn.blip_caption or "").strip()
    if caption:
        text = f"{text} [shared an image: {caption}]".strip()
        metadata["image_caption"] = caption
    if not text:
        raise InvalidInput(f"{where}: turn {turn.dia_id} has no text", hint=_LOCOMO_HINT)
    return Observation(
        content=text,
        at=at,
        speaker=turn.speaker,
        source=source,
        session=session,
        turn_id=turn.dia_id.strip(),
        metadata=metadata,
    )


# -- shared helpers -------------------------------------------------------------------------------


def _questions(raw: Sequence[_Question], observations: Sequence[Observation]) -> tuple[tuple[QA, ...], int]:
    known = {o.turn_id for o in observations}
    out: list[QA] = []
    skipped = 0
    for q in raw:
        ids, dropped = _evidence_ids(q.evidence, known)
        skipped += dropped
        out.append(
            QA(
                question=q.question.strip(),
                answer=_answer(q.answer),
                evidence=ids,
                category=q.category,
                adversarial_answer=_answer(q.adversarial_answer),
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


def _check_unique(observations: Iterable[Observation], label: str) -> None:
    seen: set[str] = set()
    for obs in observations:
        if obs.turn_id in seen:
            raise InvalidInput(
                f"{label}: turn id {obs.turn_id!r} appears twice", hint="give every turn its own id"
            )
        seen.add(obs.turn_id or "")
