"""The store: one storage backend, with one object per role.

A backend subclasses :class:`Store` (opening, migrating and closing its database) and gives
it one object per role, each implementing that role's contract:

======================  =========================================  ==========================
attribute               contract                                   what it keeps
======================  =========================================  ==========================
``store.sessions``      :class:`~omoide.stores.sessions.SessionStore`        sessions and messages
``store.knowledge``     :class:`~omoide.stores.knowledge.KnowledgeStore`    sources, chunks, vectors
``store.search``        :class:`~omoide.stores.search.SearchStore`          rankings over chunks
``store.lexical_index`` :class:`~omoide.stores.lexical_index.LexicalIndexStore`  rebuilding tokens
``store.memories``      :class:`~omoide.stores.memories.MemoryStore`        per-user memories
``store.summaries``     :class:`~omoide.stores.summaries.SummaryStore`      versioned summaries
``store.api_keys``      :class:`~omoide.stores.api_keys.ApiKeyStore`        hashed API keys
======================  =========================================  ==========================

Each contract's public methods validate their arguments once, for every backend, and then
call the backend's abstract ``_name`` method; the role objects of one store share its
connections (``SqliteDb`` / ``PostgresDb``). ``docs/architecture.md`` draws the whole path from
:class:`omoide.Memory` to SQL.

Contract notes that every backend honours (and ``tests/conformance`` checks on an SQLite
file, SQLite ``:memory:`` and PostgreSQL):

* Ids are database-assigned integers; keys and platform ids are strings.
* Every timestamp read back is an aware UTC ``datetime``.
* Missing ids: getters return ``None``; mutators raise a
  :class:`~omoide.errors.NotFoundError` (``SessionNotFound`` for sessions).
"""

from __future__ import annotations

import abc
from typing import ClassVar, Self

from omoide.stores.api_keys import ApiKeyStore
from omoide.stores.knowledge import KnowledgeStore
from omoide.stores.lexical_index import LexicalIndexStore
from omoide.stores.memories import MemoryStore
from omoide.stores.search import SearchStore
from omoide.stores.sessions import SessionStore
from omoide.stores.summaries import SummaryStore


class Store(abc.ABC):
    """One storage backend: opening, migrating and closing it, and one object per role.

    Services take the role they need (``SearchPipeline(store.search)``,
    ``MemoryService(store.memories)``); the role objects of one store share its
    connections.
    """

    url: str
    backend: ClassVar[str]  # "sqlite" or "postgresql"
    sessions: SessionStore
    knowledge: KnowledgeStore
    search: SearchStore
    lexical_index: LexicalIndexStore
    memories: MemoryStore
    summaries: SummaryStore
    api_keys: ApiKeyStore

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (and migrate when the store was created with ``migrate=True``)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close every connection. Idempotent."""

    @abc.abstractmethod
    async def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied (empty when up to date).

        Safe to call concurrently from several processes: exactly one applies each
        version, the others wait and then see it applied.
        """

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """The newest applied migration version (0 for an empty database)."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["Store"]
