"""Every endpoint through an ASGI client, on SQLite and PostgreSQL."""

from __future__ import annotations

from omoide.sample_data import discord_export_paths

from .conftest import ADMIN_KEY, CHAT_REPLY, WS_A

SESSION = {"platform": "discord", "channel": "42", "user": "7"}
KEY = f"discord:{WS_A}:c=42:u=7"


async def test_health_and_readiness(client):
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready" and ready.json()["schema_version"] >= 5


async def test_sessions_append_window_reset_list(client, tenants):
    h = tenants.ha
    first = await client.post(
        "/v1/sessions/messages",
        headers=h,
        json={"session": SESSION, "text": "明日の勉強会は何時から？", "author_id": "7", "message_id": "m1"},
    )
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["session_key"] == KEY and body["created"] is True
    assert body["message"]["seq"] == 1 and body["message"]["text"] == "明日の勉強会は何時から？"
    again = await client.post(
        "/v1/sessions/messages", headers=h, json={"session": {"key": KEY}, "text": "dup", "message_id": "m1"}
    )
    assert again.status_code == 201 and again.json()["created"] is False and again.json()["message"]["seq"] == 1
    blocks = await client.post(
        "/v1/sessions/messages",
        headers=h,
        json={
            "session": SESSION,
            "role": "assistant",
            "content": [{"type": "text", "text": "19時からです"}],
            "created_at": "2026-11-20T10:00:00+09:00",
        },
    )
    assert blocks.status_code == 201, blocks.text
    assert blocks.json()["message"]["is_bot"] is True

    window = await client.get("/v1/sessions/window", headers=h, params={**SESSION, "window": 10})
    assert window.status_code == 200
    assert [m["seq"] for m in window.json()["messages"]] == [1, 2]
    by_key = await client.get("/v1/sessions/window", headers=h, params={"key": KEY, "window": 1})
    assert [m["seq"] for m in by_key.json()["messages"]] == [2]

    listed = await client.get("/v1/sessions", headers=h, params={"limit": 10})
    assert listed.status_code == 200
    page = listed.json()
    assert [s["key"] for s in page["items"]] == [KEY] and page["next_offset"] is None
    assert page["items"][0]["last_seq"] == 2

    reset = await client.post("/v1/sessions/reset", headers=h, json={"session": {"key": KEY}})
    assert reset.status_code == 200 and reset.json()["window_start_seq"] == 2
    assert (await client.get("/v1/sessions/window", headers=h, params={"key": KEY})).json()["messages"] == []


async def test_session_list_pagination(client, tenants):
    for channel in ("1", "2", "3"):
        await client.post(
            "/v1/sessions/messages",
            headers=tenants.ha,
            json={"session": {"channel": channel, "policy": "channel"}, "text": "hi"},
        )
    first = (await client.get("/v1/sessions", headers=tenants.ha, params={"limit": 2})).json()
    assert len(first["items"]) == 2 and first["next_offset"] == 2
    second = (await client.get("/v1/sessions", headers=tenants.ha, params={"limit": 2, "offset": 2})).json()
    assert len(second["items"]) == 1 and second["next_offset"] is None


async def test_session_list_filters(client, tenants):
    for channel, user in (("1", "7"), ("1", "8"), ("2", "7")):
        await client.post(
            "/v1/sessions/messages",
            headers=tenants.ha,
            json={"session": {"channel": channel, "user": user}, "text": "hi", "author_id": user},
        )

    async def listed(**params: str) -> list[tuple[str, str]]:
        page = await client.get("/v1/sessions", headers=tenants.ha, params=params)
        assert page.status_code == 200, page.text
        return sorted((s["channel_id"], s["user_id"]) for s in page.json()["items"])

    assert await listed(channel_id="1") == [("1", "7"), ("1", "8")]
    assert await listed(user_id="7") == [("1", "7"), ("2", "7")]
    assert await listed(channel_id="2", user_id="7", platform="api") == [("2", "7")]
    assert await listed(platform="slack") == []
    assert (await client.get("/v1/sessions", headers=tenants.ha, params={"channel_id": ""})).status_code == 422
    assert await listed(channel_id="1") != [] and (
        (await client.get("/v1/sessions", headers=tenants.hb, params={"channel_id": "1"})).json()["items"] == []
    )


