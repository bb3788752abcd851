"""API keys on PostgreSQL: :class:`PostgresApiKeys` runs the statements of :mod:`._apikeys` on pooled connections."""

from __future__ import annotations

from omoide.stores.api_keys import ApiKeyDraft, ApiKeyRecord, ApiKeyStore
from omoide.stores.postgres import _apikeys as ops
from omoide.stores.postgres._db import PostgresDb


class PostgresApiKeys(ApiKeyStore):
    def __init__(self, db: PostgresDb) -> None:
        self._db = db

    async def _insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        async with self._db.acquire() as conn:
            return await ops.insert_api_key(conn, draft)

    async def _get_api_key(self, key_id: int) -> ApiKeyRecord | None:
        async with self._db.acquire() as conn:
            return await ops.get_api_key(conn, key_id)

    async def _get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        async with self._db.acquire() as conn:
            return await ops.get_api_key_by_hash(conn, token_hash)

    async def _list_api_keys(
        self, workspace_id: str | None, include_revoked: bool, limit: int, offset: int
    ) -> list[ApiKeyRecord]:
        async with self._db.acquire() as conn:
            return await ops.list_api_keys(conn, workspace_id, include_revoked, limit, offset)

    async def _revoke_api_key(self, key_id: int) -> ApiKeyRecord | None:
        async with self._db.acquire() as conn:
            return await ops.revoke_api_key(conn, key_id)


__all__ = ["PostgresApiKeys"]
