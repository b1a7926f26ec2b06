"""``dualmem calibrate-backend``: fit a per-backend calibration of the llm backend's Noul scores.

The labelled sample: the write decisions (typing, relations) of the first ``--turns`` turns of a
conversation file, as the builtin decider makes them (its answer ``>= 0.5`` is the label), and the
same batches asked of the llm backend (``--llm-*`` flags or ``DUALMEM_LLM_*``) without calibration.
Use only the dev conversations (``../shared/data/locomo``) for this. Writes the calibration JSON
(``--out``) to pass as ``--llm-calibration``, and/or a profile carrying it (``--profile-out``: the
``--profile`` given, else the llm preset, with the calibration inside; open a memory with
``--profile FILE`` / ``Memory.open(..., profile=Profile.load(FILE))`` and it is applied), and prints
the agreement before and after.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

__all__ = ["cmd_calibrate_backend", "record_write_decisions", "register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate-backend",
        help="fit a calibration of the llm backend's yes/no scores against the builtin decider",
    )
    p.add_argument("--data", type=Path, required=True, help="a conversation file (dualmem JSON or LoCoMo)")
    p.add_argument("--turns", type=int, default=40, help="how many turns to record decisions on (default 40)")
    p.add_argument("--out", type=Path, default=None, help="where to write the calibration JSON")
    p.add_argument(
        "--profile-out",
        type=Path,
        default=None,
        help="where to write a profile (--profile, else the llm preset) that carries the calibration",
    )
    p.add_argument("--method", choices=["platt", "isotonic"], default="platt")
    p.add_argument("--min-samples", type=int, default=20, help="per-key curve only with this many samples")
    p.set_defaults(handler=cmd_calibrate_backend)


def record_write_decisions(data: Path, turns: int, embedder: str) -> list[Any]:
    """The (batch, builtin result) pairs of writing the first ``turns`` turns of ``data``."""
    from dualmem.config import Profile
    from dualmem.control.builtin import BuiltinController
    from dualmem.control.calibration import Recorder
    from dualmem.conversations import load_observations
    from dualmem.errors import InvalidInput
    from dualmem.memory import Memory
    from dualmem.types import VIEWS

    if turns < 1:
        raise InvalidInput("--turns must be positive")
    observations = load_observations(data)[:turns]
    recorder = Recorder(BuiltinController())
    # every view stored, so that every relation question is asked (the builtin profile asks only
    # relation.supersedes) and the calibration covers each key the llm preset asks
    profile = Profile.builtin().with_(write__consolidation="off", write__views=VIEWS)
    with Memory.open(":memory:", embedder=embedder, controller=recorder, profile=profile) as mem:
        mem.add_many(observations, user="calibration")
    return list(recorder.pairs)


def cmd_calibrate_backend(args: argparse.Namespace) -> dict[str, Any]:
    from dualmem.cli.backend import llm_config_from_args
    from dualmem.config import Profile
    from dualmem.control.calibration import agreement, compare, fit_calibration
    from dualmem.control.llm import LLMController
    from dualmem.errors import InvalidInput

    if args.out is None and args.profile_out is None:
        raise InvalidInput(
            "calibrate-backend writes nothing", hint="pass --out FILE and/or --profile-out FILE"
        )
    config = dataclasses.replace(llm_config_from_args(args), calibration=None)
    pairs = record_write_decisions(args.data, args.turns, args.embedder)
    with LLMController.from_config(config) as llm:
        samples, failed = compare(pairs, llm)
    calibration = fit_calibration(
        samples,
        backend="llm",
        model=config.model,
        method=args.method,
        min_samples=args.min_samples,
        debias=config.debias,
        source=f"builtin decider labels, write decisions of {args.data.name} turns 1-{args.turns}",
    )
    written: dict[str, Any] = {}
    if args.out is not None:
        written["calibration"] = str(calibration.save(args.out))
    if args.profile_out is not None:
        base = Profile.named(args.profile) if args.profile else Profile.for_backend("llm")
        written["profile"] = str(dataclasses.replace(base, calibration=calibration).save(args.profile_out))
    after = [dataclasses.replace(s, score=calibration.apply(s.key, s.score)) for s in samples]
    return {
        **written,
        "samples": len(samples),
        "failed_batches": failed,
        "agreement_before": agreement(samples)["all"],
        "agreement_after": agreement(after)["all"],
        "keys": sorted(calibration.curves),
    }
