"""The PostgreSQL + pgvector backend of the store Protocols.

Driver: asyncpg, chosen by measurement (``benchmarks/pg_drivers.py``,
``docs/bench-notes/pg-driver.md``). Its pool runs with a no-op ``reset``: asyncpg's default
sends ``RESET ALL; UNLISTEN *; ...`` on every release (one more round trip per call),
and this store keeps no session state that changes (no LISTEN, only transaction-scoped
advisory locks; its one session-level setting, pgvector's HNSW scan settings, is made when a
connection opens and never changed); asyncpg still rolls back a transaction left open.

How the session operations stay correct with many writers:

* ``append_message`` is one statement (so one round trip and its own transaction)::

      WITH dup AS (SELECT ... platform id already stored in this workspace ...),
           s AS (UPDATE sessions SET last_seq = last_seq + 1, version = version + 1, ...
                 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM dup) RETURNING id, workspace_id, last_seq)
      INSERT INTO session_messages (...) SELECT ... s.last_seq ... FROM s RETURNING id, seq

  The ``UPDATE`` takes the session's row lock, so concurrent appends to one session queue
  on it and each gets the next ``seq`` (READ COMMITTED re-reads the locked row; nothing is
  lost). Two concurrent appends of one platform message id both pass ``dup``; the second
  INSERT then hits the partial UNIQUE index, the whole statement rolls back (no ``seq`` or
  ``version`` is consumed) and the stored copy is returned with ``created=False``.
* ``update_session`` is one version-guarded statement, ``UPDATE ... WHERE id = $1 AND
  version = $2``. If an append holds the row, the UPDATE waits and then re-checks the guard
  against the committed row (READ COMMITTED re-evaluation), so a stale version matches
  nothing and becomes a :class:`~omoide.errors.VersionConflict`; the caller re-reads. No
  transaction here reads and then writes, so none needs REPEATABLE READ (which would only
  add BEGIN and COMMIT round trips and widen the window in which appends cause conflicts).
* ``expire_idle`` claims rows with ``FOR UPDATE SKIP LOCKED`` (a session that is being
  appended to is skipped) and re-checks the predicate on the locked row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import asyncpg
import numpy as np
import numpy.typing as npt

from omoide.errors import (
    InvalidContent,
    InvalidInput,
    InvalidSessionKey,
    MessageTooLarge,
    SessionNotFound,
    StoreError,
    VersionConflict,
)
from omoide.models import Message, Session, SessionId, SessionKey, SessionStatus, ensure_utc, utcnow
from omoide.providers.tokens import stored_text_tokens
from omoide.stores._apikey_common import check_api_key_draft, check_api_key_id, check_page, check_token_hash
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
from omoide.stores._search_common import check_lexical_query, check_vector_query
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord
from omoide.stores.base import LexicalTable, Store
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
from omoide.stores.postgres import _apikeys as akops
from omoide.stores.postgres import _erasure as erasure
from omoide.stores.postgres import _knowledge as kops
from omoide.stores.postgres import _search as sops
from omoide.stores.postgres._bm25 import LexemeStats, lexeme_stats
from omoide.stores.postgres._db import PostgresDb
from omoide.stores.postgres._rows import MESSAGE_COLUMNS, SESSION_COLUMNS, row_to_message, row_to_session
from omoide.stores.postgres.memories import PostgresMemories
from omoide.stores.postgres.summaries import PostgresSummaries
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, check_members

if TYPE_CHECKING:
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 10.0
CLOSE_TIMEOUT_SECONDS = 10.0
_SCHEMES = ("postgresql://", "postgres://")
LEXEME_STATS_TTL = 300.0
"""Seconds the chunks' lexeme statistics are reused (ANALYZE refreshes them far less often)."""
TOKENIZER_TTL = 10.0
"""Seconds the name of the lexical index's tokenizer is reused (one query fewer per search)."""
T = TypeVar("T")


_RETRIES = 3  # a row that vanishes between two statements (concurrent delete) is retried this often

