"""Pure-ASGI middleware: request ids (bound into structlog's context) and request body limits."""

from __future__ import annotations

import os
import re
from typing import Any

import structlog
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from omoide.server.problems import RequestTooLarge, problem_bytes

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
UPLOAD_PATHS = ("/v1/imports",)


class RequestContextMiddleware:
    """Give every request an id (``X-Request-ID`` when it is sane, else a new one), echo it in the
    response, bind it for logs, and cap the request body (``Content-Length`` checked up front,
    streamed bodies counted as they arrive; larger: 413)."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_upload_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        length: int | None = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                text = value.decode("latin-1")
                given = text if _REQUEST_ID.fullmatch(text) else None
            elif name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
        request_id = given or os.urandom(16).hex()
        scope.setdefault("state", {})["request_id"] = request_id
        limit = self.max_upload_bytes if scope["path"].startswith(UPLOAD_PATHS) else self.max_body_bytes
        structlog.contextvars.bind_contextvars(request_id=request_id)
        header = (b"x-request-id", request_id.encode("latin-1"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        try:
            if length is not None and length > limit:
                await _too_large(scope, send_with_id, limit, request_id)
                return
            received = 0

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > limit:
                        # an HTTPException: FastAPI re-raises it from body parsing (anything else becomes a 400)
                        raise HTTPException(413, f"the request body is over {limit:,} bytes")
                return message

            await self.app(scope, limited_receive, send_with_id)
        finally:
            structlog.contextvars.unbind_contextvars("request_id")


async def _too_large(scope: Scope, send: Send, limit: int, request_id: str) -> None:
    what = "an export upload" if scope["path"].startswith(UPLOAD_PATHS) else "the request body"
    body: dict[str, Any] = {
        "type": "https://omoide.dev/problems/request-too-large",
        "title": "Request too large",
        "status": 413,
        "detail": f"{what} is over {limit:,} bytes (see OMOIDE_HTTP_MAX_BODY_BYTES / OMOIDE_HTTP_MAX_UPLOAD_BYTES)",
        "code": RequestTooLarge.code,
        "request_id": request_id,
    }
    payload = problem_bytes(body)
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


__all__ = ["RequestContextMiddleware"]
