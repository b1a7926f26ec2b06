"""The message-shaped dev queries (bench/messages, issue 47): derived as derive.py writes them, sound.

A wrapped query holds its clean question verbatim inside small talk; a multi-request message holds
each of its questions and the union of their evidence; every evidence id is a turn of its
conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_scripts import load_bench
from dualmem.conversations import load_conversations

ROOT = Path(__file__).resolve().parents[1]
derive = load_bench("messages/derive.py")
COMMITTED = ROOT / "bench" / "messages" / "queries.json"
HAVE_LOCOMO = derive.SOURCES["locomo"].exists()


def _queries() -> list[dict[str, Any]]:
    data = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert data["format"] == derive.FORMAT
    queries: list[dict[str, Any]] = data["queries"]
    return queries


def _all() -> list[dict[str, Any]]:
    """The committed queries and, where LoCoMo dev is here, LoCoMo's (derived, never committed)."""
    extra: list[dict[str, Any]] = derive.derive(["locomo"])["queries"] if HAVE_LOCOMO else []
    return _queries() + extra


def test_the_committed_file_is_what_derive_writes() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == derive.render(derive.derive())


def test_no_locomo_text_is_committed() -> None:
    assert {q["corpus"] for q in _queries()} == {"agentchat"}


def test_every_shape_is_there_for_both_corpora() -> None:
    shapes = {(q["corpus"], q["shape"]) for q in _all()}
    for corpus in ("locomo", "agentchat") if HAVE_LOCOMO else ("agentchat",):
        assert {(corpus, s) for s in ("clean", "wrapped", "unseen", "multi")} <= shapes
    assert ("agentchat", "message") in shapes
    langs = {q["lang"] for q in _all() if q["shape"] == "wrapped"}
    assert langs == {"en", "zh"}


def test_wrapped_and_multi_queries_hold_their_questions_and_evidence() -> None:
    queries = _all()
    clean = {(q["conversation"], q["source"][0]): q for q in queries if q["shape"] == "clean"}
    wrapped = [q for q in queries if q["shape"] == "wrapped"]
    assert len(wrapped) == len(clean)
    unseen = [q for q in queries if q["shape"] == "unseen"]
    assert len(unseen) == len(clean)
    assert {q["query"] for q in unseen}.isdisjoint(q["query"] for q in wrapped)
    wrapped += unseen
    for q in wrapped:
        base = clean[q["conversation"], q["source"][0]]
        assert base["query"] in q["query"]
        assert len(q["query"]) > len(base["query"]) + 10
        assert q["evidence"] == base["evidence"]
    for q in (q for q in queries if q["shape"] == "multi"):
        parts = [clean[q["conversation"], i] for i in q["source"]]
        assert 2 <= len(parts) <= 3
        for p in parts:
            text = p["query"]
            assert text in q["query"] or text[0].lower() + text[1:] in q["query"]
        assert set(q["evidence"]) == {e for p in parts for e in p["evidence"]}


def test_evidence_names_turns_of_the_conversation() -> None:
    turns: dict[str, set[str]] = {}
    for _corpus, path in derive.SOURCES.items():
        if not path.exists():
            continue
        for conv in load_conversations(path):
            turns[conv.id] = {o.turn_id for o in conv.observations if o.turn_id}
    checked = 0
    for q in _all():
        if q["conversation"] in turns:
            assert q["evidence"]
            assert set(q["evidence"]) <= turns[q["conversation"]]
            checked += 1
    assert checked > 0


def test_wrap_is_stable_and_keeps_the_question() -> None:
    a = derive.wrap("When did Mira move to Utrecht?", "c:1")
    assert a == derive.wrap("When did Mira move to Utrecht?", "c:1")
    assert "When did Mira move to Utrecht?" in a[0]
    assert a[1] in ("en", "zh")
    joined = derive.join(["Where do I live?", "What is my cat called?"], "c:multi:1")
    assert "Where do I live?" in joined
    assert "hat is my cat called?" in joined


