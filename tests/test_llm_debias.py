"""Issue 12, finding 5: position bias. A fake server with a strong first-option bias (option tokens
without a leading space, as llama.cpp's Qwen gives them) reads wrong without debiasing and right with it.
Plus the per-backend calibration (Platt, isotonic) it can be combined with.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from dualmem.control import catalog
from dualmem.control.calibration import (
    Calibration,
    Sample,
    agreement,
    fit_calibration,
    fit_isotonic,
    fit_platt,
)
from dualmem.control.config import LLMConfig
from dualmem.control.llm import LLMController
from dualmem.control.questions import Batch, BatchResult, Choice, ChoiceAnswer, Noul
from dualmem.errors import ConfigError
from dualmem.http import RetryPolicy
from fakes.openai_server import FakeOpenAIServer, position_biased, shown_options

TRUE_LOGIT = 1.5  # how strongly the (fake) model knows the answer, in nats
BIAS = 6.0  # how strongly it prefers whatever is shown first


def truth(prompt: str, option: str) -> float:
    """The fake model's knowledge: statements marked TRUE are true, the rest false."""
    holds = "TRUE" in prompt.split("Question:", 1)[0]
    if option.startswith("Yes:"):
        return TRUE_LOGIT if holds else -TRUE_LOGIT
    if option.startswith("No:"):
        return -TRUE_LOGIT if holds else TRUE_LOGIT
    return TRUE_LOGIT if option.startswith("after") else 0.0  # a Choice: "after" is right


NOUL = Noul("relation.semantic", "Is the statement in state.text true?", "It is.", "It is not.", target=None)
CHOICE = Choice(
    "relation.time",
    "How does candidates[0]'s event relate in time to new_memory's?",
    (("before", "earlier"), ("during", "meanwhile"), ("after", "later")),
    target=0,
)


def _ask(server: FakeOpenAIServer, debias: str, text: str) -> tuple[float, dict[str, float]]:
    ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1), debias=debias)  # type: ignore[arg-type]
    result = ctl.decide(Batch(state={"text": text}, questions={"n": NOUL, "c": CHOICE}))
    return result.noul("n"), dict(result.choice("c").distribution)


def test_the_fake_really_prefers_the_first_option() -> None:
    with FakeOpenAIServer(chat=position_biased(truth, bias=BIAS)) as server:
        false_score, _ = _ask(server, "none", "the sky is green")
    assert false_score > 0.9  # "Yes" shown first wins although the statement is false


@pytest.mark.parametrize(("text", "holds"), [("TRUE: water is wet", True), ("the sky is green", False)])
def test_both_orders_recover_the_unbiased_answer(text: str, holds: bool) -> None:
    with FakeOpenAIServer(chat=position_biased(truth, bias=BIAS)) as server:
        biased, _ = _ask(server, "none", text)
        score, dist = _ask(server, "both_orders", text)
        prompts = [r.json for r in server.chat_requests()]
    unbiased = 1 / (1 + math.exp(-2 * TRUE_LOGIT))  # what the model knows, without the position term
    assert biased > 0.9
    assert score == pytest.approx(unbiased if holds else 1 - unbiased, abs=1e-6)  # the additive bias cancels
    assert (score >= 0.5) == holds
    assert max(dist, key=lambda k: dist[k]) == "after"  # the right option, although shown last at first
    orders = {tuple(body for _, body in shown_options(p)) for p in prompts if "Yes:" in str(p)}
    assert len(orders) == 2  # the Noul was shown in both orders ...
    assert all(
        tok in "AB" for p in prompts for tok, _ in shown_options(p) if "Yes:" in str(p)
    )  # ... same tokens


TIME = catalog.relation_questions(0, alias=False, implicit_time=True)["pair_0_time"]
assert isinstance(TIME, Choice)


def time_truth(right: str) -> Callable[[str, str], float]:
    """The fake model knows the temporal relation is ``right`` (by TRUE_LOGIT over the others)."""
    return lambda _prompt, option: TRUE_LOGIT if option.startswith(f"{right}:") else 0.0


