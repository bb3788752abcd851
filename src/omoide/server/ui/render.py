"""Rendering a page: the Jinja2 templates, the context every page gets, and the security headers.

Every page is rendered through :func:`page`, which adds what the base template needs (the
language and its translator, the viewer and its CSRF token, the UI's root path, the nav) and
sends headers that keep the inspector's pages to themselves: no scripts at all (a CSP of
``default-src 'self'`` with no script source), no framing, no referrer, no caching of pages
holding a workspace's data.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from omoide.server.ui.i18n import LANG_COOKIE, choose_language, translator
from omoide.server.ui.security import Viewer, set_cookie, ui_root

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=str(HERE / "templates"))

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

NAV = (
    ("/", "nav.overview"),
    ("/sessions", "nav.sessions"),
    ("/knowledge", "nav.knowledge"),
    ("/search", "nav.search"),
    ("/memories", "nav.memories"),
    ("/summaries", "nav.summaries"),
    ("/users", "nav.users"),
)


def _when(value: datetime | str | None) -> str:
    """A timestamp as ``2026-11-26 09:43:12Z`` (UTC, seconds)."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
    else:
        moment = value
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def _as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)


templates.env.filters["when"] = _when
templates.env.filters["as_json"] = _as_json


def language_link(request: Request, lang: str) -> str:
    """Where the language switch goes: this page with its query (``lang`` replaced) for a GET; after
    a form (a confirmation, a receipt: POST-only URLs) the front page, or the login form."""
    root = ui_root(request)
    if request.method in ("GET", "HEAD"):
        kept = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
        return request.url.path + "?" + urlencode([*kept, ("lang", lang)])
    path = request.url.path[len(root) :]
    return root + ("/login" if path == "/login" else "/") + "?" + urlencode({"lang": lang})


def page(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    viewer: Viewer | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    """Render template ``name`` with ``context`` and the common context; remember a ``?lang=`` choice."""
    lang = choose_language(request)
    seen = viewer if viewer is not None else getattr(request.state, "viewer", None)
    common: dict[str, Any] = {
        "lang": lang,
        "other_lang": "en" if lang == "ja" else "ja",
        "lang_href": language_link(request, "en" if lang == "ja" else "ja"),
        "t": translator(lang),
        "root": ui_root(request),
        "viewer": seen,
        "csrf": seen.csrf if isinstance(seen, Viewer) else "",
        "nav": NAV,
        "path": request.url.path[len(ui_root(request)) :] or "",
    }
    response = templates.TemplateResponse(request, name, {**common, **(context or {})}, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    if request.query_params.get("lang") in ("ja", "en"):
        set_cookie(request, response, LANG_COOKIE, lang, max_age=365 * 24 * 3600)
    return response


__all__ = ["SECURITY_HEADERS", "language_link", "page", "templates"]
