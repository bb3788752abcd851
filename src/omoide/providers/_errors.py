"""SDK exceptions → omoide errors: one mapping helper per SDK.

Each helper is a context manager (the ``map_httpcore_exceptions()`` idea from httpx):
wrap one SDK call in it and every exception the SDK raises leaves as the most specific
:class:`~omoide.errors.ProviderError` subclass, chained with ``raise ... from exc``:

=====================  ===========================================================
omoide error           when
=====================  ===========================================================
RateLimited            HTTP 429 (``retry_after`` from ``retry-after-ms`` /
                       ``retry-after`` headers, or Gemini's ``RetryInfo.retryDelay``)
ContextOverflow        the provider's *typed* overflow signal, see below
AuthenticationFailed   401 / 403 (and Gemini's 400 with ``ErrorInfo.reason``
                       ``API_KEY_INVALID``; Cohere's 498 invalid token)
ProviderUnavailable    5xx, 408, 529, timeouts and connection errors (retryable)
BadRequest             any other 4xx
ProviderError          anything else the SDK raises (e.g. an invalid response)
=====================  ===========================================================

Context overflow is recognised from status code + the provider's error type/code, never
from a word such as "token" in the message (seed 002 matched substrings, so an invalid
API *token* looked like an overflow and triggered compaction instead of an auth error):

* **OpenAI** — HTTP 400 with ``error.code == "context_length_exceeded"``. For
  OpenAI-compatible servers also vLLM's typed form (HTTP 400, ``error.param ==
  "input_tokens"``, vLLM ≥ 0.16).
* **Anthropic** — HTTP 413 / ``error.type == "request_too_large"`` (request over the
  32 MB limit), and HTTP 400 ``error.type == "invalid_request_error"`` whose *whole*
  message has the documented shape ``prompt is too long: N tokens > M maximum`` or
  ``input length and `max_tokens` exceed context limit: N + K > M, …``. Anthropic has no
  error code for this case, so the message grammar is matched in full (anchored, both
  numbers parsed into ``prompt_tokens`` and ``limit``) and only after status and type
  agree; a 401 ``authentication_error`` can never reach this check.
* **Gemini** — HTTP 400 with ``error.status == "INVALID_ARGUMENT"`` whose whole message
  is ``The input token count (N) exceeds the maximum number of tokens allowed (M).``
  (again no dedicated code; same anchored grammar rule). Gemini reports a bad key as
  HTTP 400 INVALID_ARGUMENT too, distinguished by ``ErrorInfo.reason ==
  "API_KEY_INVALID"`` in ``error.details``, which is checked first.
* Cohere and Voyage rerank/embedding calls truncate long inputs; they have no overflow
  error, so none is mapped.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from omoide.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextOverflow,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)

# ----------------------------------------------------------------------------- shared


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The server's retry hint in seconds: ``retry-after-ms``, then ``retry-after``
    (seconds or an HTTP date). ``None`` when absent or unparsable."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _status_error(
    provider: str,
    status: int,
    message: str,
    *,
    retry_after: float | None,
    **details: Any,
) -> ProviderError:
    """The default mapping by HTTP status (after provider-specific checks)."""
    if status == 429:
        return RateLimited(
            f"{provider}: rate limited (HTTP 429): {message}", provider=provider, retry_after=retry_after, **details
        )
    if status in (401, 403):
        return AuthenticationFailed(
            f"{provider}: authentication failed (HTTP {status}): {message} — check the API key",
            provider=provider,
            status_code=status,
            **details,
        )
    if status == 408 or status >= 500:
        return ProviderUnavailable(
            f"{provider}: service unavailable (HTTP {status}): {message}",
            provider=provider,
            status_code=status,
            retry_after=retry_after,
            **details,
        )
    if 400 <= status < 500:
        return BadRequest(
            f"{provider}: bad request (HTTP {status}): {message}", provider=provider, status_code=status, **details
        )
    return ProviderError(
        f"{provider}: unexpected HTTP {status}: {message}", provider=provider, status_code=status, **details
    )


def _overflow(
    provider: str, status: int, message: str, *, prompt_tokens: int | None, limit: int | None
) -> ContextOverflow:
    return ContextOverflow(
        f"{provider}: the prompt does not fit the model's context window: {message}",
        provider=provider,
        status_code=status,
        prompt_tokens=prompt_tokens,
        limit=limit,
    )


def _get(mapping: object, *keys: str) -> Any:
    value: Any = mapping
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


# -------------------------------------------------------------------------- anthropic

_ANTHROPIC_PROMPT_TOO_LONG = re.compile(r"prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)\s*maximum\.?")
_ANTHROPIC_INPUT_PLUS_MAX = re.compile(
    r"input length and `max_tokens` exceed context limit:\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+),"
    r"\s*decrease input length or `max_tokens` and try again\.?"
)
# error.type → HTTP status, for errors that arrive as an SSE ``error`` event after a 200
_ANTHROPIC_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def map_anthropic_error(exc: Exception, provider: str = "anthropic") -> ProviderError:
    """Translate one ``anthropic`` SDK exception (see the module docstring for the rules)."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderUnavailable(f"{provider}: request timed out", provider=provider, timeout=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderUnavailable(f"{provider}: connection failed: {exc.message}", provider=provider)
    if isinstance(exc, anthropic.APIStatusError):
        etype = exc.type or _get(exc.body, "error", "type")
        message = exc.api_message or _get(exc.body, "error", "message") or exc.message
        status = exc.status_code
        if status < 400:  # an ``error`` event inside a 200 stream: the type carries the meaning
            status = _ANTHROPIC_TYPE_STATUS.get(str(etype), 500)
        retry_after = retry_after_seconds(exc.response.headers)
        details = {"error_type": etype, "request_id": exc.request_id}
        if status == 413 or etype == "request_too_large":
            return _overflow(provider, status, str(message), prompt_tokens=None, limit=None)
        if status == 400 and etype == "invalid_request_error" and isinstance(message, str):
            match = _ANTHROPIC_PROMPT_TOO_LONG.fullmatch(message.strip())
            if match:
                return _overflow(provider, status, message, prompt_tokens=int(match[1]), limit=int(match[2]))
            match = _ANTHROPIC_INPUT_PLUS_MAX.fullmatch(message.strip())
            if match:
                return _overflow(provider, status, message, prompt_tokens=int(match[1]), limit=int(match[3]))
        if etype == "authentication_error":
            status = 401
        return _status_error(provider, status, str(message), retry_after=retry_after, **details)
    if isinstance(exc, anthropic.CredentialsError):
        return AuthenticationFailed(f"{provider}: {exc} — set ANTHROPIC_API_KEY", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


@contextmanager
def anthropic_errors(provider: str = "anthropic") -> Iterator[None]:
    """Translate ``anthropic`` SDK exceptions raised inside the block."""
    import anthropic

    try:
        yield
    except anthropic.AnthropicError as exc:
        raise map_anthropic_error(exc, provider) from exc


# ----------------------------------------------------------------------------- openai


def map_openai_error(exc: Exception, provider: str = "openai") -> ProviderError:
    """Translate one ``openai`` SDK exception (also used for OpenAI-compatible servers)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ProviderUnavailable(f"{provider}: request timed out", provider=provider, timeout=True)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderUnavailable(f"{provider}: connection failed: {exc.message}", provider=provider)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code, param = exc.code, exc.param
        message = _get(exc.body, "message") or exc.message
        details = {"error_type": exc.type, "error_code": code, "request_id": exc.request_id}
        if status == 400 and (code == "context_length_exceeded" or param == "input_tokens"):
            return _overflow(provider, status, str(message), prompt_tokens=None, limit=None)
        retry_after = retry_after_seconds(exc.response.headers)
        return _status_error(provider, status, str(message), retry_after=retry_after, **details)
    if isinstance(exc, openai.APIError):  # e.g. an error event inside a 200 stream
        status = 400 if exc.code == "context_length_exceeded" else 500
        if exc.code == "context_length_exceeded":
            return _overflow(provider, status, exc.message, prompt_tokens=None, limit=None)
        return ProviderError(f"{provider}: {exc.message}", provider=provider, error_code=exc.code)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


@contextmanager
def openai_errors(provider: str = "openai") -> Iterator[None]:
    """Translate ``openai`` SDK exceptions raised inside the block."""
    import openai

    try:
        yield
    except openai.OpenAIError as exc:
        raise map_openai_error(exc, provider) from exc


# ----------------------------------------------------------------------------- gemini

_GEMINI_INPUT_TOO_LONG = re.compile(
    r"The input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)\.?"
)
_GEMINI_AUTH_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "API_KEY_HTTP_REFERRER_BLOCKED"})


def _gemini_details(body: object) -> list[Mapping[str, Any]]:
    details = _get(body, "error", "details")
    if details is None and isinstance(body, Mapping):
        details = body.get("details")
    return [d for d in details if isinstance(d, Mapping)] if isinstance(details, list) else []


def _parse_duration(value: object) -> float | None:
    """A protobuf Duration in JSON form (``"37s"``, ``"1.5s"``) → seconds."""
    if isinstance(value, str) and value.endswith("s"):
        try:
            return max(float(value[:-1]), 0.0)
        except ValueError:
            return None
    return None


def _gemini_headers(exc: Any) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return headers if isinstance(headers, Mapping) else None


def map_gemini_error(exc: Exception, provider: str = "gemini") -> ProviderError:
    """Translate one ``google-genai`` SDK exception, or an ``httpx2`` transport error under it
    (:mod:`omoide.providers.gemini` runs the SDK on its own httpx2 client)."""
    import httpx2
    from google.genai import errors as genai_errors

    if isinstance(exc, genai_errors.APIError):
        status = int(exc.code or 0)
        message = str(exc.message or exc)
        details = _gemini_details(exc.details)
        reasons = {str(d.get("reason")) for d in details if str(d.get("@type", "")).endswith("google.rpc.ErrorInfo")}
        retry_after = retry_after_seconds(_gemini_headers(exc))
        for d in details:
            if str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
                retry_after = _parse_duration(d.get("retryDelay"))
        extra = {"error_status": exc.status, "reasons": sorted(reasons)}
        if reasons & _GEMINI_AUTH_REASONS or exc.status in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            return AuthenticationFailed(
                f"{provider}: authentication failed (HTTP {status} {exc.status}): {message} — check GEMINI_API_KEY",
                provider=provider,
                status_code=status,
                **extra,
            )
        if status == 400 and exc.status == "INVALID_ARGUMENT":
            match = _GEMINI_INPUT_TOO_LONG.fullmatch(message.strip())
            if match:
                return _overflow(provider, status, message, prompt_tokens=int(match[1]), limit=int(match[2]))
        return _status_error(provider, status, message, retry_after=retry_after, **extra)
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderUnavailable(f"{provider}: request timed out", provider=provider, timeout=True)
    if isinstance(exc, httpx2.TransportError):
        return ProviderUnavailable(f"{provider}: connection failed: {exc}", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


@contextmanager
def gemini_errors(provider: str = "gemini") -> Iterator[None]:
    """Translate ``google-genai`` exceptions (and its httpx2 transport errors)."""
    import httpx2
    from google.genai import errors as genai_errors

    try:
        yield
    except (genai_errors.APIError, httpx2.TransportError) as exc:
        raise map_gemini_error(exc, provider) from exc


# ----------------------------------------------------------------------------- cohere


def map_cohere_error(exc: Exception, provider: str = "cohere") -> ProviderError:
    """Translate one ``cohere`` SDK exception (fern ``ApiError`` or an httpx transport error)."""
    import httpx
    from cohere.core.api_error import ApiError

    if isinstance(exc, ApiError):
        status = int(exc.status_code or 0)
        body = exc.body
        message = str(_get(body, "message") or body or "")
        if status == 498:  # Cohere: "invalid token"
            status = 401
        return _status_error(provider, status, message, retry_after=retry_after_seconds(exc.headers))
    if isinstance(exc, httpx.TimeoutException):
        return ProviderUnavailable(f"{provider}: request timed out", provider=provider, timeout=True)
    if isinstance(exc, httpx.TransportError):
        return ProviderUnavailable(f"{provider}: connection failed: {exc}", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


@contextmanager
def cohere_errors(provider: str = "cohere") -> Iterator[None]:
    """Translate ``cohere`` SDK exceptions raised inside the block."""
    import httpx
    from cohere.core.api_error import ApiError

    try:
        yield
    except (ApiError, httpx.TransportError) as exc:
        raise map_cohere_error(exc, provider) from exc


# ----------------------------------------------------------------------------- voyage


def map_voyage_error(exc: Exception, provider: str = "voyage") -> ProviderError:
    """Translate one ``voyageai`` SDK exception."""
    from voyageai import error as verr

    if isinstance(exc, verr.Timeout):
        return ProviderUnavailable(f"{provider}: request timed out", provider=provider, timeout=True)
    if isinstance(exc, verr.APIConnectionError):
        return ProviderUnavailable(f"{provider}: connection failed: {exc}", provider=provider)
    if isinstance(exc, verr.VoyageError):
        status = exc.http_status
        message = str(_get(exc.json_body, "detail") or exc.user_message or exc)
        if isinstance(status, int):
            return _status_error(provider, status, message, retry_after=retry_after_seconds(exc.headers))
        if isinstance(exc, verr.AuthenticationError):
            return AuthenticationFailed(f"{provider}: {message} — set VOYAGE_API_KEY", provider=provider)
    return ProviderError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


@contextmanager
def voyage_errors(provider: str = "voyage") -> Iterator[None]:
    """Translate ``voyageai`` SDK exceptions raised inside the block."""
    from voyageai import error as verr

    try:
        yield
    except verr.VoyageError as exc:
        raise map_voyage_error(exc, provider) from exc


__all__ = [
    "anthropic_errors",
    "cohere_errors",
    "gemini_errors",
    "map_anthropic_error",
    "map_cohere_error",
    "map_gemini_error",
    "map_openai_error",
    "map_voyage_error",
    "openai_errors",
    "retry_after_seconds",
    "voyage_errors",
]
