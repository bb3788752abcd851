"""API keys of the HTTP API and the MCP server: one key, one workspace.

A key is a high-entropy random token shown once when it is created (``omk_`` followed by
43 URL-safe characters, 256 bits); the database keeps only its SHA-256 hash, so a leaked
database does not leak usable keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NewType

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


__all__ = ["ApiKeyDraft", "ApiKeyId", "ApiKeyRecord", "CreatedApiKey"]
