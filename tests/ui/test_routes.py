"""The inspector's routes through the real app (ASGI client, cookies kept), on SQLite and PostgreSQL:
login and cookies, CSRF, every page, search / ask, memory edit / delete / history, forget a user,
session reset / delete, the admin's workspace list, and that one workspace's key sees none of
another's data."""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

import pytest

from omoide.models import Message

from .conftest import ADMIN_KEY, csrf_of, form_value, login
from .seed import SECRET, WS_A, WS_B

PAGES = [
    "/ui/",
    "/ui/sessions",
    "/ui/knowledge",
    "/ui/search?q=会議&mode=lexical",
    "/ui/search?q=会議&mode=hybrid",
    "/ui/search?q=金曜日の会議は何時から&action=ask",
    "/ui/memories",
    "/ui/memories?user=7",
    "/ui/memories?user=7&q=コーヒー",
    "/ui/memories?user=5",
    "/ui/summaries",
    "/ui/summaries?scope=channel&kind=long_term",
    "/ui/users",
]


async def test_login_required_and_cookie_flags(client, seeded):
    first = await client.get("/ui/")
    assert first.status_code == 303 and first.headers["location"] == "/ui/login"
    bad = await login(client, "omk_not-a-key")
    assert bad.status_code == 401 and "unknown or revoked" in bad.text
    ok = await login(client, seeded.a_token)
    assert ok.status_code == 303 and ok.headers["location"] == "/ui/"
    cookie = next(v for k, v in ok.headers.multi_items() if k == "set-cookie" and v.startswith("omoide_ui_key="))
    flags = cookie.lower()
    assert "httponly" in flags and "samesite=strict" in flags and "path=/ui" in flags
    assert "secure" not in flags  # plain http: a Secure cookie would never come back
    page = await client.get("/ui/")
    assert page.status_code == 200 and WS_A in page.text
    assert "script-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


async def test_cookie_is_secure_over_https(memory, seeded):
    import httpx

    from omoide.server import create_app

    transport = httpx.ASGITransport(app=create_app(memory, workers=False))
    async with httpx.AsyncClient(transport=transport, base_url="https://omoide.test") as c:
        ok = await login(c, seeded.a_token)
        assert ok.status_code == 303
        cookie = next(v for k, v in ok.headers.multi_items() if k == "set-cookie" and v.startswith("omoide_ui_key="))
        assert "secure" in cookie.lower()


async def test_login_returns_to_the_page_asked_for(client, seeded):
    wanted = f"/ui/sessions/view?key={seeded.a_session}"
    first = await client.get("/ui/sessions/view", params={"key": seeded.a_session})
    assert first.status_code == 303 and first.headers["location"].startswith("/ui/login?next=")
    form = await client.get(first.headers["location"])
    back = form_value(form.text, "next")
    assert unquote(back) == wanted.replace("/ui", "", 1)
    done = await client.post(
        "/ui/login", data={"key": seeded.a_token, "login_token": form_value(form.text, "login_token"), "next": back}
    )
    assert done.status_code == 303 and unquote(done.headers["location"]) == wanted
    assert seeded.a_session in html.unescape((await client.get(done.headers["location"])).text)
    for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        again = await client.get("/ui/login")
        out = await client.post(
            "/ui/login",
            data={"key": seeded.a_token, "login_token": form_value(again.text, "login_token"), "next": evil},
        )
        assert out.headers["location"] == "/ui/", evil


async def test_login_form_needs_its_token(client, seeded):
    await client.get("/ui/login")
    forged = await client.post("/ui/login", data={"key": seeded.a_token, "login_token": "forged"})
    assert forged.status_code == 403
    assert (await client.get("/ui/")).status_code == 303


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_shows_a_and_nothing_of_b(client, seeded, path):
    await login(client, seeded.a_token)
    response = await client.get(path)
    assert response.status_code == 200, response.text
    text = html.unescape(response.text)
    assert SECRET not in text and WS_B not in text
    assert "<script" not in response.text  # no JavaScript at all
    assets = re.findall(r'<(?:link|img|script)[^>]+(?:href|src)="([^"]+)"', response.text)
    assert assets and all(a.startswith("/ui/static/") for a in assets), assets  # nothing from a CDN


