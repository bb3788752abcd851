"""API keys on PostgreSQL, one function per store operation (pooled asyncpg connection)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import asyncpg

from omoide.errors import ConflictError
from omoide.models import ensure_utc, utcnow
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord

COLUMNS = "id, workspace_id, name, prefix, created_at, revoked_at, token_hash"


def key_from_row(row: Mapping[str, Any]) -> ApiKeyRecord:
    return ApiKeyRecord(
        id=ApiKeyId(int(row["id"])),
        workspace_id=row["workspace_id"],
        name=row["name"],
        prefix=row["prefix"],
        created_at=ensure_utc(row["created_at"]),
        revoked_at=None if row["revoked_at"] is None else ensure_utc(row["revoked_at"]),
    )


async def insert_api_key(conn: asyncpg.Connection, draft: ApiKeyDraft) -> ApiKeyRecord:
    try:
        row = await conn.fetchrow(
            f"INSERT INTO api_keys (workspace_id, name, prefix, token_hash) VALUES ($1, $2, $3, $4) "
            f"RETURNING {COLUMNS}",
            draft.workspace_id,
            draft.name,
            draft.prefix,
            draft.token_hash,
        )
    except asyncpg.UniqueViolationError:
        raise ConflictError("an API key with this token already exists; create a new token") from None
    assert row is not None
    return key_from_row(row)


async def get_api_key(conn: asyncpg.Connection, key_id: int) -> ApiKeyRecord | None:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM api_keys WHERE id = $1", key_id)
    return None if row is None else key_from_row(row)


async def get_api_key_by_hash(conn: asyncpg.Connection, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
    row = await conn.fetchrow(f"SELECT {COLUMNS} FROM api_keys WHERE token_hash = $1", token_hash)
    return None if row is None else (key_from_row(row), str(row["token_hash"]))


async def list_api_keys(
    conn: asyncpg.Connection, workspace_id: str | None, include_revoked: bool, limit: int, offset: int
) -> list[ApiKeyRecord]:
    rows = await conn.fetch(
        f"SELECT {COLUMNS} FROM api_keys WHERE ($1::text IS NULL OR workspace_id = $1) "
        "AND ($2 OR revoked_at IS NULL) ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4",
        workspace_id,
        include_revoked,
        limit,
        offset,
    )
    return [key_from_row(r) for r in rows]


async def revoke_api_key(conn: asyncpg.Connection, key_id: int) -> ApiKeyRecord | None:
    row = await conn.fetchrow(
        # the time is a parameter: Citus refuses now() inside coalesce() (api_keys is a reference table there)
        f"UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2::timestamptz) WHERE id = $1 RETURNING {COLUMNS}",
        key_id,
        utcnow(),
    )
    return None if row is None else key_from_row(row)


__all__ = ["get_api_key", "get_api_key_by_hash", "insert_api_key", "list_api_keys", "revoke_api_key"]
