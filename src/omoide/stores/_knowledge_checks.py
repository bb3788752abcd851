"""The argument checks of :class:`~omoide.stores.knowledge.KnowledgeStore`'s public methods.

Every backend validates the same way *before* touching the database, because the contract
runs these checks and then calls the backend: a bad archive plan, draft or vector fails
with the same :class:`~omoide.errors.InvalidInput` on SQLite and on PostgreSQL, naming
what was wrong, and nothing is written.

``omoide.stores.knowledge`` imports this module for its contract, and this module reads
the record types from it (as a module, so either can be imported first).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import Message, Session, SessionStatus
from omoide.stores import knowledge as records
from omoide.stores._checks import HALFVEC_MAX, check_int
from omoide.stores.units import READER_DIMENSIONS, check_unit_lexical


class CheckedVector(NamedTuple):
    """An :class:`EmbeddingRow` as checked (a tuple: ``chunk_id, vector, content_hash, units, reader``).

    Attributes:
        chunk_id: the chunk.
        vector: the float32 vector, ``(dimensions,)``.
        content_hash: the hash of the text it was computed from, if given.
        units: the unit vectors, a float32 ``(lines, dimensions)`` matrix, or ``None``.
        reader: the line reader's vectors, a float32 ``(lines, READER_DIMENSIONS)`` matrix, or
            ``None`` (as many lines as ``units`` when both are given).
    """

    chunk_id: int
    vector: npt.NDArray[np.float32]
    content_hash: str | None
    units: npt.NDArray[np.float32] | None
    reader: npt.NDArray[np.float32] | None


class CheckedLines(NamedTuple):
    """A :class:`LineVectorsRow` as checked (a tuple: ``chunk_id, content_hash, units, reader``).

    Attributes:
        chunk_id: the chunk.
        content_hash: the hash of the text the vectors were computed from.
        units: the unit vectors, a float32 ``(lines, dimensions)`` matrix, or ``None``.
        reader: the line reader's vectors, a float32 ``(lines, READER_DIMENSIONS)`` matrix, or
            ``None`` (never both ``None``; as many lines as ``units`` when both are given).
    """

    chunk_id: int
    content_hash: str
    units: npt.NDArray[np.float32] | None
    reader: npt.NDArray[np.float32] | None


def _optional_text(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be text or None, got {type(value).__name__}")


def _optional_time(name: str, value: object) -> None:
    if value is not None and not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime or None, got {type(value).__name__}")


def check_source(source: object) -> records.SourceDraft:
    """A :class:`SourceDraft` with text fields of the right types.

    Raises:
        InvalidInput: not a SourceDraft, empty workspace / type, or a field of the wrong type.
    """
    from omoide.stores.search import check_members  # not at the top: search.py imports the knowledge ids

    if not isinstance(source, records.SourceDraft):
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


def check_chunks(chunks: object) -> Sequence[records.ChunkDraft]:
    """A sequence of :class:`ChunkDraft` with fields of the right types.

    Raises:
        InvalidInput: not a sequence of ChunkDraft, or a field of the wrong type (the
            message names the chunk's position).
    """
    if not isinstance(chunks, Sequence) or isinstance(chunks, str | bytes):
        raise InvalidInput(f"chunks must be a sequence of ChunkDraft, got {type(chunks).__name__}")
    for i, chunk in enumerate(chunks):
        where = f"chunk {i}"
        if not isinstance(chunk, records.ChunkDraft):
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
        check_unit_lexical(chunk.unit_lexical, what=f"{where}: unit_lexical")
    return chunks


def check_plan(plan: object) -> records.ArchivePlan:
    """An :class:`ArchivePlan` whose numbers, status, source and chunks are well formed.

    Whether ``upto_seq`` fits the session is checked later, inside the transaction
    (``omoide.stores._knowledge_common.check_archive_range``).

    Raises:
        InvalidInput: not an ArchivePlan, a negative or non-integer number, an unknown
            status, or chunks without a source.
    """
    if not isinstance(plan, records.ArchivePlan):
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


def check_locked_plan(plan: object, session: Session) -> records.ArchivePlan:
    """A plan made by an :data:`ArchivePlanner` under the session's lock: well formed and for that session as read.

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


def check_finish_status(status: object) -> records.SourceStatus:
    """The status a worker may leave ``processing`` for: ready, failed or pending.

    Raises:
        InvalidInput: ``processing`` (only a claim sets it) or an unknown status.
    """
    try:
        value = records.SourceStatus(status)  # type: ignore[arg-type]
    except ValueError:
        allowed = ", ".join(s.value for s in records.SourceStatus)
        raise InvalidInput(f"unknown source status {status!r}; allowed: {allowed}") from None
    if value is records.SourceStatus.PROCESSING:
        raise InvalidInput("finish_source cannot set 'processing': claim_sources does that")
    return value


def _keyed_rows(rows: object, kinds: type[Any] | tuple[type[Any], ...], call: str) -> Iterator[tuple[int, Any, int]]:
    """``(index, row, chunk id)`` for each row of a ``call``'s ``rows``: a sequence of ``kinds``
    (the first one named in the errors), each with a positive chunk id not seen before.

    Raises:
        InvalidInput: anything else.
    """
    kind = (kinds if isinstance(kinds, tuple) else (kinds,))[0].__name__
    if not isinstance(rows, Sequence) or isinstance(rows, str | bytes):
        raise InvalidInput(f"rows must be a sequence of {kind}, got {type(rows).__name__}")
    seen: set[int] = set()
    items: Sequence[Any] = rows
    for i, row in enumerate(items):
        if not isinstance(row, kinds):
            raise InvalidInput(f"row {i} must be {_article(kind)} {kind}, got {type(row).__name__}")
        chunk_id = check_int(f"row {i}: chunk_id", row.chunk_id, minimum=1)
        if chunk_id in seen:
            raise InvalidInput(f"chunk {chunk_id} appears twice in one {call} call", chunk_id=chunk_id)
        seen.add(chunk_id)
        yield i, row, chunk_id


def _article(word: str) -> str:
    return "an" if word[:1] in "AEIOU" else "a"


def check_vectors(dimensions: int, rows: object) -> list[CheckedVector]:
    """A :class:`CheckedVector` for each :class:`EmbeddingRow`.

    Raises:
        InvalidInput: a row is not an EmbeddingRow, a chunk id repeats, a vector is not
            one-dimensional of length ``dimensions``, or holds NaN, an infinity or a value
            beyond ±65504 (the halfvec range); unit vectors or reader vectors that are not
            such a matrix (:func:`check_unit_vectors`, :func:`check_reader_vectors`), or
            whose numbers of lines differ.
    """
    out: list[CheckedVector] = []
    for i, row, chunk_id in _keyed_rows(rows, records.EmbeddingRow, "put_embeddings"):
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
        units, reader = _line_matrices(chunk_id, dimensions, row.unit_vectors, row.reader_vectors)
        out.append(CheckedVector(chunk_id, vector, row.content_hash, units, reader))
    return out


def _line_matrices(
    chunk_id: int, dimensions: int, unit_vectors: object, reader_vectors: object
) -> tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]:
    """A row's unit and reader matrices, checked, with as many lines in each."""
    units = check_unit_vectors(f"chunk {chunk_id}", dimensions, unit_vectors)
    reader = check_reader_vectors(f"chunk {chunk_id}", reader_vectors)
    if units is not None and reader is not None and units.shape[0] != reader.shape[0]:
        raise InvalidInput(
            f"chunk {chunk_id}: the reader vectors have {reader.shape[0]} line(s) but the unit vectors "
            f"{units.shape[0]}: one row per line record in both",
            chunk_id=chunk_id,
        )
    return units, reader