async def test_pages_show_the_workspace_data(client, seeded):
    await login(client, seeded.a_token)
    overview = html.unescape((await client.get("/ui/")).text)
    assert re.search(r'data-count="chunks">[1-9]', overview)
    assert "hashing" in overview  # the embedder in use
    assert re.search(r'data-count="unarchived">1<', overview)  # the message after the archive
    assert re.search(r'data-count="to-summarise">[1-9]', overview)  # no short-term summary yet
    sessions = html.unescape((await client.get("/ui/sessions")).text)
    assert seeded.a_session in sessions and seeded.b_session not in sessions
    form = {"platform": "", "channel": "", "user": "", "state": ""}  # the filter form as a browser sends it
    assert seeded.a_session in html.unescape((await client.get("/ui/sessions", params=form)).text)
    active = {**form, "platform": "discord", "channel": "42", "state": "active"}
    assert seeded.a_session in html.unescape((await client.get("/ui/sessions", params=active)).text)
    assert (await client.get("/ui/sessions", params={"state": "sleeping"})).status_code == 400
    filtered = html.unescape((await client.get("/ui/sessions", params={"user": "nobody"})).text)
    assert seeded.a_session not in filtered
    view = html.unescape((await client.get("/ui/sessions/view", params={"key": seeded.a_session})).text)
    assert "来週の定例会議" in view and "アーカイブ後のメッセージ" in view
    assert "/ui/knowledge/sources/" in view  # the chunks the session was archived into
    source_id = re.search(r"/ui/knowledge/sources/(\d+)", view).group(1)
    source = html.unescape((await client.get(f"/ui/knowledge/sources/{source_id}")).text)
    assert "来週の定例会議" in source and "https://discord.com/channels/" + WS_A in source
    assert "/ui/sessions/view?key=" in source  # back to the messages
    link = re.search(r'href="(/ui/sessions/view\?key=[^"#]+&after=0)#seq-1"', source)
    assert link, "the chunk links to its first message"
    assert "来週の定例会議" in html.unescape((await client.get(link.group(1))).text)


async def test_search_explain_and_ask(client, seeded):
    await login(client, seeded.a_token)
    found = html.unescape((await client.get("/ui/search", params={"q": "定例会議", "mode": "hybrid"})).text)
    assert 'data-rank="1"' in found
    assert "vector:" in found and "lexical:" in found and "fused:" in found  # explain: each list's rank
    asked = html.unescape(
        (await client.get("/ui/search", params={"q": "定例会議は何曜日ですか", "action": "ask"})).text
    )
    assert 'id="answer"' in asked and "[#1]" in asked


async def test_memory_edit_delete_and_history(client, seeded, memory):
    await login(client, seeded.a_token)
    csrf = await csrf_of(client)
    url = f"/ui/memories/7/{seeded.a_memory}"
    page = html.unescape((await client.get(url)).text)
    assert "砂糖なし" in page
    refused = await client.post(url + "/edit", data={"content": "hacked", "category": "general"})
    assert refused.status_code == 403
    edited = await client.post(
        url + "/edit", data={"content": "紅茶も好き", "category": "preference", "tags": "drink, tea", "csrf": csrf}
    )
    assert edited.status_code == 303
    stored = await memory.memories.get(WS_A, "7", seeded.a_memory)
    assert stored.content == "紅茶も好き" and stored.tags == ("drink", "tea")
    shown = html.unescape((await client.get(edited.headers["location"])).text)
    assert "紅茶も好き" in shown
    actions = re.findall(r'data-action="(\w+)"', shown)
    assert actions == ["created", "updated", "updated"]  # remember, the seed's update, this edit
    assert re.findall(r"<td><code>(\w+)</code></td>", shown) == ["library", "library", "ui"]

    ask = await client.post(url + "/delete", data={"csrf": csrf})
    assert ask.status_code == 200 and 'name="confirmed" value="yes"' in ask.text
    assert await memory.memories.list(WS_A, "7")  # asking deleted nothing
    done = await client.post(url + "/delete", data={"csrf": csrf, "confirmed": "yes"})
    assert done.status_code == 200
    assert seeded.a_memory not in [int(m.id) for m in await memory.memories.list(WS_A, "7")]
    after = html.unescape((await client.get(url)).text)  # gone, but its history stays readable
    assert re.findall(r'data-action="(\w+)"', after)[-1] == "deleted" and 'id="content"' not in after


