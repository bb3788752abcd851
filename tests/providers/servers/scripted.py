"""A real HTTP server on 127.0.0.1 that answers with scripted replies.

Each provider test starts one (``async with ScriptedServer() as server``), scripts the
replies for the endpoint it calls (``server.script("/v1/messages", Reply(...), ...)``)
and points the provider's official SDK at ``server.url``. The SDK talks to it over a real
socket exactly as it would to the provider: JSON bodies, status codes, headers such as
``retry-after``, and server-sent events for streaming. Every request is recorded, so a
test can check how many attempts were made and what the SDK sent.

A request with no scripted reply left gets a 500 and is recorded in ``unexpected``;
leaving the ``async with`` block fails the test when there were any.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from aiohttp import web


@dataclass(frozen=True, slots=True)
class SSE:
    """One server-sent event: ``event:`` name (optional) and ``data:`` payload (JSON-encoded unless str)."""

    data: Any
    event: str | None = None

    def encode(self) -> bytes:
        payload = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.event}\n" if self.event else ""
        return (head + f"data: {payload}\n\n").encode()


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted HTTP reply.

    Attributes:
        status: HTTP status code.
        body: a JSON-serialisable body (``str``/``bytes`` are sent as they are).
        headers: extra response headers (e.g. ``{"retry-after": "0.05"}``).
        delay: seconds to wait before answering (to provoke client timeouts).
        events: when set, the reply is a ``text/event-stream`` with these events.
        event_delay: seconds to wait between streamed events.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: Sequence[SSE] | None = None
    event_delay: float = 0.0

    def delayed(self, seconds: float) -> Reply:
        """This reply, sent only after ``seconds`` (to provoke client timeouts)."""
        return replace(self, delay=seconds)


@dataclass(frozen=True, slots=True)
class Recorded:
    """A request the server received."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    at: float  # time.monotonic() when it arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class ScriptedServer:
    """An aiohttp server on 127.0.0.1 (random port) that replays scripted replies per path."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, str], deque[Reply]] = {}
        self.requests: list[Recorded] = []
        self.unexpected: list[str] = []
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        assert self._sock is not None, "the server is not running"
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}"

    def script(self, path: str, *replies: Reply, method: str = "POST") -> None:
        """Queue ``replies`` for ``method path`` (answered in order, one per request)."""
        self._queues.setdefault((method.upper(), path), deque()).extend(replies)

    def requests_to(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    async def __aenter__(self) -> ScriptedServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        site = web.SockSite(self._runner, self._sock)
        await site.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._sock is not None:
            self._sock.close()
        if exc_type is None and self.unexpected:
            raise AssertionError(f"requests without a scripted reply: {self.unexpected}")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            Recorded(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                at=time.monotonic(),
            )
        )
        queue = self._queues.get((request.method, request.path))
        if not queue:
            self.unexpected.append(f"{request.method} {request.path}")
            return web.json_response({"error": f"no scripted reply for {request.method} {request.path}"}, status=500)
        reply = queue.popleft()
        if reply.delay and await self._sleep(reply.delay):
            return web.Response(status=503)
        if reply.events is not None:
            return await self._stream(request, reply)
        headers = dict(reply.headers)
        if isinstance(reply.body, bytes | str):
            headers.setdefault("content-type", "text/plain")
            return web.Response(status=reply.status, body=reply.body, headers=headers)
        return web.json_response(reply.body, status=reply.status, headers=headers)

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        headers = {"content-type": "text/event-stream", "cache-control": "no-cache", **reply.headers}
        response = web.StreamResponse(status=reply.status, headers=headers)
        await response.prepare(request)
        assert reply.events is not None
        for i, event in enumerate(reply.events):
            if i and reply.event_delay and await self._sleep(reply.event_delay):
                break
            await response.write(event.encode())
        await response.write_eof()
        return response

    async def _sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; True when the server is stopping meanwhile."""
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


__all__ = ["SSE", "Recorded", "Reply", "ScriptedServer", "closed_port_url"]
