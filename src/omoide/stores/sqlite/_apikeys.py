"""API keys on SQLite, one function per store operation (run in the store's threads)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from omoide.errors import ConflictError
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord
from omoide.stores.sqlite._conn import format_ts, parse_ts

COLUMNS = "id, workspace_id, name, prefix, created_at, revoked_at, token_hash"


def key_from_row(row: Sequence[Any]) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=ApiKeyId(int(row[0])),
        workspace_id=row[1],
        name=row[2],
        prefix=row[3],
        created_at=parse_ts(row[4]),
        revoked_at=None if row[5] is None else parse_ts(row[5]),
    )


def insert_api_key(conn: sqlite3.Connection, draft: ApiKeyDraft, now: datetime) -> ApiKeyRecord:
    try:
        row = conn.execute(
            f"INSERT INTO api_keys (workspace_id, name, prefix, token_hash, created_at) VALUES (?, ?, ?, ?, ?) "
            f"RETURNING {COLUMNS}",
            (draft.workspace_id, draft.name, draft.prefix, draft.token_hash, format_ts(now)),
        ).fetchone()
    except sqlite3.IntegrityError as exc:
        if "token_hash" in str(exc):
            raise ConflictError("an API key with this token already exists; create a new token") from None
        raise
    return key_from_row(row)


def get_api_key(conn: sqlite3.Connection, key_id: int) -> ApiKeyRecord | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM api_keys WHERE id = ?", (key_id,)).fetchone()
    return None if row is None else key_from_row(row)


def get_api_key_by_hash(conn: sqlite3.Connection, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM api_keys WHERE token_hash = ?", (token_hash,)).fetchone()
    return None if row is None else (key_from_row(row), str(row[6]))


def list_api_keys(
    conn: sqlite3.Connection, workspace_id: str | None, include_revoked: bool, limit: int, offset: int
) -> list[ApiKeyRecord]:
    where, args = [], []
    if workspace_id is not None:
        where.append("workspace_id = ?")
        args.append(workspace_id)
    if not include_revoked:
        where.append("revoked_at IS NULL")
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM api_keys {clause}ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (*args, limit, offset),
    ).fetchall()
    return [key_from_row(r) for r in rows]


def revoke_api_key(conn: sqlite3.Connection, key_id: int, now: datetime) -> ApiKeyRecord | None:
    row = conn.execute(
        f"UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? RETURNING {COLUMNS}",
        (format_ts(now), key_id),
    ).fetchone()
    return None if row is None else key_from_row(row)


__all__ = ["get_api_key", "get_api_key_by_hash", "insert_api_key", "list_api_keys", "revoke_api_key"]
