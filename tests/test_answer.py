"""End to end: the paper's running example answered offline (builtin controller, extractive answerer)."""

from __future__ import annotations

from pathlib import Path

from control_support import QUESTION, tell_the_story
from dualmem import Memory
from dualmem.embed import Embedder
from dualmem.reason import ABSTAIN_TEXT


def test_mira_answer_offline(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(
        tmp_path / "mira.db", embedder=minilm, controller="builtin", answerer="extractive"
    ) as mem:
        m1, m2 = tell_the_story(mem, "mira")
        ans = mem.answer(QUESTION, user="mira")
        ids = [e.node.id for e in ans.evidence]
        assert m1 in ids
        assert m2 in ids
        assert not ans.abstained
        assert "15 May 2024" in ans.text
        assert "because my old one broke" in ans.text
        ev2 = next(e for e in ans.evidence if e.node.id == m2)
        ref = next(r for r in ev2.temporal_refs if r.expression == "yesterday")
        assert (ref.start.isoformat(), ref.precision) == ("2024-05-15", "day")
        assert ans.trace.calls_by_purpose["routing"] == 1


def test_extractive_abstains_without_support(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=minilm) as mem:
        mem.add("Mira: My old bicycle broke.", user="mira", at="2024-05-14T10:00:00Z")
        ans = mem.answer("What is the capital of Mongolia?", user="mira")
        assert ans.abstained
        assert ans.text == ABSTAIN_TEXT


def test_extractive_does_not_repeat_the_speaker(minilm: Embedder, tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", embedder=minilm) as mem:
        mem.add(
            "Mira: I adopted a beagle named Biscuit.", user="u", speaker="Mira", at="2024-05-02T10:00:00Z"
        )
        ans = mem.answer("Which beagle did Mira adopt?", user="u")
        assert ans.text == 'Mira said on 2 May 2024: "I adopted a beagle named Biscuit."'


def test_one_abstain_text_for_every_answerer() -> None:
    from dualmem.reason import ABSTAIN_TEXT, base, extractive, openai_chat

    assert base.ABSTAIN_TEXT is ABSTAIN_TEXT
    assert extractive.ABSTAIN_TEXT is ABSTAIN_TEXT
    assert openai_chat.ABSTAIN_TEXT is ABSTAIN_TEXT
    assert f'"{ABSTAIN_TEXT}"' in openai_chat.SYSTEM_PROMPT


def test_the_answer_names_the_memory_it_quotes(minilm: Embedder, tmp_path: Path) -> None:
    """``Answer.used`` starts with the memory whose sentence is quoted, which need not be the top hit."""
    with Memory.open(tmp_path / "m.db", embedder=minilm) as mem:
        mem.add("Mira: My old bicycle broke, the frame cracked.", user="u", speaker="Mira", at="2024-05-14")
        mem.add("Mira: I bought a new bicycle yesterday.", user="u", speaker="Mira", at="2024-05-16")
        jonna = mem.add("Mira: Jonna helped me pick it.", user="u", speaker="Mira", at="2024-05-16")
        ans = mem.answer("Who helped Mira choose her new bicycle?", user="u")
        assert not ans.abstained
        assert ans.text.startswith('Mira said on 16 May 2024: "Jonna helped me pick it."')
        assert ans.used[0] == jonna
        assert set(ans.used) <= {e.node.id for e in ans.evidence}
        assert mem.answer("What is the capital of Mongolia?", user="u").used == ()


def test_memory_lends_its_query_embedder_to_the_extractive_answerer(minilm: Embedder, tmp_path: Path) -> None:
    from dualmem.reason import ExtractiveAnswerer

    with Memory.open(tmp_path / "a.db", embedder=minilm) as mem:
        assert isinstance(mem.answerer, ExtractiveAnswerer)
        lent = mem.answerer.embedder
        assert lent is not None
        assert lent.name == minilm.name
        mem.add("Mira: I adopted a beagle named Biscuit.", user="u", speaker="Mira", at="2024-05-02")
        mem.answer("What is the name of Mira's dog?", user="u")
        assert getattr(lent, "hits", 0) >= 1  # the question as retrieval embedded it: no second embedding
    own = ExtractiveAnswerer(embedder=minilm)
    with Memory.open(tmp_path / "b.db", embedder=minilm, answerer=own) as mem:
        assert mem.answerer is own
        assert own.embedder is minilm  # one it already has is kept
