"""Logging in and out, and (admin key) choosing the workspace to inspect."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from starlette.responses import Response

from omoide.errors import InvalidInput
from omoide.server.ui.app import redirect
from omoide.server.ui.i18n import choose_language, translator
from omoide.server.ui.render import page
from omoide.server.ui.security import (
    KEY_COOKIE,
    LOGIN_COOKIE,
    WORKSPACE_COOKIE,
    AnyViewer,
    MemoryDep,
    check_csrf,
    clear_cookie,
    identify,
    new_login_token,
    set_cookie,
    workspace_cookie,
)

WORKSPACES_PAGE = 100

router = APIRouter()

Field = Annotated[str, Form(max_length=512)]
OptionalField = Annotated[str | None, Form(max_length=512)]


def safe_next(value: str | None) -> str:
    """Where to go after logging in: a path inside the inspector, else its front page."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")) or "\\" in value:
        return "/"
    return value


def _login_form(
    request: Request, error: str | None = None, status_code: int = 200, next_path: str | None = None
) -> Response:
    token = new_login_token()
    context = {"login_token": token, "error": error, "next": safe_next(next_path)}
    response = page(request, "login.html", context, status_code=status_code)
    set_cookie(request, response, LOGIN_COOKIE, token, max_age=3600)
    return response


@router.get("/login")
async def login_form(request: Request, next: Annotated[str | None, Query(max_length=4096)] = None) -> Response:
    return _login_form(request, next_path=next)


@router.post("/login")
async def login(
    request: Request,
    memory: MemoryDep,
    key: Field,
    login_token: OptionalField = None,
    next: Annotated[str | None, Form(max_length=4096)] = None,
) -> Response:
    """Check the key as the API does; on success keep it in the HttpOnly cookie and go on to
    the page asked for (the admin: to the workspace list first)."""
    t = translator(choose_language(request))
    expected = request.cookies.get(LOGIN_COOKIE)
    if not expected or not login_token or not hmac.compare_digest(expected, login_token):
        return _login_form(request, t("login.expired"), status_code=403, next_path=next)
    viewer = await identify(memory, key.strip(), None)
    if viewer is None:
        return _login_form(request, t("login.rejected"), status_code=401, next_path=next)
    response = redirect(request, "/workspaces" if viewer.admin else safe_next(next))
    set_cookie(request, response, KEY_COOKIE, viewer.token)
    clear_cookie(request, response, LOGIN_COOKIE)
    clear_cookie(request, response, WORKSPACE_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request, viewer: AnyViewer, csrf: OptionalField = None) -> Response:
    check_csrf(viewer, csrf)
    response = redirect(request, "/login")
    clear_cookie(request, response, KEY_COOKIE)
    clear_cookie(request, response, WORKSPACE_COOKIE)
    return response


@router.get("/workspaces")
async def workspaces(
    request: Request,
    memory: MemoryDep,
    viewer: AnyViewer,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Response:
    """The admin's list, ``WORKSPACES_PAGE`` at a time: every workspace with a session, and on the
    first page those with only API keys; a workspace key sees only its own."""
    if not viewer.admin:
        return redirect(request, "/")
    keys = await memory.api_keys.list(include_revoked=False, limit=1000)
    key_counts: dict[str, int] = {}
    for record in keys:
        key_counts[record.workspace_id] = key_counts.get(record.workspace_id, 0) + 1
    listed = await memory.sessions.workspaces(limit=WORKSPACES_PAGE + 1, offset=offset)
    shown = listed[:WORKSPACES_PAGE]
    names = set(shown) | (set(key_counts) if offset == 0 else set())
    rows = sorted((ws, key_counts.get(ws, 0)) for ws in names)
    context = {
        "rows": rows,
        "next_offset": offset + WORKSPACES_PAGE if len(listed) > WORKSPACES_PAGE else None,
        "prev_offset": max(0, offset - WORKSPACES_PAGE) if offset else None,
    }
    return page(request, "workspaces.html", context)


@router.post("/workspace")
async def choose_workspace(
    request: Request, viewer: AnyViewer, workspace: Field, csrf: OptionalField = None
) -> Response:
    """The admin picks the workspace every page shows (kept in a cookie next to the key).

    Raises:
        InvalidInput: the id holds a control character (no API key or session key can name it).
    """
    check_csrf(viewer, csrf)
    if not viewer.admin:
        return redirect(request, "/")
    chosen = workspace.strip()
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in chosen):  # as omoide.keys and the API keys' workspaces
        raise InvalidInput(f"a workspace id must not hold a control character, got {chosen!r:.80}")
    response = redirect(request, "/")
    set_cookie(request, response, WORKSPACE_COOKIE, workspace_cookie(chosen))
    return response
