"""Text processing for memories: timestamps, temporal grounding, entities, lexical helpers.

Pure, deterministic functions (stdlib only): safe to call on every write and query.
"""

from __future__ import annotations

from dualmem.text.cues import may_have_time
from dualmem.text.entities import (
    DEFAULT_MAX_ENTITIES,
    EXTRACTORS,
    EntityExtractor,
    RegexEntityExtractor,
    SpacyEntityExtractor,
    create_extractor,
    extract_entities,
    normalize_entity,
    singularize,
)
from dualmem.text.lexical import (
    CJK_RANGES,
    RULE_VERSION,
    STOPWORDS,
    content_tokens,
    fts5_tokens,
    fts_or,
    fts_query,
    has_cjk,
    index_terms,
    index_text,
    index_words,
    overlap,
    porter,
    query_terms,
    tokenize,
)
from dualmem.text.temporal import describe, ground, mentions_time, query_time_focus
from dualmem.text.timeparse import TimeInput, format_day, parse_time

__all__ = [
    "CJK_RANGES",
    "DEFAULT_MAX_ENTITIES",
    "EXTRACTORS",
    "RULE_VERSION",
    "STOPWORDS",
    "EntityExtractor",
    "RegexEntityExtractor",
    "SpacyEntityExtractor",
    "TimeInput",
    "content_tokens",
    "create_extractor",
    "describe",
    "extract_entities",
    "format_day",
    "fts5_tokens",
    "fts_or",
    "fts_query",
    "ground",
    "has_cjk",
    "index_terms",
    "index_text",
    "index_words",
    "may_have_time",
    "mentions_time",
    "normalize_entity",
    "overlap",
    "parse_time",
    "porter",
    "query_terms",
    "query_time_focus",
    "singularize",
    "tokenize",
]
