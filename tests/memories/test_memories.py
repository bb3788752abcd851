"""Memories through the facade: remember/recall/dedup/isolation/forget, and the memory tool loop (seed 001)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from omoide import Memory
from omoide.errors import InvalidInput, NotFoundError
from omoide.memories.tools import MEMORY_TOOLS, MemoryToolExecutor, anthropic_tools, openai_tools
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.scripted import ChatRequest, ScriptedChatModel

NOTHING_ELSE = {"chunks_rewritten": 0, "chunks_deleted": 0, "sources_deleted": 0, "transcripts": 0}
"""The receipt's long-term knowledge and transcript counts, when the user had none."""


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as m:
        yield m


async def test_remember_and_recall_hybrid(mem: Memory):
    await mem.remember("私の誕生日は3月15日です", workspace="g1", user="u1", tags=["profile"])
    await mem.remember("好きな食べ物はラーメン", workspace="g1", user="u1", category="preference")
    await mem.remember("I live in Osaka", workspace="g1", user="u1")
    hits = await mem.recall("誕生日はいつ？", workspace="g1", user="u1")
    assert hits[0].memory.content == "私の誕生日は3月15日です"
    assert hits[0].ranks.get("lexical") == 1  # the Japanese word inside the sentence matches
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    only = await mem.recall("食べ物", workspace="g1", user="u1", category="preference")
    assert [h.memory.content for h in only] == ["好きな食べ物はラーメン"]
    assert await mem.recall("誕生日", workspace="g1", user="u2") == []


async def test_a_near_duplicate_updates_instead_of_adding(mem: Memory):
    first = await mem.remember("私の誕生日は3月15日です", workspace="g1", user="u1", tags=["a"])
    again = await mem.remember("私の誕生日は3月15日です。", workspace="g1", user="u1", tags=["b"])
    assert again.updated is True and again.memory.id == first.memory.id
    assert again.similarity is not None and again.similarity >= mem.settings.memory_dedup_threshold
    assert again.memory.tags == ("a", "b") and again.memory.content == "私の誕生日は3月15日です。"
    different = await mem.remember("好きな色は青", workspace="g1", user="u1")
    assert different.updated is False
    assert len(await mem.memories.list("g1", "u1")) == 2
    other_user = await mem.remember("私の誕生日は3月15日です", workspace="g1", user="u2")
    assert other_user.updated is False  # never merged across users


async def test_service_validation_names_the_problem(mem: Memory):
    with pytest.raises(InvalidInput, match="content"):
        await mem.remember("  ", workspace="g1", user="u1")
    with pytest.raises(InvalidInput, match="at most"):
        await mem.remember("x" * (mem.settings.memory_max_chars + 1), workspace="g1", user="u1")
    with pytest.raises(InvalidInput, match="category"):
        await mem.remember("x", workspace="g1", user="u1", category="two words")
    with pytest.raises(InvalidInput, match="tags"):
        await mem.remember("x", workspace="g1", user="u1", tags="not-a-list")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="user"):
        await mem.remember("x", workspace="g1", user="")
    with pytest.raises(InvalidInput, match="nothing to update"):
        await mem.memories.update("g1", "u1", 1)
    nested: dict[str, Any] = {"depth": 0}
    for depth in range(1, 5000):  # deeper than json can encode: typed, not a RecursionError
        nested = {"depth": depth, "inner": nested}
    with pytest.raises(InvalidInput, match="metadata"):
        await mem.remember("x", workspace="g1", user="u1", metadata=nested)
    assert await mem.memories.list("g1", "u1") == []


async def test_every_operation_with_another_users_id_is_not_found(mem: Memory):
    mine = (await mem.remember("合言葉はひまわり", workspace="g1", user="alice")).memory
    service = mem.memories
    with pytest.raises(NotFoundError):
        await service.get("g1", "bob", mine.id)
    with pytest.raises(NotFoundError):
        await service.update("g1", "bob", mine.id, content="盗んだ")
    with pytest.raises(NotFoundError):
        await service.delete("g1", "bob", mine.id)
    assert await service.recall("g1", "bob", "合言葉") == []
    assert await service.list("g1", "bob") == []
    assert (await service.get("g1", "alice", mine.id)).content == "合言葉はひまわり"


