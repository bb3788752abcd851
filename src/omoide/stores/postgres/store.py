"""The PostgreSQL + pgvector backend: :class:`PostgresStore`, one object per store role over one
shared :class:`~omoide.stores.postgres._db.PostgresDb` (the asyncpg pool and pgvector settings).

:mod:`omoide.stores.postgres.sessions` explains how appends, version checks and expiry stay
correct with many writers; :mod:`omoide.stores.postgres.migrations` how the schema is migrated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg

from omoide.stores.base import Store
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.postgres.api_keys import PostgresApiKeys
from omoide.stores.postgres.knowledge import PostgresKnowledge
from omoide.stores.postgres.lexical_index import PostgresLexicalIndex
from omoide.stores.postgres.memories import PostgresMemories
from omoide.stores.postgres.search import PostgresSearch
from omoide.stores.postgres.sessions import PostgresSessions
from omoide.stores.postgres.summaries import PostgresSummaries

if TYPE_CHECKING:
    from omoide.settings import Settings


class PostgresStore(Store):
    """All of omoide's storage in PostgreSQL + pgvector.

    Example:
        >>> async with PostgresStore("postgresql://bot:pw@localhost/omoide", settings=s) as store:  # doctest: +SKIP
        ...     session = await store.sessions.get_or_create_session(key)

    Args:
        url: ``postgresql://`` or ``postgres://`` URL; unix sockets as
            ``postgresql://USER@/DB?host=/socket/dir``.
        settings: pool sizes (``db_pool_min`` / ``db_pool_max``) and limits; defaults when ``None``.
        migrate: apply pending migrations in :meth:`open`.

    Raises:
        ConfigError: the URL is not a PostgreSQL URL.
    """

    backend = "postgresql"

    def __init__(self, url: str, *, settings: Settings | None = None, migrate: bool = True) -> None:
        self._db = PostgresDb(url, settings=settings, migrate=migrate)
        self.url = url
        self.sessions = PostgresSessions(self._db)
        self.knowledge = PostgresKnowledge(self._db)
        self.search = PostgresSearch(self._db)
        self.lexical_index = PostgresLexicalIndex(self._db)
        self.memories = PostgresMemories(self._db)
        self.summaries = PostgresSummaries(self._db)
        self.api_keys = PostgresApiKeys(self._db)

    def __repr__(self) -> str:
        state = "open" if self._db.is_open else "closed"
        return f"<PostgresStore {self._db.where} {state}>"

    @property
    def pool(self) -> asyncpg.Pool:
        """The asyncpg pool (for tests and tools).

        Raises:
            StoreError: the store is not open.
        """
        return self._db.pool

    async def open(self) -> None:
        """Connect, migrate when created with ``migrate=True``, and start the pool. Idempotent.

        Raises:
            StoreUnavailable: the server cannot be reached or refuses the login.
            MigrationError: the schema is newer than this code, or pgvector is missing.
        """
        await self._db.open()

    async def close(self) -> None:
        """Close every connection (waiting up to 10 s for calls in flight). Idempotent."""
        await self._db.close()

    async def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied (``[]`` when up to date).

        Works whether or not the store is open; safe to run from several processes at once.

        Raises:
            MigrationError: the schema is newer than this code, or pgvector is missing.
            StoreUnavailable: the server cannot be reached.
        """
        return await self._db.migrate()

    async def pending_migrations(self) -> list[int]:
        """The versions :meth:`migrate` would apply, changing nothing (``--dry-run``)."""
        return await self._db.pending_migrations()

    async def schema_version(self) -> int:
        """The newest applied migration version (0 for an empty database)."""
        return await self._db.schema_version()


__all__ = ["PostgresStore"]