async def test_chat_turn_and_context(client, tenants):
    h = tenants.ha
    reply = await client.post(
        "/v1/sessions/chat", headers=h, json={"session": SESSION, "text": "来週の予定を教えて", "author_id": "7"}
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["text"] == CHAT_REPLY and reply.json()["stage"] == 0
    window = (await client.get("/v1/sessions/window", headers=h, params=SESSION)).json()["messages"]
    assert [m["role"] for m in window] == ["user", "assistant"]

    context = await client.post(
        "/v1/sessions/context", headers=h, json={"session": SESSION, "query": "予定", "budget_tokens": 4000}
    )
    assert context.status_code == 200, context.text
    built = context.json()
    assert built["budget"] == 4000 and built["system"] and len(built["messages"]) >= 2


async def test_a_retried_chat_turn_answers_the_stored_reply(client, tenants):
    """A client that retries POST /v1/sessions/chat with the same message_id (its first call timed
    out) got the model called again and another assistant reply stored each time."""
    h = tenants.ha
    turn = {"session": SESSION, "text": "明日の天気は？", "author_id": "7", "message_id": "m-retry"}
    first = await client.post("/v1/sessions/chat", headers=h, json=turn)
    again = await client.post("/v1/sessions/chat", headers=h, json=turn)
    assert first.status_code == again.status_code == 200, again.text
    assert again.json()["text"] == first.json()["text"]
    window = (await client.get("/v1/sessions/window", headers=h, params=SESSION)).json()["messages"]
    assert [m["role"] for m in window] == ["user", "assistant"]


async def test_memories_crud_and_recall(client, tenants):
    h = tenants.ha
    made = await client.post(
        "/v1/users/7/memories", headers=h, json={"content": "誕生日は3月15日", "category": "profile", "tags": ["a"]}
    )
    assert made.status_code == 201, made.text
    memory_id = made.json()["memory"]["id"]
    assert made.json()["updated"] is False
    await client.post("/v1/users/7/memories", headers=h, json={"content": "好きな食べ物はラーメン"})

    recalled = await client.post("/v1/users/7/memories/recall", headers=h, json={"query": "誕生日はいつ？"})
    assert recalled.status_code == 200
    assert recalled.json()["items"][0]["memory"]["id"] == memory_id

    listed = (await client.get("/v1/users/7/memories", headers=h, params={"limit": 1})).json()
    assert len(listed["items"]) == 1 and listed["next_offset"] == 1
    filtered = (await client.get("/v1/users/7/memories", headers=h, params={"category": "profile"})).json()
    assert [m["id"] for m in filtered["items"]] == [memory_id]

    got = await client.get(f"/v1/users/7/memories/{memory_id}", headers=h)
    assert got.status_code == 200 and got.json()["content"] == "誕生日は3月15日"
    patched = await client.patch(f"/v1/users/7/memories/{memory_id}", headers=h, json={"tags": ["b"]})
    assert patched.status_code == 200 and patched.json()["tags"] == ["b"]
    assert (await client.get(f"/v1/users/8/memories/{memory_id}", headers=h)).status_code == 404  # other user
    deleted = await client.delete(f"/v1/users/7/memories/{memory_id}", headers=h)
    assert deleted.status_code == 204
    assert (await client.get(f"/v1/users/7/memories/{memory_id}", headers=h)).status_code == 404


async def test_import_search_ask_status(client, tenants):
    h = tenants.ha
    export = next(p for p in discord_export_paths() if "random" in p.name)
    imported = await client.post(
        "/v1/imports", headers=h, params={"filename": export.name}, content=export.read_bytes()
    )
    assert imported.status_code == 201, imported.text
    assert imported.json()["sources"] >= 1 and imported.json()["chunks"] >= 1

    status = (await client.get("/v1/status", headers=h)).json()
    assert status["workspace_id"] == WS_A and status["chunks"] == imported.json()["chunks"]

    query = "ラーメン"
    found = await client.post("/v1/search", headers=h, json={"query": query, "mode": "lexical", "k": 3})
    assert found.status_code == 200, found.text
    assert "hits" in found.json()
    answer = await client.post(
        "/v1/ask", headers=h, json={"question": "誰がラーメンの話をしましたか？", "mode": "lexical", "language": "ja"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["text"]


async def test_admin_keys(client, tenants):
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = await client.post("/v1/admin/keys", headers=admin, json={"workspace": "w3", "name": "bot"})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    assert token.startswith("omk_") and made.json()["workspace_id"] == "w3"
    listed = (await client.get("/v1/admin/keys", headers=admin, params={"workspace": "w3"})).json()
    assert [k["id"] for k in listed["items"]] == [made.json()["id"]] and "token" not in listed["items"][0]
    everything = (await client.get("/v1/admin/keys", headers=admin, params={"limit": 2})).json()
    assert len(everything["items"]) == 2 and everything["next_offset"] == 2
    assert (await client.get("/v1/status", headers={"Authorization": f"Bearer {token}"})).status_code == 200
    revoked = await client.delete(f"/v1/admin/keys/{made.json()['id']}", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    assert (await client.get("/v1/status", headers={"Authorization": f"Bearer {token}"})).status_code == 401
    assert (await client.delete("/v1/admin/keys/999999", headers=admin)).status_code == 404
    # a workspace key is not an admin key
    assert (await client.get("/v1/admin/keys", headers=tenants.ha)).status_code == 401


async def test_openapi_documents_examples(client):
    schema = (await client.get("/openapi.json")).json()
    assert schema["info"]["title"] == "omoide"
    paths = schema["paths"]
    for path in (
        "/v1/sessions/messages",
        "/v1/sessions/window",
        "/v1/sessions/reset",
        "/v1/sessions",
        "/v1/sessions/chat",
        "/v1/sessions/context",
        "/v1/users/{user_id}/memories",
        "/v1/users/{user_id}/memories/recall",
        "/v1/users/{user_id}/memories/{memory_id}",
        "/v1/search",
        "/v1/ask",
        "/v1/imports",
        "/v1/status",
        "/v1/admin/keys",
        "/v1/admin/keys/{key_id}",
        "/healthz",
        "/readyz",
    ):
        assert path in paths, path
    assert "Problem" in schema["components"]["schemas"]
    assert "examples" in str(schema["components"]["schemas"]["AppendIn"])
