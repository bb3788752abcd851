"""The lexical index text of a row: its search tokens, space-separated, within PostgreSQL's limits.

Both stores index the same string: SQLite in FTS5, PostgreSQL as
``to_tsvector('simple', lexical)``. A ``tsvector`` refuses more than 1 MB of distinct
lexemes ("string is too long for tsvector": one imported message of ~150k distinct
words failed a whole import) and silently drops a lexeme of 2 KB or more, while FTS5
takes anything. :func:`lexical_text` bounds the string where it is built, so both
backends index exactly the same tokens and PostgreSQL never rejects a row:

* a token longer than :data:`MAX_TOKEN_BYTES` (UTF-8) is left out (a base64 blob or a
  run of one letter: nobody searches for it);
* once the distinct tokens kept add up to :data:`MAX_DISTINCT_BYTES`, tokens not seen yet
  are left out; repeats of kept tokens still count (the ranking sees their frequency).

A chunk of ``chunk_max_tokens`` (at most 100,000 cl100k tokens) is far below these
bounds in practice; they matter for hostile or absurd text only. PostgreSQL also caps
positions at 16,383 (later occurrences share that position): ranking only, no error.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_TOKEN_BYTES = 1024
"""Longest token kept, in UTF-8 bytes (PostgreSQL's lexeme limit is 2,047; its parser may
split a token, never merge two)."""

MAX_DISTINCT_BYTES = 256 * 1024
"""Distinct tokens kept, in UTF-8 bytes together: a quarter of ``tsvector``'s 1 MB, so
PostgreSQL's own parsing of a token into parts (``a-b`` → ``a-b``, ``a``, ``b``) still fits."""


def lexical_text(tokens: Iterable[str]) -> str:
    """``tokens`` joined by spaces, bounded as the module docstring says.

    >>> lexical_text(["天気", "sunny", "天気"])
    '天気 sunny 天気'
    >>> lexical_text(["ok", "x" * 2000])
    'ok'
    """
    kept: list[str] = []
    seen: set[str] = set()
    distinct = 0
    full = False
    for token in tokens:
        if token in seen:
            kept.append(token)
            continue
        if full:
            continue
        size = len(token.encode("utf-8"))
        if size > MAX_TOKEN_BYTES or not token:
            continue
        if distinct + size > MAX_DISTINCT_BYTES:
            full = True
            continue
        seen.add(token)
        distinct += size
        kept.append(token)
    return " ".join(kept)


__all__ = ["MAX_DISTINCT_BYTES", "MAX_TOKEN_BYTES", "lexical_text"]
