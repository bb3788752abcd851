"""The inspector in a real browser (Debian's Chromium driven by Playwright), on SQLite and PostgreSQL.

One test per backend walks every page as an operator would: log in, browse the overview,
sessions, knowledge, a source, run a search and an ask, edit and delete a memory (and see its
history), read a summary's versions, forget a user, switch to Japanese, look at a phone-width
screen, log in with another workspace's key and find none of the first's data. Screenshots of
each page go to the test's ``tmp_path/screenshots`` (and, when ``OMOIDE_TEST_SCREENSHOTS`` names
a folder (relative to where pytest started), are copied there too: ``docs/img/inspector``
was made that way).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from omoide import Memory
from omoide.server import create_app

from .browser import CHROMIUM_ARGS, chromium_or_reason, serve
from .conftest import ADMIN_KEY
from .seed import SECRET, WS_A, Seeded, seed

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for this module's tests (skips, saying why, when none can be had).

    Module-scoped, not session-scoped: the sync Playwright API keeps an event loop running in
    this thread while it is open, and the async tests of other modules need the thread free.
    """
    executable, reason = chromium_or_reason()
    if executable is None:
        pytest.skip(f"browser tests skipped: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Shots:
    """Screenshots into the test's folder (and the ``OMOIDE_TEST_SCREENSHOTS`` folder when set)."""

    def __init__(self, folder: Path, start: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        keep = os.environ.get("OMOIDE_TEST_SCREENSHOTS")
        self.keep = start / keep if keep else None  # relative: to where pytest was started

    def __call__(self, page: Any, name: str, *, full_page: bool = True) -> None:
        path = self.folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        if self.keep is not None:
            self.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.keep / f"{name}.png")


def _log_in(page: Any, base: str, key: str) -> None:
    page.goto(f"{base}/ui/")
    assert page.url.endswith("/ui/login")
    page.fill("#key", key)
    page.click("button[type=submit]:not(.link)")


def _text(page: Any) -> str:
    return str(page.inner_text("body"))


def test_inspector_in_chromium(browser, settings, tmp_path, backend, request):
    ui_settings = settings.model_copy(update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY)})

    async def fill() -> Seeded:
        async with Memory.open(ui_settings) as mem:
            return await seed(mem)

    # the sync Playwright API runs an event loop in this thread: seed from another one
    with ThreadPoolExecutor(1) as pool:
        seeded = pool.submit(asyncio.run, fill()).result()
    shot = Shots(tmp_path / "screenshots", request.config.invocation_params.dir)
    with serve(create_app(ui_settings, workers=False)) as base:
        _japanese_and_phone(browser, base, seeded, shot)
        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        page = context.new_page()
        try:
            _walk_workspace_a(page, base, seeded, shot)
        finally:
            context.close()
        _second_workspace_sees_nothing_of_the_first(browser, base, seeded)
        _admin_workspace_list(browser, base, shot)


