"""Issue 12, deliverable 4: the per-backend calibration is stored with the profile. A profile carrying
one round-trips through JSON (and a file, and ``--profile FILE``), and a memory opened with it applies
it to the controller's Noul answers; a calibration for another backend, or a second one, is refused."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from dualmem import Memory, OpenOptions
from dualmem.cli.main import main
from dualmem.config import Profile
from dualmem.control.calibration import Calibration, Sample, fit_calibration
from dualmem.control.config import LLMConfig
from dualmem.embed import HashingEmbedder
from dualmem.errors import ConfigError
from fakes.openai_server import FakeOpenAIServer, position_biased


def _calibration() -> Calibration:
    # a curve far from the identity: only scores above 0.95 stay high, so applying it is visible
    samples = [Sample(key, s / 100, s > 95) for s in range(100) for key in ("typing.episodic", "other")]
    return fit_calibration(samples, backend="llm", model="m", method="isotonic", source="test")


def _knows(_prompt: str, option: str) -> float:
    return 1.0 if option.startswith("Yes:") else 0.0  # the fake leans to yes on everything


def test_a_profile_with_a_calibration_round_trips(tmp_path: Path) -> None:
    prof = Profile.for_backend("llm").with_(read__beam=7, write__theta_rel=0.7)
    prof = prof.with_(calibration=_calibration())
    doc = json.loads(json.dumps(prof.to_json()))  # through text: nothing but JSON inside
    assert doc["format"] == "dualmem-profile/1"
    assert doc["calibration"]["format"] == "dualmem-calibration/1"
    assert Profile.from_json(doc) == prof
    path = prof.save(tmp_path / "p.json")
    assert Profile.load(path) == prof
    assert Profile.named(str(path)) == prof
    for preset in ("paper", "dualmem", "builtin"):
        assert Profile.from_json(Profile.named(preset).to_json()) == Profile.named(preset)


def test_a_profile_file_is_checked(tmp_path: Path) -> None:
    # the rest: the default profile (issue 49: not the dataclass defaults)
    assert Profile.from_json({"read": {"beam": 3}}) == Profile.builtin().with_(read__beam=3)
    bad = [
        ({"nonsense": 1}, "unknown profile settings"),
        ({"read": {"beam": "3"}}, "read.beam must be an integer"),
        ({"read": {"theta_suff": None}}, "read.theta_suff must be a number"),
        ({"read": {"prefer_current": 1}}, "true or false"),
        ({"read": {"views": "semantic"}}, "list of strings"),
        ({"format": "other/1"}, "profile format"),
        ({"calibration": {"backend": "llm"}}, "not a dualmem calibration"),
        ([], "a JSON object"),
    ]
    for doc, message in bad:
        with pytest.raises(ConfigError, match=message):
            Profile.from_json(doc)
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match="not a JSON profile"):
        Profile.load(tmp_path / "broken.json")


def _typing_scores(server: FakeOpenAIServer, profile: Profile | str, **config: object) -> dict[str, float]:
    cfg = LLMConfig(base_url=server.base_url, model="m", retries=0, **config)  # type: ignore[arg-type]
    with Memory.open(
        ":memory:",
        embedder=HashingEmbedder(64),
        controller="llm",
        answerer=None,
        profile=profile,
        options=OpenOptions(controller=cfg),
    ) as mem:
        node = mem.add("Mira bought a red bike yesterday.", user="u")
        return {d.key: d.value for d in mem.inspect(node, user="u").decisions if d.purpose == "typing"}


def test_memory_open_with_the_profile_applies_its_calibration(tmp_path: Path) -> None:
    cal = _calibration()
    base = Profile.for_backend("llm").with_(write__consolidation="off")
    calibrated = base.with_(calibration=cal)
    path = calibrated.save(tmp_path / "llm-profile.json")
    with FakeOpenAIServer(chat=position_biased(_knows, bias=0.0)) as server:
        raw = _typing_scores(server, base)
        applied = _typing_scores(server, str(path))  # by file, as --profile FILE does
    assert (
        set(raw)
        == set(applied)
        == {"typing.episodic", "typing.semantic", "typing.procedural", "typing.preference"}
    )
    for key, score in raw.items():
        assert applied[key] == pytest.approx(cal.apply(key, score))
    assert applied["typing.episodic"] < 0.1 < raw["typing.episodic"]  # the curve really moved it


def test_a_calibration_for_another_backend_or_twice_is_refused(tmp_path: Path) -> None:
    cal = _calibration()
    prof = Profile.for_backend("builtin").with_(calibration=cal)
    with pytest.raises(ConfigError, match="for the llm backend, not builtin"):
        Memory.open(":memory:", embedder=HashingEmbedder(64), answerer=None, profile=prof)
    file = cal.save(tmp_path / "cal.json")
    with (
        FakeOpenAIServer(chat=position_biased(_knows, bias=0.0)) as server,
        pytest.raises(ConfigError, match="calibration of its own") as info,
    ):
        _typing_scores(server, Profile.for_backend("llm").with_(calibration=cal), calibration=str(file))
    assert "one way" in (info.value.hint or "")


def test_calibrate_backend_writes_a_profile_that_carries_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = resources.files("dualmem.data") / "sample_conversation.json"
    out = tmp_path / "llm-profile.json"
    with FakeOpenAIServer(chat=position_biased(_knows, bias=2.0)) as server:
        code = main(["--embedder", "hashing:64", "--llm-url", server.base_url, "--llm-model", "m",
                     "calibrate-backend", "--data", str(data), "--turns", "6", "--profile-out", str(out),
                     "--min-samples", "5"])  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == str(out)
    assert "calibration" not in report  # no --out: only the profile was written
    prof = Profile.load(out)
    assert prof.calibration is not None
    assert prof.calibration.model == "m"
    assert prof.calibration.debias == "cyclic"
    assert prof.read == Profile.for_backend("llm").read
    assert main(["calibrate-backend", "--data", str(data)]) == 2  # writes nothing: a user error