def check_line_vectors(dimensions: int, rows: object) -> list[CheckedLines]:
    """A :class:`CheckedLines` for each :class:`LineVectorsRow` (or :class:`EmbeddingRow`, whose
    chunk vector is not read).

    Raises:
        InvalidInput: a row of another type, a chunk id that repeats, a row without
            ``content_hash`` or without either matrix, or a matrix that is not one
            (:func:`check_unit_vectors`, :func:`check_reader_vectors`) or whose numbers of
            lines differ.
    """
    out: list[CheckedLines] = []
    kinds = (records.LineVectorsRow, records.EmbeddingRow)
    for i, row, chunk_id in _keyed_rows(rows, kinds, "put_unit_vectors"):
        _optional_text(f"row {i}: content_hash", row.content_hash)
        units, reader = _line_matrices(chunk_id, dimensions, row.unit_vectors, row.reader_vectors)
        if (units is None and reader is None) or row.content_hash is None:
            raise InvalidInput(
                f"chunk {chunk_id}: put_unit_vectors needs content_hash and unit_vectors or reader_vectors",
                chunk_id=chunk_id,
            )
        out.append(CheckedLines(chunk_id, row.content_hash, units, reader))
    return out


def check_unit_lexical_rows(rows: object) -> list[records.UnitLexicalRow]:
    """Each :class:`UnitLexicalRow` with a positive chunk id (once) and string tokens.

    Raises:
        InvalidInput: anything else.
    """
    out: list[records.UnitLexicalRow] = []
    for i, row, chunk_id in _keyed_rows(rows, records.UnitLexicalRow, "put_unit_lexical"):
        if not isinstance(row.content, str):
            raise InvalidInput(f"row {i}: content must be text")
        tokens = check_unit_lexical(row.unit_lexical, what=f"row {i}: unit_lexical")
        out.append(records.UnitLexicalRow(records.ChunkId(chunk_id), row.content, tokens or ()))
    return out