@pytest.mark.parametrize("memory_id", [2**63, 2**70])
async def test_an_id_beyond_bigint_is_invalid_input_for_every_operation(mem: Memory, memory_id: int):
    """No memory can have an id SQL's BIGINT cannot hold: a typed InvalidInput naming memory_id
    (not the driver's OverflowError), and the user's memories are untouched."""
    mine = (await mem.remember("合言葉はひまわり", workspace="g1", user="alice")).memory
    service = mem.memories
    calls = (
        service.get("g1", "alice", memory_id),
        service.update("g1", "alice", memory_id, content="上書き"),
        service.delete("g1", "alice", memory_id),
        service.history("g1", "alice", memory_id),
    )
    for call in calls:
        with pytest.raises(InvalidInput, match="memory_id"):
            await call
    assert [m.content for m in await service.list("g1", "alice")] == [mine.content]
    with pytest.raises(NotFoundError):  # the largest id SQL holds is a well-formed id that names no memory
        await service.get("g1", "alice", 2**63 - 1)


async def test_update_reembeds_and_forget_user_reports(mem: Memory):
    m = (await mem.remember("I live in Osaka", workspace="g1", user="u1")).memory
    updated = await mem.memories.update("g1", "u1", m.id, content="I moved to Sapporo")
    assert updated.content == "I moved to Sapporo"
    assert (await mem.recall("Sapporo", workspace="g1", user="u1"))[0].ranks.get("vector") == 1
    key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await mem.append(key, Message.user("hello", author_id="u1"))
    report = await mem.forget_user(workspace="g1", user="u1")
    assert report.as_dict() == {"memories": 1, "sessions": 1, "messages": 1, "summaries": 0, **NOTHING_ELSE}
    assert await mem.memories.list("g1", "u1") == []


def test_tool_definitions_in_both_provider_formats():
    names = [t.name for t in MEMORY_TOOLS]
    assert names == ["remember", "recall", "list_memories", "delete_memory"]
    assert [t["name"] for t in anthropic_tools()] == names
    assert all("input_schema" in t and t["input_schema"]["type"] == "object" for t in anthropic_tools())
    assert [t["function"]["name"] for t in openai_tools()] == names
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in openai_tools())
    for tool in MEMORY_TOOLS:  # whose memory is never the model's to say
        assert not {"user", "user_id", "workspace", "workspace_id"} & set(tool.input_schema.get("properties", {}))


def _last_tool_result(request: ChatRequest) -> ToolResultBlock | None:
    last = request.messages[-1]
    blocks = [b for b in last.content if isinstance(b, ToolResultBlock)]
    return blocks[0] if blocks else None


def seed_001_model() -> ScriptedChatModel:
    """Remembers when asked to, recalls when asked about the user, answers from the tool result."""

    def reply(request: ChatRequest) -> Any:
        result = _last_tool_result(request)
        question = request.messages[-1].text
        if result is not None:
            data = json.loads(result.content)
            if isinstance(data, list):
                return (
                    "あなたの誕生日は" + data[0]["content"].removeprefix("誕生日は") + "です。"
                    if data
                    else "覚えていません。"
                )
            return "覚えました。"
        if "覚えておいて" in question:  # a prompt-injected id is passed too: it must be ignored
            return [
                TextBlock("記録します"),
                ToolUseBlock("t1", "remember", {"content": "誕生日は3月15日", "user_id": "mallory"}),
            ]
        if "いつ" in question:
            return [ToolUseBlock("t2", "recall", {"query": "誕生日", "user_id": "mallory", "workspace": "evil"})]
        return "はい。"

    return ScriptedChatModel(reply)


