"""The Meter: accounting per purpose, the caller-side timeout, the answer cache, result validation."""

from __future__ import annotations

import threading

import pytest

from dualmem.control import catalog
from dualmem.control.builtin import BuiltinController
from dualmem.control.meter import Meter
from dualmem.control.questions import Batch, BatchResult, ChoiceAnswer, NoulAnswer
from dualmem.control.scripted import ScriptedController
from dualmem.errors import ControllerError, ControllerTimeout


def routing(query: str = "Why did Mira buy a bicycle?") -> Batch:
    return Batch(state={"query": query}, questions=catalog.routing_questions(), purpose="routing")


def test_counts_calls_and_questions_by_purpose() -> None:
    meter = Meter(ScriptedController(default=0.5))
    meter.ask(routing())
    meter.ask_many([routing("a"), routing("b")])
    stats = meter.stats
    assert stats.calls_for("routing") == 3
    assert stats.by_purpose["routing"].questions == 18
    assert stats.to_json()["calls"] == 3


def test_cache_answers_repeated_batches_without_a_call() -> None:
    ctl = ScriptedController(default=0.5)
    meter = Meter(ctl, cache_size=8)
    first = meter.ask(routing())
    again = meter.ask(routing())
    assert again.cached
    assert again.result == first.result
    assert len(ctl.batches) == 1
    assert meter.stats.by_purpose["routing"].cache_hits == 1
    meter.clear_cache()
    assert not meter.ask(routing()).cached


class Slow:
    name = "slow"

    def __init__(self) -> None:
        self.release = threading.Event()

    def decide(self, batch: Batch) -> BatchResult:
        self.release.wait(5)
        return BatchResult({n: NoulAnswer(0.5) for n in batch.questions})


def test_timeout_raises_controller_timeout() -> None:
    slow = Slow()
    meter = Meter(slow, timeout_s=0.05)
    try:
        with pytest.raises(ControllerTimeout):
            meter.ask(routing())
        assert meter.stats.by_purpose["routing"].failures == 1
    finally:
        slow.release.set()
        meter.close()


class ThreadNoting(BuiltinController):
    """The builtin decider, noting the thread each request runs on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def decide(self, batch: Batch) -> BatchResult:
        self.threads.append(threading.get_ident())
        return super().decide(batch)


def test_an_inline_backend_runs_on_the_callers_thread_even_with_a_timeout() -> None:
    """The builtin decider is in-process: no watchdog thread, the same answers as without a timeout."""
    inline = ThreadNoting()
    meter = Meter(inline, timeout_s=5.0)
    got = meter.ask(routing(), timeout=1.0)
    assert inline.threads == [threading.get_ident()]
    assert meter._pool is None  # no worker was started
    assert got.result == Meter(BuiltinController()).ask(routing()).result
    assert meter.stats.calls_for("routing") == 1


def test_a_backend_that_is_not_inline_still_gets_a_worker_thread() -> None:
    class Noting:
        name = "noting"

        def __init__(self) -> None:
            self.threads: list[int] = []

        def decide(self, batch: Batch) -> BatchResult:
            self.threads.append(threading.get_ident())
            return BatchResult({n: NoulAnswer(0.5) for n in batch.questions})

    ctl = Noting()
    meter = Meter(ctl, timeout_s=5.0)
    try:
        meter.ask(routing())
        assert len(ctl.threads) == 1
        assert ctl.threads[0] != threading.get_ident()
    finally:
        meter.close()


class Broken:
    name = "broken"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def decide(self, batch: Batch) -> BatchResult:
        return BatchResult(dict.fromkeys(batch.questions, self.answer))  # type: ignore[misc]


@pytest.mark.parametrize(
    "answer",
    [NoulAnswer(1.5), NoulAnswer(float("nan")), ChoiceAnswer("yes", {"yes": 1.0})],
)
def test_malformed_answers_are_errors_not_results(answer: object) -> None:
    with pytest.raises(ControllerError):
        Meter(Broken(answer)).ask(routing())


def test_missing_answers_are_errors() -> None:
    class Partial:
        name = "partial"

        def decide(self, batch: Batch) -> BatchResult:
            first = next(iter(batch.questions))
            return BatchResult({first: NoulAnswer(0.5)})

    with pytest.raises(ControllerError, match="unanswered"):
        Meter(Partial()).ask(routing())


def test_memory_profile_turns_on_the_answer_cache(tmp_path: object) -> None:
    from dualmem import Memory, Profile
    from dualmem.embed import HashingEmbedder

    ctl = ScriptedController({"relation.time": "unknown"}, default=0.5)
    profile = Profile.paper().with_(controller_cache=64, write__consolidation="off")
    with Memory.open(":memory:", embedder=HashingEmbedder(64), controller=ctl, profile=profile) as mem:
        mem.add("Mira walks Biscuit by the canal.", user="u")
        mem.search("Who walks by the canal?", user="u")
        calls = len(ctl.batches)
        mem.search("Who walks by the canal?", user="u")
        assert len(ctl.batches) == calls  # the repeated query was answered from the cache
        assert mem.meter.stats.by_purpose["routing"].cache_hits == 1


def test_shared_by_threads_counts_every_request_exactly() -> None:
    """The write path and the background consolidation thread share one meter: nothing lost or raised.

    Workers mostly hit the cache while another thread keeps clearing it (as a forget does); without
    the meter's lock a hit can be evicted between the lookup and the read (a ``KeyError``).
    """
    import sys

    meter = Meter(ScriptedController(default=0.5), cache_size=4)
    queries = ["first question", "second question", "third question"]
    per_thread, threads_n = 1500, 4
    errors: list[BaseException] = []
    done = threading.Event()

    def work(seed: int) -> None:
        try:
            for i in range(per_thread):
                meter.ask(routing(queries[(seed + i) % len(queries)]))
                if i % 50 == 0:
                    snap = meter.snapshot()
                    assert snap.calls + snap.by_purpose["routing"].cache_hits <= per_thread * threads_n
        except BaseException as exc:
            errors.append(exc)

    def clear() -> None:
        while not done.is_set():
            meter.clear_cache()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible to expose races
    try:
        clearer = threading.Thread(target=clear)
        clearer.start()
        threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        clearer.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    counts = meter.stats.by_purpose["routing"]
    assert counts.calls + counts.cache_hits == per_thread * threads_n
    assert counts.questions == counts.calls * len(catalog.routing_questions())
    assert meter.cached_answers <= 4