_SELECT_SESSION_BY_KEY = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE session_key = $1"
_SELECT_SESSION_BY_ID = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
_INSERT_SESSION = f"""
INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, thread_id, user_id, agent_id,
                      last_active_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (session_key) DO NOTHING
RETURNING {SESSION_COLUMNS}
"""
_APPEND = """
WITH dup AS (
    SELECT 1 FROM session_messages m
    WHERE $8::text IS NOT NULL AND m.platform_message_id = $8::text
      AND m.workspace_id = (SELECT workspace_id FROM sessions WHERE id = $1)
), s AS (
    UPDATE sessions
    SET last_seq = last_seq + 1, version = version + 1, status = 'active',
        last_active_at = GREATEST(last_active_at, $2)
    WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM dup)
    RETURNING id, workspace_id, last_seq
)
INSERT INTO session_messages (session_id, workspace_id, seq, role, content, author_id, author_name, is_bot,
                              platform_message_id, created_at, token_count)
SELECT s.id, s.workspace_id, s.last_seq, $3, $4::jsonb, $5, $6, $7, $8::text, $2, $9 FROM s
RETURNING id, seq
"""
_PLATFORM_ID_INDEX = "session_messages_platform_id"
_SELECT_BY_PLATFORM_ID = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE workspace_id = (SELECT workspace_id FROM sessions WHERE id = $1) AND platform_message_id = $2
"""
_HISTORY = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND seq > (SELECT window_start_seq FROM sessions WHERE id = $1)
ORDER BY seq DESC LIMIT $2
"""
_MESSAGES = f"""
SELECT {MESSAGE_COLUMNS} FROM session_messages
WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3
"""
_UPDATE_SESSION = f"""
UPDATE sessions
SET version = version + 1, status = COALESCE($3, status), window_start_seq = COALESCE($4, window_start_seq)
WHERE id = $1 AND version = $2
RETURNING {SESSION_COLUMNS}
"""
_RESET_WINDOW = f"""
UPDATE sessions SET window_start_seq = last_seq, version = version + 1 WHERE id = $1
RETURNING {SESSION_COLUMNS}
"""
_SAVE_CONTEXT_SUMMARY = f"""
UPDATE sessions SET context_summary = $2, context_summary_seq = $3, version = version + 1
WHERE id = $1 AND context_summary_seq < $3 AND $3 <= last_seq
RETURNING {SESSION_COLUMNS}
"""
_EXPIRE_IDLE = """
WITH claimed AS (
    SELECT id FROM sessions
    WHERE status = 'active' AND last_active_at < $1
    ORDER BY last_active_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE sessions s SET status = 'expired', version = s.version + 1
    FROM claimed
    WHERE s.id = claimed.id AND s.status = 'active' AND s.last_active_at < $1
    RETURNING 1
)
SELECT count(*) FROM expired
"""


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
        self.sessions = self
        self.knowledge = self
        self.search = self
        self.lexical_index = self
        self.memories = PostgresMemories(self._db)
        self.summaries = PostgresSummaries(self._db)
        self.api_keys = self

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

    # ------------------------------------------------------------------ sessions

    async def get_or_create_session(self, key: SessionKey) -> Session:
        if not isinstance(key, SessionKey) or not key.value:
            raise InvalidSessionKey("get_or_create_session needs a SessionKey built by omoide.keys.session_key()")
        async with self._db.acquire() as conn:
            for _ in range(_RETRIES):
                row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key.value)
                if row is None:
                    row = await conn.fetchrow(
                        _INSERT_SESSION,
                        key.value,
                        key.policy.value,
                        key.platform,
                        key.workspace,
                        key.channel,
                        key.thread,
                        key.user,
                        key.agent,
                        utcnow(),
                    )
                if row is not None:  # else: created and deleted by others between our two statements
                    return row_to_session(row)
        raise StoreError(f"session {key.value!r} was deleted while being created {_RETRIES} times; try again")

    async def get_session(self, key: str) -> Session | None:
        if not isinstance(key, str):
            raise InvalidSessionKey(f"session key must be a string, got {type(key).__name__}")
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(_SELECT_SESSION_BY_KEY, key)
        return None if row is None else row_to_session(row)

    async def get_session_by_id(self, session_id: SessionId) -> Session | None:
        sid = _check_id(session_id)
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(_SELECT_SESSION_BY_ID, sid)
        return None if row is None else row_to_session(row)

    async def set_session_visibility(
        self, session_id: SessionId, *, private: bool, members: Sequence[str] = ()
    ) -> Session:
        """Mark the conversation private to ``members`` (or public); its later archives inherit it.

        Raises:
            SessionNotFound: no session has this id.
        """
        sid = _check_id(session_id)
        who = check_members(members)
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(
                f"UPDATE sessions SET private = $2, members = $3::jsonb, version = version + 1 WHERE id = $1 "
                f"RETURNING {SESSION_COLUMNS}",
                sid,
                bool(private),
                json.dumps(who),
            )
        if row is None:
            raise SessionNotFound(f"no session with id {sid}", session_id=sid)
        return row_to_session(row)

    async def append_message(self, session_id: SessionId, message: Message) -> tuple[Message, bool]:
        sid = _check_id(session_id)
        if not isinstance(message, Message):
            raise InvalidContent(f"append_message needs an omoide.Message, got {type(message).__name__}")
        content = message.content_json()
        size = len(content.encode("utf-8"))
        limit = self._db.settings.max_message_bytes
        if size > limit:
            raise MessageTooLarge(
                f"message content is {size} bytes of JSON, over the limit of {limit} (OMOIDE_MAX_MESSAGE_BYTES)",
                size=size,
                limit=limit,
            )
        tokens = stored_text_tokens(message)
        async with self._db.acquire() as conn:
            for _ in range(_RETRIES):
                try:
                    row = await conn.fetchrow(
                        _APPEND,
                        sid,
                        message.created_at,
                        message.role,
                        content,
                        message.author_id,
                        message.author_name,
                        message.is_bot,
                        message.message_id,
                        tokens,
                    )
                except asyncpg.UniqueViolationError as exc:
                    if exc.constraint_name != _PLATFORM_ID_INDEX:
                        raise
                    row = None  # a concurrent append stored this platform id first
                if row is not None:
                    return message.with_stored(id=row["id"], session_id=SessionId(sid), seq=int(row["seq"])), True
                if message.message_id is not None:
                    stored = await conn.fetchrow(_SELECT_BY_PLATFORM_ID, sid, message.message_id)
                    if stored is not None:
                        return row_to_message(stored), False
                if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)", sid):
                    raise SessionNotFound(f"no session with id {sid}", session_id=sid)
                # the duplicate was deleted between the two statements: append again
        raise StoreError(f"append to session {sid} kept racing with deletes of message {message.message_id!r}")

    async def history(self, session_id: SessionId, *, window: int) -> list[Message]:
        sid = _check_id(session_id)
        window = _check_int("window", window, minimum=0)
        async with self._db.acquire() as conn:
            rows = await conn.fetch(_HISTORY, sid, window)
        return [row_to_message(r) for r in reversed(rows)]

    async def messages(self, session_id: SessionId, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        sid = _check_id(session_id)
        after = _check_int("after_seq", after_seq, minimum=0)
        if limit is not None:
            limit = _check_int("limit", limit, minimum=0)
        async with self._db.acquire() as conn:
            rows = await conn.fetch(_MESSAGES, sid, after, limit)
        return [row_to_message(r) for r in rows]

    async def list_sessions(
        self,
        *,
        workspace_id: str | None = None,
        status: SessionStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Session]:
        limit = _check_int("limit", limit, minimum=0)
        offset = _check_int("offset", offset, minimum=0)
        where: list[str] = []
        args: list[object] = []
        if workspace_id is not None:
            args.append(str(workspace_id))
            where.append(f"workspace_id = ${len(args)}")
        if status is not None:
            args.append(self._status(status).value)
            where.append(f"status = ${len(args)}")
        args += [limit, offset]
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM sessions"
            + (" WHERE " + " AND ".join(where) if where else "")
            + f" ORDER BY last_active_at DESC, id DESC LIMIT ${len(args) - 1} OFFSET ${len(args)}"
        )
        async with self._db.acquire() as conn:
            rows = await conn.fetch(sql, *args)
        return [row_to_session(r) for r in rows]

    @staticmethod
    def _status(status: str) -> SessionStatus:
        try:
            return SessionStatus(status)
        except ValueError:
            allowed = ", ".join(s.value for s in SessionStatus)
            raise InvalidInput(f"status must be one of {allowed}, got {status!r}") from None

    async def update_session(
        self,
        session_id: SessionId,
        *,
        expected_version: int,
        status: SessionStatus | None = None,
        window_start_seq: int | None = None,
    ) -> Session:
        sid = _check_id(session_id)
        expected = _check_int("expected_version", expected_version, minimum=0)
        new_status = None if status is None else self._status(status).value
        if window_start_seq is not None:
            window_start_seq = _check_int("window_start_seq", window_start_seq, minimum=0)
        async with self._db.acquire() as conn:
            try:
                row = await conn.fetchrow(_UPDATE_SESSION, sid, expected, new_status, window_start_seq)
            except asyncpg.CheckViolationError as exc:
                raise InvalidInput(
                    f"window_start_seq {window_start_seq} is beyond the newest message of session {sid}",
                    session_id=sid,
                ) from exc
            if row is not None:
                return row_to_session(row)
            current = await conn.fetchrow("SELECT version FROM sessions WHERE id = $1", sid)
        if current is None:
            raise SessionNotFound(f"no session with id {sid}", session_id=sid)
        raise VersionConflict(
            f"session {sid} is at version {current['version']}, not {expected}: it changed since it was read; "
            "re-read it and retry",
            session_id=sid,
            expected_version=expected,
            actual_version=int(current["version"]),
        )

    async def reset_window(self, session_id: SessionId) -> Session:
        sid = _check_id(session_id)
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(_RESET_WINDOW, sid)
        if row is None:
            raise SessionNotFound(f"no session with id {sid}", session_id=sid)
        return row_to_session(row)

    async def save_context_summary(self, session_id: SessionId, *, summary: str, through_seq: int) -> Session | None:
        sid = _check_id(session_id)
        through = _check_int("through_seq", through_seq, minimum=0)
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("a context summary must be non-empty text")
        async with self._db.acquire() as conn:
            row = await conn.fetchrow(_SAVE_CONTEXT_SUMMARY, sid, summary, through)
            if row is not None:
                return row_to_session(row)
            last = await conn.fetchval("SELECT last_seq FROM sessions WHERE id = $1", sid)
        if last is None:
            raise SessionNotFound(f"no session with id {sid}", session_id=sid)
        if through > last:
            raise InvalidInput(f"through_seq {through} is beyond the newest message of session {sid} ({last})")
        return None

    async def expire_idle(self, *, idle_before: datetime, batch_size: int) -> int:
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        batch = _check_int("batch_size", batch_size, minimum=1)
        async with self._db.acquire() as conn:
            count = await conn.fetchval(_EXPIRE_IDLE, ensure_utc(idle_before), batch)
        return int(count)

    async def delete_session(self, session_id: SessionId) -> bool:
        sid = _check_id(session_id)
        async with self._db.acquire() as conn:
            deleted = await conn.fetchval("DELETE FROM sessions WHERE id = $1 RETURNING id", sid)
        return deleted is not None

    # ------------------------------------------------------------------ knowledge
    # The contract is in omoide.stores.base.KnowledgeStore; the SQL in _knowledge.py.

    async def archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        """Apply one archive plan in one REPEATABLE READ transaction (see ``KnowledgeStore``).

        Raises:
            VersionConflict: the session changed since the archiver read it (re-read, re-plan).
            SessionNotFound: the session is gone.
            InvalidInput: a malformed plan, or ``upto_seq`` does not fit the session.
        """
        check_plan(plan)
        async with self._db.acquire() as conn:
            return await kops.archive_session(conn, plan)

    async def archive_session_locked(
        self, session_id: SessionId, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """Lock the session row, read, plan and apply in one REPEATABLE READ transaction (see ``KnowledgeStore``).

        Raises:
            SessionNotFound: the session is gone.
            VersionConflict: an append was committing just as the lock was taken; retry.
            InvalidInput: the planner returned a malformed plan, or one that does not fit.
        """
        sid = _check_id(session_id)
        if not callable(planner):
            raise InvalidInput(f"planner must be callable, got {type(planner).__name__}")
        async with self._db.acquire() as conn:
            return await kops.archive_session_locked(conn, sid, planner)

    async def sessions_to_archive(self, *, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        """Sessions with unarchived messages, idle or over ``min_unarchived``, oldest activity first."""
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        check_int("min_unarchived", min_unarchived, minimum=1)
        check_int("limit", limit, minimum=1)
        async with self._db.acquire() as conn:
            return await kops.sessions_to_archive(conn, idle_before, min_unarchived, limit)

    async def add_source(
        self, source: SourceDraft, chunks: Sequence[ChunkDraft], *, erasure_generation: int | None = None
    ) -> tuple[SourceId, list[ChunkId]]:
        """Create a pending source with its chunks (one statement); return their ids.

        Raises:
            ErasureConflict: ``erasure_generation`` is given and a user of the workspace was erased since.
        """
        check_source(source)
        check_chunks(chunks)
        generation = None if erasure_generation is None else check_int("erasure_generation", erasure_generation)
        try:
            async with self._db.acquire() as conn, conn.transaction():
                await erasure.check_erasure_generation(conn, source.workspace_id, generation)
                return await kops.insert_source(conn, source, list(chunks))
        finally:
            self._db.tokenizer.forget()  # the insert recorded the tokenizer that wrote these chunks

    async def claim_sources(self, *, limit: int, lease_seconds: float) -> list[SourceId]:
        """Claim up to ``limit`` pending (or lease-expired) sources, oldest first, ``FOR UPDATE SKIP LOCKED``."""
        check_int("limit", limit, minimum=1)
        lease = check_number("lease_seconds", lease_seconds)
        async with self._db.acquire() as conn:
            return await kops.claim_sources(conn, limit, lease)

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
        async with self._db.acquire() as conn:
            return await kops.chunks_missing_embedding(conn, model, ids, after_id, limit)

    async def put_embeddings(self, *, model: str, dimensions: int, rows: Sequence[EmbeddingRow]) -> int:
        """Insert or replace ``halfvec`` vectors for ``model``; return how many were written.

        Raises:
            InvalidInput: a vector's length is not ``dimensions``, or it is outside the halfvec range.
        """
        check_model(model)
        dims = check_dimensions(dimensions)
        checked = check_vectors(dims, rows)
        if not checked:
            return 0
        async with self._db.acquire() as conn:
            return await kops.put_embeddings(conn, model, dims, checked, self._db.vector_schema)

    async def release_sources(self, source_ids: Sequence[SourceId]) -> int:
        """Claimed sources still ``processing`` back to ``pending``, the claim not counted as an attempt."""
        ids = [check_int("source_ids[]", i) for i in source_ids]
        if not ids:
            return 0
        async with self._db.acquire() as conn:
            return await kops.release_sources(conn, ids)

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
        async with self._db.acquire() as conn:
            await kops.finish_source(conn, sid, new_status, error)

    async def ensure_vector_index(self, *, model: str, dimensions: int) -> bool:
        """Create the HNSW index (``halfvec_cosine_ops``, m / ef_construction from settings) for
        ``model`` at ``dimensions`` unless it exists; ``True`` if it was created now.

        Queries use it with ``WHERE model = '<model>' ORDER BY (embedding::halfvec(D)) <=> $q``
        (the model as a literal, so the planner can match the partial index).

        Raises:
            InvalidInput: an empty model id, or more than 4,000 dimensions (HNSW's halfvec limit).
        """
        check_model(model)
        dims = check_dimensions(dimensions, limit=MAX_INDEX_DIMENSIONS)
        async with self._db.acquire() as conn:
            return await kops.ensure_vector_index(
                conn,
                model,
                dims,
                m=self._db.settings.hnsw_m,
                ef_construction=self._db.settings.hnsw_ef_construction,
                schema=self._db.vector_schema,
            )

    async def list_sources(
        self, *, workspace_id: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[KnowledgeSource]:
        """Sources, newest first, with their chunk counts."""
        limit = _check_int("limit", limit, minimum=0)
        offset = _check_int("offset", offset, minimum=0)
        async with self._db.acquire() as conn:
            return await kops.list_sources(conn, workspace_id, limit, offset)

    async def get_source(self, source_id: SourceId) -> KnowledgeSource | None:
        """The source with this id (with its chunk count), or ``None``."""
        sid = check_int("source_id", source_id)
        async with self._db.acquire() as conn:
            return await kops.get_source(conn, sid)

    async def chunks_of_source(self, source_id: SourceId) -> list[KnowledgeChunk]:
        """The chunks of a source by ``chunk_index`` (empty when it has none or does not exist)."""
        sid = check_int("source_id", source_id)
        async with self._db.acquire() as conn:
            return await kops.chunks_of_source(conn, sid)

    async def get_embedding(self, chunk_id: ChunkId, model: str) -> npt.NDArray[np.float32] | None:
        """The stored vector of a chunk for ``model`` (halfvec read back as float32), or ``None``."""
        cid = check_int("chunk_id", chunk_id)
        check_model(model)
        async with self._db.acquire() as conn:
            return await kops.get_embedding(conn, cid, model)

    async def knowledge_status(self, *, workspace_id: str | None = None) -> KnowledgeStatus:
        """Counts of sessions, unarchived messages, sources, chunks and embeddings per model (of one workspace)."""
        async with self._db.acquire() as conn:
            return await kops.knowledge_status(conn, workspace_id)

    # ---------------------------------------------------------------------- search
    # The contract is in omoide.stores.base.SearchStore; the SQL in _search.py.

    async def vector_search(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[ChunkHit]:
        """The ``k`` chunks nearest to ``query`` by cosine distance (HNSW with iterative scan), best first.

        ``hnsw.ef_search`` is the ``hnsw_ef_search`` setting (at least ``k``).

        Raises:
            InvalidInput: bad ``k``, filters, model or query vector, or a query size that differs
                from the model's stored vectors.
        """
        vector, wanted, limit = check_vector_query(model, query, filters, k)
        async with self._db.acquire() as conn:
            return await sops.hits_for(conn, await self._rank_vectors(conn, model, vector, wanted, limit))

    async def lexical_search(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[ChunkHit]:
        """The ``k`` best BM25 matches of any of ``tokens``, best first (``[]`` for no tokens).

        Raises:
            InvalidInput: bad ``k``, filters or tokens.
        """
        terms, wanted, limit = check_lexical_query(tokens, filters, k)
        if not terms:
            return []
        async with self._db.acquire() as conn:
            return await sops.lexical_search(conn, terms, wanted, limit, await self._lexeme_stats(conn))

    async def vector_ranking(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        """:meth:`vector_search` as ids and cosine similarities only (no chunk rows joined), best first."""
        vector, wanted, limit = check_vector_query(model, query, filters, k)
        async with self._db.acquire() as conn:
            return await self._rank_vectors(conn, model, vector, wanted, limit)

    async def _rank_vectors(
        self, conn: asyncpg.Connection, model: str, vector: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        return await sops.vector_ranking(
            conn,
            model,
            vector,
            filters,
            k,
            ef_search=self._db.settings.hnsw_ef_search,
            schema=self._db.vector_schema,
            session_ef_search=self._db.session_ef_search,
        )

    async def lexical_ranking(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        """:meth:`lexical_search` as ids and BM25 scores only, best first."""
        terms, wanted, limit = check_lexical_query(tokens, filters, k)
        if not terms:
            return []
        async with self._db.acquire() as conn:
            return await sops.lexical_ranking(conn, terms, wanted, limit, await self._lexeme_stats(conn))

    async def _lexeme_stats(self, conn: asyncpg.Connection) -> LexemeStats | None:
        """The chunks' lexeme statistics (:mod:`._bm25`), read at most every :data:`LEXEME_STATS_TTL` seconds."""
        if not self._db.stats.fresh(LEXEME_STATS_TTL):
            self._db.stats.keep(await lexeme_stats(conn, "knowledge_chunks"))
        return self._db.stats.value

    async def fetch_chunks(self, chunk_ids: Sequence[ChunkId]) -> list[ChunkHit]:
        """Chunks by id, in the order given (unknown ids skipped), with ``score=0.0, rank=0``."""
        ids = list(dict.fromkeys(check_int("chunk_ids[]", i) for i in chunk_ids))
        if not ids:
            return []
        async with self._db.acquire() as conn:
            return await sops.fetch_chunks(conn, ids)

    async def lexical_tokenizer(self) -> str | None:
        """The tokenizer that wrote the lexical index (``search_tokenizer_name()``), ``"mixed"``
        when chunks were written by different ones, or ``None`` before any chunk.

        Every search asks, so the answer is reused for :data:`TOKENIZER_TTL` seconds: this
        store's own chunk writes and :meth:`set_lexical_tokenizer` forget it at once, another
        process's are seen within that time."""
        if not self._db.tokenizer.fresh(TOKENIZER_TTL):
            async with self._db.acquire() as conn:
                self._db.tokenizer.keep(await sops.lexical_tokenizer(conn))
        return self._db.tokenizer.value

    # ---- lexical index rebuild

    async def lexical_batch(self, table: LexicalTable, *, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Rows ``(id, content)`` of ``table`` after ``after_id``, by id (see ``LexicalIndexStore``)."""
        async with self._db.acquire() as conn:
            return await sops.lexical_batch(conn, LexicalTable(table).value, after_id, limit)

    async def rewrite_lexical(self, table: LexicalTable, rows: Sequence[tuple[int, str]]) -> None:
        """Set the lexical tokens of rows; the generated ``tsvector`` columns follow."""
        if rows:
            async with self._db.acquire() as conn:
                await sops.rewrite_lexical(conn, LexicalTable(table).value, rows)

    async def set_lexical_tokenizer(self, name: str) -> None:
        """Record ``name`` as the tokenizer of the whole lexical index."""
        try:
            async with self._db.acquire() as conn:
                await sops.set_lexical_tokenizer(conn, name)
        finally:
            self._db.tokenizer.forget()

    async def lexical_row_count(self, table: LexicalTable) -> int:
        """Rows in ``table``."""
        async with self._db.acquire() as conn:
            return int(await conn.fetchval(f"SELECT count(*) FROM {LexicalTable(table).value}"))

    # ---- API keys

    async def insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        """Store a new key (its hash); return it as stored."""
        checked = check_api_key_draft(draft)
        async with self._db.acquire() as conn:
            return await akops.insert_api_key(conn, checked)

    async def get_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """The key with this id, or ``None``."""
        kid = check_api_key_id(key_id)
        async with self._db.acquire() as conn:
            return await akops.get_api_key(conn, kid)

    async def get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        """The key with this token hash and the stored hash, or ``None``."""
        digest = check_token_hash(token_hash)
        async with self._db.acquire() as conn:
            return await akops.get_api_key_by_hash(conn, digest)

    async def list_api_keys(
        self, *, workspace_id: str | None = None, include_revoked: bool = True, limit: int = 100, offset: int = 0
    ) -> list[ApiKeyRecord]:
        """Keys, newest first."""
        lim, off = check_page(limit, offset)
        async with self._db.acquire() as conn:
            return await akops.list_api_keys(conn, workspace_id, bool(include_revoked), lim, off)

    async def revoke_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """Revoke the key (keeping an earlier revocation time), or ``None`` when unknown."""
        kid = check_api_key_id(key_id)
        async with self._db.acquire() as conn:
            return await akops.revoke_api_key(conn, kid)


__all__ = ["PostgresStore"]
