"""The inspector's app: a FastAPI sub-application mounted at ``/ui`` inside the HTTP API.

It is its own app so that its errors are HTML pages (the API's are problem+json), its routes
stay out of the OpenAPI document, and it serves its stylesheet from ``/ui/static`` — nothing
comes from a CDN and there is no JavaScript. It reads the parent app's :class:`omoide.Memory`
(``parent.state.memory``, set by the parent's lifespan), so it shares the store, providers and
API-key cache with the API.
"""

from __future__ import annotations

from urllib.parse import quote

import structlog
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from omoide.errors import OmoideError
from omoide.server.problems import status_for
from omoide.server.ui.i18n import choose_language, translator
from omoide.server.ui.render import HERE, page
from omoide.server.ui.security import CsrfRejected, LoginRequired, WorkspaceRequired, ui_root

log = structlog.get_logger(__name__)


def redirect(request: Request, path: str) -> RedirectResponse:
    """A 303 to ``path`` under the inspector's root (after a form, the browser GETs the next page)."""
    return RedirectResponse(ui_root(request) + path, status_code=303)


def request_id_of(request: Request) -> str | None:
    """The request's id (``X-Request-ID``, set by the API's middleware), to find it in the logs."""
    value = getattr(request.state, "request_id", None)
    return value if isinstance(value, str) else None


def error_page(request: Request, message: str, *, status_code: int, code: str | None = None) -> Response:
    """The error page: the message, the error's code and the request id (never a traceback)."""
    context = {"message": message, "code": code, "request_id": request_id_of(request)}
    return page(request, "error.html", context, status_code=status_code)


class ErrorPageMiddleware:
    """An exception no handler took (a bug) becomes the localised error page with the request id,
    status 500, and one log line with the traceback — not Starlette's plain-text "Internal Server
    Error"."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started:  # too late for a page: the client sees a cut response, the server its error
                raise
            log.exception("ui_unhandled_error", error_type=type(exc).__name__, path=scope.get("path"))
            request = Request(scope, receive)
            try:
                t = translator(choose_language(request))
                response = error_page(request, t("error.internal"), status_code=500, code="INTERNAL_ERROR")
            except Exception:  # the page itself failed: still no traceback
                log.exception("ui_error_page_failed")
                response = HTMLResponse("<!doctype html><title>500</title><p>Internal error</p>", status_code=500)
            await response(scope, receive, send)


def create_inspector(parent: FastAPI) -> FastAPI:
    """The inspector app, to mount at ``/ui`` in ``parent`` (``parent.mount("/ui", create_inspector(parent))``).

    Example:
        >>> app = create_app(settings)                      # doctest: +SKIP
        >>> app.mount("/ui", create_inspector(app))         # create_app does this
    """
    from omoide.server.ui.pages import knowledge, login, memories, overview, sessions, summaries, users

    ui = FastAPI(title="omoide inspector", docs_url=None, redoc_url=None, openapi_url=None)
    ui.state.parent = parent
    ui.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    ui.add_middleware(ErrorPageMiddleware)
    for module in (login, overview, sessions, knowledge, memories, summaries, users):
        ui.include_router(module.router)

    @ui.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired) -> Response:
        if request.method != "GET":
            return redirect(request, "/login")
        wanted = request.url.path[len(ui_root(request)) :] or "/"
        if request.url.query:
            wanted += "?" + request.url.query
        return redirect(request, "/login" if wanted == "/" else "/login?next=" + quote(wanted, safe=""))

    @ui.exception_handler(WorkspaceRequired)
    async def workspace_required(request: Request, exc: WorkspaceRequired) -> Response:
        return redirect(request, "/workspaces")

    @ui.exception_handler(CsrfRejected)
    async def csrf_rejected(request: Request, exc: CsrfRejected) -> Response:
        t = translator(choose_language(request))
        return error_page(request, t("error.csrf"), status_code=403)

    @ui.exception_handler(OmoideError)
    async def omoide_error(request: Request, exc: OmoideError) -> Response:
        status = status_for(exc)
        if status >= 500:
            log.error("ui_error", code=exc.code, status=status, error=exc.message)
        t = translator(choose_language(request))
        message = exc.message if status < 500 or status in (501, 502, 503) else t("error.internal")
        return error_page(request, message, status_code=status, code=exc.code)

    @ui.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:])}: {e.get('msg', '')}" for e in exc.errors()
        )
        return error_page(request, problems, status_code=400, code="INVALID_INPUT")

    @ui.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        t = translator(choose_language(request))
        known = {404: "error.not_found", 405: "error.method_not_allowed"}
        message = t(known[exc.status_code]) if exc.status_code in known else str(exc.detail)
        return error_page(request, message, status_code=exc.status_code)

    return ui


__all__ = ["ErrorPageMiddleware", "create_inspector", "error_page", "redirect", "request_id_of"]