async def test_seed_001_remember_then_recall_days_later_in_a_new_session(settings: Any):
    model = seed_001_model()
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"}), chat_model=model) as mem:
        key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
        first = await mem.chat(key, Message.user("私の誕生日は3月15日です。覚えておいて", author_id="u1"), tools=True)
        assert first.text == "覚えました。"
        assert [m.content for m in await mem.memories.list("g1", "u1")] == ["誕生日は3月15日"]
        assert await mem.memories.list("g1", "mallory") == []  # the injected id was ignored
        stored = await mem.history(key)
        kinds = [[b.type for b in m.content] for m in stored]
        assert kinds == [["text"], ["text", "tool_use"], ["tool_result"], ["text"]]  # recorded in the session

        await mem.reset(key)  # days later: a new conversation
        second = await mem.chat(key, Message.user("私の誕生日はいつ？", author_id="u1"), tools=True)
        assert "3月15日" in second.text
        assert len(await mem.history(key)) == 4
    assert all(call.tools for call in model.calls[:-1])


async def test_a_model_that_never_stops_calling_tools_is_bounded(settings: Any):
    def reply(request: ChatRequest) -> Any:
        if not request.tools:
            return "ここまでの結果でお答えします。"
        return [ToolUseBlock(f"t{len(request.messages)}", "list_memories", {})]

    model = ScriptedChatModel(reply)
    s = settings.model_copy(update={"embedder": "hashing", "memory_tool_rounds": 2})
    async with Memory.open(s, chat_model=model) as mem:
        key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
        out = await mem.chat(key, Message.user("一覧を見せて", author_id="u1"), tools=True)
        assert out.text == "ここまでの結果でお答えします。"
        assert len(model.calls) == 3 and model.calls[-1].tools == ()
        history = await mem.history(key)
        assert history[-1].text == "ここまでの結果でお答えします。"  # no tool call left unanswered


async def test_tool_errors_become_error_results_not_exceptions(mem: Memory):
    other = (await mem.remember("bob's secret", workspace="g1", user="bob")).memory
    run = MemoryToolExecutor(mem.memories, workspace="g1", user="alice")
    denied = await run(ToolUseBlock("t1", "delete_memory", {"memory_id": int(other.id), "user_id": "bob"}))
    assert denied.is_error and json.loads(denied.content)["error"] == "NOT_FOUND"
    assert (await mem.memories.get("g1", "bob", other.id)).content == "bob's secret"
    bad = await run(ToolUseBlock("t2", "remember", {}))
    assert bad.is_error and "content" in json.loads(bad.content)["message"]
    unknown = await run(ToolUseBlock("t3", "format_disk", {}))
    assert unknown.is_error and "unknown tool" in json.loads(unknown.content)["message"]


async def test_sqlite_recall_cache_sees_writes_from_another_process(tmp_path):
    """The vector matrix cached by one store is rebuilt after another store (process) changes the user's vectors."""
    from omoide.settings import Settings

    url = f"sqlite:///{tmp_path / 'shared.db'}"
    one_settings = Settings(database_url=url, embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(one_settings) as one, Memory.open(one_settings) as two:
        m = (await one.remember("I live in Osaka", workspace="g1", user="u1")).memory
        assert (await one.recall("Osaka", workspace="g1", user="u1"))[0].memory.id == m.id  # cache built
        await two.memories.update("g1", "u1", m.id, content="I moved to Sapporo")
        hits = await one.recall("Sapporo", workspace="g1", user="u1")
        assert hits[0].memory.content == "I moved to Sapporo" and hits[0].ranks.get("vector") == 1


async def test_sqlite_upgrade_to_migration_5_keeps_memories_searchable(tmp_path):
    import sqlite3

    from omoide.settings import Settings
    from omoide.stores.sqlite import MIGRATIONS, SqliteStore

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for migration in MIGRATIONS[:4]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')",
            (migration.version, migration.name),
        )
    conn.execute(
        "INSERT INTO memories (workspace_id, user_id, content, lexical, created_at, updated_at) "
        "VALUES ('g1', 'u1', '誕生日は3月15日', '誕生 日 3 月 15 日', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')"
    )
    conn.commit()
    conn.close()
    settings = Settings(database_url=f"sqlite:///{path}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        assert isinstance(mem.store, SqliteStore)
        assert await mem.store.schema_version() == MIGRATIONS[-1].version  # migration 5 and later applied
        hits = await mem.recall("誕生日", workspace="g1", user="u1")
        assert [h.memory.content for h in hits] == ["誕生日は3月15日"]
        assert await mem.recall("誕生日", workspace="g1", user="u2") == []
