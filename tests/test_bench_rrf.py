"""The bench's hybrid baseline fuses with the profile's RRF kappa (eq. 16), not a literal."""

from __future__ import annotations

import pytest

from dualmem import Memory
from dualmem.bench.locomo import system_spec
from dualmem.bench.runner import _retrieve
from dualmem.config import Profile
from dualmem.control.scripted import ScriptedController
from dualmem.conversations import Conversation
from dualmem.embed import HashingEmbedder
from dualmem.plane import InMemoryStore
from dualmem.read.route import rrf
from dualmem.types import Tenant

TEXTS = ["old lake rain broke", "red lake park sushi", "lake bicycle trip bike", "road sushi broke old"]
QUERY = "old bike broke in the rain"


@pytest.mark.parametrize("kappa", [1, 60, 1000])
def test_hybrid_scores_are_rrf_with_the_profiles_kappa(kappa: int) -> None:
    profile = Profile.paper().with_(
        write__relations_enabled=False, write__typing_enabled=False, write__consolidation="off",
        read__rrf_kappa=kappa,
    )  # fmt: skip
    controller = ScriptedController({}, default=0.0)
    with Memory(InMemoryStore(), HashingEmbedder(64), controller, profile=profile) as mem:
        for text in TEXTS:
            mem.add(text, user="c")
        evidence, _ = _retrieve(mem, system_spec("hybrid"), Conversation("c", ()), QUERY, 3)
        tenant, pool = Tenant("c"), profile.read.pool
        vec = [i for i, _ in mem.store.vector_search(tenant, mem.embedder.embed([QUERY])[0], pool)]
        lex = [i for i, _ in mem.store.lexical_search(tenant, QUERY, pool)]
    expected = rrf([vec, lex], kappa)[:3]
    assert [e.node.id for e in evidence] == [i for i, _ in expected]
    assert [e.score for e in evidence] == pytest.approx([s for _, s in expected])
    assert evidence[0].score > 1 / (kappa + 1)  # ranked in both lists
