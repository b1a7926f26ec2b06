"""Speed of the write-time text analysis (entities, temporal grounding) on real LoCoMo turns.

Usage: ``python bench/text_throughput.py [--data DIR] [--repeat N]``

Reports milliseconds per turn for ``extract_entities`` and ``ground``, and, as the same-run yardstick
(the machine is shared and noisy), the cost of tokenising the same turns with the lexical tokenizer.
The budget is ~0.2 ms per turn each; the ratio to the yardstick is the figure to compare across runs.
Prints one JSON object to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dualmem.conversations import load_conversations
from dualmem.text import extract_entities, ground
from dualmem.text.lexical import tokenize

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"


def locomo_turns(root: Path) -> list[tuple[str, str, object]]:
    """Every LoCoMo turn as dualmem reads it: (text, speaker, session time)."""
    return [(o.content, o.speaker or "", o.at) for c in load_conversations(root) for o in c.observations]


def per_turn_ms(
    turns: list[tuple[str, str, object]], fn: Callable[[str, str, object], object], repeat: int
) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text, speaker, at in turns:
            fn(text, speaker, at)
        best = min(best, (time.perf_counter() - start) / len(turns))
    return best * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    turns = locomo_turns(args.data)
    if not turns:
        print(f"no LoCoMo turns under {args.data}", file=sys.stderr)
        return 2
    baseline = per_turn_ms(turns, lambda t, _s, _a: tokenize(t), args.repeat)
    entities = per_turn_ms(turns, lambda t, s, _a: extract_entities(t, speaker=s), args.repeat)
    grounding = per_turn_ms(turns, lambda t, _s, a: ground(t, a), args.repeat)  # type: ignore[arg-type]
    print(
        json.dumps(
            {
                "turns": len(turns),
                "tokenize_ms_per_turn": round(baseline, 4),
                "extract_entities_ms_per_turn": round(entities, 4),
                "ground_ms_per_turn": round(grounding, 4),
                "entities_vs_tokenize": round(entities / baseline, 2),
                "ground_vs_tokenize": round(grounding / baseline, 2),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
