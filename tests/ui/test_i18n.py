"""The inspector's message catalog and language choice (no I/O)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.requests import Request

from omoide.server.ui.i18n import CATALOG, LANG_COOKIE, choose_language, translator

TEMPLATES = Path(__file__).parents[2] / "src/omoide/server/ui/templates"


def _request(query: str = "", cookie: str | None = None, accept: str | None = None) -> Request:
    headers = []
    if cookie:
        headers.append((b"cookie", f"{LANG_COOKIE}={cookie}".encode()))
    if accept is not None:
        headers.append((b"accept-language", accept.encode()))
    return Request(
        {"type": "http", "method": "GET", "path": "/ui/", "query_string": query.encode(), "headers": headers}
    )


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("ja", "ja"),
        ("ja-JP,ja;q=0.9,en;q=0.8", "ja"),
        ("en-US,en;q=0.9,ja;q=0.8", "en"),
        ("fr-FR,ja;q=0.5,en;q=0.4", "ja"),
        ("de, en;q=0.1", "en"),
        ("ja;q=0, en", "en"),
        ("", "en"),
        ("*", "en"),
        ("ja;q=bogus, en;q=0.2", "en"),
    ],
)
def test_accept_language(accept, expected):
    assert choose_language(_request(accept=accept)) == expected


def test_override_beats_cookie_beats_header():
    assert choose_language(_request("lang=en", cookie="ja", accept="ja")) == "en"
    assert choose_language(_request(cookie="en", accept="ja")) == "en"
    assert choose_language(_request("lang=xx", cookie="nope", accept="ja")) == "ja"


def test_every_key_used_by_a_template_or_page_is_in_the_catalog():
    used: set[str] = set()
    for path in [*TEMPLATES.glob("*.html"), *TEMPLATES.parent.rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r"""t\(["']([a-z_]+\.[a-z_0-9]+)["']""", text))
        used |= set(re.findall(r"""["']((?:nav|sess|mem|users|sum|kn|ov)\.[a-z_0-9]+)["']""", text))
    missing = sorted(k for k in used if k not in CATALOG and not k.endswith((".html", "_")))  # "x_" ~ value: below
    assert not missing, missing
    for kind in (
        "memories",
        "sessions",
        "messages",
        "summaries",
        "chunks_rewritten",
        "chunks_deleted",
        "sources_deleted",
        "transcripts",
    ):
        assert f"erase.{kind}" in CATALOG  # the receipt's rows
    for state in ("alive", "none", "stopped", "dead"):  # WorkersHealth.state
        assert f"ov.workers_{state}" in CATALOG


def test_both_languages_are_filled_and_differ():
    for key, (ja, en) in CATALOG.items():
        assert ja.strip() and en.strip(), key
    t_ja, t_en = translator("ja"), translator("en")
    assert t_ja("nav.sessions") == "セッション" and t_en("nav.sessions") == "Sessions"
    assert t_en("sess.deleted") == "The session was deleted."
    assert t_en("no.such.key") == "no.such.key"
