"""Benchmark metrics: retrieval (recall@k, MRR), answer overlap (LoCoMo F1, token F1, BLEU-1), refusals.

All functions are pure. A metric that is undefined for a question (recall with no gold evidence)
returns ``None``, and the aggregation helpers leave ``None`` out rather than counting it as zero.

Which F1 is which:

* ``f1_locomo`` is the official LoCoMo token F1 (``task_eval/evaluation.py`` of the LoCoMo
  release): commas removed, lower-cased, punctuation removed, the words *a, an, the, and* removed,
  each token Porter-stemmed (NLTK's variant: ``dualmem.text.stem``), then F1 over token
  multisets. ``f1_locomo_multi`` is the official multi-hop (category 1) variant: prediction and gold
  are split on commas, each gold part takes its best-matching prediction part, and the parts average.
  ``locomo_official_score`` applies the official per-category rule.
* ``f1_tokens`` is the plain token-*set* F1 used by A-MEM and Mem0's evaluations: lower-case,
  punctuation replaced by spaces, no stemming, no stop words, set overlap.
* ``bleu1`` is BLEU with unigrams only, over the same tokens as ``f1_tokens``: clipped unigram
  precision times the brevity penalty ``exp(1 - r/c)`` when the prediction is shorter than the
  reference. No smoothing is needed for unigrams; an empty prediction or reference scores 0.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from dualmem.text.stem import stem

__all__ = [
    "CATEGORY_NAMES",
    "REFUSAL_ANSWERS",
    "REFUSAL_PHRASES",
    "Summary",
    "bleu1",
    "f1_locomo",
    "f1_locomo_multi",
    "f1_tokens",
    "is_refusal",
    "locomo_official_score",
    "mean",
    "mrr",
    "normalize_locomo",
    "percentile",
    "recall_at_k",
    "simple_tokens",
    "summarize_by_category",
]

#: LoCoMo's official category numbering
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

#: lower-case phrases that mark an answer as a refusal ("the memory does not say")
REFUSAL_PHRASES: tuple[str, ...] = (
    "not mentioned",
    "no information",
    "does not contain",
    "doesn't contain",
    "cannot answer",
    "can't answer",
    "cannot be determined",
    "not enough information",
    "insufficient information",
    "no mention",
    "not specified",
    "not stated",
    "i don't know",
    "i do not know",
    "the memory does not contain the answer",
)
#: whole answers (punctuation and case ignored) that are refusals though the words may appear in facts
REFUSAL_ANSWERS: frozenset[str] = frozenset({"unknown", "none", "n a", "no answer", "not known"})

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_PUNCT_SPACE = str.maketrans(dict.fromkeys(string.punctuation, " "))
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


# -- retrieval ------------------------------------------------------------------------------------


def recall_at_k(retrieved: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Fraction of the gold ids found in the first ``k`` retrieved; ``None`` when there is no gold."""
    if k < 1:
        raise ValueError("k must be at least 1")
    wanted = set(gold)
    if not wanted:
        return None
    return len(wanted & set(retrieved[:k])) / len(wanted)


def mrr(retrieved: Sequence[str], gold: Collection[str]) -> float | None:
    """Reciprocal rank of the first gold id retrieved (0 if none); ``None`` when there is no gold."""
    wanted = set(gold)
    if not wanted:
        return None
    for rank, item in enumerate(retrieved, start=1):
        if item in wanted:
            return 1.0 / rank
    return 0.0


# -- answer overlap -------------------------------------------------------------------------------


def normalize_locomo(text: str) -> list[str]:
    """LoCoMo's answer normalisation followed by Porter stemming: the tokens its F1 compares."""
    text = str(text).replace(",", "").lower().translate(_PUNCT_TABLE)
    return [stem(tok) for tok in _ARTICLES.sub(" ", text).split()]


def _multiset_f1(pred: list[str], gold: list[str]) -> float:
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_locomo(prediction: str, answer: str) -> float:
    """The official LoCoMo token F1 (stemmed multisets)."""
    return _multiset_f1(normalize_locomo(prediction), normalize_locomo(answer))


