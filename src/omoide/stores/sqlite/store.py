"""The SQLite backend: :class:`SqliteStore`, one object per store role over one :class:`SqliteDb`
(connections and executors; see :mod:`omoide.stores.sqlite._db` for the threading model)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import Message, utcnow
from omoide.settings import Settings
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
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _memories as mops
from omoide.stores.sqlite import _summaries as sumops
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._db import DEFAULT_READERS, SqliteDb
from omoide.stores.sqlite.api_keys import SqliteApiKeys
from omoide.stores.sqlite.knowledge import SqliteKnowledge
from omoide.stores.sqlite.lexical_index import SqliteLexicalIndex
from omoide.stores.sqlite.search import SqliteSearch
from omoide.stores.sqlite.sessions import SqliteSessions
from omoide.stores.summaries import Summary, SummaryDraft, SummaryKind, SummaryScope

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
        self.memories = self
        self.summaries = self
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

    # ---- memories

    async def insert_memory(
        self, draft: MemoryDraft, *, model: str, vector: npt.NDArray[np.float32] | None
    ) -> MemoryRecord:
        """Store a memory and its vector (see ``MemoryStore``)."""
        check_draft(draft)
        checked = None if vector is None else check_memory_vector(model, vector)
        return await self._db.on_writer(
            "insert_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.insert_memory_tracked,
            draft,
            checked[0] if checked else model,
            checked[1] if checked else None,
            utcnow(),
        )

    async def get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        """The user's memory, or ``None`` (also when it is another user's)."""
        ws, user = check_scope(workspace_id, user_id)
        return await self._db.read("get_memory", mops.get_memory, ws, user, check_memory_id(memory_id))

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
        check_changes(changes)
        checked = None if vector is None else check_memory_vector(model, vector)
        return await self._db.on_writer(
            "update_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.update_memory_tracked,
            ws,
            user,
            check_memory_id(memory_id),
            changes,
            checked[0] if checked else None,
            checked[1] if checked else None,
            utcnow(),
        )

    async def delete_memory(self, workspace_id: str, user_id: str, memory_id: int) -> None:
        """Delete the user's memory (see ``MemoryStore``)."""
        ws, user = check_scope(workspace_id, user_id)
        await self._db.on_writer(
            "delete_memory",
            mops.tracked_write,
            self._db.memory_cache,
            mops.delete_memory_tracked,
            ws,
            user,
            check_memory_id(memory_id),
        )

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
        _check_count("limit", limit)
        _check_count("offset", offset)
        return await self._db.read(
            "list_memories", mops.list_memories, ws, user, category, check_tags(tags), limit, offset
        )

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
        """The user's memories most similar to ``query`` (exact scan of that user's vectors)."""
        ws, user = check_scope(workspace_id, user_id)
        name, q = check_memory_vector(model, query)
        if _int("k", k) < 1:
            raise InvalidInput(f"k must be at least 1, got {k}")
        return await self._db.read(
            "memory_vector_search",
            mops.memory_vector_search,
            self._db.memory_cache,
            ws,
            user,
            name,
            q,
            k,
            category,
            check_tags(tags),
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
        """The user's best BM25 matches of any of ``tokens`` (over their own memories only)."""
        ws, user = check_scope(workspace_id, user_id)
        if _int("k", k) < 1:
            raise InvalidInput(f"k must be at least 1, got {k}")
        words = check_tags(tokens)
        return await self._db.read(
            "memory_lexical_search",
            mops.memory_lexical_search,
            self._db.memory_cache,
            ws,
            user,
            words,
            k,
            category,
            check_tags(tags),
        )

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
        """Hybrid recall in one reader call: both rankings from the user's cached indexes, RRF,
        then only the ``limit`` fused rows."""
        ws, user = check_scope(workspace_id, user_id)
        name, q = check_memory_vector(model, query)
        if _int("k", k) < 1 or _int("limit", limit) < 1:
            raise InvalidInput(f"k and limit must be at least 1, got {k} and {limit}")
        return await self._db.read(
            "memory_recall",
            mops.memory_recall,
            self._db.memory_cache,
            ws,
            user,
            name,
            q,
            check_tags(tokens),
            k,
            limit,
            category,
            check_tags(tags),
        )

    async def erasure_state(self, workspace_id: str) -> ErasureState:
        """The workspace's erasure generation and its erased users (hashed), for jobs that must not write them back."""
        ws = check_workspace(workspace_id)
        return await self._db.read("erasure_state", _erasure_state, ws)

    async def forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """Apply the erasure rule (``docs/privacy.md``) to the user in one transaction; the receipt."""
        ws, user = check_scope(workspace_id, user_id)
        # the slow part (tokenising and counting the rewritten chunks) runs before the write lock
        prepared = await self._db.read("prepare_erasure", erasure.prepare_rewrites, ws, user)
        return await self._db.on_writer(
            "forget_user", mops.tracked_write, self._db.memory_cache, mops.forget_user_tracked, ws, user, prepared
        )

    # ---- summaries

    async def latest_summary(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind
    ) -> Summary | None:
        """The newest version, or ``None``."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        return await self._db.read(
            "latest_summary",
            sumops.latest_summary,
            workspace_id,
            SummaryScope(scope).value,
            scope_id,
            SummaryKind(kind).value,
        )

    async def summary_history(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind, *, limit: int = 20
    ) -> list[Summary]:
        """Versions, newest first."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        _check_count("limit", limit)
        return await self._db.read(
            "summary_history",
            sumops.summary_history,
            workspace_id,
            SummaryScope(scope).value,
            scope_id,
            SummaryKind(kind).value,
            limit,
        )

    async def latest_summaries(self, workspace_id: str, scope: SummaryScope, kind: SummaryKind) -> list[Summary]:
        """The newest version of every scope id of ``scope`` in the workspace."""
        check_scope_key(workspace_id, scope, "-", kind)
        return await self._db.read(
            "latest_summaries",
            sumops.latest_summaries,
            workspace_id,
            SummaryScope(scope).value,
            SummaryKind(kind).value,
        )

    async def save_summary(self, draft: SummaryDraft, *, new_version: bool) -> Summary:
        """A new version (atomic in ``BEGIN IMMEDIATE``) or an overwrite of the latest one."""
        check_summary_draft(draft)
        return await self._db.write("save_summary", sumops.save_summary, draft, bool(new_version), utcnow())

    async def scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, *, since: datetime, limit: int = 2000
    ) -> list[Message]:
        """Messages of a channel, thread or user since ``since``, oldest first."""
        check_scope_key(workspace_id, scope, scope_id)
        chosen = check_message_scope(scope)
        if not isinstance(since, datetime):
            raise InvalidInput(f"since must be a datetime, got {type(since).__name__}")
        _check_count("limit", limit)
        return await self._db.read(
            "scope_messages", sumops.scope_messages, workspace_id, chosen, scope_id, since, limit
        )

    async def active_scopes(self, *, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        """Workspaces and channel / thread / user ids with messages since ``since``."""
        chosen = check_message_scope(scope)
        if not isinstance(since, datetime):
            raise InvalidInput(f"since must be a datetime, got {type(since).__name__}")
        return await self._db.read("active_scopes", sumops.active_scopes, since, chosen)


def _int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    return value


def _check_count(name: str, value: int) -> None:
    if _int(name, value) < 0:
        raise InvalidInput(f"{name} must be a non-negative integer, got {value!r}")


__all__ = ["DEFAULT_READERS", "SqliteStore"]


def _erasure_state(conn: sqlite3.Connection, workspace_id: str) -> ErasureState:
    return ErasureState(erasure.erasure_generation(conn, workspace_id), erasure.erased_users(conn, workspace_id))