async def test_forget_user_shows_the_receipt(client, seeded, memory):
    await login(client, seeded.a_token)
    csrf = await csrf_of(client)
    assert (await client.post("/ui/users/forget", data={"user": "7"})).status_code == 403
    ask = await client.post("/ui/users/forget", data={"user": "7", "csrf": csrf})
    assert ask.status_code == 200 and 'name="confirmed" value="yes"' in ask.text
    assert await memory.memories.list(WS_A, "7")
    receipt = await client.post("/ui/users/forget", data={"user": "7", "csrf": csrf, "confirmed": "yes"})
    assert receipt.status_code == 200
    counts = dict(re.findall(r'data-kind="(\w+)"><td>[^<]*</td><td>(\d+)</td>', receipt.text))
    assert int(counts["memories"]) == 2 and int(counts["sessions"]) == 1
    assert await memory.memories.list(WS_A, "7") == []
    assert await memory.memories.list(WS_B, "5")  # the other workspace is untouched


async def test_session_reset_and_delete_ask_first(client, seeded, memory):
    await login(client, seeded.a_token)
    csrf = await csrf_of(client)
    key = seeded.a_session
    ask = await client.post("/ui/sessions/reset", data={"key": key, "csrf": csrf})
    assert ask.status_code == 200 and await memory.history(key)
    reset = await client.post("/ui/sessions/reset", data={"key": key, "csrf": csrf, "confirmed": "yes"})
    assert reset.status_code == 200 and await memory.history(key) == []
    gone = await client.post("/ui/sessions/delete", data={"key": key, "csrf": csrf, "confirmed": "yes"})
    assert gone.status_code == 303
    assert (await client.get("/ui/sessions/view", params={"key": key})).status_code == 404


async def test_a_key_never_reaches_b(client, seeded, memory):
    await login(client, seeded.a_token)
    csrf = await csrf_of(client)
    b_sources = await memory.knowledge.sources(workspace=WS_B)
    assert b_sources
    not_found = [
        await client.get("/ui/sessions/view", params={"key": seeded.b_session}),
        await client.get(f"/ui/knowledge/sources/{int(b_sources[0].id)}"),
        await client.get(f"/ui/memories/5/{seeded.b_memory}"),
        await client.get("/ui/summaries/channel/99"),
        await client.post(f"/ui/memories/5/{seeded.b_memory}/edit", data={"content": "x", "csrf": csrf}),
        await client.post(f"/ui/memories/5/{seeded.b_memory}/delete", data={"csrf": csrf, "confirmed": "yes"}),
        await client.post("/ui/sessions/reset", data={"key": seeded.b_session, "csrf": csrf, "confirmed": "yes"}),
        await client.post("/ui/sessions/delete", data={"key": seeded.b_session, "csrf": csrf, "confirmed": "yes"}),
    ]
    for response in not_found:
        assert response.status_code == 404, (response.request.url, response.text)
        assert SECRET not in html.unescape(response.text)
    # a workspace key cannot pick another workspace
    await client.post("/ui/workspace", data={"workspace": WS_B, "csrf": csrf})
    assert WS_B not in html.unescape((await client.get("/ui/")).text)
    # forgetting user 5 from A's key erases nothing of B
    await client.post("/ui/users/forget", data={"user": "5", "csrf": csrf, "confirmed": "yes"})
    assert (await memory.memories.get(WS_B, "5", seeded.b_memory)).content == f"{SECRET} memory"
    assert len(await memory.sessions.messages(seeded.b_session)) == 3


async def test_admin_picks_a_workspace(client, seeded):
    ok = await login(client, ADMIN_KEY)
    assert ok.status_code == 303 and ok.headers["location"] == "/ui/workspaces"
    assert (await client.get("/ui/")).headers["location"] == "/ui/workspaces"
    listing = await client.get("/ui/workspaces")
    assert WS_A in listing.text and WS_B in listing.text
    csrf = form_value(listing.text, "csrf")
    chosen = await client.post("/ui/workspace", data={"workspace": WS_B, "csrf": csrf})
    assert chosen.status_code == 303
    memories = html.unescape((await client.get("/ui/memories", params={"user": "5"})).text)
    assert f"{SECRET} memory" in memories


