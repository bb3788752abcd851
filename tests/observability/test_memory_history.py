"""Memory history (``memory_events``): every change of a memory, by whom, in the change's transaction;
kept after a delete, erased with the user; over the library and HTTP, on both backends."""

from __future__ import annotations

import json

import httpx
import pytest

from omoide import Memory
from omoide.errors import InvalidInput, NotFoundError
from omoide.memories.tools import MemoryToolExecutor
from omoide.models import ToolUseBlock

from .conftest import Keys


async def test_history_records_created_merged_updated_deleted_by_whom(memory: Memory):
    first = await memory.memories.remember("g1", "u1", "私の誕生日は3月15日です", actor="cli")
    again = await memory.memories.remember("g1", "u1", "私の誕生日は3月15日です。", actor="user:u1")
    assert again.updated and again.memory.id == first.memory.id
    await memory.memories.update("g1", "u1", first.memory.id, content="誕生日は3月16日", actor="ui")
    await memory.memories.update("g1", "u1", first.memory.id, tags=["profile"])  # the library's default actor
    await memory.memories.delete("g1", "u1", first.memory.id, actor="api")

    events = await memory.memories.history("g1", "u1", first.memory.id)
    assert [(e.action, e.actor, e.content) for e in events] == [
        ("created", "cli", "私の誕生日は3月15日です"),
        ("merged", "user:u1", "私の誕生日は3月15日です。"),
        ("updated", "ui", "誕生日は3月16日"),
        ("updated", "library", "誕生日は3月16日"),
        ("deleted", "api", None),
    ]
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert all(e.memory_id == first.memory.id and e.user_id == "u1" and e.workspace_id == "g1" for e in events)
    assert events[0].created_at <= events[-1].created_at and events[0].created_at.tzinfo is not None
    assert events[-1].as_dict()["action"] == "deleted"
    newest_two = await memory.memories.history("g1", "u1", first.memory.id, limit=2)
    assert [e.action for e in newest_two] == ["updated", "deleted"]


async def test_history_is_the_owners_only(memory: Memory):
    done = await memory.memories.remember("g1", "u1", "好きな色は青")
    for ws, user in (("g1", "u2"), ("g2", "u1")):
        with pytest.raises(NotFoundError, match="no memory with id"):
            await memory.memories.history(ws, user, done.memory.id)
    with pytest.raises(NotFoundError):
        await memory.memories.history("g1", "u1", done.memory.id + 1000)
    with pytest.raises(InvalidInput, match="limit"):
        await memory.memories.history("g1", "u1", done.memory.id, limit=0)
    with pytest.raises(InvalidInput, match="actor"):
        await memory.memories.remember("g1", "u1", "x", actor=" ")


async def test_a_failed_change_writes_no_event(memory: Memory):
    done = await memory.memories.remember("g1", "u1", "猫を飼っている")
    with pytest.raises(NotFoundError):
        await memory.memories.update("g1", "u2", done.memory.id, content="犬を飼っている")
    with pytest.raises(NotFoundError):
        await memory.memories.delete("g1", "u2", done.memory.id)
    assert [e.action for e in await memory.memories.history("g1", "u1", done.memory.id)] == ["created"]


async def test_model_tool_calls_are_named_in_the_history(memory: Memory):
    run = MemoryToolExecutor(memory.memories, workspace="g1", user="u1")
    made = await run(ToolUseBlock("t1", "remember", {"content": "週末は登山"}))
    memory_id = json.loads(made.content)["id"]
    await run(ToolUseBlock("t2", "delete_memory", {"memory_id": memory_id}))
    events = await memory.memories.history("g1", "u1", memory_id)
    assert [(e.action, e.actor) for e in events] == [("created", "tool:remember"), ("deleted", "tool:delete_memory")]


async def test_forget_user_erases_the_history(memory: Memory):
    mine = await memory.memories.remember("g1", "u1", "秘密の合言葉はサクラ")
    theirs = await memory.memories.remember("g1", "u2", "好きな花はサクラ")
    await memory.memories.update("g1", "u1", mine.memory.id, content="秘密の合言葉はモミジ")
    report = await memory.forget_user(workspace="g1", user="u1")
    assert report.memories == 1
    with pytest.raises(NotFoundError):
        await memory.memories.history("g1", "u1", mine.memory.id)
    assert [e.action for e in await memory.memories.history("g1", "u2", theirs.memory.id)] == ["created"]


async def test_history_over_http_is_scoped_to_the_key(client: httpx.AsyncClient, keys: Keys):
    made = await client.post("/v1/users/7/memories", json={"content": "朝はコーヒー"}, headers=keys.ha)
    assert made.status_code == 201, made.text
    memory_id = made.json()["memory"]["id"]
    assert (
        await client.patch(f"/v1/users/7/memories/{memory_id}", json={"content": "朝は紅茶"}, headers=keys.ha)
    ).status_code == 200
    assert (await client.delete(f"/v1/users/7/memories/{memory_id}", headers=keys.ha)).status_code == 204

    got = await client.get(f"/v1/users/7/memories/{memory_id}/history", headers=keys.ha)
    assert got.status_code == 200, got.text
    items = got.json()["items"]
    assert [(i["action"], i["actor"], i["content"]) for i in items] == [
        ("created", "api", "朝はコーヒー"),
        ("updated", "api", "朝は紅茶"),
        ("deleted", "api", None),
    ]
    other = await client.get(f"/v1/users/7/memories/{memory_id}/history", headers=keys.hb)
    assert other.status_code == 404 and other.json()["code"] == "NOT_FOUND"
    assert (await client.get(f"/v1/users/8/memories/{memory_id}/history", headers=keys.ha)).status_code == 404


async def _drop_memory_events(url: str) -> None:
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.split("sqlite:///", 1)[1])
        try:
            conn.execute("DROP TABLE memory_events")
            conn.commit()
        finally:
            conn.close()
        return
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP TABLE memory_events")
    finally:
        await conn.close()


async def test_the_change_and_its_event_commit_together(memory: Memory):
    """No event, no change: when the history cannot be written, the memory is not written either."""
    from omoide.errors import StoreError

    kept = await memory.memories.remember("g1", "u1", "変わらないはずの記憶")
    await _drop_memory_events(memory.settings.database_url)
    with pytest.raises(StoreError):
        await memory.memories.remember("g1", "u1", "新しい記憶、でも履歴なし")
    with pytest.raises(StoreError):
        await memory.memories.update("g1", "u1", kept.memory.id, content="書き換え")
    with pytest.raises(StoreError):
        await memory.memories.delete("g1", "u1", kept.memory.id)
    assert [m.content for m in await memory.memories.list("g1", "u1")] == ["変わらないはずの記憶"]
