"""The store contract: what every storage backend must do, and how.

A backend is one class that opens a database, applies migrations and implements the
store Protocols. This issue defines :class:`SessionStore` (short-term memory); the
knowledge, memory and summary Protocols join it as their features land, backed by
tables every backend already creates (see ``docs/schema.md``).

Contract notes that every implementation honours (and ``tests/conformance`` checks):

* Ids are database-assigned integers; keys and platform ids are strings.
* Every timestamp read back is an aware UTC ``datetime``.
* ``append_message`` is atomic: it allocates the next ``seq`` of the session (1, 2, 3, …),
  inserts the message, bumps ``version``, sets ``status='active'`` and moves
  ``last_active_at`` forward, all in one transaction. Concurrent appends to one
  session never lose a message or reuse a ``seq``.
* A message whose ``message_id`` (platform id) is already stored in the same workspace
  is not stored again: the stored copy is returned with ``created=False``.
* Read-then-write state changes (:meth:`SessionStore.update_session`) are guarded by
  the ``version`` read: a stale version raises :class:`~omoide.errors.VersionConflict`,
  and the caller re-reads before retrying (see :mod:`omoide.sessions`).
* Missing ids: getters return ``None``; mutators raise
  :class:`~omoide.errors.SessionNotFound`.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from omoide.models import Message, Session, SessionId, SessionKey, SessionStatus
from omoide.stores._erasure_common import ErasureState
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord
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
from omoide.stores.memories import MemoryStore
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters
from omoide.stores.summaries import SummaryStore


@runtime_checkable
class ErasureAware(Protocol):
    """What a job that writes people's words reads first, so that it never writes back an erased user's."""

    async def erasure_state(self, workspace_id: str) -> ErasureState:
        """The workspace's erasure generation and erased users (hashed). A summary or import reads it
        before its work, skips erased authors, and passes the generation back when it writes
        (``SummaryDraft.erasure_generation``, ``add_source(erasure_generation=...)``): a write made
        stale by an erasure in between raises :class:`~omoide.errors.ErasureConflict`."""


@runtime_checkable
class SessionStore(Protocol):
    """Short-term memory: sessions and their append-only messages."""

    async def get_or_create_session(self, key: SessionKey) -> Session:
        """Return the session with this key, creating it (status active) if absent.

        Concurrent calls with the same key return the same session.
        """

    async def get_session(self, key: str) -> Session | None:
        """The session with this key string, or ``None``."""

    async def get_session_by_id(self, session_id: SessionId) -> Session | None:
        """The session with this id, or ``None``."""

    async def set_session_visibility(
        self, session_id: SessionId, *, private: bool, members: Sequence[str] = ()
    ) -> Session:
        """Mark the conversation private to ``members`` (or public); its later archives inherit it.

        Raises:
            SessionNotFound: no session has this id.
        """

    async def append_message(self, session_id: SessionId, message: Message) -> tuple[Message, bool]:
        """Append one message; return ``(stored_message, created)``.

        See the module docstring for atomicity and idempotency. Re-activates an
        archived or expired session.

        Raises:
            SessionNotFound: no session has this id.
        """

    async def history(self, session_id: SessionId, *, window: int) -> list[Message]:
        """The newest ``window`` messages with ``seq > window_start_seq``, oldest first."""

    async def messages(self, session_id: SessionId, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        """Stored messages with ``seq > after_seq``, oldest first, at most ``limit``.

        ``after_seq=session.archived_seq`` gives the messages not yet in long-term memory.
        """

    async def list_sessions(
        self,
        *,
        workspace_id: str | None = None,
        status: SessionStatus | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Session]:
        """Sessions, most recently active first (ties: newest id first), optionally filtered."""

    async def update_session(
        self,
        session_id: SessionId,
        *,
        expected_version: int,
        status: SessionStatus | None = None,
        window_start_seq: int | None = None,
    ) -> Session:
        """Change a session's state if its version is still ``expected_version``.

        Bumps ``version`` and returns the updated session.

        Raises:
            VersionConflict: the session changed since it was read.
            SessionNotFound: no session has this id.
        """

    async def reset_window(self, session_id: SessionId) -> Session:
        """Start a fresh conversation: ``window_start_seq = last_seq``, atomically, bumping ``version``.

        A blind update (no version guard): whatever was appended before it is reset out
        of the window, whatever comes after is in it.

        Raises:
            SessionNotFound: no session has this id.
        """

    async def save_context_summary(self, session_id: SessionId, *, summary: str, through_seq: int) -> Session | None:
        """Persist a prompt compaction covering messages ``seq <= through_seq``.

        A compare-and-set on ``context_summary_seq``: it is stored only when it covers
        more than the stored one, so concurrent turns never move it backwards. Returns the
        updated session, or ``None`` when a summary covering as much was already stored.

        Raises:
            SessionNotFound: no session has this id.
            InvalidInput: ``through_seq`` is beyond the newest message.
        """

    async def expire_idle(self, *, idle_before: datetime, batch_size: int) -> int:
        """Mark at most ``batch_size`` active sessions idle since before ``idle_before``
        as expired (bumping their version); return how many were marked.

        A session that receives a message concurrently is never expired by this call.
        """

    async def delete_session(self, session_id: SessionId) -> bool:
        """Delete a session and all its messages; ``False`` when it did not exist."""


@runtime_checkable
class KnowledgeStore(ErasureAware, Protocol):
    """Long-term memory: sources, chunks and their embeddings (per embedding model).

    Contract notes:

    * :meth:`archive_session` is ONE transaction (``BEGIN IMMEDIATE`` on SQLite,
      REPEATABLE READ on PostgreSQL): the source and its chunks are inserted, the
      session's ``archived_seq`` becomes ``plan.upto_seq``, archived messages except the
      newest ``plan.keep_newest`` are deleted, the status is set and ``version`` bumped —
      all guarded by ``plan.expected_version``. Either all of it commits or none of it
      (no half-written source, ever).
    * Embedding work is claimed per source with a lease: a source in ``processing``
      whose ``claimed_at`` is older than the lease is claimable again (a crashed worker
      never leaves a source stuck). PostgreSQL claims with ``FOR UPDATE SKIP LOCKED``.
    * Vectors are stored per ``(chunk_id, model)``: a new model is embedded beside the
      old one, and search keeps using the old one until told otherwise.
    * Vectors are validated the same way on every backend (the ``halfvec`` limits of
      PostgreSQL: finite, within ±65504, at most 16,000 dimensions); a bad one is an
      :class:`~omoide.errors.InvalidInput` and nothing of the call is written.
    * Missing ids: getters return ``None`` (or an empty list); :meth:`finish_source` raises
      :class:`~omoide.errors.NotFoundError`.
    """

    async def archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        """Apply one archive plan atomically.

        Checks, in order: the session exists, its ``version`` is ``plan.expected_version``,
        ``archived_seq < plan.upto_seq <= last_seq`` and the source's workspace is the
        session's. Then inserts the source (``pending``) and its chunks (``chunk_index``
        0..n-1, no embeddings), sets ``archived_seq = upto_seq``, deletes the messages with
        ``seq <= min(upto_seq, last_seq - keep_newest)``, sets ``plan.status`` and bumps
        ``version``. A message appended concurrently is never deleted or skipped: either it
        committed first (a conflict: re-plan) or it gets a ``seq`` above ``last_seq``.

        Raises:
            VersionConflict: the session changed since the archiver read it (re-read, re-plan).
            SessionNotFound: the session is gone.
            InvalidInput: ``upto_seq`` is not beyond ``archived_seq`` or beyond ``last_seq``.
        """

    async def archive_session_locked(
        self, session_id: SessionId, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """Read, plan and apply an archive while holding the session's write lock.

        The pessimistic fallback for a session so busy that optimistic plans keep conflicting
        with appends: the session and its unarchived messages are read inside the archive
        transaction (``BEGIN IMMEDIATE`` on SQLite; the session row locked by the first
        statement of a REPEATABLE READ transaction on PostgreSQL), ``planner(session,
        messages)`` plans against exactly that read (``messages``: every message the
        session still stores, oldest first — the unarchived ones above ``archived_seq``
        and the overlap kept below it), and the plan is applied as by
        :meth:`archive_session` before anything else can write to the session. Appends to
        the session wait meanwhile, so the planner must be quick, pure computation.

        Returns:
            ``(plan, result)``, or ``None`` when the planner returned ``None`` (nothing written).

        Raises:
            SessionNotFound: the session is gone.
            VersionConflict: PostgreSQL only, an append was committing just as the lock was
                taken (serialization failure); retry.
            InvalidInput: the plan is malformed, not for the session as given, or does not fit.
        """

    async def sessions_to_archive(self, *, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        """Sessions with unarchived messages (``last_seq > archived_seq``) that are either idle
        (``last_active_at < idle_before``) or have at least ``min_unarchived`` unarchived
        messages, oldest activity first (ties: lower id), at most ``limit``.

        Any status qualifies: an *expired* session's unarchived messages must still reach
        long-term memory (an archived session normally has none left).
        """

    async def add_source(
        self, source: SourceDraft, chunks: Sequence[ChunkDraft], *, erasure_generation: int | None = None
    ) -> tuple[SourceId, list[ChunkId]]:
        """Create a ``pending`` source with its chunks (``chunk_index`` 0..n-1) in one
        transaction (importers, documents); return the source id and the chunk ids in order."""

    async def claim_sources(self, *, limit: int, lease_seconds: float) -> list[SourceId]:
        """Claim up to ``limit`` sources to embed: ``pending`` ones, and ``processing`` ones
        whose lease expired. Sets ``processing``, ``claimed_at = now``, ``attempts += 1``.

        Oldest (lowest id) first; returns the claimed ids ascending. Concurrent claimers
        (tasks, processes, hosts) never get the same source while its lease runs.
        """

    async def chunks_missing_embedding(
        self, *, model: str, source_ids: Sequence[SourceId] | None = None, after_id: int = 0, limit: int = 1000
    ) -> list[ChunkText]:
        """Chunks (of these sources, or all) with no vector for ``model``, by id, ``id > after_id``."""

    async def put_embeddings(self, *, model: str, dimensions: int, rows: Sequence[EmbeddingRow]) -> int:
        """Insert or replace vectors for ``model``; return how many were written.

        Rows whose chunk no longer exists (its source was deleted) are skipped.

        Raises:
            InvalidInput: a vector's length is not ``dimensions``, a value is not finite or
                beyond ±65504, or a chunk id repeats within ``rows``.
        """

    async def release_sources(self, source_ids: Sequence[SourceId]) -> int:
        """Hand claimed sources back unfinished (a clean stop): those of ``source_ids`` still
        ``processing`` go back to ``pending`` with no lease, and the claim is not counted as an
        attempt (``attempts -= 1``); their ``error`` stays. Others are left alone. Returns how
        many were released.
        """

    async def finish_source(self, source_id: SourceId, *, status: SourceStatus, error: str | None = None) -> None:
        """Leave ``processing``: ``ready``, ``failed`` (with ``error``) or back to ``pending`` (retry later).

        Stores ``error`` as given (``None`` clears it) and drops the lease. The current
        status is not checked, so a reindex may also move a ``ready`` source back to ``pending``.

        Raises:
            NotFoundError: no source has this id.
            InvalidInput: ``status`` is ``processing`` (only a claim sets it) or unknown.
        """

    async def ensure_vector_index(self, *, model: str, dimensions: int) -> bool:
        """Create the ANN index for ``model`` if the backend has one (PostgreSQL HNSW,
        ``halfvec_cosine_ops``); ``True`` if it was created now, ``False`` if it existed or
        the backend has no ANN index (SQLite).

        The PostgreSQL index is partial and on an expression; a query uses it when it repeats
        both: ``WHERE model = '<model>' ORDER BY (embedding::halfvec(D)) <=> $1`` with the
        model as a literal (a generic plan with ``model = $n`` cannot match a partial index).
        """

    async def list_sources(
        self, *, workspace_id: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[KnowledgeSource]:
        """Sources, newest first, with their chunk counts."""

    async def knowledge_status(self, *, workspace_id: str | None = None) -> KnowledgeStatus:
        """Counts of sessions, unarchived messages, sources, chunks and embeddings per model,
        of one workspace (``workspace_id``) or of all.

        Every session and source status is a key (0 when none).
        """

    async def get_source(self, source_id: SourceId) -> KnowledgeSource | None:
        """The source with this id, with its chunk count, or ``None``."""

    async def chunks_of_source(self, source_id: SourceId) -> list[KnowledgeChunk]:
        """A source's chunks by ``chunk_index`` (empty if it has none or does not exist)."""

    async def get_embedding(self, chunk_id: ChunkId, model: str) -> npt.NDArray[np.float32] | None:
        """The vector stored for a chunk and model as float32 (PostgreSQL rounds to half
        precision), or ``None``."""


