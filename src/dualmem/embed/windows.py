"""What is embedded for a node, in one place (write path, consolidation, re-embedding).

A node's vector is of its content only. The speaker is a field (the FTS5 ``speaker`` column, the
pool's speaker features), never part of the vector: a name in the embedded text dominates the
query vector and pulls in short, content-free turns of that speaker (issue 10).
"""

from __future__ import annotations

__all__ = ["embedding_text"]


def embedding_text(content: str) -> str:
    """The text embedded for a node whose content is ``content``: the content itself."""
    return content
