"""A profile a user can read (issue 45 item 5): docs/architecture.md's profile tables are the presets'
values, they name every extension and every ablation switch, the ablations are apart from the product
settings, and read-time expansion has one switch (the older two load, read as it, with a warning)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from dualmem.config import ABLATIONS, EXTENSIONS, Profile, ReadProfile
from dualmem.types import VIEWS

DOC = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
PRESETS = {
    "dualmem": Profile.dualmem,
    "paper": Profile.paper,
    "builtin": Profile.builtin,
    "views": Profile.views,
}


def shown(value: object) -> str:
    """A setting as the tables write it."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return "all four" if value == VIEWS else ", ".join(value) or "none"
    return str(value)


def setting(profile: Profile, key: str) -> object:
    out: object = profile
    for part in key.split("."):
        out = getattr(out, part)
    return out


def table(first: str) -> dict[str, list[str]]:
    """The rows of the doc's table whose header starts with ``| first |``: setting -> its cells."""
    lines = DOC[DOC.index(f"| {first} |") :].splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows: dict[str, list[str]] = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1 : len(header)]
    assert header[1:5] == list(PRESETS)
    return rows


@pytest.mark.parametrize(
    ("first", "names"), [("Setting", [*EXTENSIONS, "read.views"]), ("Ablation", ABLATIONS)]
)
def test_the_doc_tables_are_the_presets(first: str, names: list[str]) -> None:
    rows = table(first)
    missing = [
        f"| `{key}` | " + " | ".join(shown(setting(make(), key)) for make in PRESETS.values()) + " | ... |"
        for key in names
        if key not in rows
    ]
    assert not missing, "rows to add to docs/architecture.md:\n" + "\n".join(missing)
    assert sorted(rows) == sorted(names)
    for key, cells in rows.items():
        values = [shown(setting(make(), key)) for make in PRESETS.values()]
        assert cells[:4] == values, key


def test_ablations_are_apart_and_every_preset_leaves_them_on() -> None:
    assert not set(ABLATIONS) & set(EXTENSIONS)
    default = Profile.dualmem()
    for make in PRESETS.values():
        for key in ABLATIONS:
            assert setting(make(), key) == setting(default, key), key


def test_one_switch_turns_expansion_off() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the presets use the one switch, nothing deprecated
        builtin = Profile.builtin()
        views = Profile.views()
        on = Profile.dualmem().with_(read__expansion=False)
    assert (builtin.read.expansion, views.read.expansion, on.read.expansion) == (False, True, False)
    assert on.read.views == VIEWS  # expansion off keeps the views routing


@pytest.mark.parametrize("old", [{"views": ()}, {"fixed_depth": 0}])
def test_the_older_switches_still_work_read_as_the_one(old: dict[str, object]) -> None:
    with pytest.warns(DeprecationWarning, match=r"read\.expansion=False"):
        read = ReadProfile(**old)  # type: ignore[arg-type]
    assert read.expansion is False
    assert read.fixed_depth is None


def test_an_older_profile_file_loads_with_a_deprecation(tmp_path: Path) -> None:
    doc = Profile.builtin().to_json()
    doc["read"]["expansion"] = True  # a builtin profile saved before: expansion off by its empty views
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.warns(DeprecationWarning, match="an empty read.views turns expansion off"):
        loaded = Profile.load(path)
    assert loaded == Profile.builtin()


def test_views_turned_on_without_naming_expansion_keep_their_old_meaning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"read\.expansion=True"):
        opted = Profile.builtin().with_(write__views=VIEWS, read__views=VIEWS)
    assert opted.read.expansion is True
    path = tmp_path / "views.json"
    path.write_text(json.dumps({"read": {"views": list(VIEWS)}}), encoding="utf-8")
    with pytest.warns(DeprecationWarning, match="turning read.views on turns expansion on"):
        assert Profile.load(path).read.expansion is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        named = Profile.builtin().with_(read__views=VIEWS, read__expansion=False)
    assert named.read.expansion is False