def _walk_workspace_a(page: Any, base: str, seeded: Seeded, shot: Shots) -> None:
    page.goto(f"{base}/ui/")
    shot(page, "login")
    _log_in(page, base, seeded.a_token)
    page.wait_for_url(f"{base}/ui/")
    assert "Workspace overview" in _text(page) and WS_A in _text(page)
    assert int(page.inner_text('[data-count="chunks"]')) >= 1
    shot(page, "overview")

    page.click("nav >> text=Sessions")
    page.fill("input[name=user]", "7")
    page.select_option("select[name=state]", "active")
    page.click("form.filters button[type=submit]")
    assert seeded.a_session in _text(page)
    shot(page, "sessions")
    page.click(f"text={seeded.a_session}")
    assert "来週の定例会議" in _text(page) and "Archived into these chunks" in _text(page)
    shot(page, "session")

    page.click("nav >> text=Knowledge")
    shot(page, "knowledge")
    page.click("table a[href*='/knowledge/sources/']")
    assert "来週の定例会議" in _text(page)
    shot(page, "source")

    page.click("nav >> text=Search")
    page.fill("input[name=q]", "定例会議")
    page.click("button[value=search]")
    page.wait_for_selector('[data-rank="1"]')
    ranks = page.inner_text('[data-rank="1"] .ranks')
    assert "vector" in ranks and "lexical" in ranks and "fused" in ranks
    shot(page, "search")
    page.fill("input[name=q]", "定例会議は何曜日ですか")
    page.click("button[value=ask]")
    page.wait_for_selector("#answer")
    assert "[#1]" in page.inner_text("#answer")
    shot(page, "ask")

    page.click("nav >> text=Memories")
    page.fill("input[name=user]", "7")
    page.click("form.filters button[type=submit]")
    page.click(f"a[href$='/memories/7/{seeded.a_memory}']")
    page.fill("#content", "コーヒーより紅茶が好き")
    page.click("form.stack button[type=submit]")
    page.wait_for_selector("p.ok")
    assert page.input_value("#content") == "コーヒーより紅茶が好き"
    assert page.locator("table.history tr[data-action]").count() == 3
    assert page.inner_text("table.history tr[data-action]:last-child td:nth-child(3)") == "ui"
    shot(page, "memory")
    page.goto(f"{base}/ui/memories/7/{seeded.a_memory_2}")
    page.click("button.danger")
    assert "This deletes the memory." in _text(page)
    page.click("text=Yes, do it")
    assert "The memory was deleted." in _text(page)
    page.goto(f"{base}/ui/memories?user=7")
    assert "誕生日" not in _text(page) and "紅茶" in _text(page)
    shot(page, "memories")

    page.click("nav >> text=Summaries")
    assert "(v2)" in _text(page)
    shot(page, "summaries")
    page.click("article.summary h3 a")
    assert page.locator("[data-version]").count() == 2
    shot(page, "summary_versions")

    page.click("nav >> text=Users")
    shot(page, "users")
    page.fill("#forget-user", "7")
    page.click("section.card button.danger")
    page.click("text=Yes, do it")
    page.wait_for_selector("table.receipt")
    assert int(page.inner_text('tr[data-kind="memories"] td:nth-child(2)')) == 1
    assert int(page.inner_text('tr[data-kind="sessions"] td:nth-child(2)')) == 1
    shot(page, "receipt")


def _japanese_and_phone(browser: Any, base: str, seeded: Seeded, shot: Shots) -> None:
    context = browser.new_context(viewport=PHONE, locale="ja-JP", is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        _log_in(page, base, seeded.a_token)
        page.wait_for_url(f"{base}/ui/")
        assert "ワークスペースの概要" in _text(page)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"the overview is {overflow}px wider than a phone screen"
        shot(page, "phone_overview_ja")
        page.goto(f"{base}/ui/search?q=会議")
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
        shot(page, "phone_search_ja")
        page.click("a.lang")
        assert "Workspace overview" not in _text(page) and "Search playground" in _text(page)
        assert page.input_value("input[name=q]") == "会議"  # the same search, in English
    finally:
        context.close()


def _second_workspace_sees_nothing_of_the_first(browser: Any, base: str, seeded: Seeded) -> None:
    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    page = context.new_page()
    try:
        _log_in(page, base, seeded.b_token)
        page.wait_for_url(f"{base}/ui/")
        for path in (
            "/ui/",
            "/ui/sessions",
            "/ui/knowledge",
            "/ui/search?q=定例会議",
            "/ui/memories?user=7",
            "/ui/summaries",
            "/ui/users",
        ):
            page.goto(base + path)
            text = _text(page)
            assert "定例会議" not in text and "紅茶" not in text and WS_A not in text, path
        page.goto(base + "/ui/summaries")
        assert SECRET in _text(page)  # B sees its own
        response = page.goto(f"{base}/ui/sessions/view?key={seeded.a_session}")
        assert response.status == 404 and "定例会議" not in _text(page)
        response = page.goto(f"{base}/ui/memories/7/{seeded.a_memory}")
        assert response.status == 404
    finally:
        context.close()


def _admin_workspace_list(browser: Any, base: str, shot: Shots) -> None:
    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    page = context.new_page()
    try:
        _log_in(page, base, ADMIN_KEY)
        page.wait_for_url(re.compile(r".*/ui/workspaces$"))
        assert WS_A in _text(page)
        shot(page, "workspaces")
        page.click(f"tr:has-text('{WS_A}') button")
        page.wait_for_url(f"{base}/ui/")
        assert WS_A in _text(page)
    finally:
        context.close()