@runtime_checkable
class SearchStore(Protocol):
    """Retrieval over knowledge chunks: vector, lexical and fetch-by-id.

    Contract notes:

    * Every search is scoped to ``filters.workspace_id``: a chunk of another workspace is
      never returned. All filters (:class:`~omoide.stores.search.SearchFilters`) are
      applied inside the database query, so a search returns ``k`` hits whenever at least
      ``k`` chunks match (PostgreSQL: HNSW iterative scan, ``hnsw.iterative_scan``).
    * Hits come best first with ``rank`` 1, 2, …; **higher scores are better**: cosine
      similarity (``1 - cosine distance``) for vectors, BM25 for lexical (SQLite:
      ``-bm25()``; PostgreSQL: ``omoide.stores.postgres._bm25``). Compare ranks across lists, not scores.
    * ``k`` is between 1 and :data:`~omoide.stores.search.MAX_K`; anything else is an
      :class:`~omoide.errors.InvalidInput`.
    """

    async def vector_search(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[ChunkHit]:
        """The ``k`` chunks whose ``model`` vectors are most cosine-similar to ``query``.

        SQLite scans exactly (a cached, normalised matrix per workspace and model);
        PostgreSQL orders by ``(embedding::halfvec(D)) <=> $q`` with the model as a literal,
        so the model's partial HNSW index (``ensure_vector_index``) is used.

        Raises:
            InvalidInput: bad ``k``/filters/model, a non-finite or all-zero query, or a
                query size that differs from the stored vectors.
        """

    async def lexical_search(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[ChunkHit]:
        """The ``k`` best full-text matches of *any* of ``tokens`` (an OR query).

        ``tokens`` come from :func:`omoide.text.tokenize_for_search`, the function that
        wrote the index (check :meth:`lexical_tokenizer`). No tokens → ``[]``.

        Raises:
            InvalidInput: bad ``k``/filters, or ``tokens`` is not a sequence of strings.
        """

    async def vector_ranking(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        """:meth:`vector_search` as ids and scores only, best first (no rows are read):
        the search pipeline fuses these lists and fetches only the chunks it returns."""

    async def lexical_ranking(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        """:meth:`lexical_search` as ids and scores only, best first."""

    async def fetch_chunks(self, chunk_ids: Sequence[ChunkId]) -> list[ChunkHit]:
        """Chunks by id in the order given (duplicates once, unknown ids skipped), with
        ``score=0.0`` and ``rank=0``: for rerankers and answer display."""

    async def lexical_tokenizer(self) -> str | None:
        """Name of the tokenizer that wrote the lexical index (``search_tokenizer_name()`` at
        write time), ``"mixed"`` when different ones wrote it, ``None`` before any chunk."""


class LexicalTable(enum.StrEnum):
    """The tables whose ``lexical`` column feeds a full-text index."""

    CHUNKS = "knowledge_chunks"
    MEMORIES = "memories"


@runtime_checkable
class LexicalIndexStore(Protocol):
    """Rewriting the lexical tokens of stored rows (after the search tokenizer changed).

    Rows are visited in id order, a batch at a time, so a rebuild can stop and resume;
    every write goes through the same full-text sync as an ordinary insert.
    """

    async def lexical_batch(self, table: LexicalTable, *, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` rows ``(id, content)`` of ``table`` with ``id > after_id``, by id."""

    async def rewrite_lexical(self, table: LexicalTable, rows: Sequence[tuple[int, str]]) -> None:
        """Set ``lexical`` of each ``(id, tokens)`` (space-separated tokens); unknown ids are skipped."""

    async def set_lexical_tokenizer(self, name: str) -> None:
        """Record ``name`` as the tokenizer of the whole lexical index (replacing ``mixed``)."""

    async def lexical_row_count(self, table: LexicalTable) -> int:
        """Rows in ``table`` (for progress)."""


# ---- API keys


@runtime_checkable
class ApiKeyStore(Protocol):
    """API keys of the HTTP API and MCP server: hashed tokens, one workspace each.

    Contract notes:

    * The token is never stored, only ``token_hash`` (unique); a lookup is by that hash.
    * Revoking sets ``revoked_at`` once (revoking again keeps the first time); revoked keys
      stay listed (``include_revoked``) so an audit can see them.
    """

    async def insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        """Store a new key; return it as stored.

        Raises:
            ConflictError: a key with this hash exists (a reused token).
        """

    async def get_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """The key with this id (revoked or not), or ``None``."""

    async def get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        """The key with this token hash and the hash as stored, revoked or not, or ``None``."""

    async def list_api_keys(
        self, *, workspace_id: str | None = None, include_revoked: bool = True, limit: int = 100, offset: int = 0
    ) -> list[ApiKeyRecord]:
        """Keys, newest first (ties: higher id first), of one workspace or all."""

    async def revoke_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """Revoke the key (keeping an earlier revocation time); ``None`` when no key has this id."""


# ---- the store: one backend, one object per role

ROLES = ("sessions", "knowledge", "search", "lexical_index", "memories", "summaries", "api_keys")
"""The role attributes of every :class:`Store`, in the order a newcomer meets them."""


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

    def __getattr__(self, name: str) -> Any:  # TRANSITIONAL: removed once every caller names the role
        for role in ROLES:
            obj = self.__dict__.get(role)
            if obj is not None and obj is not self and hasattr(obj, name):
                return getattr(obj, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


__all__ = [
    "ROLES",
    "ApiKeyStore",
    "ErasureAware",
    "KnowledgeStore",
    "LexicalIndexStore",
    "LexicalTable",
    "SearchStore",
    "SessionStore",
    "Store",
]
