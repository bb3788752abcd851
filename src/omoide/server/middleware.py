"""Pure-ASGI middleware: request ids (bound into structlog's context), request body limits, and
request metrics and spans (:class:`RequestMetricsMiddleware`)."""

from __future__ import annotations

import os
import re
import time
from typing import Any

import structlog
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from omoide.observability.metrics import Metrics, request_operations
from omoide.observability.tracing import span
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


OPERATIONS = {
    ("POST", "/v1/search"): "search",
    ("POST", "/v1/ask"): "ask",
    ("POST", "/v1/users/{user_id}/memories/recall"): "recall",
    ("POST", "/v1/sessions/messages"): "append",
}
"""Routes whose latency also goes to ``omoide_operation_seconds`` (and names their span)."""

UNMATCHED = "unmatched"
"""The route label of a request no route matched (a scan, a typo): one label, not one per path."""


def route_of(scope: Scope, *, root_path: str = "") -> str:
    """The path template the router matched (``/v1/users/{user_id}/memories``), or :data:`UNMATCHED`.

    A route of a mounted app (the inspector at ``/ui``) is named with its mount path
    (``/ui/sessions/view``): the mount records it in ``root_path``, beyond the app's own ``root_path``.
    """
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str) or not path:
        return UNMATCHED
    mounted = str(scope.get("root_path", ""))
    return (mounted[len(root_path) :] if mounted.startswith(root_path) else "") + path


class RequestMetricsMiddleware:
    """Count and time every HTTP request by method, route template and status (``metrics``: ``None``
    when metrics are off), and wrap it in a span (``http.route``, status, the key's workspace when
    the request had one — never the path's ids, the body or the key)."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics | None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception that escapes every handler

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        method = str(scope.get("method", "GET"))
        root_path = str(scope.get("root_path", ""))  # before a mount extends it
        with span("omoide.http", **{"http.request.method": method}) as traced, request_operations() as seen:
            try:
                await self.app(scope, receive, send_status)
            finally:
                route = route_of(scope, root_path=root_path)
                operation = OPERATIONS.get((method, route))
                workspace = scope.get("state", {}).get("workspace_id")
                traced.set(**{"http.route": route, "http.response.status_code": status})
                if isinstance(workspace, str):
                    traced.set(workspace=workspace)
                if operation in seen:  # the library measured it already (omoide.observability.operation)
                    operation = None
                self._observe(method, route, status, operation, time.perf_counter() - started)

    def _observe(self, method: str, route: str, status: int, operation: str | None, seconds: float) -> None:
        m = self.metrics
        if m is None:
            return
        m.requests.labels(method=method, route=route, status=str(status)).inc()
        m.request_seconds.labels(method=method, route=route).observe(seconds)
        if operation is not None and status < 400:
            m.operation_seconds.labels(operation=operation).observe(seconds)


__all__ = ["OPERATIONS", "RequestContextMiddleware", "RequestMetricsMiddleware", "route_of"]