async def test_admin_workspace_list_pages_through_every_workspace(client, seeded, memory, monkeypatch):
    from omoide.server.ui.pages import login as login_page

    monkeypatch.setattr(login_page, "WORKSPACES_PAGE", 2)
    for n in range(3):
        await memory.append(
            memory.session_key(platform="discord", workspace=f"zz{n}", channel="1", user="1"), Message.user("hi")
        )
    await login(client, ADMIN_KEY)
    seen: list[str] = []
    url = "/ui/workspaces"
    while url:
        listing = html.unescape((await client.get(url)).text)
        seen += re.findall(r'name="workspace" value="([^"]+)"', listing)
        found = re.search(r'href="\?offset=(\d+)">[^<]*(Next|次)', listing)
        url = f"/ui/workspaces?offset={found.group(1)}" if found else ""
    assert {WS_A, WS_B, "zz0", "zz1", "zz2"} <= set(seen)


async def test_revoked_key_is_logged_out(client, seeded, memory):
    await login(client, seeded.a_token)
    assert (await client.get("/ui/")).status_code == 200
    record = await memory.api_keys.verify(seeded.a_token)
    await memory.api_keys.revoke(int(record.id))
    response = await client.get("/ui/")
    assert response.status_code == 303 and response.headers["location"] == "/ui/login"


async def test_language_from_accept_language_and_override(client, seeded):
    await login(client, seeded.a_token)
    ja = await client.get("/ui/", headers={"Accept-Language": "ja,en;q=0.5"})
    assert "ワークスペースの概要" in ja.text and '<html lang="ja">' in ja.text
    en = await client.get("/ui/", headers={"Accept-Language": "en-GB,ja;q=0.3"})
    assert "Workspace overview" in en.text
    forced = await client.get("/ui/?lang=en", headers={"Accept-Language": "ja"})
    assert "Workspace overview" in forced.text
    remembered = await client.get("/ui/sessions", headers={"Accept-Language": "ja"})
    assert "Sessions" in remembered.text and '<html lang="en">' in remembered.text


async def test_logout_needs_csrf_and_clears_the_cookie(client, seeded):
    await login(client, seeded.a_token)
    csrf = await csrf_of(client)
    assert (await client.post("/ui/logout")).status_code == 403
    out = await client.post("/ui/logout", data={"csrf": csrf})
    assert out.status_code == 303
    assert (await client.get("/ui/")).status_code == 303


async def test_static_css_is_served_locally(client):
    css = await client.get("/ui/static/inspector.css")
    assert css.status_code == 200 and "@media (max-width: 640px)" in css.text


async def test_summary_versions(client, seeded):
    await login(client, seeded.a_token)
    listing = html.unescape((await client.get("/ui/summaries")).text)
    assert "(v2)" in listing and "(v1)" not in listing  # the latest version per scope
    versions = html.unescape((await client.get("/ui/summaries/channel/42")).text)
    assert re.findall(r'data-version="(\d+)"', versions) == ["2", "1"]


async def test_bad_input_is_an_html_page(client, seeded, memory):
    await login(client, seeded.a_token)
    response = await client.get("/ui/summaries", params={"scope": "galaxy"})
    assert response.status_code == 400 and response.headers["content-type"].startswith("text/html")
    assert (await client.get("/ui/memories/7/999999")).status_code == 404


async def test_search_filters_and_message_pages(client, seeded):
    await login(client, seeded.a_token)
    params = {"q": "定例会議", "mode": "lexical", "channel": "42", "since": "2000-01-01", "until": "2999-12-31"}
    found = html.unescape((await client.get("/ui/search", params=params)).text)
    assert 'data-rank="1"' in found
    elsewhere = html.unescape((await client.get("/ui/search", params={**params, "channel": "43"})).text)
    assert 'data-rank="1"' not in elsewhere
    blank = {
        "q": "定例会議",
        "mode": "lexical",
        "channel": "",
        "thread": "",
        "author": "",
        "source_type": "",
        "since": "",
        "until": "",
    }
    assert 'data-rank="1"' in html.unescape((await client.get("/ui/search", params=blank)).text)  # the form as sent
    assert (await client.get("/ui/search", params={**params, "since": "yesterday"})).status_code == 400
    too_early = html.unescape((await client.get("/ui/search", params={**params, "until": "2001-01-01"})).text)
    assert 'data-rank="1"' not in too_early
    later = html.unescape((await client.get("/ui/sessions/view", params={"key": seeded.a_session, "after": 4})).text)
    assert "アーカイブ後のメッセージ" in later and "議事録は共有フォルダに置きました" in later  # the window stays
    assert 'id="seq-5"' in later and 'id="seq-2"' not in later  # the stored messages after #4 only


