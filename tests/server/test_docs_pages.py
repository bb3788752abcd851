"""/docs and /redoc load nothing from a CDN: every script, style and icon comes from this server."""

from __future__ import annotations

import re

import pytest

_REFERENCE = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|url:\s*'([^']+)'""")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_work_offline(client, page):
    response = await client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    assert not re.search(r"https?://|//cdn", html), html  # nothing from another host
    references = [a or b for a, b in _REFERENCE.findall(html)]
    assert any(r.endswith(".js") for r in references), html
    assert "/openapi.json" in references
    for reference in references:
        assert reference.startswith("/"), reference
        asset = await client.get(reference)
        assert asset.status_code == 200, reference
        assert asset.content, reference
