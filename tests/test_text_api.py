"""dualmem.text public surface, and its behaviour on real LoCoMo turns (speed: bench/text_throughput.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import dualmem.text as text_pkg
from dualmem.conversations import load_conversations
from dualmem.text import cues, entities, extract_entities, ground, lexical, temporal, timeparse


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022 order: CONSTANTS, then Classes, then functions
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


@pytest.mark.parametrize("module", [text_pkg, cues, entities, lexical, temporal, timeparse])
def test_all_is_sorted_and_importable(module: object) -> None:
    names = list(module.__all__)  # type: ignore[attr-defined]
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(module, name), name


def test_package_reexports_submodules() -> None:
    for module in (cues, entities, lexical, temporal, timeparse):
        for name in module.__all__:
            assert name in text_pkg.__all__, name
            assert getattr(text_pkg, name) is getattr(module, name)


def _locomo_turns(root: Path) -> list[tuple[str, str, object]]:
    return [(o.content, o.speaker or "", o.at) for c in load_conversations(root) for o in c.observations]


@pytest.mark.locomo
def test_works_on_every_locomo_turn(locomo_dir: Path) -> None:
    turns = _locomo_turns(locomo_dir)
    assert len(turns) > 1000
    ents = [extract_entities(t, speaker=s) for t, s, _ in turns]
    refs = [ground(t, at) for t, _, at in turns]  # type: ignore[arg-type]
    assert sum(1 for r in refs if r) > 100  # LoCoMo talks a lot about "last week", "yesterday"
    assert all(s.lower() in e for (_, s, _), e in zip(turns, ents, strict=True))
