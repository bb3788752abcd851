"""Failures inside the inspector are HTML pages in the viewer's language, never a plain-text
"Internal Server Error" or a traceback; and the admin can open any workspace an API key can name
(Japanese ids included)."""

from __future__ import annotations

import html

import httpx
from starlette.routing import Mount

from omoide.server import create_app

from .conftest import ADMIN_KEY, form_value, login
from .seed import WS_A


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


async def test_the_admin_opens_a_japanese_workspace(client, seeded, memory):
    """The workspace cookie held the raw id: a non-Latin-1 id was a plain-text 500."""
    await memory.api_keys.create("ワークスペース", name="jp")
    await login(client, ADMIN_KEY)
    listing = await client.get("/ui/workspaces")
    assert "ワークスペース" in html.unescape(listing.text)
    csrf = form_value(listing.text, "csrf")
    chosen = await client.post("/ui/workspace", data={"workspace": "ワークスペース", "csrf": csrf})
    assert chosen.status_code == 303, chosen.text
    overview = await client.get("/ui/")
    assert overview.status_code == 200 and 'class="ws"' in overview.text
    assert "ワークスペース" in html.unescape(overview.text)
    for odd in ('a;b=c, d"e', "100%25 done", WS_A):  # cookie syntax and percent signs survive too
        await client.post("/ui/workspace", data={"workspace": odd, "csrf": csrf})
        shown = html.unescape((await client.get("/ui/")).text)
        assert f'<span class="ws" title="Workspace">{odd}</span>' in shown, odd


async def test_the_admin_cannot_pick_a_workspace_with_a_control_character(client, seeded):
    await login(client, ADMIN_KEY)
    csrf = form_value((await client.get("/ui/workspaces")).text, "csrf")
    refused = await client.post("/ui/workspace", data={"workspace": "ws\x00x", "csrf": csrf})
    assert refused.status_code == 400 and refused.headers["content-type"].startswith("text/html")
    assert (await client.get("/ui/")).headers["location"] == "/ui/workspaces"  # nothing was chosen
