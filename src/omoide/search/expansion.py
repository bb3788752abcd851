"""Query expansion: the prompt that asks the chat model for alternative queries, and the parser
of its reply (used by :class:`~omoide.search.pipeline.SearchPipeline`)."""

from __future__ import annotations

import re

from omoide.search.results import MAX_QUERY_CHARS

_EXPAND_SYSTEM = (
    "You rewrite search queries for a search over chat history. Reply with alternative queries only, "
    "one per line, in the language of the query, without numbering or explanations."
)
EXPANSION_MAX_TOKENS = 256
"""The answer room reserved for the proposed queries."""
_LIST_MARKER = re.compile(r"^\s*(?:[-*•・]|\d+[.)．）]|\(\d+\))\s*")


def parse_expansions(text: str, query: str, limit: int) -> list[str]:
    """Alternative queries from a model's reply: one per line, list markers and quotes
    stripped, the original query and duplicates dropped, at most ``limit``."""
    out: list[str] = []
    seen = {query.strip().casefold()}
    for line in text.splitlines():
        candidate = _LIST_MARKER.sub("", line).strip().strip("\"'「」“”").strip()
        if not candidate or len(candidate) > MAX_QUERY_CHARS or candidate.endswith((":", "：")):
            continue
        key = candidate.casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(candidate)
        if len(out) >= limit:
            break
    return out


__all__ = ["EXPANSION_MAX_TOKENS", "parse_expansions"]
