"""Understanding a long query before searching it (issue 47): the user's whole message.

An agent searches memory with what the user just wrote: small talk, news of the day, and somewhere
the need. ``understand`` splits the query into clauses (``dualmem.text.clauses.split``); a query of
one clause is left alone (the search takes exactly the path it always took). Otherwise System One
labels each clause (``message.clause`` of the catalog: ``need``, ``context`` or ``chatter``, one
batched request, so a model backend can do it better than the builtin's cues) and the
:class:`MessagePlan` says what to search:

- ``focus``: the text the search runs on (the candidate pool's query, routing, scoring): the need
  clauses, with the context clauses when the needs alone say too little to be searched (fewer than
  ``SELF_CONTAINED`` content words: "Is spring too soon?" needs the half marathon said before it);
  the whole message when no clause carries a need (nothing to drop anything for);
- ``extra``: more ranked lists to fuse into the pool (``dualmem.read.pool.build_pool``): the whole
  message when anything was left out of the focus (so nothing the labels missed is lost), each need
  clause when there are several (two or three requests in one message: each gets its own vector and
  lexical candidates, so that one need cannot crowd out the other), and each context clause left
  out of the focus; at most ``budget`` clause lists, needs first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dualmem.control import catalog
from dualmem.control.questions import Batch, BatchResult
from dualmem.control.states import MessageState
from dualmem.read.trace import ClauseDecision
from dualmem.text.clauses import content_words, split

__all__ = ["ClauseDecision", "MessagePlan", "understand"]

#: at most this many clause lists join the pool's (needs first): search cost stays bounded
CLAUSE_BUDGET = 4
#: weights of the fused lists (reciprocal-rank fusion): the focus 1, as each need clause; the whole
#: message and a context clause left out of the focus half
WHOLE_WEIGHT = 0.25
CONTEXT_WEIGHT = 0.25
#: needs with at least this many content words are searched without their context clauses
SELF_CONTAINED = 4


@dataclass(frozen=True, slots=True)
class MessagePlan:
    """What a long query's clauses are, and what the search runs on."""

    message: str
    clauses: tuple[ClauseDecision, ...]
    budget: int = CLAUSE_BUDGET

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
        return sum(content_words(t) for t in self.needs) >= SELF_CONTAINED

    @property
    def focus(self) -> str:
        """The text searched in place of the message (see the module docstring)."""
        if not self.needs:
            return self.message
        return " ".join(c.text for c in self.clauses if c.label == "need" or self._in_focus(c))

    def _in_focus(self, c: ClauseDecision) -> bool:
        """A context clause joins the focus when the needs say too little on their own."""
        return c.label == "context" and not self.self_contained

    @property
    def extra(self) -> tuple[tuple[str, float], ...]:
        """(text, weight) of each list fused with the focus's: the whole message, the needs, the
        context left out of the focus."""
        needs = self.needs
        clauses = [(t, 1.0) for t in needs] if len(needs) > 1 else []
        if needs:
            clauses += [
                (c.text, CONTEXT_WEIGHT)
                for c in self.clauses
                if c.label == "context" and not self._in_focus(c)
            ]
        whole = [(self.message, WHOLE_WEIGHT)] if self.focus != self.message else []
        return (*whole, *clauses[: self.budget])


def understand(query: str, ask: Callable[[Batch], BatchResult]) -> MessagePlan | None:
    """The plan of a query of two or more clauses (one System-One request through ``ask``);
    ``None`` for a query of one clause (searched as it is, with no request)."""
    clauses = split(query)
    if len(clauses) < 2:
        return None
    res = ask(Batch.of(MessageState(query, clauses), catalog.message_questions(len(clauses)), "message"))
    decided = []
    for i, text in enumerate(clauses):
        answer = res.choice(f"clause_{i}")
        decided.append(ClauseDecision(text, answer.label, dict(answer.distribution)))
    return MessagePlan(query, tuple(decided))