def test_the_evaluation_reports_each_shape_beside_bm25() -> None:
    evaluate = load_bench("messages/evaluate.py")
    rows = [
        {"corpus": "c", "shape": s, "system": sys_, "ms": 1.0, "R@10": r, "R@20": r, "S@10": r}
        for s, sys_, r in [("clean", "dualmem", 1.0), ("clean", "bm25", 0.5), ("wrapped", "dualmem", 0.5),
                           ("wrapped", "bm25", 0.0), ("wrapped", "dualmem", 1.0), ("wrapped", "bm25", 0.0)]
    ]  # fmt: skip
    summary = evaluate.summarize(rows)
    assert summary["c"]["wrapped"]["dualmem"]["R@10"] == 0.75
    assert summary["c"]["wrapped"]["dualmem"]["n"] == 2
    text = evaluate.report(summary)
    assert "| c | clean | 1 | 1.000 | 0.500 | +0.500 |" in text
    assert "| c | wrapped | 2 | 0.750 | 0.000 | +0.750 |" in text
    picked = evaluate._pick([{"corpus": "c", "shape": "clean", "i": i} for i in range(10)], 3)
    assert [q["i"] for q in picked] == [0, 3, 6]


def test_the_long_message_is_about_150_words() -> None:
    latency = load_bench("messages/latency.py")
    text = latency.long_message("When did Caroline go to the LGBTQ support group?")
    assert 130 <= len(text.split()) <= 170
    assert "When did Caroline go to the LGBTQ support group?" in text


def test_the_weights_are_chosen_without_the_corpus_or_fold_they_are_scored_on() -> None:
    cv = load_bench("messages/cv.py")

    def row(corpus: str, fold: str, shape: str, a: float, b: float) -> dict[str, object]:
        return {"corpus": corpus, "fold": fold, "shape": shape, "clauses": 2, "conversation": fold,
                "source": [0], "r10": {"bm25": 0.0, "off": 0.1, "A": a, "B": b}}  # fmt: skip

    rows = [
        row("x", "x/0", "wrapped", 1.0, 0.0),  # x prefers A
        row("x", "x/1", "wrapped", 1.0, 0.0),
        row("y", "y/0", "message", 0.0, 1.0),  # y and z prefer B
        row("z", "z/0", "multi", 0.0, 1.0),
        row("z", "z/0", "clean", 0.3, 0.3),  # clean rows never choose
        row("x", "x/0", "clean", 0.5, 0.7),  # x/0's wrapped question asked clean
    ]
    out = cv.cross_validate(rows, ["A", "B"])
    assert out["chosen"]["loco"] == {"x": "B", "y": "A", "z": "A"}  # each by the other two
    assert out["chosen"]["within"]["x/0"] == "B"  # x/1 (A) against y and z (B): each corpus counts once
    assert out["table"]["x"]["wrapped"]["loco"] == 0.0
    assert out["table"]["x"]["wrapped"]["clean, same questions"] == 0.7  # under x's choice, B
    assert out["table"]["z"]["clean"]["n"] == 1
    assert cv.choose([row("z", "z/0", "clean", 0.3, 0.9)], ["A", "B"]) == "A"  # nothing to choose on
    assert "| x | wrapped | 2 (2) |" in cv.report(out)


def test_a_choice_keeps_the_clean_questions() -> None:
    cv = load_bench("messages/cv.py")
    base = {"corpus": "x", "fold": "x/0", "clauses": 2}
    rows = [
        {**base, "shape": "message", "r10": {"off": 0.5, "A": 0.6, "B": 0.9}},
        {**base, "shape": "clean", "r10": {"off": 0.5, "A": 0.5, "B": 0.4}},
    ]
    assert cv.choose(rows, ["A", "B"]) == "A"  # B does better on messages but lowers clean by 0.1
    assert cv.clean_ok(rows, "A")
    assert not cv.clean_ok(rows, "B")