def check_unit_vectors(
    where: str, dimensions: int, value: object, *, what: str = "unit vectors"
) -> npt.NDArray[np.float32] | None:
    """``None``, or a float32 ``(lines, dimensions)`` matrix of finite values within ±65504
    (both kinds of per-line vectors are stored as float16 on PostgreSQL).

    Raises:
        InvalidInput: anything else (the message starts with ``where`` and names ``what``).
    """
    if value is None:
        return None
    try:
        matrix = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: the {what} are not numeric: {exc}") from exc
    if matrix.ndim != 2 or matrix.shape[0] < 1 or matrix.shape[1] != dimensions:
        raise InvalidInput(
            f"{where}: the {what} have shape {matrix.shape}, expected (lines, {dimensions}) "
            f"with at least one line for dimensions={dimensions}",
            dimensions=dimensions,
        )
    if not np.all(np.isfinite(matrix)) or float(np.max(np.abs(matrix), initial=0.0)) > HALFVEC_MAX:
        raise InvalidInput(f"{where}: the {what} hold NaN, an infinity or a value beyond ±{HALFVEC_MAX:g}")
    return np.ascontiguousarray(matrix)


def check_reader_vectors(where: str, value: object) -> npt.NDArray[np.float32] | None:
    """``None``, or the line reader's vectors: a float32 ``(lines, READER_DIMENSIONS)`` matrix of
    finite values within ±65504 (stored as float16 on both backends).

    Raises:
        InvalidInput: anything else (the message starts with ``where``).
    """
    return check_unit_vectors(where, READER_DIMENSIONS, value, what="reader vectors")


def checked_planner(planner: records.ArchivePlanner) -> records.ArchivePlanner:
    """``planner`` whose plans are checked (:func:`check_locked_plan`) before a backend applies them."""

    def plan(session: Session, messages: Sequence[Message]) -> records.ArchivePlan | None:
        made = planner(session, messages)
        return None if made is None else check_locked_plan(made, session)

    return plan


__all__ = [
    "CheckedLines",
    "CheckedVector",
    "check_chunks",
    "check_finish_status",
    "check_line_vectors",
    "check_locked_plan",
    "check_plan",
    "check_reader_vectors",
    "check_source",
    "check_unit_lexical_rows",
    "check_unit_vectors",
    "check_vectors",
    "checked_planner",
]
