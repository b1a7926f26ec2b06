"""``dualmem demo`` answers the bicycle question with the person, and its "from:" line is the memory
the answer quotes (issue 41, item 15). The real default stack: MiniLM, builtin System One."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualmem.cli.main import main

WHO = "Who helped Mira choose her new bicycle?"


def test_demo_names_jonna_and_quotes_its_own_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["-q", "--db", str(tmp_path / "unused.db"), "demo", "--json"]) == 0
    answers = {a["question"]: a for a in json.loads(capsys.readouterr().out)["answers"]}
    bike = answers[WHO]
    assert not bike["abstained"]
    assert bike["answer"].startswith('Mira said on 16 May 2024: "Jonna helped me pick it')
    assert (
        bike["source"]["node"]["content"]
        == "Jonna helped me pick it; she came over from Rotterdam for the day."
    )
    for a in answers.values():  # every source is the memory the answer quotes first
        if a["abstained"]:
            assert a["source"] is None
        else:
            assert a["source"]["node"]["content"].split()[-1].strip('."') in a["answer"]


def test_demo_from_line_is_the_quoted_memory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["-q", "--db", str(tmp_path / "unused.db"), "demo"]) == 0
    out = capsys.readouterr().out
    block = out.split(f"Q: {WHO}\n", 1)[1].split("\n\n", 1)[0]
    assert "Jonna" in block.splitlines()[0]
    assert (
        block.splitlines()[1] == "   from: Jonna helped me pick it; she came over from Rotterdam for the day."
    )
