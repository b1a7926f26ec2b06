"""``Memory.quick_search`` (``read/quick.py``): words or two shared entities, current versions only, no
embedding; the coding-agent hook reaches it through a read-only memory without loading an embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import main
from dualmem.embed import HashingEmbedder
from dualmem.errors import InvalidInput

QUIET = Profile.builtin().with_(write__consolidation="off")


class _Counting(HashingEmbedder):
    calls = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        type(self).calls += 1
        return super().embed(texts)


def test_quick_search_finds_words_skips_old_versions_and_embeds_nothing(tmp_path: Path) -> None:
    embedder = _Counting(64)
    with Memory.open(tmp_path / "m.db", embedder=embedder, profile=QUIET) as mem:
        old = mem.add("The build uses make", user="dev")
        new = mem.update(old, "The build uses ninja now", user="dev")
        mem.add("Lunch is at noon", user="dev")
        mem.add("The build server is in Oslo", user="other")
        before = _Counting.calls
        found = mem.quick_search("how does the build work", user="dev", k=5)
        assert _Counting.calls == before  # no embedding
        assert [n.id for n in found] == [new]
        assert mem.quick_search("zebra", user="dev") == []
        with pytest.raises(InvalidInput):
            mem.quick_search("  ", user="dev")


def test_the_hook_needs_no_matching_embedder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=HashingEmbedder(64), profile=QUIET) as mem:
        mem.add("Mira prefers tabs over spaces", user="dev")
    # the database was written with hashing-64; the hook's default embedder (minilm) is never bound
    code = main(["--db", str(db), "--user", "dev", "hook", "user-prompt", "--prompt", "tabs or spaces?"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Mira prefers tabs over spaces" in out
