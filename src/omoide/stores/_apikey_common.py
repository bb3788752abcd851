"""Input checks shared by the API-key operations of both backends (no I/O)."""

from __future__ import annotations

import re

from omoide.errors import InvalidInput
from omoide.stores.api_keys import ApiKeyDraft

_HEX64 = re.compile(r"[0-9a-f]{64}")


def check_api_key_draft(draft: object) -> ApiKeyDraft:
    if not isinstance(draft, ApiKeyDraft):
        raise InvalidInput(f"insert_api_key needs an ApiKeyDraft, got {type(draft).__name__}")
    if not isinstance(draft.workspace_id, str) or not draft.workspace_id:
        raise InvalidInput(f"an API key's workspace_id must be non-empty text, got {draft.workspace_id!r}")
    if not isinstance(draft.name, str) or not isinstance(draft.prefix, str):
        raise InvalidInput("an API key's name and prefix must be text")
    check_token_hash(draft.token_hash)
    return draft


def check_token_hash(value: object) -> str:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise InvalidInput("a token hash is 64 lowercase hex characters (SHA-256)")
    return value


def check_api_key_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"an API key id is a positive integer, got {value!r}")
    return value


def check_page(limit: object, offset: object) -> tuple[int, int]:
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{name} must be a non-negative integer, got {value!r}")
    return int(limit), int(offset)  # type: ignore[call-overload]


__all__ = ["check_api_key_draft", "check_api_key_id", "check_page", "check_token_hash"]
