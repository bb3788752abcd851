"""The one exception hierarchy of omoide.

Every error omoide raises on purpose is an :class:`OmoideError`; driver and SDK
exceptions are translated at the boundary (``raise ... from exc``) so callers never
need to import a driver to handle a failure::

    OmoideError
    ├── ConfigError                 invalid or missing settings (names the setting)
    ├── InvalidInput                bad input from a caller; nothing was stored
    │   ├── InvalidSessionKey
    │   ├── InvalidContent          malformed content blocks
    │   ├── MessageTooLarge
    │   └── AmbiguousSessionPrefix  a /switch prefix matches several sessions
    ├── NotFoundError
    │   └── SessionNotFound
    │       └── UnknownSessionPrefix
    ├── ConflictError
    │   └── VersionConflict         optimistic-lock conflict (re-read and retry)
    ├── CapabilityNotSupported      the backend does not offer this feature
    ├── StoreError
    │   ├── StoreUnavailable        cannot connect / database locked for too long
    │   └── MigrationError
    ├── TranscriptError             a JSONL transcript cannot be read
    │   └── CorruptTranscript       a malformed line (names file and line)
    └── ProviderError               an LLM / embedder / reranker call failed
        ├── RateLimited             429; carries ``retry_after`` (seconds) when known
        ├── ContextOverflow         the prompt does not fit the model's context window
        ├── AuthenticationFailed    bad or missing API key
        ├── ProviderUnavailable     5xx, timeouts, connection errors (retryable)
        ├── BadRequest              any other 4xx (not retryable)
        └── AnswerFailed            ``Memory.ask``: the chat model failed (code CHAT_FAILED)

Messages say what happened and what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class OmoideError(Exception):
    """Base class of every error omoide raises on purpose.

    Attributes:
        code: a stable machine-readable code (used by the HTTP API and the CLI's --json).
    """

    code: str = "OMOIDE_ERROR"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details


class ConfigError(OmoideError):
    """A setting is invalid or missing; the message names the setting."""

    code = "CONFIG_ERROR"


class InvalidInput(OmoideError):
    """A caller passed bad input. Nothing was stored."""

    code = "INVALID_INPUT"


class InvalidSessionKey(InvalidInput):
    code = "INVALID_SESSION_KEY"


class InvalidContent(InvalidInput):
    code = "INVALID_CONTENT"


class MessageTooLarge(InvalidInput):
    code = "MESSAGE_TOO_LARGE"


class AmbiguousSessionPrefix(InvalidInput):
    """A session prefix matches several sessions; ``candidates`` names them."""

    code = "AMBIGUOUS_SESSION_PREFIX"

    def __init__(self, message: str, *, candidates: Sequence[str]) -> None:
        super().__init__(message, candidates=list(candidates))
        self.candidates = tuple(candidates)


class NotFoundError(OmoideError):
    code = "NOT_FOUND"


class SessionNotFound(NotFoundError):
    code = "SESSION_NOT_FOUND"


class UnknownSessionPrefix(SessionNotFound):
    """No session matches a prefix; ``candidates`` names every session there is."""

    code = "UNKNOWN_SESSION_PREFIX"

    def __init__(self, message: str, *, candidates: Sequence[str]) -> None:
        super().__init__(message, candidates=list(candidates))
        self.candidates = tuple(candidates)


class ConflictError(OmoideError):
    code = "CONFLICT"


class VersionConflict(ConflictError):
    """The row changed since it was read (optimistic lock). Re-read, then retry."""

    code = "VERSION_CONFLICT"


class ErasureConflict(ConflictError):
    """A user of the workspace was erased while this job ran: what it read may hold their words. Re-read, then retry."""

    code = "ERASURE_CONFLICT"


class CapabilityNotSupported(OmoideError):
    code = "CAPABILITY_NOT_SUPPORTED"


class StoreError(OmoideError):
    code = "STORE_ERROR"


class StoreUnavailable(StoreError):
    code = "STORE_UNAVAILABLE"


class MigrationError(StoreError):
    code = "MIGRATION_ERROR"


class TranscriptError(OmoideError):
    code = "TRANSCRIPT_ERROR"


class CorruptTranscript(TranscriptError):
    """A JSONL transcript line is malformed. ``details`` has ``path`` and ``line``."""

    code = "CORRUPT_TRANSCRIPT"


class ProviderError(OmoideError):
    """A model provider call failed. ``provider`` names it (e.g. ``"openai"``)."""

    code = "PROVIDER_ERROR"
    retryable: bool = False

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None, **details: Any) -> None:
        super().__init__(message, provider=provider, status_code=status_code, **details)
        self.provider = provider
        self.status_code = status_code


class RateLimited(ProviderError):
    code = "RATE_LIMITED"
    retryable = True

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = 429,
        retry_after: float | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code, retry_after=retry_after, **details)
        self.retry_after = retry_after


class ContextOverflow(ProviderError):
    """The prompt is larger than the model's context window.

    ``prompt_tokens`` and ``limit`` are set when known.
    """

    code = "CONTEXT_OVERFLOW"

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = None,
        prompt_tokens: int | None = None,
        limit: int | None = None,
        **details: Any,
    ) -> None:
        super().__init__(
            message, provider=provider, status_code=status_code, prompt_tokens=prompt_tokens, limit=limit, **details
        )
        self.prompt_tokens = prompt_tokens
        self.limit = limit


class AuthenticationFailed(ProviderError):
    code = "AUTHENTICATION_FAILED"


class ProviderUnavailable(ProviderError):
    code = "PROVIDER_UNAVAILABLE"
    retryable = True


class BadRequest(ProviderError):
    code = "BAD_REQUEST"


class AnswerFailed(ProviderError):
    """Generating an answer failed (seed 004's ``CHAT_FAILED``); ``__cause__`` is the
    provider's error and ``details["cause_code"]`` its code."""

    code = "CHAT_FAILED"


__all__ = [
    "AmbiguousSessionPrefix",
    "AnswerFailed",
    "AuthenticationFailed",
    "BadRequest",
    "CapabilityNotSupported",
    "ConfigError",
    "ConflictError",
    "ContextOverflow",
    "CorruptTranscript",
    "ErasureConflict",
    "InvalidContent",
    "InvalidInput",
    "InvalidSessionKey",
    "MessageTooLarge",
    "MigrationError",
    "NotFoundError",
    "OmoideError",
    "ProviderError",
    "ProviderUnavailable",
    "RateLimited",
    "SessionNotFound",
    "StoreError",
    "StoreUnavailable",
    "TranscriptError",
    "UnknownSessionPrefix",
    "VersionConflict",
]
