"""The CJK dev corpus (bench/cjk): its checker passes on every file and names what is wrong in a
broken one, the committed files are what build.py writes, the product loader reads them, and the
evaluation's bigram BM25 and scoring work on given texts and rankings (no embedding here)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench_scripts import BENCH, load_bench
from dualmem.conversations import load_conversations

SRC = BENCH / "cjk" / "src"
check = load_bench("cjk/check.py")
build = load_bench("cjk/build.py")
evaluate = load_bench("cjk/eval.py")
User = dict[str, Any]


def _user(name: str = "zh-01") -> User:
    data: User = json.loads((SRC / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, data: User) -> Path:
    path = tmp_path / f"{data['id']}.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _turns(data: User) -> list[dict[str, Any]]:
    return [t for s in data["sessions"] for t in s["turns"]]


def test_the_checker_passes_on_the_whole_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    result = check.check([SRC], minimums=True)
    assert result.problems == []
    assert check.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["lang", "users", "msgs", *check.FAMILIES, "all"]
    assert [line.split()[0] for line in lines[1:]] == ["zh", "ja", "ko", "all"]


def test_the_corpus_holds_what_the_issue_asks() -> None:
    stats = check.check([SRC]).stats
    by_lang: dict[str, list[Any]] = {}
    for s in stats.values():
        by_lang.setdefault(s.language, []).append(s)
    assert len(by_lang["zh"]) >= 10
    assert sum(sum(s.families.values()) for s in by_lang["zh"]) >= 400
    for lang in ("ja", "ko"):
        assert len(by_lang[lang]) >= 2
        assert sum(sum(s.families.values()) for s in by_lang[lang]) >= 40
    assert all(30 <= s.messages <= 50 for s in stats.values())
    for users in by_lang.values():
        assert all(sum(s.families[f] for s in users) > 0 for f in check.FAMILIES)


def test_the_committed_files_are_what_build_writes(tmp_path: Path) -> None:
    assert build.main(["--check"]) == 0
    assert build.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(p.name for p in SRC.glob("*.json"))
    (tmp_path / "zh-01.json").write_text("{}", encoding="utf-8")
    assert build.main(["--check", "--out", str(tmp_path)]) == 1


def test_the_product_loader_reads_every_file() -> None:
    files = sorted(SRC.glob("*.json"))
    conversations = load_conversations(SRC)
    assert [c.id for c in conversations] == [f.stem for f in files]
    for conv, path in zip(conversations, files, strict=True):
        raw = json.loads(path.read_text(encoding="utf-8"))
        assert [o.turn_id for o in conv.observations] == [t["id"] for t in _turns(raw)]
        assert all(o.at is not None for o in conv.observations)
        assert conv.skipped_evidence == 0
        assert [q.evidence for q in conv.questions] == [tuple(q["evidence"]) for q in raw["questions"]]
        assert [q.category for q in conv.questions] == [q["category"] for q in raw["questions"]]


def test_update_questions_ask_the_latest_or_the_older_version() -> None:
    for path in sorted(SRC.glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        olds = {u["old"] for u in raw["updates"]}
        news = {u["new"] for u in raw["updates"]}
        asked = {e for q in raw["questions"] if q["category"] == "update" for e in q["evidence"]}
        assert asked <= olds | news, path.name  # an update question asks a version of a changed fact
        assert news <= asked, path.name  # and every change is asked about


def _duplicate_id(data: User) -> None:
    _turns(data)[3]["id"] = "m3"


def _unknown_evidence(data: User) -> None:
    data["questions"][0]["evidence"] = ["m999"]


def _renumbered(data: User) -> None:
    named = {e for q in data["questions"] for e in q["evidence"]} | {
        u[k] for u in data["updates"] for k in ("old", "new")
    }
    turn = next(t for t in _turns(data) if t["id"] not in named)
    turn["id"] += "b"


def _unknown_family(data: User) -> None:
    data["questions"][0]["category"] = "trivia"


def _chatter_without_small_talk(data: User) -> None:
    q = next(q for q in data["questions"] if q["category"] == "chatter")
    q["question"] = "我对什么过敏来着？"


def _update_backwards(data: User) -> None:
    u = data["updates"][0]
    u["old"], u["new"] = u["new"], u["old"]


def _english_message(data: User) -> None:
    _turns(data)[0]["text"] = "I moved to Berlin."


def _too_few_messages(data: User) -> None:
    data["sessions"] = data["sessions"][:5]
    kept = {t["id"] for t in _turns(data)}
    data["questions"] = [q for q in data["questions"] if set(q["evidence"]) <= kept]
    data["updates"] = []


def _asked_too_early(data: User) -> None:
    data["questions"][0]["asked_at"] = _turns(data)[0]["at"]


def _late_message(data: User) -> None:
    turns = next(s["turns"] for s in data["sessions"] if len(s["turns"]) > 1)
    turns[1]["at"] = turns[0]["at"]


def _wrong_language(data: User) -> None:
    data["language"] = "en"


BROKEN: list[tuple[Callable[[User], None], str, str]] = [
    (_duplicate_id, "zh-01", "turn id 'm3' appears twice"),
    (_unknown_evidence, "zh-02", "questions[0]: evidence 'm999' names no message"),
    (_renumbered, "ja-01", "ids run m1..mN in order, so this one must be"),
    (_unknown_family, "ko-01", "family 'trivia' is not one of"),
    (_chatter_without_small_talk, "zh-03", "a chatter question opens with small talk"),
    (_update_backwards, "zh-01", "updates[0]: new"),
    (_english_message, "ko-02", "message 'm1': no ko script"),
    (_too_few_messages, "zh-05", "other messages (at least 28)"),
    (_asked_too_early, "ja-02", "questions[0]: asked_at"),
    (_late_message, "zh-06", "is not after the previous message"),
    (_wrong_language, "zh-07", "language 'en' is not one of zh, ja, ko"),
]


@pytest.mark.parametrize(("breakage", "name", "message"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_the_checker_names_what_is_wrong_in_a_broken_file(
    breakage: Callable[[User], None],
    name: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = copy.deepcopy(_user(name))
    assert check.check([_write(tmp_path, data)]).ok  # intact, it passes
    breakage(data)
    assert check.main([str(_write(tmp_path, data))]) == 1
    err = capsys.readouterr().err
    assert f"error: {name}.json: " in err
    assert message in err, err


def test_a_file_the_product_loader_rejects_fails_with_the_loaders_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _user()
    _turns(data)[2]["text"] = "   "
    assert check.main([str(_write(tmp_path, data))]) == 1
    assert "the product loader rejects it" in capsys.readouterr().err


def test_the_minimums_hold_for_the_corpus_only(tmp_path: Path) -> None:
    data = _user("zh-01")
    _write(tmp_path, data)
    assert check.check([tmp_path]).ok
    problems = check.check([tmp_path], minimums=True).problems
    assert f"corpus: zh has 1 users and {len(data['questions'])} questions (at least 10 and 400)" in problems
    assert "corpus: no ja question of family 'single'" in problems


def test_an_empty_folder_is_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main([str(tmp_path)]) == 1
    assert "no corpus files found" in capsys.readouterr().err


def test_bigrams_split_cjk_runs_and_keep_latin_words() -> None:
    assert evaluate.bigrams("我 用 uv 管理Python包") == ["我", "用", "uv", "管理", "python", "包"]
    assert evaluate.bigrams("東京に住む") == ["東京", "京に", "に住", "住む"]
    assert evaluate.bigrams("서울 마포에 살아") == ["서울", "마포", "포에", "살아"]
    assert evaluate.bigrams("、。！") == []


def test_bigram_bm25_ranks_the_matching_message_first() -> None:
    rank = evaluate.bm25_bigram(
        {
            "m1": "我在阿里巴巴做前端开发。",
            "m2": "我家猫叫年糕，今天又把沙发咬坏了。",
            "m3": "我最喜欢的火锅店是小龙坎。",
        }
    )
    assert rank("我家的猫叫什么？")[0] == "m2"
    assert rank("我最喜欢哪家火锅店？")[0] == "m3"
    assert rank("Berlin") == []
    assert rank("。") == []


def test_scores_of_a_ranking() -> None:
    assert evaluate.score(["m2"], ["m2", "m5"]) == {"R@5": 1.0, "R@n": 1.0, "first": 1.0}
    assert evaluate.score(["m2", "m9"], ["m9", "m1", "m2"]) == {"R@5": 1.0, "R@n": 0.0, "first": 1.0}
    assert evaluate.score(["m2", "m9"], ["m1", "m2", "m3", "m4", "m5", "m9"]) == {
        "R@5": 0.5,
        "R@n": 0.0,
        "first": 0.0,
    }
    assert evaluate.score(["m2"], []) == {"R@5": 0.0, "R@n": 0.0, "first": 0.0}


def test_summary_averages_by_language_and_family() -> None:
    rows = [
        {"language": "zh", "family": "single", "system": "s", "R@5": 1.0, "R@n": 1.0, "first": 1.0},
        {"language": "zh", "family": "update", "system": "s", "R@5": 0.0, "R@n": 0.0, "first": 0.0},
    ]
    figures = evaluate.summary(rows)
    assert list(figures) == ["zh/all", "zh/single", "zh/update"]
    assert figures["zh/all"]["s"] == {"n": 2, "R@5": 0.5, "R@n": 0.5, "first": 0.5}
    assert "| **zh/all** | 2 | 0.500 | 0.500 | 0.500 |" in evaluate.markdown(figures, ["s"])


def test_the_results_file_is_json_with_one_line_a_question() -> None:
    rows = [{"user": "zh-01", "R@5": 1.0}, {"user": "zh-02", "R@5": 0.0}]
    text = evaluate.as_json({"commit": "abc"}, {"zh/all": {}}, rows)
    assert json.loads(text) == {"meta": {"commit": "abc"}, "figures": {"zh/all": {}}, "questions": rows}
    assert '{"user": "zh-02", "R@5": 0.0}' in text.splitlines()


class _KeywordEmbedder:
    """One dimension a keyword; a query also matches its keyword's alias (a query embeds unlike a
    stored text, as e5's prefixes make it)."""

    words = ("猫", "火锅", "公司")
    aliases = ("喵星人", "涮锅", "单位")

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(w in t) for w in self.words] for t in texts]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        pairs = list(zip(self.words, self.aliases, strict=True))
        return [[float(w in t or a in t) for w, a in pairs] for t in texts]


