"""How often a question's evidence turns are linked by an entity the entity channel's walk can use.

``read.ppr`` reaches a second evidence turn through an entity it shares with the first. Whether
noun phrases (not only the names and single nouns the write path stores: ``text.entities``) would
give that walk more bridges is a question about the corpora, answered here without any build: for
each question of a co-evidence category (LoCoMo multi-hop, the agent chats' and Mem-Gallery's
multi-session questions), each pair of its evidence turns is *linked* under an entity set when the
two share an entity of it that is no speaker's name (nor one of its words) and that links at most
``max(ENTITY_FLOOR, ENTITY_SHARE x turns)`` of the conversation's turns (the walk's own cut). The
entity sets:

- ``stored``: what the write path stores (``extract_entities``, at most 12 a turn);
- ``uncapped``: the same extractor without the cap (every name and salient noun);
- ``phrases``: ``uncapped`` and every two adjacent words of a turn whose second is one of its
  entities and whose first is no stopword ("pottery class", "support group", "new job"): a
  phrase can be rare where its words are common.

``python -m research.entity_bridges [--corpora ...]`` prints, per corpus and set, the share of
evidence pairs linked and the share linked that ``stored`` does not link.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from dualmem.conversations import Conversation
from dualmem.read.channels import ENTITY_FLOOR, ENTITY_SHARE
from dualmem.text.entities import extract_entities, normalize_entity, singularize
from dualmem.text.lexical import STOPWORDS
from research.corpora import CO_EVIDENCE, conversations

__all__ = ["SETS", "bridges", "entity_sets", "main"]

SETS = ("stored", "uncapped", "phrases")
_WORD = re.compile(r"[^\W\d_][\w'-]*")


def entity_sets(text: str, speaker: str | None) -> dict[str, frozenset[str]]:
    """A turn's entities under each of ``SETS``."""
    stored = frozenset(extract_entities(text, speaker=speaker))
    uncapped = frozenset(extract_entities(text, speaker=speaker, limit=10_000))
    words = [singularize(normalize_entity(w)) for w in _WORD.findall(text)]
    pairs = {f"{a} {b}" for a, b in pairwise(words) if b in uncapped and len(a) > 2 and a not in STOPWORDS}
    return {"stored": stored, "uncapped": uncapped, "phrases": uncapped | pairs}


def _co_evidence(conv: Conversation) -> list[tuple[str, ...]]:
    session = {o.turn_id: o.session for o in conv.observations}
    return [
        qa.evidence
        for qa in conv.questions
        if len(qa.evidence) >= 2
        and (qa.category in CO_EVIDENCE or len({session.get(t) for t in qa.evidence}) >= 2)
    ]


def bridges(conv: Conversation) -> dict[str, tuple[int, int, int]]:
    """Per entity set: (evidence pairs, pairs linked, pairs linked that ``stored`` does not link)."""
    skip: set[str] = set()
    for o in conv.observations:
        if o.speaker:
            name = normalize_entity(o.speaker)
            skip.update({name, *name.split()})
    ents = {o.turn_id: entity_sets(o.content, o.speaker) for o in conv.observations if o.turn_id}
    cap = max(ENTITY_FLOOR, ENTITY_SHARE * len(ents))
    kept: dict[str, dict[str, frozenset[str]]] = {}
    for name in SETS:
        df = Counter(e for sets in ents.values() for e in sets[name])
        kept[name] = {
            t: frozenset(e for e in sets[name] if e not in skip and df[e] <= cap) for t, sets in ents.items()
        }
    out: dict[str, tuple[int, int, int]] = {}
    for name in SETS:
        pairs = linked = new = 0
        for evidence in _co_evidence(conv):
            turns = [t for t in dict.fromkeys(evidence) if t in ents]
            for i, a in enumerate(turns):
                for b in turns[i + 1 :]:
                    pairs += 1
                    here = bool(kept[name][a] & kept[name][b])
                    linked += here
                    new += here and not kept["stored"][a] & kept["stored"][b]
        out[name] = (pairs, linked, new)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", nargs="+", default=["locomo", "agentchat", "memgallery"])
    ns = parser.parse_args(argv)
    print("corpus      set        pairs  linked  linked, not by stored")
    for corpus in ns.corpora:
        total = {name: [0, 0, 0] for name in SETS}
        for conv in conversations(corpus):
            for name, counts in bridges(conv).items():
                for i, v in enumerate(counts):
                    total[name][i] += v
        for name, (pairs, linked, new) in total.items():
            share = linked / pairs if pairs else 0.0
            print(f"{corpus:<11} {name:<9} {pairs:6d}  {share:6.3f}  {new / pairs if pairs else 0.0:6.3f}")


if __name__ == "__main__":
    main()
