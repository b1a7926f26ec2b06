"""Speed of the builtin System-One decider: batches and decisions per second.

Usage: ``python bench/builtin_decisions.py [--candidates 10] [--repeat 500]``

Builds relation (10 candidates, alias + implicit time: 60 questions), traversal (10 candidates: 40
questions), stopping (10 evidence items: 4 questions), routing and typing batches from synthetic
chat turns, and times ``BuiltinController.decide`` on them. "cold" clears the per-text cue caches
before every batch (new texts every time); "warm" keeps them (texts seen before, as evidence is
across rounds). Prints one JSON object to stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from dualmem.control import builtin_cues, catalog
from dualmem.control.builtin import BuiltinController, default_weights
from dualmem.control.questions import Batch, Question
from dualmem.control.states import TypingState

SUBJECTS = ["I", "My sister", "The team", "Our neighbour", "Caroline", "Melanie", "Jon"]
VERBS = ["visited", "talked about", "painted", "bought", "forgot", "planned a trip to", "love", "hate"]
OBJECTS = ["the museum", "a red bicycle", "the support group", "Paris last summer", "a puppy", "sushi"]
TAILS = ["", " yesterday", " because it was raining", " so we stayed home", " and it was great", " again"]


def turn(rng: random.Random, i: int) -> dict[str, Any]:
    speaker = rng.choice(["Caroline", "Melanie", "Jon", "Gina"])
    text = f"{speaker}: {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)}."
    return {
        "id": f"m{i}",
        "content": text,
        "timestamp": f"2023-05-{1 + i % 28:02d}T10:00:00+00:00",
        "entities": [speaker.lower(), rng.choice(["paris", "bicycle", "sushi", "museum"])],
        "speaker": speaker,
    }


def typing_batch(rng: random.Random) -> Batch:
    """One new turn to type, as the write path asks it (``TypingState``: text, speaker, time)."""
    t = turn(rng, 0)
    state = TypingState(t["content"], t["speaker"], dt.datetime.fromisoformat(t["timestamp"]))
    return Batch.of(state, catalog.typing_questions(), "typing")


def relation_batch(rng: random.Random, n: int) -> Batch:
    questions: dict[str, Question] = {}
    cands = []
    for i in range(n):
        questions.update(catalog.relation_questions(i, alias=True, implicit_time=True))
        cand = turn(rng, i + 1)
        cand |= {
            "similarity": rng.random(),
            "lexical_overlap": rng.random() / 2,
            "shared_entities": cand["entities"][:1],
            "time_delta_days": rng.choice([None, rng.uniform(-5, 5)]),
            "same_session": rng.random() < 0.5,
        }
        cands.append(cand)
    return Batch(state={"new_memory": turn(rng, 0), "candidates": cands}, questions=questions)


def traversal_batch(rng: random.Random, n: int) -> Batch:
    questions: dict[str, Question] = {}
    cands = []
    for i in range(n):
        questions.update(catalog.traversal_questions(i))
        cand = turn(rng, 100 + i)
        cand |= {
            "view": rng.choice(["semantic", "temporal", "causal", "entity"]),
            "label": "related",
            "source": f"m{i}",
            "target": f"m{100 + i}",
            "edge_weight": rng.random(),
            "similarity": rng.random(),
            "lexical_overlap": rng.random() / 2,
        }
        cands.append(cand)
    state = {"query": "When did Caroline buy a red bicycle, and why?", "evidence": evidence(rng, n)}
    return Batch(state=state | {"candidates": cands}, questions=questions)


def evidence(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [turn(rng, 200 + i) | {"similarity": rng.random(), "lexical_overlap": 0.2} for i in range(n)]


def stopping_batch(rng: random.Random, n: int) -> Batch:
    state = {
        "query": "Why did Melanie visit the museum?",
        "evidence": evidence(rng, n),
        "depth": 2,
        "max_depth": 8,
    }
    return Batch(state=state, questions=catalog.stopping_questions())


def time_batches(
    make: Callable[[random.Random], Batch], controller: BuiltinController, *, repeat: int, cold: bool
) -> dict[str, float]:
    """Mean time of ``decide`` over ``repeat`` batches; the best of 5 rounds (the machine may be shared)."""
    rng = random.Random(0)
    batches = [make(rng) for _ in range(min(repeat, 200))]
    controller.decide(batches[0])
    best = float("inf")
    for _ in range(5):
        elapsed = 0.0
        for k in range(repeat):
            batch = batches[k % len(batches)]
            if cold:
                builtin_cues.cues.cache_clear()
                builtin_cues.query_cues.cache_clear()
            start = time.perf_counter()
            controller.decide(batch)
            elapsed += time.perf_counter() - start
        best = min(best, elapsed)
    questions = len(batches[0].questions)
    return {
        "questions_per_batch": questions,
        "ms_per_batch": round(1000 * best / repeat, 4),
        "decisions_per_s": round(questions * repeat / best),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=500)
    args = parser.parse_args(argv)
    n = args.candidates
    controller = BuiltinController(weights=default_weights())
    kinds: dict[str, Callable[[random.Random], Batch]] = {
        "relations": lambda rng: relation_batch(rng, n),
        "traversal": lambda rng: traversal_batch(rng, n),
        "stopping": lambda rng: stopping_batch(rng, n),
        "routing": lambda rng: Batch(state={"query": f"Why did Jon visit Paris {rng.random()}?"},
                                     questions=catalog.routing_questions()),
        "typing": lambda rng: typing_batch(rng),
    }  # fmt: skip
    report: dict[str, Any] = {"python": platform.python_version(), "candidates": n, "repeat": args.repeat}
    for label, make in kinds.items():
        for cold in (True, False):
            report[f"{label}_{'cold' if cold else 'warm'}"] = time_batches(
                make, controller, repeat=args.repeat, cold=cold
            )
            print(f"{label} cold={cold} done", file=sys.stderr)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
