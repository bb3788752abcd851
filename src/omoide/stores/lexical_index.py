"""The lexical index contract: rewriting the full-text tokens of stored rows.

Search tokenises a query with the function that wrote the index; when omoide's search
tokenizer changes, :func:`omoide.search.lexical_index.rebuild_lexical_index` re-tokenises
every row through this role and records the new tokenizer's name.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence


class LexicalTable(enum.StrEnum):
    """The tables whose ``lexical`` column feeds a full-text index."""

    CHUNKS = "knowledge_chunks"
    MEMORIES = "memories"


class LexicalIndexStore(abc.ABC):
    """Rewriting the lexical tokens of stored rows (after the search tokenizer changed).

    Rows are visited in id order, a batch at a time, so a rebuild can stop and resume;
    every write goes through the same full-text sync as an ordinary insert (SQLite: the
    FTS5 triggers; PostgreSQL: the generated ``tsvector`` columns).
    """

    async def lexical_batch(self, table: LexicalTable, *, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` rows ``(id, content)`` of ``table`` with ``id > after_id``, by id.

        Raises:
            ValueError: ``table`` is not a :class:`LexicalTable`.
        """
        return await self._lexical_batch(LexicalTable(table), after_id, limit)

    async def rewrite_lexical(self, table: LexicalTable, rows: Sequence[tuple[int, str]]) -> None:
        """Set ``lexical`` of each ``(id, tokens)`` (space-separated tokens); unknown ids are skipped.

        For ``knowledge_chunks`` the backend also rewrites each chunk's ``unit_lexical`` from its
        content and line records (:func:`omoide.stores.units.unit_lexical_of`, the current
        tokenizer) where the content is unchanged.

        Raises:
            ValueError: ``table`` is not a :class:`LexicalTable`.
        """
        if rows:
            await self._rewrite_lexical(LexicalTable(table), list(rows))

    async def set_lexical_tokenizer(self, name: str) -> None:
        """Record ``name`` as the tokenizer of the whole lexical index (replacing ``mixed``)."""
        await self._set_lexical_tokenizer(name)

    async def lexical_row_count(self, table: LexicalTable) -> int:
        """Rows in ``table`` (for progress).

        Raises:
            ValueError: ``table`` is not a :class:`LexicalTable`.
        """
        return await self._lexical_row_count(LexicalTable(table))

    @abc.abstractmethod
    async def _lexical_batch(self, table: LexicalTable, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Read a batch (backend)."""

    @abc.abstractmethod
    async def _rewrite_lexical(self, table: LexicalTable, rows: list[tuple[int, str]]) -> None:
        """Write non-empty ``rows`` (backend)."""

    @abc.abstractmethod
    async def _set_lexical_tokenizer(self, name: str) -> None:
        """Record the name (backend)."""

    @abc.abstractmethod
    async def _lexical_row_count(self, table: LexicalTable) -> int:
        """Count the rows (backend)."""


__all__ = ["LexicalIndexStore", "LexicalTable"]