def test_the_dense_diagnostic_ranks_by_the_embedder_alone() -> None:
    texts = ["我在公司上班。", "我家猫叫年糕。", "我爱吃火锅。"]
    conv = SimpleNamespace(
        observations=[SimpleNamespace(turn_id=f"m{i}", content=t) for i, t in enumerate(texts, start=1)]
    )
    embedder = _KeywordEmbedder()
    rank = evaluate.dense(embedder)(conv)
    assert rank("我家的猫叫什么？")[0] == "m2"
    assert rank("喵星人叫什么？")[0] == "m2"  # the query side was embedded as a query
    assert rank("哪家涮锅好吃？")[0] == "m3"
    assert rank("天气怎么样？") == ["m1", "m2", "m3"]  # all ties: message order
    asked = SimpleNamespace(
        observations=conv.observations, questions=[SimpleNamespace(question="喵星人呢？")]
    )
    calls: list[list[str]] = []
    embed_queries = embedder.embed_queries
    embedder.embed_queries = lambda texts: calls.append(list(texts)) or embed_queries(texts)  # type: ignore[method-assign]
    rank = evaluate.dense(embedder)(asked)
    assert calls == [["喵星人呢？"]]  # the user's questions, in one batch up front
    assert rank("喵星人呢？")[0] == "m2"
    assert calls == [["喵星人呢？"]]


