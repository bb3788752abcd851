"""The PostgreSQL + pgvector backend of the store Protocols.

Driver: asyncpg, chosen by measurement (``benchmarks/pg_drivers.py``,
``docs/bench-notes/pg-driver.md``). Its pool runs with a no-op ``reset``: asyncpg's default
sends ``RESET ALL; UNLISTEN *; ...`` on every release (one more round trip per call),
and this store keeps no session state that changes (no LISTEN, only transaction-scoped
advisory locks; its one session-level setting, pgvector's HNSW scan settings, is made when a
connection opens and never changed); asyncpg still rolls back a transaction left open.

The role objects share one :class:`~omoide.stores.postgres._db.PostgresDb`; how the session
operations stay correct with many writers is told in :mod:`omoide.stores.postgres.sessions`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import asyncpg
import numpy as np
import numpy.typing as npt

from omoide.errors import (
    InvalidInput,
)
from omoide.models import Message
from omoide.stores._erasure_common import ErasureState, check_workspace
from omoide.stores._memory_common import (
    check_changes,
    check_draft,
    check_memory_id,
    check_memory_vector,
    check_scope,
    check_tags,
)
from omoide.stores._summary_common import check_message_scope, check_scope_key, check_summary_draft
from omoide.stores.base import Store
from omoide.stores.memories import ForgetReport, MemoryChanges, MemoryDraft, MemoryHit, MemoryRecord
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _memories as mops
from omoide.stores.postgres import _summaries as sumops
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.postgres.api_keys import PostgresApiKeys
from omoide.stores.postgres.knowledge import PostgresKnowledge
from omoide.stores.postgres.lexical_index import PostgresLexicalIndex
from omoide.stores.postgres.search import PostgresSearch
from omoide.stores.postgres.sessions import PostgresSessions
from omoide.stores.summaries import Summary, SummaryDraft, SummaryKind, SummaryScope

if TYPE_CHECKING:
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 10.0
CLOSE_TIMEOUT_SECONDS = 10.0
_SCHEMES = ("postgresql://", "postgres://")
T = TypeVar("T")


def _check_int(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return value


def _check_id(session_id: object) -> int:
    if isinstance(session_id, bool) or not isinstance(session_id, int):
        raise InvalidInput(f"session_id must be an integer, got {type(session_id).__name__}")
    return session_id


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
        self.memories = self
        self.summaries = self
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

    # ---- memories

    async def insert_memory(
        self, draft: MemoryDraft, *, model: str, vector: npt.NDArray[np.float32] | None
    ) -> MemoryRecord:
        """Store a memory and its vector (see ``MemoryStore``)."""
        check_draft(draft)
        checked = None if vector is None else check_memory_vector(model, vector)
        async with self._db.acquire() as conn:
            return await mops.insert_memory(
                conn, draft, checked[0] if checked else model, checked[1] if checked else None
            )

    async def get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        """The user's memory, or ``None`` (also when it is another user's)."""
        ws, user = check_scope(workspace_id, user_id)
        mid = check_memory_id(memory_id)
        async with self._db.acquire() as conn:
            return await mops.get_memory(conn, ws, user, mid)

    async def update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        *,
        model: str | None = None,
        vector: npt.NDArray[np.float32] | None = None,
    ) -> MemoryRecord:
        """Change the user's memory (see ``MemoryStore``)."""
        ws, user = check_scope(workspace_id, user_id)
        mid = check_memory_id(memory_id)
        check_changes(changes)
        checked = None if vector is None else check_memory_vector(model, vector)
        async with self._db.acquire() as conn:
            return await mops.update_memory(
                conn, ws, user, mid, changes, checked[0] if checked else None, checked[1] if checked else None
            )

    async def delete_memory(self, workspace_id: str, user_id: str, memory_id: int) -> None:
        """Delete the user's memory (see ``MemoryStore``)."""
        ws, user = check_scope(workspace_id, user_id)
        mid = check_memory_id(memory_id)
        async with self._db.acquire() as conn:
            await mops.delete_memory(conn, ws, user, mid)

    async def list_memories(
        self,
        workspace_id: str,
        user_id: str,
        *,
        category: str | None = None,
        tags: Sequence[str] = (),
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """The user's memories, newest first."""
        ws, user = check_scope(workspace_id, user_id)
        lim = _check_int("limit", limit, minimum=0)
        off = _check_int("offset", offset, minimum=0)
        wanted = check_tags(tags)
        async with self._db.acquire() as conn:
            return await mops.list_memories(conn, ws, user, category, wanted, lim, off)

    async def memory_vector_search(
        self,
        workspace_id: str,
        user_id: str,
        *,
        model: str,
        query: npt.NDArray[np.float32],
        k: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[MemoryRecord, float]]:
        """The user's memories most similar to ``query`` (exact, by cosine distance)."""
        ws, user = check_scope(workspace_id, user_id)
        name, q = check_memory_vector(model, query)
        top = _check_int("k", k, minimum=1)
        wanted = check_tags(tags)
        async with self._db.acquire() as conn:
            return await mops.memory_vector_search(
                conn, ws, user, name, q, top, category, wanted, self._db.vector_schema
            )

    async def memory_lexical_search(
        self,
        workspace_id: str,
        user_id: str,
        *,
        tokens: Sequence[str],
        k: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[MemoryRecord, float]]:
        """The user's best full-text matches of any of ``tokens``."""
        ws, user = check_scope(workspace_id, user_id)
        top = _check_int("k", k, minimum=1)
        words = check_tags(tokens)
        wanted = check_tags(tags)
        async with self._db.acquire() as conn:
            return await mops.memory_lexical_search(conn, ws, user, words, top, category, wanted)

    async def memory_recall(
        self,
        workspace_id: str,
        user_id: str,
        *,
        model: str,
        query: npt.NDArray[np.float32],
        tokens: Sequence[str],
        k: int,
        limit: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[MemoryHit]:
        """Hybrid recall on one pooled connection: both rankings, RRF, the ``limit`` fused memories."""
        ws, user = check_scope(workspace_id, user_id)
        name, q = check_memory_vector(model, query)
        top = _check_int("k", k, minimum=1)
        most = _check_int("limit", limit, minimum=1)
        words = check_tags(tokens)
        wanted = check_tags(tags)
        async with self._db.acquire() as conn:
            return await mops.memory_recall(
                conn, ws, user, name, q, words, top, most, category, wanted, self._db.vector_schema
            )

    async def forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """Apply the erasure rule (``docs/privacy.md``) to the user in one transaction; the receipt."""
        ws, user = check_scope(workspace_id, user_id)
        try:
            async with self._db.acquire() as conn:
                return await erasure.erase_user(conn, ws, user)
        finally:
            self._db.tokenizer.forget()

    async def erasure_state(self, workspace_id: str) -> ErasureState:
        """The workspace's erasure generation and its erased users (hashed), for jobs that must not write them back."""
        ws = check_workspace(workspace_id)
        async with self._db.acquire() as conn, conn.transaction():
            return ErasureState(await erasure.erasure_generation(conn, ws), await erasure.erased_users(conn, ws))

    # ---- summaries

    async def latest_summary(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind
    ) -> Summary | None:
        """The newest version, or ``None``."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        async with self._db.acquire() as conn:
            return await sumops.latest_summary(
                conn, workspace_id, SummaryScope(scope).value, scope_id, SummaryKind(kind).value
            )

    async def summary_history(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind, *, limit: int = 20
    ) -> list[Summary]:
        """Versions, newest first."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        lim = _check_int("limit", limit, minimum=0)
        async with self._db.acquire() as conn:
            return await sumops.summary_history(
                conn, workspace_id, SummaryScope(scope).value, scope_id, SummaryKind(kind).value, lim
            )

    async def latest_summaries(self, workspace_id: str, scope: SummaryScope, kind: SummaryKind) -> list[Summary]:
        """The newest version of every scope id of ``scope`` in the workspace."""
        check_scope_key(workspace_id, scope, "-", kind)
        async with self._db.acquire() as conn:
            return await sumops.latest_summaries(conn, workspace_id, SummaryScope(scope).value, SummaryKind(kind).value)

    async def save_summary(self, draft: SummaryDraft, *, new_version: bool) -> Summary:
        """A new version (retried if another writer took the number) or an overwrite of the latest one."""
        check_summary_draft(draft)
        async with self._db.acquire() as conn:
            return await sumops.save_summary(conn, draft, bool(new_version))

    async def scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, *, since: datetime, limit: int = 2000
    ) -> list[Message]:
        """Messages of a channel, thread or user since ``since``, oldest first."""
        check_scope_key(workspace_id, scope, scope_id)
        chosen = check_message_scope(scope)
        if not isinstance(since, datetime):
            raise InvalidInput(f"since must be a datetime, got {type(since).__name__}")
        lim = _check_int("limit", limit, minimum=0)
        async with self._db.acquire() as conn:
            return await sumops.scope_messages(conn, workspace_id, chosen, scope_id, since, lim)

    async def active_scopes(self, *, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        """Workspaces and channel / thread / user ids with messages since ``since``."""
        chosen = check_message_scope(scope)
        if not isinstance(since, datetime):
            raise InvalidInput(f"since must be a datetime, got {type(since).__name__}")
        async with self._db.acquire() as conn:
            return await sumops.active_scopes(conn, since, chosen)


__all__ = ["PostgresStore"]
