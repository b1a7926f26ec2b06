"""Understanding a long query before searching it (issue 47): the user's whole message.

An agent searches memory with what the user just wrote: small talk, news of the day, and somewhere
the need. ``understand`` splits the query into clauses (``dualmem.text.clauses.split``); a query of
one clause is left alone (the search takes exactly the path it always took). Otherwise System One
labels each clause (``message.clause`` of the catalog: ``need``, ``context`` or ``chatter``, one
batched request, so a model backend can do it better than the builtin's cues) and the
:class:`MessagePlan` says what to search:

- ``focus``: the text the search runs on (the candidate pool's query, routing, scoring): the need
  clauses, with the context clauses when the needs alone say too little to be searched (fewer than
  ``MessageWeights.self_contained`` content words: "Is spring too soon?" needs the half marathon
  said before it);
  the whole message when no clause carries a need (nothing to drop anything for);
- ``extra``: more ranked lists to fuse into the pool (``dualmem.read.pool.build_pool``): the whole
  message when anything was left out of the focus (so nothing the labels missed is lost), each need
  clause when there are several (two or three requests in one message: each gets its own vector and
  lexical candidates, so that one need cannot crowd out the other), and each context clause left
  out of the focus; at most ``budget`` clause lists, needs first.

The lists' weights, and what the search does with the turns it found (``adjacent``, ``per_session``:
``dualmem.read.sessions``), are a :class:`MessageWeights`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dualmem.control import catalog
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.states import MessageState
from dualmem.read.trace import ClauseDecision
from dualmem.text.clauses import content_words, split

__all__ = ["WEIGHTS", "ClauseDecision", "MessagePlan", "MessageWeights", "understand"]

#: at most this many clause lists join the pool's (needs first): search cost stays bounded
CLAUSE_BUDGET = 4


@dataclass(frozen=True, slots=True)
class MessageWeights:
    """The weights of the lists fused with the focus's (weighted reciprocal-rank fusion; the focus
    counts 1, as does each of several need clauses) and the self-contained threshold.

    The defaults were chosen by cross-validation over the four dev corpora' message-shaped queries
    (``bench/messages/cv.py``, 2026-12-06: the grid point best on all four, under the fold scorers;
    leave-one-corpus-out beside within-corpus and what each fold chose are in
    ``bench/messages/README.md``). The hand-set weights before were 0.25, 0.25, 4, no ``adjacent``."""

    whole: float = 0.5  # the whole message, when the focus leaves something out
    context: float = 1.0  # each context clause left out of the focus
    self_contained: int = 4  # needs with at least this many content words are searched alone
    adjacent: float = (
        0.25  # a turn gains this much of its scored neighbour's score (``read.sessions.add_up``)
    )
    per_session: int = 0  # at most this many turns of a session before the others' (0: no cap)
    #: the search runs on the whole message (its features, routing and scoring as without a plan)
    #: and each need clause adds its own lists at weight 1 (context clauses at ``context``)
    whole_focus: bool = False

    def __post_init__(self) -> None:
        if min(self.whole, self.context, self.self_contained, self.adjacent, self.per_session) < 0:
            raise ValueError(f"message weights must not be negative: {self}")


#: the weights a search uses (``understand``'s default)
WEIGHTS = MessageWeights()


@dataclass(frozen=True, slots=True)
class MessagePlan:
    """What a long query's clauses are, and what the search runs on."""

    message: str
    clauses: tuple[ClauseDecision, ...]
    budget: int = CLAUSE_BUDGET
    weights: MessageWeights = WEIGHTS

    def _with(self, label: str) -> list[str]:
        return [c.text for c in self.clauses if c.label == label]

    @property
    def needs(self) -> tuple[str, ...]:
        return tuple(self._with("need"))

    @property
    def context(self) -> tuple[str, ...]:
        return tuple(self._with("context"))

    @property
    def self_contained(self) -> bool:
        """The needs say enough to be searched on their own (``SELF_CONTAINED``)."""
        return sum(content_words(t) for t in self.needs) >= self.weights.self_contained

    @property
    def focus(self) -> str:
        """The text searched in place of the message (see the module docstring)."""
        if not self.needs or self.weights.whole_focus:
            return self.message
        return " ".join(c.text for c in self.clauses if c.label == "need" or self._in_focus(c))

    def _in_focus(self, c: ClauseDecision) -> bool:
        """A context clause joins the focus when the needs say too little on their own."""
        return c.label == "context" and not self.self_contained and not self.weights.whole_focus

    @property
    def extra(self) -> tuple[tuple[str, float], ...]:
        """(text, weight) of each list fused with the focus's: the whole message, the needs, the
        context left out of the focus."""
        needs = self.needs
        clauses = [(t, 1.0) for t in needs] if len(needs) > 1 or self.weights.whole_focus else []
        if needs:
            clauses += [
                (c.text, self.weights.context)
                for c in self.clauses
                if c.label == "context" and not self._in_focus(c) and self.weights.context > 0.0
            ]
        whole = (
            [(self.message, self.weights.whole)]
            if self.focus != self.message and self.weights.whole > 0.0
            else []
        )
        return (*whole, *clauses[: self.budget])


def understand(
    query: str, ask: Callable[[Batch], BatchResult], weights: MessageWeights | None = None
) -> MessagePlan | None:
    """The plan of a query of two or more clauses (one System-One request through ``ask``);
    ``None`` for a query of one clause (searched as it is, with no request). ``weights``: by
    default :data:`WEIGHTS` (read when called)."""
    clauses = split(query)
    if len(clauses) < 2:
        return None
    res = ask(Batch.of(MessageState(query, clauses), catalog.message_questions(len(clauses)), "message"))
    decided = []
    for i, text in enumerate(clauses):
        answer = res.choice(f"clause_{i}")
        decided.append(ClauseDecision(text, answer.label, dict(answer.distribution)))
    return MessagePlan(query, tuple(decided), weights=weights or WEIGHTS)