def test_a_system_whose_embedder_is_missing_is_skipped_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dualmem.errors import ConfigError

    def missing(spec: str) -> None:
        raise ConfigError(f"unknown embedder {spec!r}")

    monkeypatch.setattr(evaluate, "create_embedder", missing)
    assert evaluate.available("bm25-bigram") is None
    assert evaluate.available("dualmem") is None
    assert evaluate.available("dualmem-multilingual") == "ConfigError: unknown embedder 'multilingual'"
    assert evaluate.available("dense-multilingual") == "ConfigError: unknown embedder 'multilingual'"


def _result(
    systems: list[str], commit: str = "abc", files: tuple[str, ...] = ("zh-01.json",)
) -> dict[str, Any]:
    meta = {"dualmem": "/x", "commit": commit, "files": list(files), "k": 10}
    rows = [
        {"language": "zh", "family": "single", "system": s, "R@5": 1.0, "R@n": 1.0, "first": 1.0}
        for s in systems
    ]
    return {
        "meta": {**meta, "systems": systems, "skipped": {}, "seconds": dict.fromkeys(systems, 1.0)},
        "questions": rows,
    }


def test_runs_of_different_systems_merge_into_one_table(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_result(["bm25-bigram", "dualmem"])), encoding="utf-8")
    b.write_text(json.dumps(_result(["dualmem-multilingual"])), encoding="utf-8")
    assert evaluate.main(["--merge", str(a), str(b), "--out", str(tmp_path / "all")]) == 0
    merged = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))
    assert merged["meta"]["systems"] == ["bm25-bigram", "dualmem", "dualmem-multilingual"]
    assert set(merged["figures"]["zh/all"]) == {"bm25-bigram", "dualmem", "dualmem-multilingual"}
    assert "dualmem-multilingual first" in (tmp_path / "all.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit, match="commit differ"):
        evaluate.merge([_result(["dualmem"]), _result(["bm25-bigram"], commit="def")])
    with pytest.raises(SystemExit, match="same system over the same file twice"):
        evaluate.merge([_result(["dualmem"]), _result(["dualmem"])])
    meta, rows = evaluate.merge(
        [_result(["dualmem", "bm25-bigram"]), _result(["dualmem", "bm25-bigram"], files=("ja-01.json",))]
    )
    assert meta["files"] == ["ja-01.json", "zh-01.json"]
    assert meta["seconds"] == {"dualmem": 2.0, "bm25-bigram": 2.0}
    assert len(rows) == 4
    with pytest.raises(SystemExit, match=r"dualmem did not run over ja-01\.json"):
        evaluate.merge([_result(["dualmem", "bm25-bigram"]), _result(["bm25-bigram"], files=("ja-01.json",))])


def test_a_dualmem_system_searches_each_users_own_memory_and_returns_message_ids() -> None:
    conv = load_conversations(SRC / "ko-01.json")[0]
    rank = evaluate._dualmem("hashing")(conv)
    ranked = rank(conv.questions[0].question)
    turn_ids = {str(o.turn_id) for o in conv.observations}
    assert ranked
    assert len(ranked) <= evaluate.K
    assert set(ranked) <= turn_ids
    assert len(set(ranked)) == len(ranked)
