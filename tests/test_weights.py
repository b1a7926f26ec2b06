"""The builtin weights file at its boundary (control/weights.py): shape checked by pydantic."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from dualmem.control.builtin import BuiltinWeights, hand_set_weights
from dualmem.control.weights import WeightsFile, read_weights, validate_write_heads
from dualmem.errors import ConfigError

PACKAGED = resources.files("dualmem.control").joinpath("builtin_weights.json").read_text(encoding="utf-8")


def test_packaged_file_validates_and_loads_as_before() -> None:
    raw = json.loads(PACKAGED)
    checked = read_weights(PACKAGED, source="packaged")
    WeightsFile.model_validate(raw)
    assert list(checked["decisions"]) == list(raw["decisions"])  # file order kept
    assert BuiltinWeights.from_json(checked) == BuiltinWeights.from_json(raw) == hand_set_weights()


V = '{"version": "1", '


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"not JSON \(line 1"),
        ('{"version": "2"}', r"version: Input should be '1'"),
        (V + '"extra": 1}', r"extra: Extra inputs are not permitted"),
        (V + '"decisions": {"stop.x": {"bias": true}}}', r"decisions\.stop\.x\.bias: expected a finite"),
        (V + '"decisions": {"stop.x": {"bias": 1e999}}}', r"bias: expected a finite number, got inf"),
        (V + '"decisions": {"stop.x": {"weights": {"a": "1"}}}}', r"weights\.a: expected a finite"),
        (V + '"decisions": {"stop.x": {"bais": 1}}}', r"stop\.x\.bais: Extra inputs"),
        (V + '"choices": {"relation.time": {}}}', r"relation\.time: Dictionary should have at least 1"),
        (V + '"decisions": []}', r"decisions: Input should be a valid dictionary"),
    ],
)  # fmt: skip
def test_bad_files_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        read_weights(text, source="w.json")
    assert str(info.value).startswith(("w.json: ", "cannot read builtin weights w.json"))
    assert info.value.hint


def test_from_file_goes_through_the_model(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(V + '"decisions": {"stop.contradiction": {"bias": "high"}}}')
    with pytest.raises(ConfigError, match=r"w\.json: decisions\.stop\.contradiction\.bias"):
        BuiltinWeights.from_file(path)


def test_a_write_heads_file_is_read_by_its_model() -> None:
    """The fitted write heads' file (``dualmem.write-heads/1``) is validated by one model too."""
    good = {"format": "dualmem.write-heads/1", "decisions": {"relation.supersedes": {"bias": -1.0}}}
    assert (
        validate_write_heads(good, source="h.json").as_weights().decisions["relation.supersedes"].bias == -1.0
    )
    bad = {**good, "decisions": {"relation.supersedes": {"bias": "high"}}}
    with pytest.raises(
        ConfigError, match=r"h\.json: decisions\.relation\.supersedes\.bias: expected a finite"
    ):
        validate_write_heads(bad, source="h.json")
    with pytest.raises(ConfigError, match=r"h\.json: extra: Extra inputs are not permitted"):
        validate_write_heads({**good, "extra": 1}, source="h.json")
