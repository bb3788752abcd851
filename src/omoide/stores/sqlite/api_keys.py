"""API keys on SQLite: :class:`SqliteApiKeys` runs the operations of :mod:`._apikeys` on the store's threads."""

from __future__ import annotations

from omoide.models import utcnow
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyRecord, ApiKeyStore
from omoide.stores.sqlite import _apikeys as ops
from omoide.stores.sqlite._db import SqliteDb


class SqliteApiKeys(ApiKeyStore):
    def __init__(self, db: SqliteDb) -> None:
        self._db = db

    async def _insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        return await self._db.write("insert_api_key", ops.insert_api_key, draft, utcnow())

    async def _get_api_key(self, key_id: int) -> ApiKeyRecord | None:
        return await self._db.read("get_api_key", ops.get_api_key, key_id)

    async def _get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        return await self._db.read("get_api_key_by_hash", ops.get_api_key_by_hash, token_hash)

    async def _list_api_keys(
        self, workspace_id: str | None, include_revoked: bool, limit: int, offset: int
    ) -> list[ApiKeyRecord]:
        return await self._db.read("list_api_keys", ops.list_api_keys, workspace_id, include_revoked, limit, offset)

    async def _revoke_api_key(self, key_id: int) -> ApiKeyRecord | None:
        return await self._db.write("revoke_api_key", ops.revoke_api_key, key_id, utcnow())


__all__ = ["SqliteApiKeys"]
