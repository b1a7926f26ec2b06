"""Issue 49 item 5: an answer quotes what search ranked current. After "User uses pip for packages."
(2024-03-01) and "User switched to uv instead of pip." (2024-03-20) search ranks the uv note first; the
extractive answerer's own measures favour the pip note (more of the question's words), so it must not
be quotable below its own update. A question about history still gets the old version. Real MiniLM
embeddings, the builtin System One (its write-time supersession), a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualmem import Memory, Profile

PIP, UV = "User uses pip for packages.", "User switched to uv instead of pip."


def _memory(path: Path, factor: float) -> Memory:
    # factor: how far search demotes a superseded fact; at 0.9 it still ranks below its update, but
    # close enough that the answerer's own measures would pick it
    mem = Memory.open(path, profile=Profile.builtin().with_(read__superseded_factor=factor))
    mem.add(PIP, user="u", at="2024-03-01")
    mem.add(UV, user="u", at="2024-03-20")
    return mem


@pytest.mark.parametrize("factor", [0.9, 0.5])
@pytest.mark.parametrize(
    "question", ["What package manager does the user use?", "What package manager does the user use now?"]
)
def test_the_answer_quotes_the_current_fact_search_ranks_first(
    tmp_path: Path, factor: float, question: str
) -> None:
    with _memory(tmp_path / "m.db", factor) as mem:
        found = mem.search(question, user="u")
        assert [e.node.content for e in found.evidence][:2] == [UV, PIP]
        assert found.evidence[1].node.valid_to is not None  # the write superseded it
        ans = mem.answer(question, user="u")
        assert not ans.abstained
        assert UV in ans.text
        assert PIP not in ans.text
        assert [e.node.id for e in ans.evidence] == [e.node.id for e in found.evidence]  # search's evidence
        assert ans.used == (found.evidence[0].node.id,)


def test_a_question_about_history_still_quotes_the_old_version(tmp_path: Path) -> None:
    with _memory(tmp_path / "m.db", 0.9) as mem:
        question = "What package manager did the user use before?"
        assert mem.search(question, user="u").evidence[0].node.content == PIP
        assert PIP in mem.answer(question, user="u").text
