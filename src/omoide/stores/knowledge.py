"""Long-term memory: the :class:`KnowledgeStore` contract and its records (sources, chunks,
embeddings, archive plans).

A *source* is one archived session, one imported channel window set, or a document; its
*chunks* are the searchable pieces. Chunks are written with no embedding; the embedding
processor fills ``chunk_embeddings`` later, per embedding model.

:class:`KnowledgeStore`'s public methods check their arguments (the checks are in
``_knowledge_checks``) and then call the backend, so a bad archive plan, draft or vector
fails with the same :class:`~omoide.errors.InvalidInput` on SQLite and on PostgreSQL,
naming what was wrong, and nothing is written.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import Session, SessionId
from omoide.stores._checks import MAX_INDEX_DIMENSIONS, check_dimensions, check_int, check_model, check_number
from omoide.stores._erasure_common import ErasureAware
from omoide.stores._knowledge_checks import (
    CheckedLines,
    CheckedVector,
    check_chunks,
    check_finish_status,
    check_line_vectors,
    check_plan,
    check_source,
    check_unit_lexical_rows,
    check_vectors,
    checked_planner,
)
from omoide.stores.knowledge_records import (
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
    LineVectorsRow,
    SourceDraft,
    SourceId,
    SourceStatus,
)
from omoide.stores.units import CompactedPage, UnitLexicalRow

# The records (sources, chunks, embeddings, archive plans) live in ``knowledge_records`` and are
# re-exported here (``__all__``): callers import them from this module, beside the contract.

# --------------------------------------------------------------------------- the contract


class KnowledgeStore(ErasureAware):
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

    The public methods check their arguments (``InvalidInput`` when malformed) and call the
    backend's ``_``-prefixed method with the checked values.
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
            InvalidInput: a malformed plan, or ``upto_seq`` is not beyond ``archived_seq`` or
                beyond ``last_seq``.
        """
        return await self._archive_session(check_plan(plan))

    async def archive_session_locked(
        self, session_id: SessionId, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """Read, plan and apply an archive while holding the session's write lock.

        The pessimistic fallback for a session so busy that optimistic plans keep conflicting
        with appends: the session and its unarchived messages are read inside the archive
        transaction (``BEGIN IMMEDIATE`` on SQLite, the planner running in the writer thread;
        the session row locked by the first statement of a REPEATABLE READ transaction on
        PostgreSQL, the planner running in a worker thread), ``planner(session, messages)``
        plans against exactly that read (``messages``: every message the session still
        stores, oldest first — the unarchived ones above ``archived_seq`` and the overlap
        kept below it), and the plan is applied as by :meth:`archive_session` before
        anything else can write to the session. Appends to the session wait meanwhile, so
        the planner must be quick, pure computation.

        Returns:
            ``(plan, result)``, or ``None`` when the planner returned ``None`` (nothing written).

        Raises:
            SessionNotFound: the session is gone.
            VersionConflict: PostgreSQL only, an append was committing just as the lock was
                taken (serialization failure); retry.
            InvalidInput: ``planner`` is not callable, or its plan is malformed, not for the
                session as given, or does not fit.
        """
        sid = check_int("session_id", session_id)
        if not callable(planner):
            raise InvalidInput(f"planner must be callable, got {type(planner).__name__}")
        return await self._archive_session_locked(sid, checked_planner(planner))

    async def sessions_to_archive(self, *, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        """Sessions with unarchived messages (``last_seq > archived_seq``) that are either idle
        (``last_active_at < idle_before``) or have at least ``min_unarchived`` unarchived
        messages, oldest activity first (ties: lower id), at most ``limit``.

        Any status qualifies: an *expired* session's unarchived messages must still reach
        long-term memory (an archived session normally has none left).
        """
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        minimum = check_int("min_unarchived", min_unarchived, minimum=1)
        return await self._sessions_to_archive(idle_before, minimum, check_int("limit", limit, minimum=1))

    async def add_source(
        self, source: SourceDraft, chunks: Sequence[ChunkDraft], *, erasure_generation: int | None = None
    ) -> tuple[SourceId, list[ChunkId]]:
        """Create a ``pending`` source with its chunks (``chunk_index`` 0..n-1) in one
        transaction (importers, documents); return the source id and the chunk ids in order.

        Raises:
            ErasureConflict: ``erasure_generation`` is given and a user of the workspace was
                erased since (see :meth:`erasure_state`).
        """
        check_source(source)
        drafts = list(check_chunks(chunks))
        generation = None if erasure_generation is None else check_int("erasure_generation", erasure_generation)
        return await self._add_source(source, drafts, generation)

    async def claim_sources(self, *, limit: int, lease_seconds: float) -> list[SourceId]:
        """Claim up to ``limit`` sources to embed: ``pending`` ones, and ``processing`` ones
        whose lease expired. Sets ``processing``, ``claimed_at = now``, ``attempts += 1``.

        Oldest (lowest id) first; returns the claimed ids ascending. Concurrent claimers
        (tasks, processes, hosts) never get the same source while its lease runs.
        """
        checked = check_int("limit", limit, minimum=1)
        return await self._claim_sources(checked, check_number("lease_seconds", lease_seconds))

    async def chunks_missing_embedding(
        self,
        *,
        model: str,
        source_ids: Sequence[SourceId] | None = None,
        after_id: int = 0,
        limit: int = 1000,
        settled_only: bool = False,
    ) -> list[ChunkText]:
        """Chunks (of these sources, or all) with no vector for ``model``, by id, ``id > after_id``.

        ``settled_only`` (with every source): only chunks of sources that no claim will embed
        (``ready`` or ``failed``) — what a worker's catch-up pass takes, so that N workers
        starting at once do not all embed the chunks the claimed path hands out one each.

        Raises:
            InvalidInput: a bad model, id, limit, or ``settled_only`` with ``source_ids``.
        """
        check_model(model)
        after = check_int("after_id", after_id, minimum=0)
        checked_limit = check_int("limit", limit, minimum=1)
        ids = None if source_ids is None else [check_int("source_ids[]", i) for i in source_ids]
        if ids is not None and settled_only:
            raise InvalidInput("chunks_missing_embedding: settled_only applies to every source, not to source_ids")
        if ids is not None and not ids:
            return []
        return await self._chunks_missing_embedding(model, ids, after, checked_limit, settled_only)

    async def put_embeddings(self, *, model: str, dimensions: int, rows: Sequence[EmbeddingRow]) -> int:
        """Insert or replace vectors for ``model`` (float32 on SQLite, ``halfvec`` on
        PostgreSQL); return how many were written.

        A row replaces the whole stored row: its unit vectors and reader vectors too (``NULL``
        when not given). Rows whose chunk no longer exists (its source was deleted) are
        skipped, and so are rows whose ``content_hash`` no longer matches the chunk's content
        (an erasure rewrote it meanwhile).

        Raises:
            InvalidInput: a vector's length is not ``dimensions``, a value is not finite or
                beyond ±65504, a chunk id repeats within ``rows``, or unit / reader vectors
                are not matrices of the right width (``dimensions`` / ``READER_DIMENSIONS``)
                with as many lines as each other.
        """
        check_model(model)
        dims = check_dimensions(dimensions)
        checked = check_vectors(dims, rows)
        if not checked:
            return 0
        return await self._put_embeddings(model, dims, checked)

    async def release_sources(self, source_ids: Sequence[SourceId]) -> int:
        """Hand claimed sources back unfinished (a clean stop): those of ``source_ids`` still
        ``processing`` go back to ``pending`` with no lease, and the claim is not counted as an
        attempt (``attempts -= 1``); their ``error`` stays. Others are left alone. Returns how
        many were released.
        """
        ids = [check_int("source_ids[]", i) for i in source_ids]
        if not ids:
            return 0
        return await self._release_sources(ids)

    async def renew_claims(self, source_ids: Sequence[SourceId]) -> int:
        """Extend the lease of claimed sources: those of ``source_ids`` still ``processing`` get
        ``claimed_at`` = now, so a worker that is alive but slow keeps them (the embedder renews
        its claims while it works); others are left alone. Returns how many were renewed."""
        ids = [check_int("source_ids[]", i) for i in source_ids]
        if not ids:
            return 0
        return await self._renew_claims(ids)

    async def finish_source(self, source_id: SourceId, *, status: SourceStatus, error: str | None = None) -> None:
        """Leave ``processing``: ``ready``, ``failed`` (with ``error``) or back to ``pending`` (retry later).

        Stores ``error`` as given (``None`` clears it) and drops the lease. The current
        status is not checked, so a reindex may also move a ``ready`` source back to ``pending``.

        Raises:
            NotFoundError: no source has this id.
            InvalidInput: ``status`` is ``processing`` (only a claim sets it) or unknown.
        """
        sid = check_int("source_id", source_id)
        new_status = check_finish_status(status)
        if error is not None and not isinstance(error, str):
            raise InvalidInput(f"error must be text or None, got {type(error).__name__}")
        await self._finish_source(sid, new_status, error)

    async def ensure_vector_index(self, *, model: str, dimensions: int) -> bool:
        """Create the ANN index for ``model`` if the backend has one (PostgreSQL HNSW,
        ``halfvec_cosine_ops``, ``m`` / ``ef_construction`` from settings); ``True`` if it was
        created now, ``False`` if it existed or the backend has no ANN index (SQLite scans
        its vectors).

        The PostgreSQL index is partial and on an expression; a query uses it when it repeats
        both: ``WHERE model = '<model>' ORDER BY (embedding::halfvec(D)) <=> $1`` with the
        model as a literal (a generic plan with ``model = $n`` cannot match a partial index).

        Raises:
            InvalidInput: an empty model id, or more than 4,000 dimensions (HNSW's halfvec limit).
        """
        check_model(model)
        return await self._ensure_vector_index(model, check_dimensions(dimensions, limit=MAX_INDEX_DIMENSIONS))

    async def chunks_missing_units(self, *, after_id: int = 0, limit: int = 500) -> list[ChunkText]:
        """Chunks with line records but no unit tokens (written before units existed), by id,
        ``id > after_id``: what ``omoide reindex --units`` builds (resumable: done ones drop out)."""
        after = check_int("after_id", after_id, minimum=0)
        return await self._chunks_missing_units(after, check_int("limit", limit, minimum=1))

    async def put_unit_lexical(self, rows: Sequence[UnitLexicalRow]) -> int:
        """Write the unit tokens of chunks that have none; a row is skipped when its chunk is
        gone or its content changed since it was read (an erasure rewrote it). Returns the
        number written.

        Raises:
            InvalidInput: not a sequence of :class:`UnitLexicalRow`, a repeated chunk id, or
                tokens that are not strings.
        """
        checked = check_unit_lexical_rows(rows)
        if not checked:
            return 0
        return await self._put_unit_lexical(checked)

    async def embeddings_missing_units(
        self, *, model: str, after_id: int = 0, limit: int = 500, reader: bool = False
    ) -> list[ChunkText]:
        """Chunks with line records whose ``model`` vector has no unit vectors yet, by id,
        ``id > after_id`` (``omoide reindex --units``); with ``reader``, also those whose
        ``model`` vector has no line reader's vectors yet."""
        check_model(model)
        after = check_int("after_id", after_id, minimum=0)
        if not isinstance(reader, bool):
            raise InvalidInput(f"reader must be a bool, got {type(reader).__name__}")
        return await self._embeddings_missing_units(model, after, check_int("limit", limit, minimum=1), reader)

    async def put_unit_vectors(
        self, *, model: str, dimensions: int, rows: Sequence[LineVectorsRow | EmbeddingRow]
    ) -> int:
        """Add unit vectors and/or the line reader's vectors to existing ``model`` vectors; each
        row a :class:`LineVectorsRow` (an :class:`EmbeddingRow` is taken too, its ``vector``
        ignored). A row needs ``content_hash`` and at least one of ``unit_vectors`` and
        ``reader_vectors``; what it does not carry keeps what is stored (a reader-only row gives an
        old chunk its reader's vectors without embedding its units again). A row is skipped when
        the chunk has no ``model`` vector any more or its content hash differs. Returns the number
        written.

        Raises:
            InvalidInput: a bad model, dimensions or matrix (as :meth:`put_embeddings`), a row
                without hash or without either kind, or of another type.
        """
        check_model(model)
        dims = check_dimensions(dimensions)
        checked = check_line_vectors(dims, rows)
        if not checked:
            return 0
        return await self._put_unit_vectors(model, dims, checked)

    async def compact_line_vectors(self, *, after_id: int = 0, limit: int = 200) -> CompactedPage:
        """Rewrite in the int8 form (:mod:`omoide.stores.unit_codec`) the unit and line-reader
        vectors of up to ``limit`` stored vectors, by chunk id ``> after_id``, that still hold them
        in an older form (float32 or float16, written before it): ``omoide reindex --compact``. The
        values read back are those stored, within half a step of each line's int8 scale. A vector
        re-embedded or erased since it was read is left as it now is.

        Raises:
            InvalidInput: a negative ``after_id`` or a ``limit`` below 1.
        """
        after = check_int("after_id", after_id, minimum=0)
        return await self._compact_line_vectors(after, check_int("limit", limit, minimum=1))

    async def list_sources(
        self,
        *,
        workspace_id: str | None = None,
        origin_session_id: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[KnowledgeSource]:
        """Sources, newest first, with their chunk counts; with ``origin_session_id``, only those
        archived from that session (metadata ``origin_session_id``; indexed per workspace).

        Raises:
            InvalidInput: ``origin_session_id`` without ``workspace_id``, or a negative limit / offset.
        """
        checked_limit = check_int("limit", limit, minimum=0)
        checked_offset = check_int("offset", offset, minimum=0)
        origin = None
        if origin_session_id is not None:
            origin = check_int("origin_session_id", origin_session_id)
            if workspace_id is None:
                raise InvalidInput("list_sources(origin_session_id=...) needs the session's workspace_id")
        return await self._list_sources(workspace_id, origin, checked_limit, checked_offset)

    async def knowledge_status(self, *, workspace_id: str | None = None) -> KnowledgeStatus:
        """Counts of sessions, unarchived messages, sources, chunks and embeddings per model,
        of one workspace (``workspace_id``) or of all.

        Every session and source status is a key (0 when none).
        """
        return await self._knowledge_status(workspace_id)

    async def get_source(self, source_id: SourceId) -> KnowledgeSource | None:
        """The source with this id, with its chunk count, or ``None``."""
        return await self._get_source(check_int("source_id", source_id))

    async def chunks_of_source(self, source_id: SourceId) -> list[KnowledgeChunk]:
        """A source's chunks by ``chunk_index`` (empty if it has none or does not exist)."""
        return await self._chunks_of_source(check_int("source_id", source_id))

    async def get_embedding(self, chunk_id: ChunkId, model: str) -> npt.NDArray[np.float32] | None:
        """The vector stored for a chunk and model as float32 (PostgreSQL rounds to half
        precision), or ``None``."""
        cid = check_int("chunk_id", chunk_id)
        return await self._get_embedding(cid, check_model(model))

    # ---- the backend's part: called with checked values

    @abc.abstractmethod
    async def _archive_session(self, plan: ArchivePlan) -> ArchiveResult:
        """Apply a well-formed plan (whether it fits the session is checked in the transaction)."""

    @abc.abstractmethod
    async def _archive_session_locked(
        self, session_id: int, planner: ArchivePlanner
    ) -> tuple[ArchivePlan, ArchiveResult] | None:
        """Read, plan and apply under the session's lock; ``planner`` checks the plans it returns."""

    @abc.abstractmethod
    async def _sessions_to_archive(self, idle_before: datetime, min_unarchived: int, limit: int) -> list[Session]:
        """Sessions due for archiving."""

    @abc.abstractmethod
    async def _add_source(
        self, source: SourceDraft, chunks: list[ChunkDraft], erasure_generation: int | None
    ) -> tuple[SourceId, list[ChunkId]]:
        """Insert a checked source and its chunks, refusing a stale erasure generation."""

    @abc.abstractmethod
    async def _claim_sources(self, limit: int, lease_seconds: float) -> list[SourceId]:
        """Claim sources to embed."""

    @abc.abstractmethod
    async def _chunks_missing_embedding(
        self, model: str, source_ids: list[int] | None, after_id: int, limit: int, settled_only: bool
    ) -> list[ChunkText]:
        """Chunks with no vector for ``model`` (``source_ids`` is ``None`` or not empty; ``settled_only``
        only with ``None``)."""

    @abc.abstractmethod
    async def _put_embeddings(self, model: str, dimensions: int, rows: list[CheckedVector]) -> int:
        """Write checked vectors (``rows`` is not empty)."""

    @abc.abstractmethod
    async def _release_sources(self, source_ids: list[int]) -> int:
        """Hand claimed sources back (``source_ids`` is not empty)."""

    @abc.abstractmethod
    async def _renew_claims(self, source_ids: list[int]) -> int:
        """Extend the lease of sources still processing (``source_ids`` is not empty)."""

    @abc.abstractmethod
    async def _finish_source(self, source_id: int, status: SourceStatus, error: str | None) -> None:
        """Set a source's status and error, dropping the lease."""

    @abc.abstractmethod
    async def _ensure_vector_index(self, model: str, dimensions: int) -> bool:
        """Create the ANN index of ``model`` unless it exists."""

    @abc.abstractmethod
    async def _chunks_missing_units(self, after_id: int, limit: int) -> list[ChunkText]:
        """Chunks with line records and ``unit_lexical`` NULL."""

    @abc.abstractmethod
    async def _put_unit_lexical(self, rows: list[UnitLexicalRow]) -> int:
        """Write checked unit tokens where the content still matches (``rows`` is not empty)."""

    @abc.abstractmethod
    async def _embeddings_missing_units(self, model: str, after_id: int, limit: int, reader: bool) -> list[ChunkText]:
        """Chunks with line records whose ``model`` vector has ``unit_vectors`` NULL (with
        ``reader``: or ``reader_vectors`` NULL), by id."""

    @abc.abstractmethod
    async def _put_unit_vectors(self, model: str, dimensions: int, rows: list[CheckedLines]) -> int:
        """Set the unit vectors of existing vectors where the content hash matches, and their
        reader vectors where the row has them (``COALESCE``: a row without keeps the stored ones)."""

    @abc.abstractmethod
    async def _compact_line_vectors(self, after_id: int, limit: int) -> CompactedPage:
        """Rewrite a page of line vectors stored in an older form (see :meth:`compact_line_vectors`)."""

    @abc.abstractmethod
    async def _list_sources(
        self, workspace_id: str | None, origin_session_id: int | None, limit: int, offset: int
    ) -> list[KnowledgeSource]:
        """A page of sources, newest first (``origin_session_id`` comes with a ``workspace_id``)."""

    @abc.abstractmethod
    async def _knowledge_status(self, workspace_id: str | None) -> KnowledgeStatus:
        """The status counts."""

    @abc.abstractmethod
    async def _get_source(self, source_id: int) -> KnowledgeSource | None:
        """One source."""

    @abc.abstractmethod
    async def _chunks_of_source(self, source_id: int) -> list[KnowledgeChunk]:
        """A source's chunks."""

    @abc.abstractmethod
    async def _get_embedding(self, chunk_id: int, model: str) -> npt.NDArray[np.float32] | None:
        """One stored vector."""


__all__ = [
    "ArchivePlan",
    "ArchivePlanner",
    "ArchiveResult",
    "ChunkDraft",
    "ChunkId",
    "ChunkText",
    "CompactedPage",
    "EmbeddingRow",
    "KnowledgeChunk",
    "KnowledgeSource",
    "KnowledgeStatus",
    "KnowledgeStore",
    "LineVectorsRow",
    "SourceDraft",
    "SourceId",
    "SourceStatus",
    "UnitLexicalRow",
]
