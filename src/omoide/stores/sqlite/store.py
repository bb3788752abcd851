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

from omoide.errors import InvalidInput, InvalidSessionKey
from omoide.models import Message, Session, SessionId, SessionKey, SessionStatus, utcnow
from omoide.providers.tokens import stored_text_tokens
from omoide.settings import Settings
from omoide.stores._apikey_common import check_api_key_draft, check_api_key_id, check_page, check_token_hash
from omoide.stores._erasure_common import ErasureState, check_workspace
from omoide.stores._knowledge_common import (
    MAX_INDEX_DIMENSIONS,
    check_chunks,
    check_dimensions,
    check_finish_status,
    check_int,
    check_model,
    check_number,
    check_plan,
    check_source,
    check_vectors,
)
from omoide.stores._memory_common import (
    check_changes,
    check_draft,
    check_memory_id,
    check_memory_vector,
    check_scope,
    check_tags,
)
from omoide.stores._summary_common import check_message_scope, check_scope_key, check_summary_draft
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord
from omoide.stores.base import Store
from omoide.stores.knowledge import (
    ArchivePlan,
    ArchivePlanner,
    ArchiveResult,
    ChunkDraft,
    ChunkId,
    ChunkText,
    EmbeddingRow,
    KnowledgeChunk,
    KnowledgeSource,
    KnowledgeStatus,
    SourceDraft,
    SourceId,
    SourceStatus,
)
from omoide.stores.memories import ForgetReport, MemoryChanges, MemoryDraft, MemoryHit, MemoryRecord
from omoide.stores.search import check_members
from omoide.stores.sqlite import _apikeys as akops
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _knowledge as kops
from omoide.stores.sqlite import _memories as mops
from omoide.stores.sqlite import _sessions as ops
from omoide.stores.sqlite import _summaries as sumops
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._db import DEFAULT_READERS, SqliteDb
from omoide.stores.sqlite.lexical_index import SqliteLexicalIndex
from omoide.stores.sqlite.search import SqliteSearch
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
        settings: ``db_busy_timeout_ms`` is used.
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
        self.sessions = self
        self.knowledge = self
        self.search = SqliteSearch(self._db)
        self.lexical_index = SqliteLexicalIndex(self._db)
        self.memories = self
        self.summaries = self
        self.api_keys = self

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

    # -------------------------------------------------------------------- sessions

    async def get_or_create_session(self, key: SessionKey) -> Session:
        """Return the session with this key, creating it (status active) if absent.

        Raises:
            InvalidSessionKey: ``key`` has no string form (build it with ``omoide.session_key``).
        """
        if not isinstance(key, SessionKey) or not key.value:
            raise InvalidSessionKey("get_or_create_session needs a SessionKey built by omoide.session_key(...)")
        session = await self._db.read("get_or_create_session", ops.get_session, key.value)
        if session is not None:
            return session
        return await self._db.write("get_or_create_session", ops.get_or_create_session, key, utcnow())

    async def get_session(self, key: str) -> Session | None:
        """The session with this key string, or ``None``."""
        return await self._db.read("get_session", ops.get_session, str(key))

    async def get_session_by_id(self, session_id: SessionId) -> Session | None:
        """The session with this id, or ``None``."""
        return await self._db.read("get_session_by_id", ops.get_session_by_id, _int("session_id", session_id))

    async def set_session_visibility(
        self, session_id: SessionId, *, private: bool, members: Sequence[str] = ()
    ) -> Session:
        """Mark the conversation private to ``members`` (or public); its later archives inherit it.

        Raises:
            SessionNotFound: no session has this id.
        """
        who = check_members(members)
        return await self._db.write(
            "set_session_visibility", ops.set_session_visibility, _int("session_id", session_id), bool(private), who
        )

    async def append_message(self, session_id: SessionId, message: Message) -> tuple[Message, bool]:
        """Append one message as the session's next ``seq``; return ``(stored_message, created)``.

        A message whose platform ``message_id`` is already stored in the session's
        workspace is returned as stored, with ``created=False``.

        Raises:
            SessionNotFound: no session has this id.
            InvalidInput: ``message`` is not a :class:`~omoide.models.Message`.
        """
        if not isinstance(message, Message):
            raise InvalidInput(f"append_message needs an omoide.Message, got {type(message).__name__}")
        sid = _int("session_id", session_id)
        return await self._db.write("append_message", ops.append_message, sid, message, stored_text_tokens(message))

    async def history(self, session_id: SessionId, *, window: int) -> list[Message]:
        """The newest ``window`` messages with ``seq > window_start_seq``, oldest first."""
        _check_count("window", window)
        return await self._db.read("history", ops.history, _int("session_id", session_id), window)

    async def messages(self, session_id: SessionId, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        """Stored messages with ``seq > after_seq``, oldest first, at most ``limit``."""
        _check_count("after_seq", after_seq)
        if limit is not None:
            _check_count("limit", limit)
        return await self._db.read("messages", ops.messages, _int("session_id", session_id), after_seq, limit)

    async def list_sessions(
        self,
        *,
        workspace_id: str | None = None,
        status: SessionStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Session]:
        """Sessions, most recently active first, optionally filtered."""
        _check_count("limit", limit)
        _check_count("offset", offset)
        wanted = None if status is None else _status(status)
        return await self._db.read("list_sessions", ops.list_sessions, workspace_id, wanted, limit, offset)

    async def update_session(
        self,
        session_id: SessionId,
        *,
        expected_version: int,
        status: SessionStatus | None = None,
        window_start_seq: int | None = None,
    ) -> Session:
        """Change a session's state if its version is still ``expected_version``; bump the version.

        Raises:
            VersionConflict: the session changed since it was read.
            SessionNotFound: no session has this id.
            InvalidInput: unknown status, or ``window_start_seq`` negative or beyond ``last_seq``.
        """
        new_status = None if status is None else _status(status)
        if window_start_seq is not None:
            _check_count("window_start_seq", window_start_seq)
        return await self._db.write(
            "update_session",
            ops.update_session,
            _int("session_id", session_id),
            _int("expected_version", expected_version),
            new_status,
            window_start_seq,
        )

    async def reset_window(self, session_id: SessionId) -> Session:
        """See :meth:`omoide.stores.base.SessionStore.reset_window`."""
        return await self._db.write("reset_window", ops.reset_window, _int("session_id", session_id))

    async def save_context_summary(self, session_id: SessionId, *, summary: str, through_seq: int) -> Session | None:
        """See :meth:`omoide.stores.base.SessionStore.save_context_summary`."""
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("a context summary must be non-empty text")
        sid, through = _int("session_id", session_id), _int("through_seq", through_seq)
        return await self._db.write("save_context_summary", ops.save_context_summary, sid, summary, through)

    async def expire_idle(self, *, idle_before: datetime, batch_size: int) -> int:
        """Expire at most ``batch_size`` active sessions idle since before ``idle_before``; return the count."""
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        if _int("batch_size", batch_size) < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        return await self._db.write("expire_idle", ops.expire_idle, idle_before, batch_size)

    async def delete_session(self, session_id: SessionId) -> bool:
        """Delete a session and all its messages; ``False`` when it did not exist."""
        return await self._db.write("delete_session", ops.delete_session, _int("session_id", session_id))

    # ------------------------------------------------------------------- knowledge
    # The contract is in omoide.stores.base.KnowledgeStore; the operations in _knowledge.py.

    async def archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        """Apply one archive plan in one ``BEGIN IMMEDIATE`` transaction (see ``KnowledgeStore``).

        Raises:
            VersionConflict: the session changed since the archiver read it (re-read, re-plan).
            SessionNotFound: the session is gone.
            InvalidInput: a malformed plan, or ``upto_seq`` does not fit the session.
        """
        check_plan(plan)
        return await self._db.write("archive_session", kops.archive_session, plan, utcnow())

    async def archive_session_locked(
        self, session_id: SessionId, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """Read the session and its unarchived messages, plan and apply in one ``BEGIN IMMEDIATE``
        transaction (see ``KnowledgeStore``). The planner runs in the writer thread.

        Raises:
            SessionNotFound: the session is gone.
            InvalidInput: the planner returned a malformed plan, or one that does not fit.
        """
        sid = _int("session_id", session_id)
        if not callable(planner):
            raise InvalidInput(f"planner must be callable, got {type(planner).__name__}")
        return await self._db.write("archive_session_locked", kops.archive_session_locked, sid, planner, utcnow())

    async def sessions_to_archive(self, *, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        """Sessions with unarchived messages, idle or over ``min_unarchived``, oldest activity first."""
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        check_int("min_unarchived", min_unarchived, minimum=1)
        check_int("limit", limit, minimum=1)
        return await self._db.read("sessions_to_archive", kops.sessions_to_archive, idle_before, min_unarchived, limit)

    async def add_source(
        self, source: SourceDraft, chunks: Sequence[ChunkDraft], *, erasure_generation: int | None = None
    ) -> tuple[SourceId, list[ChunkId]]:
        """Create a pending source with its chunks in one transaction; return their ids.

        Raises:
            ErasureConflict: ``erasure_generation`` is given and a user of the workspace was erased since.
        """
        check_source(source)
        check_chunks(chunks)
        generation = None if erasure_generation is None else check_int("erasure_generation", erasure_generation)
        return await self._db.write("add_source", _add_source, source, list(chunks), utcnow(), generation)

    async def claim_sources(self, *, limit: int, lease_seconds: float) -> list[SourceId]:
        """Claim up to ``limit`` pending (or lease-expired) sources, oldest first."""
        check_int("limit", limit, minimum=1)
        lease = check_number("lease_seconds", lease_seconds)
        return await self._db.write("claim_sources", kops.claim_sources, limit, lease, utcnow())

    async def chunks_missing_embedding(
        self, *, model: str, source_ids: Sequence[SourceId] | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[ChunkText]:
        """Chunks with no vector for ``model``, by id, ``id > after_id``."""
        check_model(model)
        check_int("after_id", after_id, minimum=0)
        check_int("limit", limit, minimum=1)
        ids = None if source_ids is None else [check_int("source_ids[]", i) for i in source_ids]
        if ids is not None and not ids:
            return []
        return await self._db.read(
            "chunks_missing_embedding", kops.chunks_missing_embedding, model, ids, after_id, limit
        )

    async def put_embeddings(self, *, model: str, dimensions: int, rows: Sequence[EmbeddingRow]) -> int:
        """Insert or replace float32 vectors for ``model``; return how many were written.

        Raises:
            InvalidInput: a vector's length is not ``dimensions``, or it is not finite.
        """
        check_model(model)
        dims = check_dimensions(dimensions)
        checked = check_vectors(dims, rows)
        if not checked:
            return 0
        return await self._db.write("put_embeddings", kops.put_embeddings, model, dims, checked, utcnow())

    async def release_sources(self, source_ids: Sequence[SourceId]) -> int:
        """Claimed sources still ``processing`` back to ``pending``, the claim not counted as an attempt."""
        ids = [check_int("source_ids[]", i) for i in source_ids]
        if not ids:
            return 0
        released: int = await self._db.write("release_sources", kops.release_sources, ids, utcnow())
        return released

    async def finish_source(self, source_id: SourceId, *, status: SourceStatus, error: str | None = None) -> None:
        """Leave ``processing`` for ``ready``, ``failed`` (with ``error``) or ``pending``.

        Raises:
            NotFoundError: no source has this id.
            InvalidInput: ``status`` is ``processing`` or unknown.
        """
        sid = check_int("source_id", source_id)
        new_status = check_finish_status(status)
        if error is not None and not isinstance(error, str):
            raise InvalidInput(f"error must be text or None, got {type(error).__name__}")
        await self._db.write("finish_source", kops.finish_source, sid, new_status, error, utcnow())

    async def ensure_vector_index(self, *, model: str, dimensions: int) -> bool:
        """SQLite has no ANN index (vectors are scanned): always ``False``."""
        check_model(model)
        check_dimensions(dimensions, limit=MAX_INDEX_DIMENSIONS)
        return False

    async def list_sources(
        self, *, workspace_id: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[KnowledgeSource]:
        """Sources, newest first, with their chunk counts."""
        _check_count("limit", limit)
        _check_count("offset", offset)
        return await self._db.read("list_sources", kops.list_sources, workspace_id, limit, offset)

    async def get_source(self, source_id: SourceId) -> KnowledgeSource | None:
        """The source with this id (with its chunk count), or ``None``."""
        return await self._db.read("get_source", kops.get_source, check_int("source_id", source_id))

    async def chunks_of_source(self, source_id: SourceId) -> list[KnowledgeChunk]:
        """The chunks of a source by ``chunk_index`` (empty when it has none or does not exist)."""
        return await self._db.read("chunks_of_source", kops.chunks_of_source, check_int("source_id", source_id))

    async def get_embedding(self, chunk_id: ChunkId, model: str) -> npt.NDArray[np.float32] | None:
        """The stored vector of a chunk for ``model`` (float32), or ``None``."""
        cid = check_int("chunk_id", chunk_id)
        return await self._db.read("get_embedding", kops.get_embedding, cid, check_model(model))

    async def knowledge_status(self, *, workspace_id: str | None = None) -> KnowledgeStatus:
        """Counts of sessions, unarchived messages, sources, chunks and embeddings per model (of one workspace)."""
        return await self._db.read("knowledge_status", kops.knowledge_status, workspace_id)

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

    # ---- API keys

    async def insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        """Store a new key (its hash); return it as stored."""
        return await self._db.write("insert_api_key", akops.insert_api_key, check_api_key_draft(draft), utcnow())

    async def get_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """The key with this id, or ``None``."""
        return await self._db.read("get_api_key", akops.get_api_key, check_api_key_id(key_id))

    async def get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        """The key with this token hash and the stored hash, or ``None``."""
        return await self._db.read("get_api_key_by_hash", akops.get_api_key_by_hash, check_token_hash(token_hash))

    async def list_api_keys(
        self, *, workspace_id: str | None = None, include_revoked: bool = True, limit: int = 100, offset: int = 0
    ) -> list[ApiKeyRecord]:
        """Keys, newest first."""
        lim, off = check_page(limit, offset)
        return await self._db.read("list_api_keys", akops.list_api_keys, workspace_id, bool(include_revoked), lim, off)

    async def revoke_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """Revoke the key (keeping an earlier revocation time), or ``None`` when unknown."""
        return await self._db.write("revoke_api_key", akops.revoke_api_key, check_api_key_id(key_id), utcnow())


def _int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    return value


def _check_count(name: str, value: int) -> None:
    if _int(name, value) < 0:
        raise InvalidInput(f"{name} must be a non-negative integer, got {value!r}")


def _status(value: SessionStatus | str) -> SessionStatus:
    try:
        return SessionStatus(value)
    except ValueError:
        allowed = ", ".join(s.value for s in SessionStatus)
        raise InvalidInput(f"unknown session status {value!r}; allowed: {allowed}") from None


__all__ = ["DEFAULT_READERS", "SqliteStore"]


def _erasure_state(conn: sqlite3.Connection, workspace_id: str) -> ErasureState:
    return ErasureState(erasure.erasure_generation(conn, workspace_id), erasure.erased_users(conn, workspace_id))


def _add_source(
    conn: sqlite3.Connection, source: SourceDraft, chunks: list[ChunkDraft], now: datetime, generation: int | None
) -> tuple[SourceId, list[ChunkId]]:
    erasure.check_erasure_generation(conn, source.workspace_id, generation)
    return kops.insert_source(conn, source, chunks, now)