def _choose(server: FakeOpenAIServer, debias: str) -> tuple[str, dict[str, float]]:
    ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1), debias=debias)  # type: ignore[arg-type]
    answer = ctl.decide(Batch(state={"new_memory": {}, "candidates": [{}]}, questions={"t": TIME})).choice(
        "t"
    )
    return answer.label, dict(answer.distribution)


@pytest.mark.parametrize("right", ["before", "contains", "overlaps"])  # first, middle, inner positions
def test_cyclic_orders_debias_a_choice_of_seven_options(right: str) -> None:
    labels = [label for label, _ in TIME.options]
    assert len(labels) == 7
    with FakeOpenAIServer(chat=position_biased(time_truth(right), bias=BIAS)) as server:
        biased, _ = _choose(server, "none")
        server.requests.clear()
        label, dist = _choose(server, "cyclic")
        prompts = [r.json for r in server.chat_requests()]
        if right != labels[0]:
            partly, _ = _choose(server, "both_orders")
    assert biased == labels[0]  # undebiased, whatever is shown first wins
    assert label == right
    expected = math.exp(TRUE_LOGIT) / (math.exp(TRUE_LOGIT) + len(labels) - 1)  # the model without its bias
    assert dist[right] == pytest.approx(expected, abs=1e-6)
    assert all(dist[o] == pytest.approx((1 - expected) / 6, abs=1e-6) for o in labels if o != right)
    # the cost: 7 forward passes, every option shown once in every position, always as tokens A..G
    assert len(prompts) == 7
    shown = [[body.split(":", 1)[0] for _, body in shown_options(p)] for p in prompts]
    for position in range(7):
        assert sorted(row[position] for row in shown) == sorted(labels)
    assert all([tok for tok, _ in shown_options(p)] == list("ABCDEFG") for p in prompts)
    if right not in (labels[0], labels[-1]):
        assert partly != right  # both orders only: a middle option never comes first and loses


def test_cyclic_noul_is_both_orders() -> None:
    with FakeOpenAIServer(chat=position_biased(truth, bias=BIAS)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", retry=RetryPolicy(attempts=1))
        assert ctl.debias == "cyclic"  # the default
        cyclic = ctl.decide(Batch(state={"text": "TRUE: x"}, questions={"n": NOUL})).noul("n")
        assert len(server.chat_requests()) == 2
        both, _ = _ask(server, "both_orders", "TRUE: x")
    assert cyclic == pytest.approx(both, abs=1e-12)


def test_platt_recovers_a_known_curve() -> None:
    rng = random.Random(7)
    scores, labels = [], []
    for _ in range(4000):
        z = rng.uniform(-4, 4)
        p_raw = 1 / (1 + math.exp(-z))
        p_true = 1 / (1 + math.exp(-(0.5 * z - 1.0)))  # the backend is over-confident and too positive
        scores.append(p_raw)
        labels.append(rng.random() < p_true)
    curve = fit_platt(scores, labels)
    assert curve.a == pytest.approx(0.5, abs=0.08)
    assert curve.b == pytest.approx(-1.0, abs=0.12)
    assert curve(0.5) == pytest.approx(1 / (1 + math.exp(1.0)), abs=0.03)


def test_isotonic_is_monotone_and_fits_steps() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]
    labels = [False, False, True, False, True, True, False, True]
    curve = fit_isotonic(scores, labels)
    values = [curve(x / 20) for x in range(21)]
    assert values == sorted(values)
    assert curve(0.05) < 0.1
    assert curve(0.95) > 0.9


