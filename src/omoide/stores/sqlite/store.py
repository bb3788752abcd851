"""The SQLite backend: :class:`SqliteStore`, one object per store role over one shared
:class:`~omoide.stores.sqlite._db.SqliteDb` (its connections, threads and caches; the module
explains the threading model)."""

from __future__ import annotations

from omoide.settings import Settings
from omoide.stores.base import Store
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._db import DEFAULT_READERS, SqliteDb
from omoide.stores.sqlite.api_keys import SqliteApiKeys
from omoide.stores.sqlite.knowledge import SqliteKnowledge
from omoide.stores.sqlite.lexical_index import SqliteLexicalIndex
from omoide.stores.sqlite.memories import SqliteMemories
from omoide.stores.sqlite.search import SqliteSearch
from omoide.stores.sqlite.sessions import SqliteSessions
from omoide.stores.sqlite.summaries import SqliteSummaries


class SqliteStore(Store):
    """All of omoide's storage in one SQLite file (the embedded default backend).

    Example:
        >>> store = SqliteStore("sqlite:///./data/omoide.db", settings=load_settings(), migrate=True)  # doctest: +SKIP
        >>> async with store:                                                   # doctest: +SKIP
        ...     session = await store.sessions.get_or_create_session(key)

    Args:
        url: ``sqlite:///PATH`` (relative or absolute; missing directories are created)
            or ``sqlite:///:memory:``.
        settings: ``db_busy_timeout_ms`` and ``max_message_bytes`` are used.
        migrate: apply pending migrations in :meth:`open`.
        readers: reader connections (and threads) beside the writer.

    Raises:
        ConfigError: the URL is not an SQLite URL or ``readers`` is below 1.
    """

    backend = "sqlite"

    def __init__(self, url: str, *, settings: Settings, migrate: bool, readers: int = DEFAULT_READERS) -> None:
        self._db = SqliteDb(url, settings=settings, migrate=migrate, readers=readers)
        self.url = url
        self.path = self._db.path
        self.sessions = SqliteSessions(self._db)
        self.knowledge = SqliteKnowledge(self._db)
        self.search = SqliteSearch(self._db)
        self.lexical_index = SqliteLexicalIndex(self._db)
        self.memories = SqliteMemories(self._db)
        self.summaries = SqliteSummaries(self._db)
        self.api_keys = SqliteApiKeys(self._db)

    def __repr__(self) -> str:
        state = "open" if self._db.is_open else "closed"
        return f"<SqliteStore {self.url!r} {state}>"

    async def open(self) -> None:
        """Connect (creating the file and its directory), migrate if asked, start the readers.

        Raises:
            StoreUnavailable: the file cannot be opened or created, or stayed locked.
            MigrationError: the database was migrated by a newer omoide.
            StoreError: any other SQLite failure.
        """
        await self._db.open()

    async def close(self) -> None:
        """Finish queued work and close every connection. Idempotent."""
        await self._db.close()

    async def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied (empty when up to date).

        Safe to run from several processes at once: one applies each version, the
        others wait for its lock (at least a minute) and then find it applied.

        Raises:
            MigrationError: the database was migrated by a newer omoide.
            StoreUnavailable: another process held the write lock for too long.
        """
        return await self._db.on_writer("migrate", self._db.migrate_sync)

    async def schema_version(self) -> int:
        """The newest applied migration version (0 for an empty database)."""
        return await self._db.read("schema_version", migrations.current_version)

    async def pending_migrations(self) -> list[migrations.Migration]:
        """Migrations not applied yet, in order (read-only; for ``omoide migrate --dry-run``).

        Raises:
            MigrationError: the database was migrated by a newer omoide.
        """
        return await self._db.read("pending_migrations", migrations.pending)


__all__ = ["SqliteStore"]