def f1_locomo_multi(prediction: str, answer: str) -> float:
    """The official multi-hop F1: mean over comma-separated gold parts of the best part F1."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(answer).split(",")]
    return sum(max(f1_locomo(p, g) for p in preds) for g in golds) / len(golds)


def locomo_official_score(prediction: str, *, answer: str | None, category: int) -> float:
    """The LoCoMo script's per-category QA score.

    Category 1 uses ``f1_locomo_multi``; 2 and 4 ``f1_locomo``; 3 ``f1_locomo`` against the part of
    the gold before the first ``;``; 5 (adversarial) scores 1 for a refusal and 0 otherwise (the
    official script looks for "no information available"/"not mentioned"; ``is_refusal`` is wider).
    """
    if category == 5:
        return 1.0 if is_refusal(prediction) else 0.0
    if answer is None:
        raise ValueError(f"a category {category} question needs a gold answer")
    if category == 1:
        return f1_locomo_multi(prediction, answer)
    if category == 3:
        answer = answer.split(";")[0].strip()
    return f1_locomo(prediction, answer)


def simple_tokens(text: str) -> list[str]:
    """Lower-cased tokens with punctuation replaced by spaces (A-MEM/Mem0 evaluation tokens)."""
    return str(text).lower().translate(_PUNCT_SPACE).split()


def f1_tokens(prediction: str, answer: str) -> float:
    """Token-set F1 without stemming (as A-MEM and Mem0 report it)."""
    pred, gold = set(simple_tokens(prediction)), set(simple_tokens(answer))
    same = len(pred & gold)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, answer: str) -> float:
    """Unigram BLEU: clipped unigram precision times the brevity penalty."""
    pred, gold = simple_tokens(prediction), simple_tokens(answer)
    if not pred or not gold:
        return 0.0
    clipped = sum((Counter(pred) & Counter(gold)).values())
    precision = clipped / len(pred)
    penalty = 1.0 if len(pred) > len(gold) else math.exp(1 - len(gold) / len(pred))
    return penalty * precision


def is_refusal(text: str) -> bool:
    """True when an answer says the memory does not hold the answer."""
    lowered = " ".join(str(text).lower().replace("’", "'").split())
    bare = " ".join(lowered.translate(_PUNCT_SPACE).split())
    if not bare or bare in REFUSAL_ANSWERS:
        return True
    return any(re.search(rf"\b{re.escape(phrase)}\b", lowered) for phrase in REFUSAL_PHRASES)


# -- aggregation ----------------------------------------------------------------------------------


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values; ``None`` when there are none."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation (numpy's default); ``None`` if empty."""
    if not 0 <= q <= 100:
        raise ValueError("q must be within [0, 100]")
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """The mean of a metric over the questions where it is defined, and how many those were."""

    mean: float | None
    n: int

    def to_json(self) -> dict[str, float | int | None]:
        return {"mean": self.mean, "n": self.n}


def _summary(values: list[float]) -> Summary:
    return Summary(sum(values) / len(values) if values else None, len(values))


def summarize_by_category(pairs: Iterable[tuple[int | str, float | None]]) -> dict[str, Summary]:
    """Per-category means of ``(category, value)`` pairs, keyed ``"1"``..``"5"``, ``"1-4"``, ``"all"``.

    ``None`` values are left out. Every category 1-5 gets a key (with ``n == 0`` when absent);
    categories outside 1-5 count only towards ``"all"``.
    """
    groups: dict[int, list[float]] = {c: [] for c in CATEGORY_NAMES}
    every: list[float] = []
    for category, value in pairs:
        if value is None:
            continue
        every.append(value)
        if category in groups:
            groups[category].append(value)
    out = {str(c): _summary(v) for c, v in groups.items()}
    out["1-4"] = _summary([v for c in (1, 2, 3, 4) for v in groups[c]])
    out["all"] = _summary(every)
    return out
