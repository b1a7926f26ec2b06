"""Does the offline extractive answerer quote the answer? Before/after on the dev corpora (issue 41).

    python bench/answer_quality.py --locomo ../shared/data/locomo --memgallery ../shared/data/memgallery \
        --cache /tmp/aq --out /tmp/aq/report.json            # --tune: also re-choose the weights
    python bench/answer_quality.py --limit 1 --questions 20 --out /tmp/aq-tiny.json     # a tiny run

Every conversation is built once with the default stack (MiniLM, builtin System One, consolidation
inline, as ``dualmem bench locomo`` builds it) and cached under ``--cache``; every question's
evidence is the real ``Memory.search`` (builtin profile, ``k`` = 10), cached beside the build, so a
rerun only answers. The *same* evidence goes to every answerer compared:

- ``after``: ``ExtractiveAnswerer`` of this tree, with the MiniLM embedder behind a query cache (as
  ``Memory`` lends it);
- ``before``: the extractive answerer of ``--before REF`` (a git revision, by default main before
  issue 41; its ``src/dualmem/reason/extractive.py`` is loaded from git on this tree's modules);
- ``tuned`` (``--tune``): the weights chosen again by :func:`tune`.

Corpora: LoCoMo dev (``--locomo``, 5 conversations, category 5 = adversarial), the agent chats
(``--agentchat``, 16 haystacks, bench/agentchat/README.md) and Mem-Gallery (``--memgallery``, 20
files; a round is one observation ``"user text\nassistant text"`` stamped with its session's date,
no speaker; the gold is ``answer``). No answerer ever sees a question's category or gold.

Metrics, per corpus and answerer, over the questions that have a gold answer (LoCoMo category 5
apart): ``contained`` (the gold's normalised words, lower case without punctuation, appear as a
contiguous run among the answer's; an abstention contains nothing), ``recall50`` (golds of two or
more content words: at least half of them in the answer), ``abstained``, the answer's mean length in
words and the answerer's p50 ms; per category, ``contained`` and ``abstained``. LoCoMo adds the
abstention rate on category 5 (adversarial: abstaining is right there).

How the weights were chosen (``--tune``): coordinate ascent over :data:`GRID` from the answerer's
defaults, on LoCoMo and the agent chats only (Mem-Gallery held out, never tuned on), maximising the
mean of the contained and recall50 rates of both corpora, each setting at the lowest threshold that
keeps LoCoMo's category-5 abstention at least the 'before' answerer's and answers no longer on
average than the 'before' answerer's on each corpus (so a gain cannot come from abstaining less on
adversarial questions or from quoting more). The defaults are that optimum (a fixed point: ``--tune``
from them returns them).

Figures (2026-12-06, 2 shared cores, evidence of main at 5fda185; ``before`` = 5fda185):

| corpus | answerer | questions | contained | recall50 (n) | abstained | cat-5 abstained | words |
|---|---|---|---|---|---|---|---|
| LoCoMo dev | before | 762 | 0.181 | 0.368 (622) | 0.155 | 0.135 | 31.2 |
| | **after** | 762 | **0.243** | **0.468** | 0.041 | 0.135 | 31.2 |
| agent chats | before | 253 | 0.016 | 0.276 (250) | 0.376 | | 68.6 |
| | **after** | 253 | **0.032** | **0.332** | 0.079 | | 37.0 |
| Mem-Gallery (held out) | before | 1711 | 0.035 | 0.099 (1145) | 0.537 | | 36.0 |
| | **after** | 1711 | **0.066** | **0.201** | 0.031 | | 40.5 |

Leave-one-conversation-out on LoCoMo (tuned on the other four and the agent chats, a scratch run of
:func:`tune` per fold): pooled contained 0.242, recall50 0.470, category-5 abstention 0.135, 31.0
words, against the in-sample 0.243 / 0.468; every held-out conversation gains (0.138 -> 0.178,
0.346 -> 0.395, 0.171 -> 0.243, 0.151 -> 0.196, 0.185 -> 0.275), and the folds choose the same
weights but ``w_dated``, ``w_news`` and the threshold (0.725-0.875).

LoCoMo contained by category, before / after: multi-hop 0.007 / 0.028, temporal 0.346 / 0.397,
open-domain 0.000 / 0.022, single-hop 0.199 / 0.282. The before answerer abstained about as often on
answerable questions (15.5 %) as on adversarial ones (13.5 %); after: 4.1 % against 13.5 %. Agent
chats' golds are descriptive sentences, so ``contained`` is near its ceiling there (16 of 253 golds
are contained in any evidence sentence); recall50 says more. Mem-Gallery's unanswerable questions
(AR, 184, gold "Not mentioned"): the before answerer abstained on 53.8 % of them but also on 37-82 %
of every other kind; the after answerer abstains on 1.6 % (its abstention signals, chiefly "the
question names one speaker and the sentence is another's", do not exist in speakerless rounds). The
answerer costs ~1.5 ms p50 a question when the question's embedding is cached, as in ``Memory``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import re
import subprocess
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from dualmem.bench import runner
from dualmem.bench.locomo import BenchConfig
from dualmem.conversations import QA, Conversation, load_conversations
from dualmem.embed import CachedEmbedder, create_embedder
from dualmem.reason import ExtractiveAnswerer
from dualmem.reason.base import Answerer
from dualmem.reason.extractive import Candidate
from dualmem.text import STOPWORDS, parse_time
from dualmem.types import Evidence, Observation

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_BEFORE = "5fda185"  # main before the sentence-scoring answerer (issue 41, item 15)
_WORD = re.compile(r"[a-z0-9]+")


# -- corpora ----------------------------------------------------------------------------------------


def load_memgallery(path: Path) -> list[Conversation]:
    """Mem-Gallery dialogue files (a file or a folder of them) as conversations: one observation a
    round (``"user\\nassistant"``, at its session's date, turn id = the round id, no speaker), the
    ``human-annotated QAs`` as questions (gold = ``answer``, evidence = ``clue``, category = ``point``)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    out = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        observations = []
        for session in data["multi_session_dialogues"]:
            at = parse_time(session.get("date"))
            for rnd in session["dialogues"]:
                text = "\n".join(
                    t
                    for t in (str(rnd.get("user") or "").strip(), str(rnd.get("assistant") or "").strip())
                    if t
                )
                if text:
                    observations.append(
                        Observation(
                            text, at=at, source=file.stem, session=session["session_id"], turn_id=rnd["round"]
                        )
                    )
        known = {o.turn_id for o in observations}
        questions = tuple(
            QA(
                question=str(q["question"]).strip(),
                answer=None if q.get("answer") is None else str(q["answer"]),
                evidence=tuple(c for c in q.get("clue") or () if c in known),
                category=str(q.get("point") or "?"),
            )
            for q in data["human-annotated QAs"]
        )
        out.append(Conversation(file.stem, tuple(observations), questions))
    return out


def load_corpus(name: str, path: Path) -> list[Conversation]:
    return load_memgallery(path) if name == "memgallery" else load_conversations(path)


# -- builds and evidence ----------------------------------------------------------------------------


class Asked(NamedTuple):
    """One question with the evidence ``Memory.search`` selected for it."""

    corpus: str
    conversation: str
    qa: QA
    evidence: tuple[Evidence, ...]


def _evidence_key(build: Path, ctx: Any, k: int, questions: Sequence[QA]) -> str:
    blob = json.dumps(
        [build.name, repr(ctx.base.read), k, [q.question for q in questions]], sort_keys=True, default=str
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def gather(
    corpora: Mapping[str, Path],
    *,
    cache: Path,
    k: int = 10,
    limit: int | None = None,
    questions: int | None = None,
    log: Callable[[str], None] = print,
) -> list[Asked]:
    """Every question of every corpus with its evidence (builds and searches cached under ``cache``)."""
    ctx = runner._context(
        BenchConfig(data=cache, out=cache, systems=("dualmem",)), progress=sys.stderr.isatty()
    )
    (cache / "cache").mkdir(parents=True, exist_ok=True)
    asked: list[Asked] = []
    for corpus, path in corpora.items():
        for conv in load_corpus(corpus, path)[:limit]:
            qas = conv.questions[:questions]
            build, record = runner._ensure_build(conv, "full", ctx)
            store = build.with_name(f"{build.stem}-evidence-{_evidence_key(build, ctx, k, qas)}.pkl")
            if store.exists():
                with store.open("rb") as fh:
                    found: list[tuple[Evidence, ...]] = pickle.load(fh)
            else:
                started = time.perf_counter()
                with runner._open(build, ctx, ctx.base) as mem:
                    found = [tuple(mem.search(q.question, user=conv.id, k=k).evidence) for q in qas]
                with store.open("wb") as fh:
                    pickle.dump(found, fh)
                built = "cached" if record.cached else f"{record.seconds:.0f} s"
                searched = time.perf_counter() - started
                name = f"{corpus}/{conv.id}"
                log(f"{name}: {record.turns} turns (build {built}), {len(qas)} searches in {searched:.0f} s")
            asked.extend(Asked(corpus, conv.id, q, ev) for q, ev in zip(qas, found, strict=True))
    close = getattr(ctx.embedder, "close", None)
    if close is not None:
        close()
    return asked


# -- answerers --------------------------------------------------------------------------------------


def answerer_at(revision: str) -> Answerer:
    """The ``ExtractiveAnswerer`` of ``src/dualmem/reason/extractive.py`` at git ``revision``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:src/dualmem/reason/extractive.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if source.returncode != 0:
        raise SystemExit(f"answer_quality: cannot read the answerer at {revision!r}: {source.stderr.strip()}")
    module = ModuleType(f"_extractive_at_{hashlib.sha256(revision.encode()).hexdigest()[:12]}")
    sys.modules[module.__name__] = module  # dataclasses look their module up while the class is made
    exec(compile(source.stdout, f"{revision}:extractive.py", "exec"), module.__dict__)
    answerer: Answerer = module.ExtractiveAnswerer()
    return answerer


# -- scoring ----------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """Lower-case words without punctuation (accents folded)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    return _WORD.findall("".join(ch for ch in folded if not unicodedata.combining(ch)))


def contained(answer: str, gold: str) -> bool:
    """The gold's words appear, in order and adjacent, among the answer's."""
    a, g = words(answer), words(gold)
    if not g:
        return False
    n = len(g)
    return any(a[i : i + n] == g for i in range(len(a) - n + 1))


def content_recall(answer: str, gold: str) -> float | None:
    """Share of the gold's content words found in the answer; ``None`` for a gold of fewer than two."""
    g = {w for w in words(gold) if w not in STOPWORDS}
    if len(g) < 2:
        return None
    return len(g & set(words(answer))) / len(g)


def score(asked: Sequence[Asked], answerers: Mapping[str, Answerer]) -> list[dict[str, Any]]:
    """One row a question and answerer: what it answered and how it scored."""
    rows = []
    for item in asked:
        for name, answerer in answerers.items():
            started = time.perf_counter()
            draft = answerer.answer(item.qa.question, item.evidence)
            ms = (time.perf_counter() - started) * 1000
            gold = item.qa.answer
            recall = None if gold is None else content_recall(draft.text, gold)
            rows.append(
                {
                    "corpus": item.corpus,
                    "conversation": item.conversation,
                    "category": str(item.qa.category),
                    "question": item.qa.question,
                    "gold": gold,
                    "answerer": name,
                    "answer": draft.text,
                    "abstained": draft.abstained,
                    "contained": None if gold is None or draft.abstained else contained(draft.text, gold),
                    "recall50": None if recall is None else (not draft.abstained and recall >= 0.5),
                    "words": 0 if draft.abstained else len(words(draft.text)),
                    "ms": ms,
                }
            )
    return rows


def _rate(flags: Iterable[bool | None]) -> float | None:
    got = [bool(f) for f in flags if f is not None]
    return round(sum(got) / len(got), 4) if got else None


def _adversarial(row: Mapping[str, Any]) -> bool:
    return row["corpus"] == "locomo" and row["category"] == "5"


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per corpus and answerer: the rates over the gold-bearing questions, per category, abstention."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["corpus"], row["answerer"])].append(row)
    out: dict[str, Any] = {}
    for (corpus, name), items in sorted(groups.items()):
        gold = [r for r in items if r["gold"] is not None and not _adversarial(r)]
        answered = [r for r in gold if not r["abstained"]]
        by_cat: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in gold:
            by_cat[r["category"]].append(r)
        entry = {
            "questions": len(gold),
            "contained": _rate(bool(r["contained"]) for r in gold),
            "recall50": _rate(r["recall50"] for r in gold),
            "recall50_n": sum(r["recall50"] is not None for r in gold),
            "abstained": _rate(r["abstained"] for r in gold),
            "mean_words": round(sum(r["words"] for r in answered) / len(answered), 1) if answered else None,
            "ms_p50": round(sorted(r["ms"] for r in items)[len(items) // 2], 3) if items else None,
            "contained_by_category": {
                c: _rate(bool(r["contained"]) for r in v) for c, v in sorted(by_cat.items())
            },
            "abstained_by_category": {c: _rate(r["abstained"] for r in v) for c, v in sorted(by_cat.items())},
        }
        if corpus == "locomo":
            adv = [r for r in items if _adversarial(r)]
            entry["abstained_adversarial"] = _rate(r["abstained"] for r in adv)
            entry["abstained_other"] = entry["abstained"]
            entry["adversarial_n"] = len(adv)
        out.setdefault(corpus, {})[name] = entry
    return out


def render(summary: Mapping[str, Any]) -> str:
    head = "corpus | answerer | questions | contained | recall>=0.5 (n) | abstained | cat-5 abstained | words"
    head += " | ms p50"
    lines = [f"| {head} |", "|" + "---|" * (head.count("|") + 1)]
    for corpus, by_name in summary.items():
        for name, e in by_name.items():
            adv = e.get("abstained_adversarial")
            cells = [
                corpus, name, e["questions"], e["contained"], f"{e['recall50']} ({e['recall50_n']})",
                e["abstained"], "" if adv is None else adv, e["mean_words"], e["ms_p50"],
            ]  # fmt: skip
            lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


# -- choosing the weights ---------------------------------------------------------------------------

#: the values ``--tune`` tries for each weight (coordinate ascent from the answerer's defaults)
GRID: dict[str, tuple[float, ...]] = {
    "w_before": (0.0, 0.15, 0.3, 0.5, 0.8),
    "w_meaning": (0.0, 0.3, 0.6, 1.0, 1.5),
    "w_typed": (0.0, 0.1, 0.2, 0.3, 0.5),
    "w_news": (0.0, 0.15, 0.3, 0.5, 0.8),
    "w_dated": (0.0, 0.15, 0.3, 0.5, 0.8, 1.2, 1.6),
    "w_rank": (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0),
    "other_party": (0.0, 0.3, 0.6, 1.0, 1.5, 2.0, 3.0),
    "asks": (0.0, 0.1, 0.2, 0.4),
    "second": (0.75, 0.8, 0.85, 0.9, 0.95, 1.01),
}
THRESHOLDS: tuple[float, ...] = tuple(round(0.025 * i, 3) for i in range(-40, 121))


class _Outcome(NamedTuple):
    group: str  # "adversarial", a corpus, or "<corpus> recall50"
    top: float  # the best candidate's score: the draft stands when it reaches the threshold
    hit: bool  # the draft contains the gold (recall50 rows: has half its content words)
    words: int  # the draft's length in words


def _outcomes(answerer: ExtractiveAnswerer, items: Sequence[tuple[Asked, list[Candidate]]]) -> list[_Outcome]:
    """Each question's outcome at any threshold (LoCoMo category 5 as "adversarial"); a gold of two
    or more content words gives a second row in "<corpus> recall50"."""
    out = []
    for item, cands in items:
        top, draft = answerer.best(item.qa.question, cands)
        n = 0 if draft.abstained else len(words(draft.text))
        if _adversarial({"corpus": item.corpus, "category": str(item.qa.category)}):
            out.append(_Outcome("adversarial", top, False, n))
        elif item.qa.answer is not None:
            out.append(
                _Outcome(item.corpus, top, not draft.abstained and contained(draft.text, item.qa.answer), n)
            )
            recall = content_recall(draft.text, item.qa.answer)
            if recall is not None:
                out.append(_Outcome(f"{item.corpus} recall50", top, not draft.abstained and recall >= 0.5, n))
    return out


def _at_threshold(outcomes: Sequence[_Outcome], t: float) -> tuple[dict[str, float], float, dict[str, float]]:
    """(rate per group, category-5 abstention, mean words per corpus) when drafts below ``t`` abstain."""
    hits: dict[str, list[bool]] = defaultdict(list)
    lengths: dict[str, list[int]] = defaultdict(list)
    adversarial = []
    for o in outcomes:
        if o.group == "adversarial":
            adversarial.append(o.top < t)
            continue
        hits[o.group].append(o.hit and o.top >= t)
        if o.top >= t and not o.group.endswith("recall50"):
            lengths[o.group].append(o.words)
    rates = {g: sum(v) / len(v) for g, v in sorted(hits.items())}
    mean_words = {g: sum(v) / len(v) for g, v in lengths.items() if v}
    return rates, (sum(adversarial) / len(adversarial) if adversarial else 1.0), mean_words


def _evaluate(
    params: Mapping[str, float],
    items: Sequence[tuple[Asked, list[Candidate]]],
    floor: float,
    caps: Mapping[str, float],
) -> tuple[float, float, dict[str, float], float]:
    """(mean rate over the groups, threshold, rates, category-5 abstention) at the lowest threshold
    whose category-5 abstention reaches ``floor`` and whose answers are on average no longer than
    ``caps`` (words, per corpus). Raising the threshold only turns answers into abstentions, so the
    lowest admissible threshold answers the most."""
    outcomes = _outcomes(ExtractiveAnswerer(**params), items)
    for threshold in THRESHOLDS:
        rates, adv, mean_words = _at_threshold(outcomes, threshold)
        if adv >= floor and all(mean_words.get(c, 0.0) <= cap for c, cap in caps.items()):
            return sum(rates.values()) / len(rates), threshold, rates, adv
    return -1.0, math.inf, {}, 0.0


def tune(
    asked: Sequence[Asked],
    *,
    embedder: Any,
    floor: float,
    caps: Mapping[str, float],
    rounds: int = 3,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Coordinate ascent over :data:`GRID` (each weight in turn, the others held, up to ``rounds``
    passes) from the answerer's defaults, for the best mean over the tuning corpora of the contained
    and recall50 rates; each setting at the lowest threshold that keeps LoCoMo's category-5
    abstention at or above ``floor`` and answers no longer on average than ``caps`` (both the
    'before' answerer's)."""
    measure = ExtractiveAnswerer(embedder=embedder)
    items = [(a, measure.candidates(a.qa.question, a.evidence)) for a in asked]
    defaults = ExtractiveAnswerer()
    params = {k: float(getattr(defaults, k)) for k in GRID}
    best = _evaluate(params, items, floor, caps)
    for round_ in range(rounds):
        moved = False
        for key, values in GRID.items():
            for value in values:
                trial = {**params, key: value}
                got = _evaluate(trial, items, floor, caps)
                if got[0] > best[0] + 1e-9:
                    params, best, moved = trial, got, True
        log(f"tune round {round_ + 1}: mean rate {best[0]:.4f} at {params}, min_score {best[1]}")
        if not moved:
            break
    mean, threshold, rates, adv = best
    return {
        "params": {**params, "min_score": threshold},
        "rates": {k: round(v, 4) for k, v in rates.items()},
        "mean": round(mean, 4),
        "adversarial_abstention": round(adv, 4),
        "floor": floor,
        "caps": caps,
    }


# -- entry point ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = Path("../shared/data")  # as the other bench scripts: run from the repository root
    p.add_argument("--locomo", type=Path, default=data / "locomo", help="LoCoMo dev folder ('' skips it)")
    p.add_argument(
        "--agentchat",
        type=Path,
        default=HERE / "agentchat" / "haystacks",
        help="agent-chat haystacks ('' skips)",
    )
    p.add_argument(
        "--memgallery", type=Path, default=data / "memgallery", help="Mem-Gallery folder ('' skips it)"
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=Path("bench-out/answer-quality"),
        help="builds and evidence are cached here",
    )
    p.add_argument(
        "--before", default=DEFAULT_BEFORE, help="git revision of the 'before' answerer ('none': no before)"
    )
    p.add_argument("--k", type=int, default=10, help="evidence per question (Memory.search k)")
    p.add_argument("--limit", type=int, default=None, help="conversations per corpus (a tiny run)")
    p.add_argument("--questions", type=int, default=None, help="questions per conversation (a tiny run)")
    p.add_argument(
        "--tune", action="store_true",
        help="choose the weights on LoCoMo + agent chats (Mem-Gallery held out) and add a 'tuned' answerer",
    )  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="write the summary and every answer as JSON here")
    return p.parse_args(argv)


def _tuned(
    asked: Sequence[Asked], before: Answerer, embedder: Any, log: Callable[[str], None]
) -> dict[str, Any]:
    """--tune: the floor (category-5 abstention) and length caps are the 'before' answerer's on the
    tuning corpora (LoCoMo and the agent chats; Mem-Gallery is never looked at)."""
    tuning = [a for a in asked if a.corpus in ("locomo", "agentchat")]
    base = summarize(score(tuning, {"before": before}))
    floor = base.get("locomo", {}).get("before", {}).get("abstained_adversarial") or 0.0
    caps = {c: e["before"]["mean_words"] for c, e in base.items() if e["before"]["mean_words"] is not None}
    return tune(tuning, embedder=embedder, floor=floor, caps=caps, log=log)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    corpora = {
        name: path
        for name, path in (
            ("locomo", args.locomo),
            ("agentchat", args.agentchat),
            ("memgallery", args.memgallery),
        )
        if str(path) not in ("", ".")
    }
    missing = [str(p) for p in corpora.values() if not p.exists()]
    if missing:
        raise SystemExit(f"answer_quality: no such corpus: {', '.join(missing)} (pass '' to skip one)")
    if args.tune and args.before == "none":
        raise SystemExit(
            "answer_quality: --tune needs a --before answerer (its abstention and length are the limits)"
        )

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    asked = gather(corpora, cache=args.cache, k=args.k, limit=args.limit, questions=args.questions, log=log)
    # the answerer's embedder as Memory lends it: the build's model behind a query cache
    embedder = CachedEmbedder(create_embedder("minilm"), size=1024)
    answerers: dict[str, Answerer] = {}
    if args.before != "none":
        answerers["before"] = answerer_at(args.before)
    answerers["after"] = ExtractiveAnswerer(embedder=embedder)
    tuned = None
    if args.tune:
        tuned = _tuned(asked, answerers["before"], embedder, log)
        answerers["tuned"] = ExtractiveAnswerer(embedder=embedder, **tuned["params"])
    rows = score(asked, answerers)
    summary = summarize(rows)
    print(render(summary))
    if tuned is not None:
        print(json.dumps({"tuned": tuned}))
    report = {"k": args.k, "before": args.before, "tuned": tuned, "summary": summary, "answers": rows}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
