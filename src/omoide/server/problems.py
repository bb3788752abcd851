"""Errors as RFC 9457 ``application/problem+json``.

Every error body has ``type``, ``title``, ``status``, ``detail`` and omoide's stable ``code``
(the :class:`~omoide.errors.OmoideError` code), plus ``request_id``; validation errors add
``errors`` (where and what).
"""

from __future__ import annotations

import json
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from omoide.errors import (
    AuthenticationFailed,
    CapabilityNotSupported,
    ConflictError,
    ContextOverflow,
    InvalidInput,
    MigrationError,
    NotFoundError,
    OmoideError,
    ProviderError,
    RateLimited,
    StoreUnavailable,
)
from omoide.server.jsonbody import InvalidJsonValue

log = structlog.get_logger("omoide.server")

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://omoide.dev/problems/"


class ApiKeyRejected(AuthenticationFailed):
    """The request's API key is missing, unknown or revoked (HTTP 401)."""

    code = "AUTHENTICATION_FAILED"


class RequestTooLarge(OmoideError):
    """The request body is larger than the limit (HTTP 413)."""

    code = "REQUEST_TOO_LARGE"


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Invalid request",
    429: "Too many requests",
    500: "Internal server error",
    501: "Not implemented",
    502: "Bad gateway",
    503: "Service unavailable",
}


# first match wins: subclasses before their bases
_STATUS_BY_ERROR: tuple[tuple[type[OmoideError] | tuple[type[OmoideError], ...], int], ...] = (
    (ApiKeyRejected, 401),
    (RequestTooLarge, 413),
    (InvalidInput, 400),
    (NotFoundError, 404),
    (ConflictError, 409),
    (CapabilityNotSupported, 501),
    (RateLimited, 429),
    (ContextOverflow, 422),
    (ProviderError, 502),  # the model provider failed (or rejected omoide's own credentials)
    ((StoreUnavailable, MigrationError), 503),
)


def status_for(exc: OmoideError) -> int:
    """The HTTP status of an omoide error (500 for anything unmapped, ConfigError included)."""
    return next((status for kind, status in _STATUS_BY_ERROR if isinstance(exc, kind)), 500)


def problem(
    status: int,
    detail: str,
    *,
    code: str,
    request: Request | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    """A problem+json response."""
    body: dict[str, Any] = {
        "type": TYPE_BASE + code.lower().replace("_", "-"),
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
    }
    request_id = getattr(request.state, "request_id", None) if request is not None else None
    if request_id:
        body["request_id"] = request_id
    body.update(extra)
    return Response(problem_bytes(body), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def problem_bytes(body: dict[str, Any]) -> bytes:
    """A problem body as compact UTF-8 JSON."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _jsonable_errors(errors: Any) -> list[dict[str, Any]]:
    out = []
    for err in errors:
        out.append(
            {"loc": [str(p) for p in err.get("loc", ())], "msg": str(err.get("msg", "")), "type": err.get("type")}
        )
    return out[:20]


_UNPARSABLE: dict[type[BaseException], str] = {
    RecursionError: "the JSON is nested too deeply",
    UnicodeDecodeError: "the body is not valid UTF-8",
}


def install_problem_handlers(app: FastAPI) -> None:
    """Render every error as problem+json."""

    async def omoide_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, OmoideError)
        status = status_for(exc)
        headers: dict[str, str] = {}
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="omoide"'
        if isinstance(exc, RateLimited) and exc.retry_after:
            headers["Retry-After"] = str(max(1, round(exc.retry_after)))
        if status >= 500:
            log.error("http_error", code=exc.code, status=status, error=exc.message)
        detail = exc.message if status < 500 or status in (501, 502, 503) else "the server failed; see its logs"
        return problem(status, detail, code=exc.code, request=request, headers=headers or None)

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = _jsonable_errors(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(p for p in first["loc"] if p != "body") or "request"
        return problem(422, f"{where}: {first['msg']}", code=InvalidInput.code, request=request, errors=errors)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and isinstance(exc.__cause__, InvalidJsonValue):
            # JSON that Python's parser takes but JSON has no such value: NaN, a lone surrogate (jsonbody.py)
            cause = exc.__cause__
            loc = ["body", *cause.loc]
            where = ".".join(loc[1:]) or "body"
            errors = [{"loc": loc, "msg": cause.msg, "type": "json_invalid"}]
            return problem(422, f"{where}: {cause.msg}", code=InvalidInput.code, request=request, errors=errors)
        if exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI's 400 for a body its JSON parser gave up on other than by JSONDecodeError (nested
            # past the recursion limit, not UTF-8): a malformed body, 422 like any other
            msg = _UNPARSABLE.get(type(exc.__cause__), "the body could not be parsed")
            errors = [{"loc": ["body"], "msg": msg, "type": "json_invalid"}]
            return problem(422, f"body: {msg}", code=InvalidInput.code, request=request, errors=errors)
        code = {
            401: "AUTHENTICATION_FAILED",
            404: "NOT_FOUND",
            405: "METHOD_NOT_ALLOWED",
            413: RequestTooLarge.code,
        }.get(exc.status_code, "HTTP_ERROR")
        return problem(
            exc.status_code, str(exc.detail), code=code, request=request, headers=dict(exc.headers or {}) or None
        )

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("http_unhandled_error", error_type=type(exc).__name__)
        return problem(500, "the server failed; see its logs", code="INTERNAL_ERROR", request=request)

    app.add_exception_handler(OmoideError, omoide_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "description": _TITLES[status],
        "content": {
            PROBLEM_JSON: {
                "schema": {"$ref": "#/components/schemas/Problem"},
                "example": {
                    "type": TYPE_BASE + code.lower().replace("_", "-"),
                    "title": _TITLES[status],
                    "status": status,
                    "detail": detail,
                    "code": code,
                    "request_id": "7f3c1e0a9b2d4c6e8f1a2b3c4d5e6f70",
                },
            }
        },
    }
    for status, code, detail in (
        (400, "INVALID_INPUT", "the recall query must be non-empty text"),
        (401, "AUTHENTICATION_FAILED", "missing API key: send 'Authorization: Bearer omk_…'"),
        (404, "NOT_FOUND", "memory 42 not found"),
        (413, "REQUEST_TOO_LARGE", "the request body is over 1,048,576 bytes"),
        (422, "INVALID_INPUT", "text: Field required"),
        (502, "PROVIDER_ERROR", "the chat model failed: upstream returned 500"),
    )
}


__all__ = [
    "PROBLEM_JSON",
    "PROBLEM_RESPONSES",
    "ApiKeyRejected",
    "RequestTooLarge",
    "install_problem_handlers",
    "problem",
    "problem_bytes",
    "status_for",
]
