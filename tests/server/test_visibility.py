"""The HTTP API's visibility options: a private conversation appended through the API is
found by its member's view (`viewer`), never by another user's or by `public_only`."""

from __future__ import annotations

import httpx

from omoide import Memory

from .conftest import Tenants

SECRET = "the vault code is 4271 zebra"


async def test_private_conversations_and_viewer(client: httpx.AsyncClient, memory: Memory, tenants: Tenants) -> None:
    h = tenants.ha
    dm = {"platform": "slack", "channel": "D1", "user": "alice"}
    for i, (role, text) in enumerate([("user", SECRET), ("assistant", "noted"), ("user", "thanks zebra")]):
        body = {"session": dm, "role": role, "text": text, "message_id": f"d{i}", "private": True}
        reply = await client.post("/v1/sessions/messages", headers=h, json=body)
        assert reply.status_code in (200, 201), reply.text
    public = {"platform": "slack", "channel": "C1", "user": "bob"}
    for i, text in enumerate(["zebra crossing on the way to the office", "the office is closed friday"]):
        reply = await client.post(
            "/v1/sessions/messages", headers=h, json={"session": public, "text": text, "message_id": f"c{i}"}
        )
        assert reply.status_code in (200, 201), reply.text
    await memory.knowledge.archive(now=True)
    await memory.knowledge.embed()

    async def contents(**extra: object) -> list[str]:
        found = await client.post("/v1/search", headers=h, json={"query": "zebra", "mode": "lexical", **extra})
        assert found.status_code == 200, found.text
        return [hit["content"] for hit in found.json()["hits"]]

    assert any("4271" in c for c in await contents(viewer="alice"))
    assert not any("4271" in c for c in await contents(viewer="bob"))
    assert not any("4271" in c for c in await contents(public_only=True))
    assert any("zebra crossing" in c for c in await contents(viewer="bob"))
    assert any("4271" in c for c in await contents())  # the key's whole workspace (documented default)

    both = await client.post("/v1/search", headers=h, json={"query": "zebra", "viewer": "bob", "public_only": True})
    assert both.status_code in (400, 422)
    assert both.headers["content-type"].startswith("application/problem+json")

    asked = await client.post("/v1/ask", headers=h, json={"question": "what is the vault code?", "viewer": "bob"})
    assert asked.status_code == 200, asked.text
    assert "4271" not in str(asked.json()["evidence"] if "evidence" in asked.json() else asked.json())