async def test_search_until_the_last_day_of_the_calendar(client, seeded):
    """`until` includes its day, so 9999-12-31 meant the day after it: OverflowError, a plain-text 500."""
    await login(client, seeded.a_token)
    params = {"q": "定例会議", "mode": "lexical", "since": "0001-01-01", "until": "9999-12-31"}
    response = await client.get("/ui/search", params=params)
    assert response.status_code == 200, response.text
    assert 'data-rank="1"' in html.unescape(response.text)
    asked = await client.get("/ui/search", params={**params, "action": "ask"})
    assert asked.status_code == 200, asked.text


async def test_worker_errors_are_for_the_admin(client, seeded, memory):
    from omoide.workers.health import WorkerReporter

    reporter = WorkerReporter(memory.store, jobs=["embedder"])
    await reporter.heartbeat()
    await reporter.error("embedder", "PROVIDER_UNAVAILABLE", "503 from the embedding API")
    await login(client, seeded.a_token)
    own = html.unescape((await client.get("/ui/")).text)
    assert "503 from the embedding API" not in own and "admin key only" in own
    assert 'data-workers="alive"' in own
    await login(client, ADMIN_KEY)
    listing = await client.get("/ui/workspaces")
    await client.post("/ui/workspace", data={"workspace": WS_A, "csrf": form_value(listing.text, "csrf")})
    admin = html.unescape((await client.get("/ui/")).text)
    assert "503 from the embedding API" in admin and "PROVIDER_UNAVAILABLE" in admin


async def test_summaries_are_paged(client, seeded, memory):
    """The list held every scope's latest summary of the workspace at once (all users' summaries: unbounded)."""
    from omoide.server.ui.pages import summaries as summaries_page
    from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

    for n in range(summaries_page.PAGE + 3):
        draft = SummaryDraft(
            workspace_id=WS_A,
            scope=SummaryScope.USER,
            scope_id=f"ユーザー{n:03d}",
            kind=SummaryKind.LONG_TERM,
            content=f"summary of user {n}",
            source_message_count=1,
        )
        await memory.store.summaries.save_summary(draft, new_version=True)
    await login(client, seeded.a_token)
    seen: list[str] = []
    url = "/ui/summaries?scope=user&kind=long_term"
    pages = 0
    while url:
        listing = await client.get(url)
        assert listing.status_code == 200, listing.text
        shown = re.findall(r"summary of user (\d+)", listing.text)
        assert len(shown) <= summaries_page.PAGE
        seen += shown
        pages += 1
        found = re.search(r'<a href="([^"]+)">(?:Next|次)', listing.text)
        url = "/ui/summaries" + html.unescape(found.group(1)) if found else ""
    assert pages == 2 and sorted(seen, key=int) == [str(n) for n in range(summaries_page.PAGE + 3)]
    assert (await client.get("/ui/summaries", params={"scope": "user", "after": "x" * 300})).status_code == 400


def _language_link(page_html: str) -> str:
    found = re.search(r'<a href="([^"]*)" hreflang="(ja|en)"', page_html)
    assert found, "no language link"
    return html.unescape(found.group(1))


async def test_switching_language_stays_on_the_page(client, seeded):
    """The link was ``?lang=xx`` alone: on a session it dropped ``key`` (a 400 page), on a search its
    query and filters, on a page answering a form (confirm, receipt) it pointed at a POST-only URL (405)."""
    await login(client, seeded.a_token)
    view = await client.get("/ui/sessions/view", params={"key": seeded.a_session, "lang": "en"})
    switched = await client.get(_language_link(view.text))
    assert switched.status_code == 200, switched.text
    assert '<html lang="ja">' in switched.text and seeded.a_session in html.unescape(switched.text)
    search = await client.get("/ui/search", params={"q": "定例会議", "mode": "lexical", "channel": "42"})
    link = _language_link(search.text)
    assert link.startswith("/ui/search?") and link.count("lang=") == 1
    again = await client.get(link)
    assert '<html lang="en">' in again.text and 'data-rank="1"' in again.text  # the same search, in English
    versions = await client.get("/ui/summaries/channel/42", params={"kind": "long_term"})
    assert (await client.get(_language_link(versions.text))).status_code == 200
    csrf = await csrf_of(client)
    confirm = await client.post("/ui/users/forget", data={"user": "7", "csrf": csrf})
    link = _language_link(confirm.text)
    assert link in ("/ui/?lang=ja", "/ui/?lang=en")  # the front page, switched
    answered = await client.get(link)
    assert answered.status_code == 200 and f'<html lang="{link[-2:]}">' in answered.text
    form = await client.get("/ui/login")
    failed = await client.post("/ui/login", data={"key": "nope", "login_token": form_value(form.text, "login_token")})
    assert _language_link(failed.text).startswith("/ui/login?")
    wrong = await client.get("/ui/users/forget", headers={"Accept-Language": "ja"})
    assert wrong.status_code == 405 and "Method Not Allowed" not in wrong.text  # in the viewer's language


