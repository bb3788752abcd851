"""The app factory: :func:`create_app` builds the FastAPI app over one :class:`omoide.Memory`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from omoide import __version__
from omoide.engine import Memory
from omoide.runtime import freeze_startup_heap
from omoide.server.middleware import RequestContextMiddleware
from omoide.server.problems import install_problem_handlers
from omoide.settings import Settings

DESCRIPTION = """\
omoide's HTTP API: short-term memory (sessions), chat turns, per-user memories, search and
cited answers over long-term memory, context assembly and imports — a thin layer over
`omoide.Memory`.

**Auth**: every `/v1` endpoint needs `Authorization: Bearer omk_…`, an API key scoped to one
workspace (create one with `omoide keys create --workspace W`). The workspace of every request
is the key's: ids of other workspaces answer 404. `/v1/admin` needs the admin key
(`OMOIDE_ADMIN_KEY`).

**Errors** are RFC 9457 `application/problem+json` with omoide's stable `code`.
"""


def create_app(
    memory_or_settings: Memory | Settings | None = None, *, workers: bool = True, freeze_heap: bool = False
) -> FastAPI:
    """The HTTP API over ``memory_or_settings``.

    Args:
        memory_or_settings: an open :class:`Memory` (the caller owns it), or settings from which
            the app opens one for its lifetime (default: :func:`~omoide.settings.load_settings`).
        workers: run the background workers (archive, embed, expire, summarise) in the app's
            event loop while it serves.
        freeze_heap: once the store is open, freeze the objects alive then out of the garbage
            collector's full collections (:func:`omoide.runtime.freeze_startup_heap`; ``omoide
            serve`` does): for a process that serves this app alone.

    Example:
        >>> app = create_app(load_settings(database_url="sqlite:///./data/omoide.db"))  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8000)                              # doctest: +SKIP
    """
    from omoide.settings import load_settings

    given = memory_or_settings if isinstance(memory_or_settings, Memory) else None
    settings = given.settings if given is not None else (memory_or_settings or load_settings())
    assert isinstance(settings, Settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            memory = given if given is not None else await stack.enter_async_context(Memory.open(settings))
            app.state.memory = memory
            if workers:
                await stack.enter_async_context(memory.workers())
            if freeze_heap:
                freeze_startup_heap()
            yield

    # /docs (Swagger UI) and /redoc load their scripts and styles from this server (fastapi-offline ships
    # them), not from a CDN: the docs work offline and behind a firewall
    app = FastAPIOffline(
        title="omoide",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_tags=[
            {"name": "sessions", "description": "Short-term memory: append, window, reset, list, chat, context."},
            {"name": "memories", "description": "A user's explicit memories (remember / recall / CRUD)."},
            {"name": "knowledge", "description": "Long-term memory: search, ask, import, status."},
            {"name": "admin", "description": "API keys (admin key only)."},
            {"name": "health", "description": "Liveness and readiness."},
        ],
    )
    if given is not None:
        app.state.memory = given
    install_problem_handlers(app)
    app.add_middleware(
        RequestContextMiddleware,
        max_body_bytes=settings.http_max_body_bytes,
        max_upload_bytes=settings.http_max_upload_bytes,
    )
    from omoide.server.routes import admin, health, knowledge, memories, sessions, users

    for module in (sessions, memories, users, knowledge, admin, health):
        app.include_router(module.router)
    from omoide.server.routes.export import router as export_router  # GET /v1/export, /v1/users/{id}/export

    app.include_router(export_router)
    from omoide.server.ui import create_inspector  # the inspector (issue 19), HTML pages at /ui

    app.mount("/ui", create_inspector(app))
    from omoide.server.routes.metrics import install_observability  # /metrics, request metrics + spans

    install_observability(app, settings)
    _add_problem_schema(app)
    return app


def _add_problem_schema(app: FastAPI) -> None:
    """Put the ``Problem`` schema into the OpenAPI document (the error responses refer to it)."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = {
            "type": "object",
            "description": "RFC 9457 problem details, with omoide's stable error `code`.",
            "required": ["type", "title", "status", "detail", "code"],
            "properties": {
                "type": {"type": "string", "format": "uri"},
                "title": {"type": "string"},
                "status": {"type": "integer"},
                "detail": {"type": "string"},
                "code": {"type": "string", "examples": ["NOT_FOUND"]},
                "request_id": {"type": "string"},
                "errors": {"type": "array", "items": {"type": "object"}},
            },
        }
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["create_app"]
