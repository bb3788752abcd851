"""Tenant isolation: a key of workspace A against every endpoint with ids of workspace B → 404,
and nothing of B in any response."""

from __future__ import annotations

import json

import pytest

from omoide.models import Message
from omoide.sample_data import discord_export_paths

from .conftest import ADMIN_KEY, WS_B

SECRET = "B-secret-うなぎ"
QUERY = "うなぎ"  # matches the secret; responses may echo the query, never the secret
B_KEY = f"discord:{WS_B}:c=99:u=5"


@pytest.fixture
async def b_data(memory, tenants):
    """Workspace B: a session with messages (also archived into knowledge) and a memory of user 5."""
    key = memory.session_key(platform="discord", workspace=WS_B, channel="99", user="5")
    for i in range(3):
        await memory.append(key, Message.user(f"{SECRET} message {i}", author_id="5", message_id=f"b{i}"))
    await memory.knowledge.archive(now=True)
    await memory.append(key, Message.user(f"{SECRET} after archive", author_id="5", message_id="b9"))
    remembered = await memory.remember(f"{SECRET} memory", workspace=WS_B, user="5")
    status = await memory.knowledge.status(workspace=WS_B)
    assert status.chunks >= 1
    return {"memory_id": int(remembered.memory.id)}


async def test_key_of_a_never_reaches_b(client, tenants, b_data):
    h = tenants.ha
    mid = b_data["memory_id"]
    ref = {"key": B_KEY}
    not_found = [
        await client.post("/v1/sessions/messages", headers=h, json={"session": ref, "text": "hi"}),
        await client.get("/v1/sessions/window", headers=h, params={"key": B_KEY}),
        await client.post("/v1/sessions/reset", headers=h, json={"session": ref}),
        await client.post("/v1/sessions/chat", headers=h, json={"session": ref, "text": "hi"}),
        await client.post("/v1/sessions/context", headers=h, json={"session": ref, "query": QUERY}),
        await client.get(f"/v1/users/5/memories/{mid}", headers=h),
        await client.patch(f"/v1/users/5/memories/{mid}", headers=h, json={"content": "overwritten"}),
        await client.delete(f"/v1/users/5/memories/{mid}", headers=h),
    ]
    for response in not_found:
        assert response.status_code == 404, (response.request.url, response.text)
        assert response.headers["content-type"] == "application/problem+json"

    empty_or_own = [
        await client.get("/v1/sessions", headers=h),
        await client.get("/v1/users/5/memories", headers=h),
        await client.post("/v1/users/5/memories/recall", headers=h, json={"query": QUERY}),
        await client.post("/v1/search", headers=h, json={"query": QUERY, "mode": "lexical"}),
        await client.post("/v1/search", headers=h, json={"query": QUERY, "mode": "hybrid", "channel": "99"}),
        await client.post("/v1/ask", headers=h, json={"question": QUERY, "mode": "lexical"}),
        await client.get("/v1/status", headers=h),
    ]
    for response in empty_or_own:
        assert response.status_code == 200, (response.request.url, response.text)
        assert SECRET not in response.text and WS_B not in response.text, response.request.url
    assert (await client.get("/v1/sessions", headers=h)).json()["items"] == []
    status = (await client.get("/v1/status", headers=h)).json()
    assert status["chunks"] == 0 and sum(status["sessions"].values()) == 0
    # an admin path with B's key id: a workspace key is never an admin key
    assert (await client.delete(f"/v1/admin/keys/{tenants.b_id}", headers=h)).status_code == 401

    # B still has everything, untouched
    hb = tenants.hb
    window = (await client.get("/v1/sessions/window", headers=hb, params={"key": B_KEY})).json()
    assert len(window["messages"]) == 4
    own = await client.get(f"/v1/users/5/memories/{mid}", headers=hb)
    assert own.status_code == 200 and own.json()["content"] == f"{SECRET} memory"
    found = (await client.post("/v1/search", headers=hb, json={"query": QUERY, "mode": "lexical"})).json()
    assert found["hits"] and SECRET in json.dumps(found, ensure_ascii=False)


async def test_import_of_another_workspace_is_refused(client, tenants, memory):
    export = next(p for p in discord_export_paths() if "random" in p.name)  # guild WS_A's export
    refused = await client.post(
        "/v1/imports", headers=tenants.hb, params={"filename": export.name}, content=export.read_bytes()
    )
    assert refused.status_code == 400 and refused.json()["code"] == "INVALID_INPUT"
    assert (await memory.knowledge.status()).chunks == 0  # nothing was written anywhere


async def test_admin_key_is_not_a_workspace_key(client, tenants):
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    assert (await client.get("/v1/status", headers=admin)).status_code == 401