async def test_memories_pager_has_no_empty_last_page(client, seeded, memory):
    """'Next' was shown whenever a page was full, so a user with exactly 50 memories got an empty page 2."""
    from omoide.server.ui.pages import memories as memories_page

    user = "pager-user"
    for n in range(memories_page.PAGE):
        await memory.remember(f"メモ {n}: " + " ".join(f"w{n}x{i}" for i in range(4)), workspace=WS_A, user=user)
    assert len(await memory.memories.list(WS_A, user, page_size=200)) == memories_page.PAGE
    await login(client, seeded.a_token)
    full = await client.get("/ui/memories", params={"user": user})
    assert full.status_code == 200 and "offset=" not in full.text
    await memory.remember("one more: 追加のメモ", workspace=WS_A, user=user)
    more = await client.get("/ui/memories", params={"user": user})
    link = re.search(r'href="(\?user=[^"]+&amp;offset=(\d+))"', more.text)
    assert link and int(link.group(2)) == memories_page.PAGE
    rest = await client.get("/ui/memories" + html.unescape(link.group(1)))
    assert rest.status_code == 200 and len(re.findall(r'<td class="text">', rest.text)) == 1
    assert re.search(r'href="\?user=[^"]+&amp;offset=0">(Previous|前へ)<', rest.text)


async def test_search_hits_speak_japanese(client, seeded):
    """A hit's matched line was labelled 'line N' in English on the Japanese page."""
    await login(client, seeded.a_token)
    params = {"q": "定例会議", "mode": "lexical", "lang": "ja"}
    found = html.unescape((await client.get("/ui/search", params=params)).text)
    assert 'data-rank="1"' in found and "行目" in found and "· line " not in found
    english = html.unescape((await client.get("/ui/search", params={**params, "lang": "en"})).text)
    assert "· line " in english


async def test_ids_with_a_slash_have_pages(client, seeded, memory):
    """A user or scope id holding '/' (``team/alice``) is fine for the library, but the inspector's own
    links to its memory and its summary versions were 404s."""
    from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

    user = "team/alice"
    made = await memory.remember("スラッシュのあるユーザーのメモ", workspace=WS_A, user=user)
    draft = SummaryDraft(
        workspace_id=WS_A,
        scope=SummaryScope.USER,
        scope_id=user,
        kind=SummaryKind.LONG_TERM,
        content="slash user summary",
        source_message_count=1,
    )
    await memory.store.summaries.save_summary(draft, new_version=True)
    await login(client, seeded.a_token)
    listing = await client.get("/ui/memories", params={"user": user})
    link = re.search(rf'href="(/ui/memories/[^"]+/{int(made.memory.id)})"', listing.text)
    assert link, listing.text
    one = await client.get(html.unescape(link.group(1)))
    assert one.status_code == 200 and "スラッシュのあるユーザーのメモ" in html.unescape(one.text)
    csrf = form_value(one.text, "csrf")
    action = re.search(r'action="([^"]+/edit)"', one.text).group(1)
    edited = await client.post(html.unescape(action), data={"content": "編集済み", "csrf": csrf})
    assert edited.status_code == 303 and (await client.get(edited.headers["location"])).status_code == 200
    assert (await memory.memories.get(WS_A, user, int(made.memory.id))).content == "編集済み"
    summaries = await client.get("/ui/summaries", params={"scope": "user"})
    versions = re.search(r'href="(/ui/summaries/user/[^"?]+)\?kind=long_term"', summaries.text)
    assert versions, summaries.text
    shown = await client.get(html.unescape(versions.group(1)))
    assert shown.status_code == 200 and "slash user summary" in shown.text
