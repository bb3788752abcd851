"""API keys of the HTTP API and the MCP server: one key, one workspace.

A key is a high-entropy random token shown once when it is created (``omk_`` followed by
43 URL-safe characters, 256 bits); the database keeps only its SHA-256 hash, so a leaked
database does not leak usable keys. :class:`ApiKeyStore` is the contract of the backends:
its public methods check their arguments once, here, then call the backend's ``_<name>``.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NewType

from omoide.errors import InvalidInput

ApiKeyId = NewType("ApiKeyId", int)


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """One stored API key (never the token itself).

    Attributes:
        id: its id.
        workspace_id: the only workspace a request with this key can reach.
        name: a label for people (``"discord-bot"``), may be empty.
        prefix: the token's first characters (``omk_AbCd1234``), to recognise it in lists.
        created_at / revoked_at: UTC; ``revoked_at`` is ``None`` while the key is usable.
    """

    id: ApiKeyId
    workspace_id: str
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": int(self.id),
            "workspace_id": self.workspace_id,
            "name": self.name,
            "prefix": self.prefix,
            "created_at": self.created_at.isoformat(),
            "revoked_at": None if self.revoked_at is None else self.revoked_at.isoformat(),
            "active": self.active,
        }


@dataclass(frozen=True, slots=True)
class ApiKeyDraft:
    """A key to store: its hash (hex SHA-256 of the token), never the token."""

    workspace_id: str
    name: str
    prefix: str
    token_hash: str


@dataclass(frozen=True, slots=True)
class CreatedApiKey:
    """A new key: ``token`` is the plaintext, returned this once and stored nowhere."""

    record: ApiKeyRecord
    token: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.record.as_dict(), "token": self.token}


class ApiKeyStore(abc.ABC):
    """API keys of the HTTP API and MCP server: hashed tokens, one workspace each.

    Contract notes:

    * The token is never stored, only ``token_hash`` (unique); a lookup is by that hash.
    * Revoking sets ``revoked_at`` once (revoking again keeps the first time); revoked keys
      stay listed (``include_revoked``) so an audit can see them.
    * Bad arguments raise :class:`~omoide.errors.InvalidInput` before the database is asked.
    """

    async def insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        """Store a new key; return it as stored.

        Raises:
            ConflictError: a key with this hash exists (a reused token).
            InvalidInput: not an :class:`ApiKeyDraft`, an empty workspace, or a malformed hash.
        """
        return await self._insert_api_key(check_api_key_draft(draft))

    async def get_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """The key with this id (revoked or not), or ``None``."""
        return await self._get_api_key(check_api_key_id(key_id))

    async def get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        """The key with this token hash and the hash as stored, revoked or not, or ``None``.

        Raises:
            InvalidInput: ``token_hash`` is not 64 lowercase hex characters.
        """
        return await self._get_api_key_by_hash(check_token_hash(token_hash))

    async def list_api_keys(
        self, *, workspace_id: str | None = None, include_revoked: bool = True, limit: int = 100, offset: int = 0
    ) -> list[ApiKeyRecord]:
        """Keys, newest first (ties: higher id first), of one workspace or all."""
        lim, off = check_page(limit, offset)
        return await self._list_api_keys(workspace_id, bool(include_revoked), lim, off)

    async def revoke_api_key(self, key_id: ApiKeyId) -> ApiKeyRecord | None:
        """Revoke the key (keeping an earlier revocation time); ``None`` when no key has this id."""
        return await self._revoke_api_key(check_api_key_id(key_id))

    # ------------------------------------------------------------------ the backend

    @abc.abstractmethod
    async def _insert_api_key(self, draft: ApiKeyDraft) -> ApiKeyRecord:
        """Insert a checked draft, stamped now."""

    @abc.abstractmethod
    async def _get_api_key(self, key_id: int) -> ApiKeyRecord | None:
        """The key with this id."""

    @abc.abstractmethod
    async def _get_api_key_by_hash(self, token_hash: str) -> tuple[ApiKeyRecord, str] | None:
        """The key with this hash, and the hash as stored."""

    @abc.abstractmethod
    async def _list_api_keys(
        self, workspace_id: str | None, include_revoked: bool, limit: int, offset: int
    ) -> list[ApiKeyRecord]:
        """Keys, newest first (ties: higher id first)."""

    @abc.abstractmethod
    async def _revoke_api_key(self, key_id: int) -> ApiKeyRecord | None:
        """Set ``revoked_at`` unless already set; the key as stored."""


# ---------------------------------------------------------------------- checks

_HEX64 = re.compile(r"[0-9a-f]{64}")


def check_api_key_draft(draft: object) -> ApiKeyDraft:
    """``draft`` as an :class:`ApiKeyDraft` with a workspace, text name and prefix, and a hex hash.

    Raises:
        InvalidInput: it is not.
    """
    if not isinstance(draft, ApiKeyDraft):
        raise InvalidInput(f"insert_api_key needs an ApiKeyDraft, got {type(draft).__name__}")
    if not isinstance(draft.workspace_id, str) or not draft.workspace_id:
        raise InvalidInput(f"an API key's workspace_id must be non-empty text, got {draft.workspace_id!r}")
    if not isinstance(draft.name, str) or not isinstance(draft.prefix, str):
        raise InvalidInput("an API key's name and prefix must be text")
    check_token_hash(draft.token_hash)
    return draft


def check_token_hash(value: object) -> str:
    """``value`` as a hex SHA-256 (64 lowercase hex characters).

    Raises:
        InvalidInput: it is not.
    """
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise InvalidInput("a token hash is 64 lowercase hex characters (SHA-256)")
    return value


def check_api_key_id(value: object) -> int:
    """``value`` as a positive ``int``.

    Raises:
        InvalidInput: it is not.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"an API key id is a positive integer, got {value!r}")
    return value


def check_page(limit: object, offset: object) -> tuple[int, int]:
    """``limit`` and ``offset`` as non-negative ``int`` s.

    Raises:
        InvalidInput: either is not.
    """
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{name} must be a non-negative integer, got {value!r}")
    return int(limit), int(offset)  # type: ignore[call-overload]


__all__ = [
    "ApiKeyDraft",
    "ApiKeyId",
    "ApiKeyRecord",
    "ApiKeyStore",
    "CreatedApiKey",
    "check_api_key_draft",
    "check_api_key_id",
    "check_page",
    "check_token_hash",
]
