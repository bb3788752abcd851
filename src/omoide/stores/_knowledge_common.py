"""Helpers both backends' knowledge operations share: JSON encoding, index names, SQL
literals, the archive's in-transaction fit check, errors and status rows.

The argument checks of the public methods are in :mod:`omoide.stores._knowledge_checks`
(run by the :class:`~omoide.stores.knowledge.KnowledgeStore` contract); the number, model
and vector-size checks shared with other contracts are in :mod:`omoide.stores._checks` and
importable from here too.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from omoide.errors import InvalidInput, NotFoundError, SessionNotFound, VersionConflict
from omoide.models import SessionStatus, ensure_utc
from omoide.stores.knowledge import ArchivePlan, KnowledgeStatus, SourceDraft, SourceStatus

VECTOR_INDEX_PREFIX = "chunk_embeddings_hnsw_"


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
            NaN or an infinity) or is nested too deeply to encode; the message names ``what``.
    """
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{what} must be JSON-serialisable: {exc}") from exc


def source_members(source: SourceDraft) -> str:
    """The stored ``members`` JSON of a source: its members when private (duplicates dropped), else ``[]``."""
    return json.dumps(list(dict.fromkeys(source.members)) if source.private else [])


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
    "VECTOR_INDEX_PREFIX",
    "check_archive_range",
    "prune_through",
    "session_not_found",
    "source_not_found",
    "sql_literal",
    "status_from_rows",
    "to_json",
    "vector_index_name",
    "version_conflict",
]
