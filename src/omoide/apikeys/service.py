"""``Memory.api_keys``: create, verify, list and revoke API keys.

Example:
    >>> created = await mem.api_keys.create("1290478288896131072", name="discord-bot")  # doctest: +SKIP
    >>> created.token                     # shown once; only its SHA-256 is stored     # doctest: +SKIP
    'omk_…'
    >>> record = await mem.api_keys.verify(created.token)                               # doctest: +SKIP
    >>> record.workspace_id                                                               # doctest: +SKIP
    '1290478288896131072'

Tokens are ``omk_`` + 43 URL-safe characters (``secrets.token_urlsafe(32)``, 256 bits). The
store keeps the hex SHA-256 of the token and finds a key by that hash (a unique index);
the hash found is compared again with :func:`hmac.compare_digest`. A plain hash (no salt,
no slow KDF) is the right tool for a random 256-bit secret: nobody can guess one to hash.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from omoide.errors import InvalidInput, NotFoundError
from omoide.stores.api_keys import ApiKeyDraft, ApiKeyId, ApiKeyRecord, CreatedApiKey

if TYPE_CHECKING:
    from omoide.stores.api_keys import ApiKeyStore

TOKEN_PREFIX = "omk_"
TOKEN_BYTES = 32
DISPLAY_PREFIX_CHARS = 12  # "omk_" + 8 characters
MAX_TOKEN_CHARS = 200
MAX_NAME_CHARS = 100
MAX_WORKSPACE_CHARS = 256
MAX_CACHED_KEYS = 10_000


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token (what the ``api_keys`` table stores)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random token: ``omk_`` + 43 URL-safe characters."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def _workspace(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInput(f"workspace must be text or an integer id, got {type(value).__name__}")
    text = str(value).strip()
    if not text or len(text) > MAX_WORKSPACE_CHARS:
        raise InvalidInput(f"workspace must be 1 to {MAX_WORKSPACE_CHARS} characters, got {text!r:.80}")
    return text


def _new_workspace(value: object) -> str:
    """A workspace to create a key for: as :func:`_workspace`, and one a session key can name."""
    text = _workspace(value)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):  # as a session key's parts (omoide.keys)
        raise InvalidInput(
            f"workspace must not hold a control character (no session key could name it), got {text!r:.80}"
        )
    return text


def _name(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"a key's name must be text, got {type(value).__name__}")
    text = value.strip()
    if len(text) > MAX_NAME_CHARS:
        raise InvalidInput(f"a key's name may hold at most {MAX_NAME_CHARS} characters, got {len(text)}")
    return text


def _key_id(value: object) -> ApiKeyId:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"an API key id is a positive integer, got {value!r}")
    return ApiKeyId(value)


class ApiKeyService:
    """API keys over an :class:`~omoide.stores.api_keys.ApiKeyStore`. Reached as ``Memory.api_keys``."""

    def __init__(
        self, store: ApiKeyStore, *, cache_seconds: float = 0.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._clock = clock
        # token hash -> (active record, valid until): saves a database read per request. Only
        # successes are cached (a new key works at once); a revocation through this service
        # drops its entry at once, one made elsewhere (another process) within cache_seconds.
        self._cache: dict[str, tuple[ApiKeyRecord, float]] = {}

    async def create(self, workspace: str | int, *, name: str | None = None) -> CreatedApiKey:
        """Create a key for ``workspace``; the returned ``token`` is the only copy of it.

        Raises:
            InvalidInput: an empty or too long workspace or name, or a workspace with a control character.
        """
        token = new_token()
        draft = ApiKeyDraft(_new_workspace(workspace), _name(name), token[:DISPLAY_PREFIX_CHARS], hash_token(token))
        record = await self.store.insert_api_key(draft)
        return CreatedApiKey(record, token)

    async def verify(self, token: str | None) -> ApiKeyRecord | None:
        """The active key whose token this is, or ``None`` (unknown, revoked or malformed token).

        Never raises for a bad token: a caller answers 401 on ``None``.
        """
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_CHARS:
            return None
        digest = hash_token(token)
        if self.cache_seconds > 0:
            cached = self._cache.get(digest)
            if cached is not None and cached[1] > self._clock():
                return cached[0]
        found = await self.store.get_api_key_by_hash(digest)
        if found is None:
            return None
        record, stored_hash = found
        if not hmac.compare_digest(stored_hash, digest) or not record.active:
            self._cache.pop(digest, None)
            return None
        if self.cache_seconds > 0:
            if len(self._cache) >= MAX_CACHED_KEYS:
                self._cache.clear()
            self._cache[digest] = (record, self._clock() + self.cache_seconds)
        return record

    async def get(self, key_id: int) -> ApiKeyRecord:
        """The key with this id (revoked or not).

        Raises:
            NotFoundError: no key has this id.
        """
        record = await self.store.get_api_key(_key_id(key_id))
        if record is None:
            raise NotFoundError(f"no API key has id {key_id}; `omoide keys list` shows them", key_id=key_id)
        return record

    async def list(
        self, *, workspace: str | int | None = None, include_revoked: bool = True, limit: int = 100, offset: int = 0
    ) -> builtins.list[ApiKeyRecord]:
        """Keys, newest first (of one workspace, or all).

        Raises:
            InvalidInput: a bad workspace, limit (1–1000) or offset.
        """
        for label, value, low, high in (("limit", limit, 1, 1000), ("offset", offset, 0, 10**9)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidInput(f"{label} must be an integer from {low} to {high}, got {value!r}")
        ws = None if workspace is None else _workspace(workspace)
        return await self.store.list_api_keys(
            workspace_id=ws, include_revoked=bool(include_revoked), limit=limit, offset=offset
        )

    async def revoke(self, key_id: int) -> ApiKeyRecord:
        """Revoke a key at once (idempotent: a revoked key keeps its first revocation time).

        Raises:
            NotFoundError: no key has this id.
        """
        record = await self.store.revoke_api_key(_key_id(key_id))
        for digest in [d for d, (r, _) in self._cache.items() if r.id == key_id]:
            del self._cache[digest]
        if record is None:
            raise NotFoundError(f"no API key has id {key_id}; `omoide keys list` shows them", key_id=key_id)
        return record


__all__ = ["TOKEN_PREFIX", "ApiKeyService", "hash_token", "new_token"]
