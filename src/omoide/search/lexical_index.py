"""Rebuilding the lexical index when the search tokenizer changes.

Lexical search only works when a query is tokenised by the same function that wrote the
index (:mod:`omoide.text.tokenize`). Each store records the name and version of the
tokenizer that wrote its chunks (``sudachi-core:v3``, ``ngram:v1``, …). When omoide's
tokenizer changes (a new version, or SudachiPy installed or removed), search keeps
tokenising queries with the recorded tokenizer, so nothing is missed, and
:func:`rebuild_lexical_index` (``omoide reindex --lexical``) re-tokenises every chunk and
memory with the current tokenizer, then records its name.

The rebuild visits rows in id order in batches and can be interrupted and run again.
Rows written meanwhile by the application already use the current tokenizer.

Chunk text is re-tokenised the way the archiver tokenises it: each line's author name
and text, without the ``[2026-01-19 10:00] **Alice (User)**:`` header's time and labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.stores.search import SearchStore
from omoide.text import SearchTokenizer, get_search_tokenizer, lexical_text, tokenizer_named
from omoide.text.chat_lines import chunk_lexical_text

BATCH = 500


@dataclass(slots=True)
class LexicalRebuildReport:
    """What :func:`rebuild_lexical_index` did."""

    tokenizer: str
    previous: str | None
    rows: dict[str, int] = field(default_factory=dict)  # table → rows visited


def _tokens(table: LexicalTable, content: str) -> str:
    tokenizer = get_search_tokenizer()
    text = chunk_lexical_text(content) if table is LexicalTable.CHUNKS else content
    return lexical_text(tokenizer.tokenize(text))


MIXED_TOKENIZERS = "mixed"
"""What the stores record when different tokenizers wrote the index."""


async def query_tokenizer(search: SearchStore, notes: list[str]) -> SearchTokenizer:
    """The tokenizer that wrote the index (the same function at both ends), and a note
    when the index should be rebuilt with the current one (see this module)."""
    current = get_search_tokenizer()
    indexed = await search.lexical_tokenizer()
    if indexed is None or indexed == current.name:
        return current
    recorded = tokenizer_named(indexed)
    if recorded is not None:
        notes.append(
            f"the lexical index was written by {indexed}; queries use it until "
            f"`omoide reindex --lexical` rebuilds the index with {current.name}"
        )
        return recorded
    if indexed == MIXED_TOKENIZERS:
        notes.append(
            "the lexical index was written by different tokenizers; lexical matches may be missed "
            f"until `omoide reindex --lexical` rebuilds it with {current.name}"
        )
    else:
        notes.append(
            f"the lexical index was written by {indexed}, which is not available here; matches may be "
            f"missed until `omoide reindex --lexical` rebuilds it with {current.name}"
        )
    return current


async def lexical_index_is_stale(search: SearchStore) -> bool:
    """Whether the lexical index was written (wholly or partly) by another tokenizer than the
    current one, so :func:`rebuild_lexical_index` should run."""
    recorded = await search.lexical_tokenizer()
    return recorded is not None and recorded != get_search_tokenizer().name


async def rebuild_lexical_index(
    search: SearchStore,
    store: LexicalIndexStore,
    *,
    batch: int = BATCH,
    on_rows: Callable[[LexicalTable, int, int], None] | None = None,
) -> LexicalRebuildReport:
    """Re-tokenise every chunk and memory with the current search tokenizer.

    Args:
        search: the search store (it records the tokenizer that wrote the index).
        store: the lexical index.
        batch: rows per read and write.
        on_rows: progress: ``(table, rows done, rows in the table)`` after each batch.

    Returns:
        The tokenizer now recorded, the one before, and the rows visited per table.
    """
    previous = await search.lexical_tokenizer()
    report = LexicalRebuildReport(tokenizer=get_search_tokenizer().name, previous=previous)
    for table in LexicalTable:
        total = await store.lexical_row_count(table)
        done, after = 0, 0
        while True:
            rows = await store.lexical_batch(table, after_id=after, limit=batch)
            if not rows:
                break
            await store.rewrite_lexical(table, [(row_id, _tokens(table, content)) for row_id, content in rows])
            after = rows[-1][0]
            done += len(rows)
            if on_rows is not None:
                on_rows(table, done, max(total, done))
        report.rows[table.value] = done
    await store.set_lexical_tokenizer(report.tokenizer)
    return report


__all__ = [
    "MIXED_TOKENIZERS",
    "LexicalRebuildReport",
    "chunk_lexical_text",
    "lexical_index_is_stale",
    "query_tokenizer",
    "rebuild_lexical_index",
]