def test_calibration_file_round_trip_and_use_in_the_backend(tmp_path: Path) -> None:
    samples = [Sample("relation.semantic", s / 100, s > 80) for s in range(100)] * 3
    cal = fit_calibration(samples, backend="llm", model="m", method="isotonic", source="test")
    path = cal.save(tmp_path / "cal.json")
    back = Calibration.load(path)
    assert back == cal
    assert back.apply("relation.semantic", 0.7) < 0.1
    assert back.apply("other", 0.99) > 0.9
    with FakeOpenAIServer(chat=position_biased(truth, bias=0.0)) as server:
        ctl = LLMController(base_url=server.base_url, model="m", calibration=str(path), debias="none")
        raw = LLMController(base_url=server.base_url, model="m", debias="none")
        batch = Batch(state={"text": "TRUE: x"}, questions={"n": NOUL})
        assert ctl.decide(batch).noul("n") == pytest.approx(
            cal.apply("relation.semantic", raw.decide(batch).noul("n"))
        )
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a dualmem calibration") as info:
        Calibration.load(tmp_path / "bad.json")
    assert "calibrate-backend" in (info.value.hint or "")


def test_agreement_table() -> None:
    table = agreement([Sample("a", 0.9, True), Sample("a", 0.2, True), Sample("b", 0.1, False)])
    assert table["a"]["agreement"] == 0.5
    assert table["all"]["n"] == 3.0
    assert table["b"]["agreement"] == 1.0


def test_calibrate_backend_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    from importlib import resources

    from dualmem.cli.main import main

    data = resources.files("dualmem.data") / "sample_conversation.json"
    out = tmp_path / "llm-calibration.json"
    with FakeOpenAIServer(chat=position_biased(truth, bias=BIAS)) as server:
        code = main(["--embedder", "hashing:64", "--llm-url", server.base_url, "--llm-model", "m",
                     "--llm-debias", "none", "calibrate-backend", "--data", str(data), "--turns", "6",
                     "--out", str(out), "--min-samples", "5"])  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["samples"] > 0
    assert report["failed_batches"] == 0
    cal = Calibration.load(out)
    assert cal.model == "m"
    assert cal.debias == "none"
    assert "builtin" in cal.source


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "real_llm_bench", Path(__file__).parents[1] / "bench" / "real_llm.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_real_model_bench_reports_choice_agreement_before_and_after_debiasing() -> None:
    bench = _bench()
    labels = [label for label, _ in TIME.options]

    def knows(prompt: str, option: str) -> float:  # the right relation is written in the state
        right = re.search(r'"right": "(\w+)"', prompt)
        return TRUE_LOGIT if right and option.startswith(f"{right.group(1)}:") else 0.0

    rights = ["contains", "during", "overlaps", "after", "same_time", "before"]
    noul = Noul("relation.semantic", "Related?", "Yes.", "No.", target=None)
    recorded = [
        (Batch(state={"right": r}, questions={"n": noul, "t": TIME}), BatchResult(answers={})) for r in rights
    ]
    batches = bench.choice_batches(recorded, limit=5)
    assert [list(b.questions) for b in batches] == [["t"]] * 5  # only the Choices, at most the limit
    reference = [
        (b, BatchResult(answers={"t": ChoiceAnswer(r, {lb: float(lb == r) for lb in labels})}))
        for b, r in zip(batches, rights, strict=False)
    ]
    with FakeOpenAIServer(chat=position_biased(knows, bias=BIAS)) as server:
        config = LLMConfig(base_url=server.base_url, model="m", retries=0)
        table = bench.choice_agreement(reference, config)
    assert set(table) == {"none", "both_orders", "cyclic"}
    assert table["none"]["agreement"] == 0.0  # "before" (shown first) every time, never the right one
    assert table["none"]["first_option_share"] == 1.0
    assert table["both_orders"]["agreement"] < 1.0  # the middle options lose
    assert table["cyclic"]["agreement"] == 1.0
    assert table["cyclic"]["first_option_share"] == 0.0
    assert [table[m]["passes_per_choice"] for m in ("none", "both_orders", "cyclic")] == [1, 2, 7]
    assert all(row["choices"] == 5 and row["failed_batches"] == 0 for row in table.values())
