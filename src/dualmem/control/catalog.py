"""The catalog of System-One decisions (paper §3 and Appendix B) as typed question builders.

Each builder returns ``{name: question}`` for one batch purpose. Question *names* are batch-local
ids (``pair_3_semantic``); decision *keys* (``relation.semantic``) are stable and what a backend
that does not read text dispatches on, together with ``question.target`` (the candidate index).

Where Appendix B quotes a question, the wording here is the paper's, verbatim, with
``candidates[0]`` instantiated as ``candidates[i]``: typing.episodic, typing.preference,
relation.semantic, relation.caused_by, consolidate.representation, route.temporal, route.causal,
traverse.relevance, traverse.new_information, stop.evidence_sufficient and stop.continue_useful.
The others are written in the same style. Question names are not model input (B.1), so every
instruction names the state fields it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias, cast

from dualmem.control.questions import Choice, DecisionKey, Noul, Question
from dualmem.errors import InvalidInput

__all__ = [
    "CLAUSE_LABELS",
    "DECISION_KEYS",
    "REPRESENTATIONS",
    "TIME_RELATIONS",
    "consolidation_questions",
    "message_questions",
    "relation_questions",
    "routing_questions",
    "stopping_questions",
    "traversal_questions",
    "typing_questions",
]

#: labels of the implicit-time Choice: how candidates[i]'s event relates in time to new_memory's
TIME_RELATIONS: tuple[str, ...] = (
    "before",
    "after",
    "during",
    "contains",
    "overlaps",
    "same_time",
    "unknown",
)
#: labels of the message-clause Choice: what a clause of the user's message is to a memory search
CLAUSE_LABELS: tuple[str, ...] = ("need", "context", "chatter")
#: labels of the consolidation representation Choice (B.3)
REPRESENTATIONS: tuple[str, ...] = ("keep_separate", "merge", "promote", "uncertain")

_CAUSAL_FALSE = "Only similarity, chronology, a shared entity, or insufficient causal evidence."
_CAUSAL_TRUE = "The supplied accounts support this direction of causal influence."


def _compare(i: int) -> str:
    return f"Compare new_memory.content with candidates[{i}].content."


def _compare_pair(i: int) -> str:
    return f"Compare pairs[{i}].new_memory.content with pairs[{i}].candidate.content."


def _check_index(i: int) -> None:
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise InvalidInput(f"candidate index must be a non-negative int, got {i!r}")


#: one Noul of a builder: (name, instructions, true, false); its key is ``<group>.<name>``
_Row: TypeAlias = tuple[str, str, str, str]


def _nouls(
    group: str, rows: Sequence[_Row], *, prefix: str = "", target: int | None = None
) -> dict[str, Question]:
    """``{prefix + name: Noul(key=f"{group}.{name}", ...)}`` for each row, in order."""
    return {
        f"{prefix}{name}": Noul(
            key=cast(DecisionKey, f"{group}.{name}"), instructions=ins, true=true, false=false, target=target
        )
        for name, ins, true, false in rows
    }


def typing_questions() -> dict[str, Question]:
    """The four overlapping memory characteristics of eq. 7; state ``{"observation": text, ...}``."""
    return _nouls(
        "typing",
        [
            (
                "episodic",
                "Does observation describe a particular experience or event involving a participant?",
                "A specific past, current or planned event, even if its exact time is unstated.",
                "Only a general fact, procedure or preference with no particular event.",
            ),
            (
                "semantic",
                "Does observation state a general fact or lasting knowledge about a participant, "
                "an entity or the world?",
                "A fact, attribute, definition or relationship that holds beyond a single moment.",
                "Only a particular event, a procedure or a preference with no general fact.",
            ),
            (
                "procedural",
                "Does observation describe how to do something: steps, a method, a routine or instructions?",
                "A reusable procedure, sequence of steps, recipe, instruction or method.",
                "Only a fact, an event or a preference with no reusable way of doing something.",
            ),
            (
                "preference",
                "Does observation express a participant’s preference, aversion or habitual choice?",
                "An attributable like, dislike, preferred option or habitual choice.",
                "An isolated action alone, another person’s unattributed preference, "
                "or no preference evidence.",
            ),
        ],
    )


def relation_questions(i: int, *, alias: bool, implicit_time: bool) -> dict[str, Question]:
    """Relation judgments for the pair (new_memory, candidates[i]) (§3.2, B.2), plus dualmem's
    supersession question (``relation.supersedes``: an extension, see ``config.EXTENSIONS``).

    ``alias`` adds entity alias resolution (only when exact entity ids do not already match);
    ``implicit_time`` adds the temporal Choice (only when timestamps cannot order the pair).
    """
    _check_index(i)
    rows: list[_Row] = [
        (
            "semantic",
            f"{_compare(i)} Would a semantic link between these observations help retrieve a "
            "shared specific topic or fact?",
            "A specific shared topic, fact or event makes the connection useful.",
            "Only generic conversational vocabulary or no meaningful semantic connection.",
        ),
        (
            "caused_by",
            f"{_compare(i)} Does the candidate event cause, enable or explain the event in "
            "new_memory.content?",
            _CAUSAL_TRUE,
            _CAUSAL_FALSE,
        ),
        (
            "causes",
            f"{_compare(i)} Does the event in new_memory.content cause, enable or explain the "
            f"event in candidates[{i}].content?",
            _CAUSAL_TRUE,
            _CAUSAL_FALSE,
        ),
        (
            "same_episode",
            f"Compare new_memory.content and new_memory.timestamp with candidates[{i}].content and "
            f"candidates[{i}].timestamp. Do these observations belong to the same episode: one "
            "continuous event, conversation or activity?",
            "The same specific occasion, conversation or activity, told in parts or from two sides.",
            "Separate occasions, even on the same topic, or insufficient evidence of one episode.",
        ),
        # dualmem extension (the paper leaves supersession to periodic consolidation, B.3): an
        # update is recognised when it is written, so the stale version never answers a query
        (
            "supersedes",
            f"Compare new_memory.content, speaker and timestamp with candidates[{i}].content, speaker "
            f"and timestamp. Does new_memory.content replace what candidates[{i}].content states: the "
            "same subject and the same attribute, now with another value or state?",
            "An update, correction or change of the same attribute of the same subject: the "
            "candidate's account is no longer current.",
            "Another attribute or another subject, a detail that adds without replacing, or a "
            "suggestion that does not change what the candidate's speaker stated.",
        ),
    ]
    if alias:
        rows.append(
            (
                "alias",
                f"Compare new_memory.entities and new_memory.content with candidates[{i}].entities and "
                f"candidates[{i}].content. Do they refer to the same entity under different identifiers?",
                "One entity named differently: a nickname, abbreviation, short or full name, or spelling "
                "variant.",
                "Different entities, or identifiers that merely share a word or a category.",
            )
        )
    out = _nouls("relation", rows, prefix=f"pair_{i}_", target=i)
    if implicit_time:
        out[f"pair_{i}_time"] = _time_question(i)
    return out


def _time_question(i: int) -> Choice:
    return Choice(
        key="relation.time",
        instructions=(
            f"Compare new_memory.content and new_memory.timestamp with candidates[{i}].content and "
            f"candidates[{i}].timestamp. How does the event in candidates[{i}].content relate in time "
            "to the event in new_memory.content? Timestamps record when statements were observed, "
            "not necessarily when the events occurred."
        ),
        options=(
            ("before", "The candidate's event happened before the new memory's event."),
            ("after", "The candidate's event happened after the new memory's event."),
            ("during", "The candidate's event happened within the span of the new memory's event."),
            ("contains", "The candidate's event spans the whole of the new memory's event."),
            ("overlaps", "The two events partly overlap in time, neither containing the other."),
            ("same_time", "The two events happened at the same time."),
            ("unknown", "The supplied accounts do not establish how the two events are ordered."),
        ),
        target=i,
    )


def routing_questions() -> dict[str, Question]:
    """Graph needs, multi-hop need and recency importance of a query (§3.3, B.4); state ``{"query"}``."""
    return _nouls(
        "route",
        [
            (
                "semantic",
                "Does answering query require memories about the same topic, fact or meaning as query?",
                "Memories sharing the subject matter of query are needed.",
                "Topical similarity to query would not surface the needed evidence.",
            ),
            (
                "temporal",
                "Does answering query require event dates, durations, ordering or changes over time?",
                "A time relation is needed to answer correctly.",
                "Dates or ordering are incidental to the answer.",
            ),
            (
                "causal",
                "Does answering query require explaining a cause, motivation, enabling condition or effect?",
                "Causal or explanatory evidence is needed.",
                "Only factual association or chronology is requested.",
            ),
            (
                "entity",
                "Does answering query require evidence about a specific person, place, object or "
                "organisation named in query?",
                "The answer depends on facts tied to a particular named entity.",
                "No particular entity is central, or a named entity is incidental.",
            ),
            (
                "multi_hop_need",
                "Does answering query require combining several separate facts or following a chain "
                "of linked memories?",
                "Two or more distinct facts, entities or reasoning steps must be connected.",
                "A single memory can answer query directly.",
            ),
            (
                "recency_importance",
                "Does answering query depend on the most recent or current state of something?",
                "Newer memories should be preferred because the answer may have changed over time.",
                "The age of a memory does not affect the answer.",
            ),
        ],
    )


def traversal_questions(i: int) -> dict[str, Question]:
    """Scores of candidates[i] reached by graph expansion (§3.3, B.4)."""
    _check_index(i)
    c = f"candidates[{i}]"
    return _nouls(
        "traverse",
        [
            (
                "relevance",
                f"Does {c}.content contain a fact needed to answer query?",
                "Direct answer evidence or a necessary intermediate fact.",
                "Only topic overlap or unrelated content.",
            ),
            (
                "relation_usefulness",
                f"Given query and evidence, is the relation that reached {c} ({c}.view and {c}.label, "
                f"directed from {c}.source to {c}.target) useful for answering query?",
                "The relation type and direction lead toward evidence that query needs.",
                "The relation is incidental to query or leads away from the needed evidence.",
            ),
            (
                "new_information",
                f"Does {c}.content add an answer-relevant detail absent from evidence?",
                "A distinct relevant detail or missing reasoning link.",
                "Only duplicated evidence or irrelevant new details.",
            ),
            (
                "supports_current_evidence",
                f"Does {c}.content corroborate, ground or connect facts in evidence that are needed "
                "to answer query?",
                "It confirms, dates or links facts already in evidence.",
                "It is unrelated to evidence or only repeats its topic.",
            ),
        ],
        prefix=f"candidate_{i}_",
        target=i,
    )


def stopping_questions() -> dict[str, Question]:
    """Evidence assessment after a retrieval round (§3.3 eq. 17-22, B.5)."""
    return _nouls(
        "stop",
        [
            (
                "evidence_sufficient",
                "Does evidence contain support for every factual part of an answer to query?",
                "A grounded answer can be given from these memories without inventing missing facts.",
                "Any required fact or reasoning link is unsupported; related topics alone are insufficient.",
            ),
            (
                "continue_useful",
                "Given query and evidence, is another retrieval round likely to fill a specific gap "
                "or resolve a conflict?",
                "An identifiable missing fact or conflict could benefit from more memory retrieval.",
                "No identifiable retrieval need remains or more memories are unlikely to help.",
            ),
            (
                "missing_evidence",
                "Given query and evidence, is a fact or reasoning link required to answer query "
                "still missing from evidence?",
                "An identifiable part of the answer is not supported by any memory in evidence.",
                "Every required part of the answer is supported by evidence.",
            ),
            (
                "contradiction",
                "Do memories in evidence give conflicting accounts of a point that matters for "
                "answering query?",
                "Two or more memories disagree on a fact the answer depends on, and it is unresolved.",
                "No conflict, or a disagreement explained by time order or irrelevant to query.",
            ),
        ],
    )


def consolidation_questions(i: int) -> dict[str, Question]:
    """Periodic consolidation of pair i (§3.2, B.3).

    One consolidation pass judges several pairs in ONE request, so the state is
    ``{"pairs": [{"new_memory": M, "candidate": M}, ...]}`` and the paper's field references
    (``new_memory``, ``candidates[0]``) become ``pairs[i].new_memory`` and ``pairs[i].candidate``;
    the rest of the wording is the paper's.
    """
    _check_index(i)
    n = f"pairs[{i}].new_memory"
    c = f"pairs[{i}].candidate"
    out = _nouls(
        "consolidate",
        [
            (
                "redundancy",
                f"{_compare_pair(i)} Does one observation repeat the other without adding unique details?",
                "The same fact or event, with no detail in one that the other lacks.",
                "Either observation carries a distinct detail, event, value or time.",
            ),
            (
                "contradiction",
                f"{_compare_pair(i)} Do these observations make incompatible claims about the same subject?",
                "Both accounts cannot hold at once for the same subject.",
                "Compatible accounts, or claims about different subjects.",
            ),
            (
                "obsolescence",
                f"Compare {n}.content and {n}.timestamp with {c}.content and "
                f"{c}.timestamp. Does {n}.content make {c}.content out of date?",
                "A newer account replaces or ends the state the candidate describes.",
                "Both accounts remain current, or they concern different things.",
            ),
            (
                "link_usefulness",
                f"{_compare_pair(i)} Would an additional link between these observations help "
                "future retrieval?",
                "A specific shared topic, entity, event or dependence makes the link useful.",
                "Only generic vocabulary or no meaningful connection.",
            ),
        ],
        prefix=f"pair_{i}_",
        target=i,
    )
    out[f"pair_{i}_representation"] = _representation_question(i)
    return out


def _representation_question(i: int) -> Choice:
    return Choice(
        key="consolidate.representation",
        instructions=(
            f"{_compare_pair(i)} Which representation best fits the relationship between these two "
            "observations? Judge from the supplied accounts; do not assume answers to other questions."
        ),
        options=(
            (
                "keep_separate",
                "Contradictory accounts, unique details that a combined representation would lose, "
                "or distinct facts/events without a supported general pattern.",
            ),
            (
                "merge",
                "Compatible accounts of the same fact or event can be combined without losing "
                "unique details.",
            ),
            (
                "promote",
                "Distinct repeated episodes explicitly support a stable general pattern suitable for "
                "semantic abstraction; prefer this over merge for repeated events.",
            ),
            ("uncertain", "Insufficient evidence to choose a safe combined or separate representation."),
        ),
        target=i,
    )


def message_questions(n: int) -> dict[str, Question]:
    """What each of the ``n`` clauses of a long query is to the search (dualmem's extension, issue
    47: the paper's routing reads a clean question; an agent sends the user's whole message); state
    ``{"message", "clauses"}``. One Choice per clause: it carries a need, context the need builds
    on, or small talk the search should not chase."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInput(f"a message has at least one clause, got {n!r}")
    return {f"clause_{i}": _clause_question(i) for i in range(n)}


def _clause_question(i: int) -> Choice:
    return Choice(
        key="message.clause",
        instructions=(
            f"message is what a user just wrote to an assistant; clauses[{i}] is one of its clauses. "
            f"What is clauses[{i}] to a search of the user's earlier conversations for what the "
            "assistant needs to recall to reply?"
        ),
        options=(
            (
                "need",
                "A question, a request, or a reference to something said or done before (like last "
                "time, the one I mentioned, again, still): what the search must find.",
            ),
            (
                "context",
                "A statement naming the people, things, places or times the need is about, which the "
                "search should match as well.",
            ),
            (
                "chatter",
                "Greetings, thanks, apologies, news of the day or other small talk that no earlier "
                "conversation is needed for.",
            ),
        ),
        target=i,
    )


def _all_keys() -> frozenset[str]:
    builders: list[dict[str, Question]] = [
        typing_questions(),
        relation_questions(0, alias=True, implicit_time=True),
        routing_questions(),
        traversal_questions(0),
        stopping_questions(),
        consolidation_questions(0),
        message_questions(1),
    ]
    return frozenset(q.key for batch in builders for q in batch.values())


#: every decision key of the catalog (31)
DECISION_KEYS: frozenset[str] = _all_keys()
