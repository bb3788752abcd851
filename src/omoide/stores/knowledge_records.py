"""The records of long-term memory (sources, chunks, embeddings, archive plans), apart from the
:class:`~omoide.stores.knowledge.KnowledgeStore` contract that reads and writes them (and re-exports
them: import them from :mod:`omoide.stores.knowledge`)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NewType

import numpy as np
import numpy.typing as npt

from omoide.models import Message, Session, SessionId, SessionStatus

SourceId = NewType("SourceId", int)
ChunkId = NewType("ChunkId", int)


class SourceStatus(enum.StrEnum):
    PENDING = "pending"  # chunks written, not yet embedded for the active model
    PROCESSING = "processing"  # claimed by an embedding worker (a lease: claimed_at)
    READY = "ready"
    FAILED = "failed"  # permanent error, or out of attempts; ``error`` says why


@dataclass(frozen=True, slots=True)
class SourceDraft:
    """A knowledge source to create.

    Attributes:
        type: ``discord_session``, ``slack_session``, ``agent_session``, ``cli_session``,
            ``discord_channel``, ``slack_channel``, ``transcript`` or ``document``.
        metadata: for archived sessions: ``origin_session_key``, ``origin_session_id``,
            ``workspace_id``, ``channel_id``, ``channel_name`` (when known), ``participants``
            (every author id), ``message_count``, ``first_message_at``, ``last_message_at``.
        private: visible only to ``members`` (a DM, group DM, private channel or thread);
            otherwise public to the whole workspace. Its chunks carry the same visibility.
        members: the user ids who may see a private source (ignored when public).
    """

    workspace_id: str
    type: str
    title: str
    uri: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    private: bool = False
    members: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk to create (its embedding comes later).

    Attributes:
        content: the text shown to a model and a user (``**Name**: …`` lines).
        lexical: omoide's own search tokens of ``content``, space-separated.
        location: where it came from, e.g. ``{"session_id": 1, "seq_start": 1, "seq_end": 20,
            "message_ids": [...], "total": 57}``.
        author_ids: every author in the chunk (for author filters).
        unit_lexical: the search tokens of each line record (one space-joined string per
            line, :func:`omoide.stores.units.unit_lexical_of`), or ``None`` (no line records).
    """

    content: str
    lexical: str
    token_count: int
    location: Mapping[str, Any] = field(default_factory=dict)
    channel_id: str | None = None
    thread_id: str | None = None
    author_ids: Sequence[str] = ()
    started_at: datetime | None = None
    ended_at: datetime | None = None
    unit_lexical: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ArchivePlan:
    """What one archive transaction does to one session (see ``KnowledgeStore.archive_session``).

    Attributes:
        session_id / expected_version: the session as the archiver read it; a different
            version at commit time is a :class:`~omoide.errors.VersionConflict`.
        upto_seq: messages with ``seq <= upto_seq`` are now in long-term memory
            (the new ``archived_seq``); must be > the session's ``archived_seq``.
        source / chunks: the knowledge to create, or ``None`` / ``()`` when the messages
            were filtered out (bot-only, too short): the watermark still moves.
        keep_newest: after archiving, delete archived messages except the newest
            ``keep_newest`` of the session (the overlap kept for context).
        status: the session's status afterwards (``archived`` for an idle session,
            ``active`` when archiving an active session's overflow).
    """

    session_id: SessionId
    expected_version: int
    upto_seq: int
    source: SourceDraft | None
    chunks: Sequence[ChunkDraft] = ()
    keep_newest: int = 5
    status: SessionStatus = SessionStatus.ARCHIVED


ArchivePlanner = Callable[[Session, Sequence[Message]], "ArchivePlan | None"]
"""Plans the archive of a session from the session and the messages it still stores
(unarchived, and the overlap kept below the watermark), as read under the session's lock (``None``: nothing to archive). Pure computation: see
``KnowledgeStore.archive_session_locked``."""


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    source_id: SourceId | None
    chunk_ids: tuple[ChunkId, ...]
    pruned: int  # messages deleted from the session
    session_version: int


@dataclass(frozen=True, slots=True)
class KnowledgeSource:
    id: SourceId
    workspace_id: str
    type: str
    title: str
    uri: str | None
    status: SourceStatus
    metadata: Mapping[str, Any]
    error: str | None
    attempts: int
    chunk_count: int
    created_at: datetime
    updated_at: datetime
    private: bool = False
    members: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KnowledgeChunk:
    """A stored chunk, as read back (``KnowledgeStore.chunks_of_source``).

    Attributes:
        chunk_index: its position in the source, 0, 1, 2, … in the order the drafts were given.
        location / author_ids / started_at / ended_at: as in :class:`ChunkDraft`; JSON values
            come back as JSON types (a datetime written into ``location`` reads back as ISO text).
    """

    id: ChunkId
    source_id: SourceId
    workspace_id: str
    chunk_index: int
    content: str
    lexical: str
    token_count: int
    location: Mapping[str, Any]
    channel_id: str | None
    thread_id: str | None
    author_ids: tuple[str, ...]
    started_at: datetime | None
    ended_at: datetime | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ChunkText:
    """A chunk waiting for an embedding (or for its units: ``omoide reindex --units``).

    ``location`` carries the line records the unit texts are cut from
    (:func:`omoide.stores.units.chunk_lines`).
    """

    id: ChunkId
    source_id: SourceId
    workspace_id: str
    content: str
    location: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EmbeddingRow:
    """A chunk's vector for one model and, optionally, the vectors of its units (one row per
    line record, ``(lines, dimensions)``; see :mod:`omoide.stores.units`) and the line reader's
    vectors of those lines (``reader_vectors``: one row per line record,
    ``(lines, READER_DIMENSIONS)``)."""

    chunk_id: ChunkId
    vector: npt.NDArray[np.float32]
    content_hash: str | None = None
    unit_vectors: npt.NDArray[np.float32] | None = None
    reader_vectors: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class LineVectorsRow:
    """Per-message vectors to add to a chunk's stored vector
    (:meth:`~omoide.stores.knowledge.KnowledgeStore.put_unit_vectors`): its unit vectors
    (``(lines, dimensions)``), the line reader's (``(lines, READER_DIMENSIONS)``), or both, for
    the text that hashes to ``content_hash`` (a chunk rewritten since is skipped)."""

    chunk_id: ChunkId
    content_hash: str
    unit_vectors: npt.NDArray[np.float32] | None = None
    reader_vectors: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class KnowledgeStatus:
    """Counts for ``omoide status``."""

    sessions: Mapping[str, int]  # by status
    unarchived_messages: int
    sources: Mapping[str, int]  # by status
    chunks: int
    embedded: Mapping[str, int]  # chunks with an embedding, by model
    units_missing: int = 0  # chunks with line records but no unit tokens (``omoide reindex --units``)
    unit_vectors_missing: Mapping[str, int] = field(
        default_factory=dict
    )  # embedded chunks without unit vectors, by model
    reader_vectors_missing: Mapping[str, int] = field(
        default_factory=dict
    )  # embedded chunks with line records without the line reader's vectors, by model
