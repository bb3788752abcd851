"""The PostgreSQL connection pool that every role object of one :class:`PostgresStore` shares.

Driver: asyncpg, chosen by measurement (``benchmarks/pg_drivers.py``,
``docs/bench-notes/pg-driver.md``). Its pool runs with a no-op ``reset``: asyncpg's default
sends ``RESET ALL; UNLISTEN *; ...`` on every release (one more round trip per call),
and this store keeps no session state that changes (no LISTEN, only transaction-scoped
advisory locks; its one session-level setting, pgvector's HNSW scan settings, is made when a
connection opens and never changed); asyncpg still rolls back a transaction left open.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import asyncpg

from omoide.errors import ConfigError, StoreError
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._bm25 import LexemeStats
from omoide.stores.postgres._errors import redact_url, translate_errors
from omoide.stores.postgres._workspaces import WorkspaceOf
from omoide.stores.postgres.citus import citus_installed, prepare_connection, workers_hnsw_ef_search
from omoide.stores.postgres.migrations import (
    LATEST_VERSION,
    apply_migrations,
    check_not_newer,
    current_version,
    pending_migrations,
)
from omoide.stores.postgres.vector import register_vector_types, vector_extension

if TYPE_CHECKING:
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

CUSTOM_PLANS = "SET plan_cache_mode = force_custom_plan"
"""Run on every pooled connection (see :func:`omoide.stores.postgres._search.lexical_ranking_sql`)."""

CONNECT_TIMEOUT_SECONDS = 10.0
CLOSE_TIMEOUT_SECONDS = 10.0
SCHEMES = ("postgresql://", "postgres://")
T = TypeVar("T")


@dataclass(slots=True)
class Reused(Generic[T]):
    """A value read from the database and reused for a while (``None`` is a value too)."""

    value: T | None = None
    read_at: float = -math.inf

    def fresh(self, ttl: float) -> bool:
        """Whether it was read at most ``ttl`` seconds ago."""
        return time.monotonic() - self.read_at <= ttl

    def keep(self, value: T | None) -> None:
        self.value, self.read_at = value, time.monotonic()

    def forget(self) -> None:
        self.read_at = -math.inf


async def _keep_connection(conn: asyncpg.Connection) -> None:
    """Pool ``reset`` hook: nothing to reset (see the module docstring)."""


class PostgresDb:
    """The pool, the pgvector settings and the values reused across calls of one PostgreSQL database.

    Role objects (``PostgresSessions``, ``PostgresKnowledge``, …) take connections from
    :meth:`acquire`; the store opens and closes it.

    Args:
        url: ``postgresql://`` or ``postgres://`` URL.
        settings: pool sizes (``db_pool_min`` / ``db_pool_max``) and limits; defaults when ``None``.
        migrate: apply pending migrations in :meth:`open`.

    Raises:
        ConfigError: the URL is not a PostgreSQL URL.
    """

    def __init__(self, url: str, *, settings: Settings | None = None, migrate: bool = True) -> None:
        if not isinstance(url, str) or not url.startswith(SCHEMES):
            raise ConfigError(
                f"PostgresStore needs a postgresql:// URL (e.g. postgresql://user:pass@localhost/omoide), got {url!r:.80}"
            )
        if settings is None:
            from omoide.settings import Settings

            settings = Settings.model_construct()  # defaults, without reading the environment
        self.url = url
        self.where = redact_url(url)
        self.settings = settings
        self._migrate_on_open = migrate
        self._pool: asyncpg.Pool | None = None
        self.vector_schema: str | None = None
        # the HNSW settings every pooled connection starts with: the pipeline's searches
        # (search_candidates rows) then need no transaction around SET LOCAL
        self.session_ef_search: int | None = sops.hnsw_ef_search(settings.hnsw_ef_search, settings.search_candidates)
        self._open_lock = asyncio.Lock()
        self.stats: Reused[LexemeStats] = Reused()
        """The chunks' lexeme statistics (BM25), reused for ``LEXEME_STATS_TTL`` seconds."""
        self.workspaces = WorkspaceOf()
        """The workspace of a session / source id, so by-id statements are routed (Citus)."""
        self.citus = False
        """Whether the database is a Citus coordinator (read in :meth:`open`): claims then go per workspace."""
        self.tokenizer: Reused[str] = Reused()
        """The lexical index's tokenizer name, reused for ``TOKENIZER_TTL`` seconds; chunk writes forget it."""
        self.background: set[asyncio.Task[None]] = set()
        """Reads the roles run off a call's path (the lexeme statistics' refresh); cancelled by :meth:`close`."""

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    @property
    def pool(self) -> asyncpg.Pool:
        """The asyncpg pool (for other store modules and tests).

        Raises:
            StoreError: the store is not open.
        """
        if self._pool is None:
            raise StoreError(
                f"PostgresStore({self.where}) is not open: use `async with store:` or `await store.open()`"
            )
        return self._pool

    async def open(self) -> None:
        """Connect, migrate when created with ``migrate=True``, and start the pool. Idempotent.

        Raises:
            StoreUnavailable: the server cannot be reached or refuses the login.
            MigrationError: the schema is newer than this code, or pgvector is missing.
        """
        async with self._open_lock:
            if self._pool is not None:
                return
            with translate_errors(self.url):
                conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT_SECONDS)
                try:
                    if self._migrate_on_open:
                        await apply_migrations(conn, where=self.where)
                    else:
                        version = await current_version(conn)
                        check_not_newer(version, where=self.where)
                        if version < LATEST_VERSION:
                            logger.warning(
                                "schema_behind",
                                extra={
                                    "store": "postgresql",
                                    "schema_version": version,
                                    "latest": LATEST_VERSION,
                                    "hint": "run `omoide migrate` or open the store with migrate=True",
                                },
                            )
                    ext = await vector_extension(conn)
                    self.citus = await citus_installed(conn)
                    # a session SET does not reach the workers: each search sets its own, unless
                    # the workers' own defaults already are the search's (one statement per search)
                    if self.citus and await workers_hnsw_ef_search(conn) != self.session_ef_search:
                        self.session_ef_search = None
                finally:
                    await conn.close()
                self.vector_schema = ext[0] if ext else None
                self._pool = await asyncpg.create_pool(
                    self.url,
                    min_size=self.settings.db_pool_min,
                    max_size=self.settings.db_pool_max,
                    init=self._init_connection,
                    reset=_keep_connection,
                    timeout=CONNECT_TIMEOUT_SECONDS,
                )
            logger.debug(
                "store_opened",
                extra={"store": "postgresql", "url": self.where, "pool_min": self.settings.db_pool_min},
            )

    async def _init_connection(self, conn: asyncpg.Connection) -> None:
        if self.citus:  # before any type look-up (see prepare_connection)
            await prepare_connection(conn)
        # each execution planned for its own parameters: a cached generic plan is costed for an
        # average workspace and can cost a big one ~4x (sops.lexical_ranking_sql)
        await conn.execute(CUSTOM_PLANS)
        if self.vector_schema is not None:
            await register_vector_types(conn, self.vector_schema)
        if self.session_ef_search is not None:
            try:
                await sops.set_hnsw_session(conn, self.session_ef_search)
            except asyncpg.PostgresError as exc:  # an old pgvector: every search sets its own, as before
                logger.warning("hnsw_session_settings_failed", extra={"error": str(exc)})
                self.session_ef_search = None

    async def close(self) -> None:
        """Close every connection (waiting up to 10 s for calls in flight). Idempotent."""
        async with self._open_lock:
            tasks, self.background = self.background, set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            pool, self._pool = self._pool, None
            if pool is None:
                return
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                    await pool.close()
            except TimeoutError:
                logger.warning("store_close_timeout", extra={"store": "postgresql", "url": self.where})
                pool.terminate()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection, or a one-off one when the store is not open (migrations only)."""
        with translate_errors(self.url):
            if self._pool is not None:
                async with self._pool.acquire() as conn:
                    yield conn
                return
            conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT_SECONDS)
            try:
                yield conn
            finally:
                await conn.close()

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        pool = self.pool
        with translate_errors(self.url):
            async with pool.acquire() as conn:
                yield conn

    async def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied (``[]`` when up to date).

        Works whether or not the store is open; safe to run from several processes at once.

        Raises:
            MigrationError: the schema is newer than this code, or pgvector is missing.
            StoreUnavailable: the server cannot be reached.
        """
        async with self.connection() as conn:
            applied = await apply_migrations(conn, where=self.where)
            ext = await vector_extension(conn)
        if self._pool is not None and ext is not None and self.vector_schema is None:
            self.vector_schema = ext[0]
            await self._pool.expire_connections()  # new connections register the vector types
        return applied

    async def pending_migrations(self) -> list[int]:
        """The versions :meth:`migrate` would apply, changing nothing (``--dry-run``)."""
        async with self.connection() as conn:
            return [m.version for m in await pending_migrations(conn, where=self.where)]

    async def schema_version(self) -> int:
        """The newest applied migration version (0 for an empty database)."""
        async with self.connection() as conn:
            return await current_version(conn)


__all__ = ["CLOSE_TIMEOUT_SECONDS", "CONNECT_TIMEOUT_SECONDS", "SCHEMES", "PostgresDb", "Reused"]
