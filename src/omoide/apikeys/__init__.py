"""API keys (one workspace each) for the HTTP API and the MCP server; see :mod:`.service`."""

from omoide.apikeys.models import ApiKeyDraft, ApiKeyId, ApiKeyRecord, CreatedApiKey
from omoide.apikeys.service import TOKEN_PREFIX, ApiKeyService, hash_token

__all__ = [
    "TOKEN_PREFIX",
    "ApiKeyDraft",
    "ApiKeyId",
    "ApiKeyRecord",
    "ApiKeyService",
    "CreatedApiKey",
    "hash_token",
]
