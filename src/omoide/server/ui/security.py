"""Who is looking: the login cookie, the admin's chosen workspace, and CSRF tokens.

The inspector uses the HTTP API's own credentials. The login form takes an API key (or the admin
key), checks it with :meth:`omoide.apikeys.service.ApiKeyService.verify` exactly as the API does,
and keeps it in a cookie that scripts cannot read (``HttpOnly``), that no other site's page sends
(``SameSite=Strict``), and that travels only over TLS when the inspector is served over https
(``Secure``). Every request checks the key again, so revoking it logs the browser out at once.

CSRF: every form that changes data carries a token that is an HMAC of the session's key
(``csrf_token``). A page of another site can neither read the cookie nor compute the token,
and the check needs no server-side state, so several server processes share sessions. The
login form itself, before there is a key, uses a double-submit token (a random cookie and the
same value in the form).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote, unquote

from fastapi import Depends, Request
from starlette.responses import Response

from omoide.engine import Memory
from omoide.errors import InvalidInput, OmoideError

KEY_COOKIE = "omoide_ui_key"
WORKSPACE_COOKIE = "omoide_ui_workspace"
LOGIN_COOKIE = "omoide_ui_login"
COOKIE_MAX_AGE = 12 * 3600


class LoginRequired(OmoideError):
    """No valid key in the cookie: the browser is sent to the login form."""

    code = "LOGIN_REQUIRED"


class WorkspaceRequired(OmoideError):
    """The admin has not chosen a workspace yet: the browser is sent to the workspace list."""

    code = "WORKSPACE_REQUIRED"


class CsrfRejected(InvalidInput):
    """A state-changing form came without the session's CSRF token (HTTP 403)."""

    code = "CSRF_REJECTED"


@dataclass(frozen=True, slots=True)
class Viewer:
    """The logged-in browser.

    Attributes:
        token: the API key (or the admin key) it logged in with.
        admin: logged in with the admin key: may pick any workspace.
        workspace: the workspace every page shows (the key's; the admin's choice).
        key_id: the API key's id (``None`` for the admin).
    """

    token: str
    admin: bool
    workspace: str | None
    key_id: int | None = None

    @property
    def csrf(self) -> str:
        return csrf_token(self.token)


def csrf_token(token: str) -> str:
    """The CSRF token of a session logged in with ``token`` (stable, not guessable without it)."""
    return hmac.new(token.encode(), b"omoide-ui-csrf-v1", hashlib.sha256).hexdigest()


def is_admin_key(memory: Memory, token: str) -> bool:
    secret = memory.settings.admin_key
    return secret is not None and hmac.compare_digest(token.encode(), secret.get_secret_value().encode())


def get_memory(request: Request) -> Memory:
    """The :class:`Memory` of the app the inspector is mounted in."""
    memory: Memory = request.app.state.parent.state.memory
    return memory


MemoryDep = Annotated[Memory, Depends(get_memory)]


async def identify(memory: Memory, token: str | None, chosen: str | None) -> Viewer | None:
    """The viewer a key belongs to, or ``None`` when it is missing, unknown or revoked."""
    if not token:
        return None
    if is_admin_key(memory, token):
        return Viewer(token=token, admin=True, workspace=chosen or None)
    record = await memory.api_keys.verify(token)
    if record is None:
        return None
    return Viewer(token=token, admin=False, workspace=record.workspace_id, key_id=int(record.id))


def workspace_cookie(workspace: str) -> str:
    """The workspace cookie's value: the id percent-encoded (a header holds Latin-1 only, and a
    cookie no ``;`` or ``,``), so any id a key can name (``ワークスペース``) can be chosen."""
    return quote(workspace, safe="")


def chosen_workspace(request: Request) -> str | None:
    """The admin's chosen workspace (from :func:`workspace_cookie`), or ``None``."""
    value = request.cookies.get(WORKSPACE_COOKIE)
    return unquote(value) if value else None


async def current_viewer(request: Request, memory: MemoryDep) -> Viewer:
    """The logged-in viewer, with or without a workspace chosen.

    Raises:
        LoginRequired: no valid key in the cookie.
    """
    viewer = await identify(memory, request.cookies.get(KEY_COOKIE), chosen_workspace(request))
    if viewer is None:
        raise LoginRequired("log in with an API key first")
    request.state.viewer = viewer
    return viewer


async def workspace_viewer(viewer: Annotated[Viewer, Depends(current_viewer)]) -> Viewer:
    """The logged-in viewer with a workspace (the admin must have chosen one).

    Raises:
        WorkspaceRequired: the admin has not chosen a workspace.
    """
    if viewer.workspace is None:
        raise WorkspaceRequired("choose a workspace first")
    return viewer


AnyViewer = Annotated[Viewer, Depends(current_viewer)]
WorkspaceViewer = Annotated[Viewer, Depends(workspace_viewer)]


def check_csrf(viewer: Viewer, given: str | None) -> None:
    """Raises :class:`CsrfRejected` unless ``given`` is the viewer's CSRF token."""
    if not given or not hmac.compare_digest(given, viewer.csrf):
        raise CsrfRejected("the form's CSRF token is missing or wrong: reload the page and submit it again")


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_cookie(request: Request, response: Response, name: str, value: str, *, max_age: int = COOKIE_MAX_AGE) -> None:
    """Set one of the inspector's cookies: HttpOnly, SameSite=Strict, Secure over https, scoped to the UI."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=ui_root(request) or "/",
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


def clear_cookie(request: Request, response: Response, name: str) -> None:
    response.delete_cookie(
        name, path=ui_root(request) or "/", httponly=True, samesite="strict", secure=is_https(request)
    )


def ui_root(request: Request) -> str:
    """The path the inspector is mounted at (``/ui``, behind any proxy prefix)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def new_login_token() -> str:
    return secrets.token_urlsafe(24)


__all__ = [
    "KEY_COOKIE",
    "LOGIN_COOKIE",
    "WORKSPACE_COOKIE",
    "AnyViewer",
    "CsrfRejected",
    "LoginRequired",
    "MemoryDep",
    "Viewer",
    "WorkspaceRequired",
    "WorkspaceViewer",
    "check_csrf",
    "chosen_workspace",
    "clear_cookie",
    "csrf_token",
    "current_viewer",
    "get_memory",
    "identify",
    "is_admin_key",
    "new_login_token",
    "set_cookie",
    "ui_root",
    "workspace_cookie",
]
