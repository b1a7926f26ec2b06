"""The quick search: current memories that share words or entities with a text, fused by reciprocal
rank — no embedder, no model, a few index reads. ``Memory.quick_search`` (and the coding-agent hook,
which must answer within the agent's patience) use it; the adaptive search is ``read/loop.py``.

A text of several clauses (a user's whole prompt) is understood first (``dualmem.read.message`` with
the builtin System One: no model, no embedder): its chatter is dropped, the text searched is what is
left, with each need's own word list when it holds several, fused with the whole text's."""

from __future__ import annotations

from dualmem.control.builtin import BuiltinController
from dualmem.plane.base import MemoryStore
from dualmem.read.message import understand
from dualmem.read.route import rrf
from dualmem.text.entities import extract_entities
from dualmem.types import Node, Tenant

__all__ = ["quick_search"]


def quick_search(store: MemoryStore, tenant: Tenant, text: str, k: int) -> list[Node]:
    """The current memories that share words or entities with ``text``, fused by reciprocal rank."""
    pool = max(1, 3 * k)
    plan = understand(text, BuiltinController().decide)
    texts = [text] if plan is None else [plan.focus, *(t for t, _ in plan.extra)]
    lists = [[i for i, _ in store.lexical.search("nodes", tenant, t, pool)] for t in texts]
    words = [i for i, _ in rrf([r for r in lists if r])]
    entities = extract_entities(text if plan is None else plan.focus)
    need = min(2, len(entities))  # a name alone (the user's own, say) matches too much
    things = [i for i, shared in store.links.entity_search(tenant, entities, pool) if shared >= need]
    fused = [i for i, _ in rrf([r for r in (words, things) if r])]
    nodes = store.get_nodes(fused, tenant)
    current = [nodes[i] for i in fused if i in nodes and nodes[i].valid_to is None]
    return current[: max(0, k)]
