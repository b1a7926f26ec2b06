"""Issue 49 item 6, profiles: a partial profile file changes only what it names (the rest is the default
profile, not the dataclass defaults); ``views`` is one flag to the paper's four views on top of the
default, update detection kept; a database remembers the profile it was first opened with (explicit
option > stored > default; ``serve`` and ``mcp`` too); ``repair --views`` gives older memories the
edges of views turned on later. Real SQLite files, the hashing embedder, the builtin System One."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dualmem import Memory, Profile
from dualmem.cli.main import build_parser
from dualmem.errors import ConfigError
from dualmem.types import VIEWS
from test_cli_dx import cli

NOTES = [
    "Mira moved to Utrecht in May.",
    "Mira bought a bike because her old one broke.",
    "Mira's bike is blue.",
    "Jon visited Mira in Utrecht.",
]


def test_a_file_with_only_the_views_keeps_the_default_profile(tmp_path: Path) -> None:
    path = tmp_path / "views.json"
    path.write_text(json.dumps({"write": {"views": list(VIEWS)}, "read": {"views": list(VIEWS)}}))
    loaded = Profile.load(path)
    assert loaded == Profile.builtin().with_(write__views=VIEWS, read__views=VIEWS, read__expansion=True)
    assert loaded.write.supersede_threshold == 0.85  # the builtin's, not the dataclass default 0.60
    with Memory.open(tmp_path / "m.db", embedder="hashing", profile=str(path)) as mem:
        assert mem.profile == loaded
    # a file may name another base; a llm memory's file is layered on the llm default
    path.write_text(json.dumps({"base": "paper", "read": {"beam": 3}}))
    assert Profile.load(path) == Profile.paper().with_(read__beam=3)
    path.write_text(json.dumps({"base": "nothing"}))
    with pytest.raises(ConfigError, match="no profile preset 'nothing'"):
        Profile.load(path)


def test_views_is_one_flag_to_the_four_views_with_update_detection() -> None:
    views = Profile.named("views")
    assert (views.write.views, views.read.views) == (VIEWS, VIEWS)
    assert views.write.supersede_threshold == Profile.builtin().write.supersede_threshold
    assert views.read.prefer_current
    assert views == Profile.builtin().with_(
        name="views", write__views=VIEWS, read__views=VIEWS, read__expansion=True
    )
    paper = Profile.named("paper")  # Appendix B exactly: its views, no update detection
    assert paper.write.supersede_threshold is None


def _profile_of(capsys: pytest.CaptureFixture[str], db: str, *flags: str) -> str:
    code, out, _ = cli(capsys, *flags, "--db", db, "--user", "mira", "stats")
    assert code == 0
    return str(json.loads(out)["profile"])


def test_the_database_remembers_its_profile(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    code, _, _ = cli(capsys, "--profile", "views", "--db", db, "--user", "mira", "add", NOTES[0])
    assert code == 0
    assert _profile_of(capsys, db) == "views"  # no --profile: the stored one
    assert _profile_of(capsys, db, "--profile", "paper") == "paper"  # an explicit option wins
    assert _profile_of(capsys, db) == "views"  # and does not replace the stored one
    with Memory.open(db, embedder="hashing") as mem:
        assert mem.profile == Profile.views()
    with Memory.open(tmp_path / "new.db", embedder="hashing") as mem:  # none given, none stored
        assert mem.profile.name == "builtin"
    with Memory.open(tmp_path / "new.db", embedder="hashing") as mem:
        assert mem.store.get_meta("profile") is None  # the default is not stored


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_serve_and_mcp_open_the_stored_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    from dualmem.cli.serve import open_service_memory

    db = str(tmp_path / "m.db")
    assert cli(capsys, "--profile", "views", "--db", db, "--user", "mira", "add", NOTES[0])[0] == 0
    args = build_parser().parse_args(["--db", db, "--embedder", "hashing", command])
    with open_service_memory(args) as mem:
        assert mem.profile.name == "views"
        assert mem.profile.write.views == VIEWS
        assert mem.profile.write.consolidation == "off"  # the service's, for this open only
    with Memory.open(db, embedder="hashing") as mem:
        assert mem.profile.write.consolidation == Profile.views().write.consolidation


def _edges(capsys: pytest.CaptureFixture[str], db: str) -> dict[str, int]:
    code, out, _ = cli(capsys, "--db", db, "--user", "mira", "stats")
    assert code == 0
    return dict(json.loads(out)["edges_by_view"])


def test_repair_views_gives_older_memories_the_edges_of_views_turned_on_later(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    later, first = str(tmp_path / "later.db"), str(tmp_path / "first.db")
    for text in NOTES:
        assert cli(capsys, "--db", later, "--user", "mira", "add", text, "--at", "2024-05-01")[0] == 0
        assert cli(capsys, "--profile", "views", "--db", first, "--user", "mira", "add", text,
                   "--at", "2024-05-01")[0] == 0  # fmt: skip
    assert set(_edges(capsys, later).values()) == {0}  # written without the views
    code, out, _ = cli(capsys, "--db", later, "--user", "mira", "repair", "--views")
    assert code == 2  # the stored (default) profile writes no view edges: nothing to fill
    code, out, _ = cli(capsys, "--profile", "views", "--db", later, "--user", "mira", "repair", "--views")
    assert code == 0
    filled = json.loads(out)["views"]
    assert filled["memories"] == 4
    assert sum(filled["edges"].values()) > 0
    assert _edges(capsys, later) == _edges(capsys, first)  # as if the views had been on all along
    code, out, _ = cli(capsys, "--db", later, "--user", "mira", "repair", "--views")  # stored: views
    assert code == 0
    assert set(json.loads(out)["views"]["edges"].values()) == {0}  # nothing twice
