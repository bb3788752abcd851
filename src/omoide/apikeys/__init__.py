"""API keys (one workspace each) for the HTTP API and the MCP server; see :mod:`.service`."""

from omoide.apikeys.service import TOKEN_PREFIX, ApiKeyService, hash_token
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord, CreatedApiKey

__all__ = [
    "TOKEN_PREFIX",
    "ApiKeyDraft",
    "ApiKeyId",
    "ApiKeyRecord",
    "ApiKeyService",
    "CreatedApiKey",
    "hash_token",
]
