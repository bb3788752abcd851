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
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, check_members
from omoide.stores.sqlite import _apikeys as akops
from omoide.stores.sqlite import _erasure as erasure
from omoide.stores.sqlite import _knowledge as kops
from omoide.stores.sqlite import _search as sops
from omoide.stores.sqlite import _sessions as ops
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._db import DEFAULT_READERS, SqliteDb
from omoide.stores.sqlite.memories import SqliteMemories
from omoide.stores.sqlite.summaries import SqliteSummaries

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
        self.search = self
        self.lexical_index = self
        self.memories = SqliteMemories(self._db)
        self.summaries = SqliteSummaries(self._db)
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

    # ---------------------------------------------------------------------- search
    # The contract is in omoide.stores.base.SearchStore; the operations in _search.py.

    async def vector_search(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[ChunkHit]:
        """The ``k`` chunks most cosine-similar to ``query`` (exact numpy scan), best first.

        Raises:
            InvalidInput: bad ``k``, filters, model or query vector, or a query size that
                differs from the model's stored vectors.
        """
        vector, wanted, limit = check_vector_query(model, query, filters, k)
        return await self._db.read(
            "vector_search", sops.vector_search, self._db.vector_cache, model, vector, wanted, limit
        )

    async def lexical_search(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[ChunkHit]:
        """The ``k`` best FTS5 BM25 matches of any of ``tokens``, best first (``[]`` for no tokens).

        Raises:
            InvalidInput: bad ``k``, filters or tokens.
        """
        terms, wanted, limit = check_lexical_query(tokens, filters, k)
        if not terms:
            return []
        return await self._db.read("lexical_search", sops.lexical_search, terms, wanted, limit)

    async def vector_ranking(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        """:meth:`vector_search` as ids and cosine similarities only (no rows read), best first."""
        vector, wanted, limit = check_vector_query(model, query, filters, k)
        return await self._db.read(
            "vector_ranking", sops.vector_ranking, self._db.vector_cache, model, vector, wanted, limit
        )

    async def lexical_ranking(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        """:meth:`lexical_search` as ids and ``-bm25`` scores only, best first."""
        terms, wanted, limit = check_lexical_query(tokens, filters, k)
        if not terms:
            return []
        return await self._db.read("lexical_ranking", sops.lexical_ranking, terms, wanted, limit)

    async def fetch_chunks(self, chunk_ids: Sequence[ChunkId]) -> list[ChunkHit]:
        """Chunks by id, in the order given (unknown ids skipped), with ``score=0.0, rank=0``."""
        ids = list(dict.fromkeys(check_int("chunk_ids[]", i) for i in chunk_ids))
        if not ids:
            return []
        return await self._db.read("fetch_chunks", sops.fetch_chunks, ids)

    async def lexical_tokenizer(self) -> str | None:
        """The tokenizer that wrote the lexical index (``search_tokenizer_name()``), ``"mixed"``
        when chunks were written by different ones, or ``None`` before any chunk."""
        return await self._db.read("lexical_tokenizer", sops.lexical_tokenizer)

    # ---- lexical index rebuild

    async def lexical_batch(self, table: LexicalTable, *, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Rows ``(id, content)`` of ``table`` after ``after_id``, by id (see ``LexicalIndexStore``)."""
        return await self._db.read("lexical_batch", sops.lexical_batch, LexicalTable(table).value, after_id, limit)

    async def rewrite_lexical(self, table: LexicalTable, rows: Sequence[tuple[int, str]]) -> None:
        """Set the lexical tokens of rows; the FTS5 triggers re-index them."""
        if rows:
            await self._db.write("rewrite_lexical", sops.rewrite_lexical, LexicalTable(table).value, list(rows))

    async def set_lexical_tokenizer(self, name: str) -> None:
        """Record ``name`` as the tokenizer of the whole lexical index."""
        await self._db.write("set_lexical_tokenizer", sops.set_lexical_tokenizer, name, utcnow())

    async def lexical_row_count(self, table: LexicalTable) -> int:
        """Rows in ``table``."""
        name = LexicalTable(table).value
        return await self._db.read(
            "lexical_row_count", lambda c: int(c.execute(f"SELECT count(*) FROM {name}").fetchone()[0])
        )

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


def _add_source(
    conn: sqlite3.Connection, source: SourceDraft, chunks: list[ChunkDraft], now: datetime, generation: int | None
) -> tuple[SourceId, list[ChunkId]]:
    erasure.check_erasure_generation(conn, source.workspace_id, generation)
    return kops.insert_source(conn, source, chunks, now)
