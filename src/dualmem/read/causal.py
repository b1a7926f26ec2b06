"""The causal retrieval channel: what a "why" question's answer is linked to by cause.

A query with cause language (``asks_cause``: "why", "how come", "what led to", "because of", "what
made", "the reason", "what happened after", "as a result") finds its anchors (the ``ANCHORS`` best
of its vector and lexical lists, fused by reciprocal rank) and reaches the memories that state a
cause or a consequence (``states_cause``: "because", "so I", "that's why", "led to", "as a result",
"made me", "inspired", "thanks to", ...) among

- the anchors' session neighbours within ``REACH`` turns either way (write order): a cause told a
  few turns before or after the event it explains, in order of the anchor's rank, then distance;
- a deeper vector and lexical search (``DEEP`` x the channel's size each): the cue-bearing turns an
  index ranks just below its cut;

ranked by reciprocal-rank fusion of those three lists. No edge is stored for it: the causal links
are read from what every write stores (session, order, text). A write-time causal edge was measured
first (``docs/views.md``, "Causal"): on LoCoMo dev, 17 of 661 co-evidence pairs are a cue-bearing
pair within the pool's session window and 27 are further apart in one session, so an edge would
reach almost nothing the pool's neighbours and this read-time reach do not; what does carry signal
is that a cause question's evidence states a cause (26 of its 56 evidence turns carry a cue, 12% of
all turns do).
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping

from dualmem.plane.base import Candidate, SearchStore
from dualmem.read.route import fused_scores
from dualmem.text.query import QueryAnalysis
from dualmem.types import Tenant, Vector

__all__ = ["ANCHORS", "DEEP", "REACH", "asks_cause", "causal_channel", "states_cause"]

#: the query's best hits the channel reaches out from
ANCHORS = 5
#: session turns either way of an anchor the channel reaches
REACH = 4
#: a cue-bearing search goes this many times the channel's size deep in each index
DEEP = 4

_ASKS = re.compile(
    r"\b(?:why|how come|what (?:led|leads|lead) to|led (?:\w+ )?to|because|what made"
    r"|made (?:him|her|them|you|me|us)|reasons?|motivat\w*|inspir\w*|prompted|caus(?:e|ed|es)"
    r"|as a result|result(?:ed|s)? (?:in|from)"
    r"|what happened (?:after|next|then|when)|consequences?|decided?|decision)\b",
    re.IGNORECASE,
)
_STATES = re.compile(
    r"\b(?:because|'cause|cause[sd]?|since|so (?:that|i|we|he|she|they|it|my|now)|that'?s (?:why|what)"
    r"|which is why|this is why|led (?:me |us |him |her |them )?to|leads? to|as a result|result(?:ed|s)? in"
    r"|made me|makes me|got me|pushed me|inspired|inspiring|motivated|motivates|encouraged|thanks to"
    r"|due to|reasons?|therefore|prompted|decided|after (?:that|i|we|my))\b",
    re.IGNORECASE,
)

_Hits = list[tuple[str, float]]


def asks_cause(query: str) -> bool:
    """Whether ``query`` asks about a cause or a consequence ("why", "what led to", ...)."""
    return _ASKS.search(query) is not None


def states_cause(text: str) -> bool:
    """Whether ``text`` states a cause or a consequence ("because", "so I", "that's why", ...)."""
    return _STATES.search(text) is not None


def causal_channel(
    store: SearchStore,
    tenant: Tenant,
    analysis: QueryAnalysis,
    qvec: Vector,
    size: int,
    rows: MutableMapping[str, Candidate],
) -> _Hits:
    """The causal channel's ranked hits (see the module docstring; best first, at most ``size``);
    ``[]`` for a query without cause language. ``rows``: the candidate rows read so far (the
    channel reads the ones it reaches into it)."""
    if size <= 0 or not asks_cause(analysis.query):
        return []
    deep = DEEP * size
    vec = [i for i, _ in store.vectors.search(tenant, qvec, deep)]
    lex = [i for i, _ in store.lexical.search("nodes", tenant, analysis.stripped, deep)]
    fused = fused_scores([vec[:ANCHORS], lex[:ANCHORS]])
    anchors = sorted(fused, key=lambda i: -fused[i])[:ANCHORS]
    near = store.context.session_neighbours(tenant, anchors, REACH)
    reach: list[str] = []
    for anchor in anchors:  # by anchor rank, then distance (the anchor itself first)
        reach.append(anchor)
        reach += [j for j, _ in sorted(near.get(anchor, ()), key=lambda jo: (abs(jo[1]), jo[1]))]
    ids = list(dict.fromkeys([*reach, *vec, *lex]))
    missing = [i for i in ids if i not in rows]
    if missing:
        rows.update(store.context.candidates(missing, tenant))
    cued = {i for i in ids if i in rows and states_cause(rows[i].content)}
    scores = fused_scores(
        [[i for i in order if i in cued] for order in (list(dict.fromkeys(reach)), vec, lex)]
    )
    order = sorted(scores, key=lambda i: -scores[i])[:size]
    return [(i, scores[i]) for i in order]
