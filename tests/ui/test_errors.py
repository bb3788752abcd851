"""Failures inside the inspector are HTML pages in the viewer's language, never a plain-text
"Internal Server Error" or a traceback."""

from __future__ import annotations

import html

import httpx
from starlette.routing import Mount

from omoide.server import create_app

from .conftest import login


def _inspector(app):
    return next(r.app for r in app.routes if isinstance(r, Mount) and r.path == "/ui")


async def test_an_unexpected_failure_is_a_localised_html_page_with_the_request_id(memory, seeded):
    app = create_app(memory, workers=False)

    async def broken() -> None:
        raise RuntimeError("secret internals: /etc/omoide password=hunter2")

    _inspector(app).add_api_route("/broken-for-test", broken)  # a page with a bug, in the real inspector
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://omoide.test") as c:
        await login(c, seeded.a_token)
        for lang, words in (("en", "The server failed"), ("ja", "サーバーでエラーが発生しました")):
            response = await c.get("/ui/broken-for-test", headers={"Accept-Language": lang, "X-Request-ID": "req-42"})
            assert response.status_code == 500
            assert response.headers["content-type"].startswith("text/html"), response.text
            text = html.unescape(response.text)
            assert words in text and f'<html lang="{lang}">' in text
            assert "req-42" in text and response.headers["x-request-id"] == "req-42"  # to find it in the logs
            assert "hunter2" not in text and "Traceback" not in text and "RuntimeError" not in text
            assert "script-src 'none'" in response.headers["content-security-policy"]
