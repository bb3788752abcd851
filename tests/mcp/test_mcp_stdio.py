"""``omoide mcp`` over stdio: a real MCP client session (the SDK's stdio_client + ClientSession)
with the server spawned as a subprocess on a SQLite file holding the sample Discord export."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import GUILD, TOOLS, make_sample_db, ok, server_env, stdio_session, text

import omoide


@pytest.fixture(scope="module")
async def sample_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return await make_sample_db(tmp_path_factory.mktemp("mcp-stdio") / "omoide.db")


async def test_remember_recall_list_forget(sample_url: str, tmp_path: Path) -> None:
    async with stdio_session("--workspace", GUILD, "--user", "alice", "--db", sample_url, cwd=tmp_path) as session:
        done = ok(
            await session.call_tool("remember", {"content": "誕生日は3月15日", "category": "profile", "tags": ["p"]})
        )
        assert done["updated"] is False and done["memory"]["category"] == "profile"
        memory_id = done["memory"]["id"]
        again = ok(await session.call_tool("remember", {"content": "誕生日は3月15日"}))
        assert again["updated"] is True and again["memory"]["id"] == memory_id  # near-duplicate: updated

        recalled = await session.call_tool("recall", {"query": "誕生日はいつ？"})
        assert [m["id"] for m in ok(recalled)["memories"]][:1] == [memory_id]
        assert "誕生日は3月15日" in text(recalled) and f"id {memory_id}" in text(recalled)
        page = ok(await session.call_tool("list_memories", {"page_size": 5}))
        assert [m["content"] for m in page["memories"]] == ["誕生日は3月15日"]

        assert ok(await session.call_tool("forget_memory", {"memory_id": memory_id})) == {"deleted": memory_id}
        after = await session.call_tool("recall", {"query": "誕生日"})
        assert ok(after)["memories"] == [] and text(after) == "No memory matches."

    # the library sees what the tools did, for this workspace and user
    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as mem:
        assert await mem.recall("誕生日", workspace=GUILD, user="alice") == []


async def test_search_ask_and_build_context_over_imported_history(sample_url: str, tmp_path: Path) -> None:
    env = server_env(OMOIDE_MCP_USER="carol")  # the user from the environment, the workspace from the option
    async with stdio_session("--workspace", GUILD, "--db", sample_url, env=env, cwd=tmp_path) as session:
        found = await session.call_tool("search", {"query": "v0.4.0 リリース 延期", "k": 3})
        hits = ok(found)["hits"]
        assert 1 <= len(hits) <= 3
        assert any("延期" in h["content"] for h in hits)
        assert all(h["jump_url"].startswith(f"https://discord.com/channels/{GUILD}/") for h in hits)
        assert f"<{hits[0]['jump_url']}>" in text(found)

        answered = await session.call_tool(
            "ask", {"question": "Why was the v0.4.0 release postponed?", "language": "en"}
        )
        answer = ok(answered)
        assert answer["no_data"] is False and answer["citations"]
        assert all(f"[#{c['number']}]" in answer["answer"] for c in answer["citations"])
        assert "Sources:" in text(answered) and answer["citations"][0]["jump_url"] in text(answered)

        in_channel = ok(await session.call_tool("search", {"query": "リリース", "channel": "1290479547187331073"}))
        assert in_channel["hits"] and {h["channel_id"] for h in in_channel["hits"]} == {"1290479547187331073"}

        ok(await session.call_tool("remember", {"content": "I prefer answers in English"}))
        built = ok(
            await session.call_tool("build_context", {"query": "v0.4.0 はいつリリース？", "budget_tokens": 4000})
        )
        assert built["session_key"] == f"mcp:{GUILD}:a=carol"
        kinds = {p["kind"] for p in built["parts"]}
        assert {"memory", "knowledge"} <= kinds, kinds
        assert "I prefer answers in English" in built["system"] and built["tokens"] <= 4000


async def test_arguments_naming_another_user_or_workspace_have_no_effect(sample_url: str, tmp_path: Path) -> None:
    intruding = {"user": "mallory", "user_id": "mallory", "workspace": "other-guild", "workspace_id": "other-guild"}
    async with stdio_session("--workspace", GUILD, "--user", "dave", "--db", sample_url, cwd=tmp_path) as session:
        ok(await session.call_tool("remember", {"content": "合言葉はうさぎ", **intruding}))
        mine = ok(await session.call_tool("recall", {"query": "合言葉", **intruding}))["memories"]
        assert [m["content"] for m in mine] == ["合言葉はうさぎ"]
        hits = ok(await session.call_tool("search", {"query": "リリース", **intruding}))["hits"]
        assert hits and all(GUILD in h["jump_url"] for h in hits)  # still the server's workspace

    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as mem:
        assert [h.memory.content for h in await mem.recall("合言葉", workspace=GUILD, user="dave")] == [
            "合言葉はうさぎ"
        ]
        assert await mem.recall("合言葉", workspace=GUILD, user="mallory") == []
        assert await mem.recall("合言葉", workspace="other-guild", user="dave") == []

    # a server for another workspace (configured through the environment) finds none of the sample's
    # history; without a user, the memory tools refuse
    env = server_env(OMOIDE_MCP_WORKSPACE="other-guild", OMOIDE_DATABASE_URL=sample_url)
    async with stdio_session(env=env, cwd=tmp_path) as session:
        assert ok(await session.call_tool("search", {"query": "リリース", "workspace": GUILD}))["hits"] == []
        refused = await session.call_tool("recall", {"query": "合言葉", "user": "dave"})
        assert refused.is_error and "NO_USER" in text(refused) and "--user" in text(refused)
        # build_context works without a user in the server's own session; a channel's session is a
        # user's (OMOIDE_SESSION_KEY_POLICY=user_channel), so it needs one, and says so
        assert (
            ok(await session.call_tool("build_context", {"query": "リリース"}))["session_key"]
            == "mcp:other-guild:a=default"
        )
        refused = await session.call_tool("build_context", {"channel": "42", "user": "dave"})
        assert refused.is_error and "NO_USER" in text(refused) and "user_channel" in text(refused), text(refused)


BAD_CALLS: list[tuple[str, dict[str, object], str]] = [
    ("remember", {"content": "   "}, "INVALID_INPUT"),
    ("remember", {"content": "x", "category": "not a category!"}, "category"),
    ("remember", {}, "content"),
    ("recall", {"query": "x", "limit": 0}, "limit"),
    ("recall", {"query": "誕生日" * 3334}, "query"),  # over 10,000 characters, as search
    ("forget_memory", {"memory_id": 999_999}, "NOT_FOUND"),
    ("forget_memory", {"memory_id": "one"}, "memory_id"),
    ("forget_memory", {"memory_id": 2**63}, "memory_id"),  # beyond SQL's BIGINT: named, not a crash
    ("search", {"query": "x", "since": "last tuesday"}, "since"),
    ("search", {"query": "x", "mode": "fuzzy"}, "mode"),
    ("search", {"query": "x", "since": "2025-11-02T00:00:00Z", "until": "2025-11-01T00:00:00Z"}, "INVALID_INPUT"),
    ("ask", {"question": ""}, "INVALID_INPUT"),
    ("ask", {"question": "x", "language": "fr"}, "language"),
    ("build_context", {"thread": "123"}, "channel"),
    ("forget_me", {}, "CONFIRMATION_REQUIRED"),
    ("forget_me", {"confirm": False}, "ask the user"),
    ("forget_me", {"confirm": "true"}, "confirm"),
    ("no_such_tool", {}, "no_such_tool"),
]


async def test_lists_typed_tools_and_bad_input_is_a_tool_error_naming_the_problem(
    sample_url: str, tmp_path: Path
) -> None:
    async with stdio_session("--workspace", GUILD, "--user", "frank", "--db", sample_url, cwd=tmp_path) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 30, tool.name
            assert tool.output_schema is not None, tool.name
            properties = tool.input_schema.get("properties", {})
            assert not {"user", "user_id", "workspace", "workspace_id", "guild"} & set(properties), tool.name
        assert tools["remember"].input_schema["required"] == ["content"]
        assert tools["search"].input_schema["properties"]["k"]["anyOf"][0]["maximum"] == 50
        assert tools["forget_memory"].input_schema["properties"]["memory_id"]["maximum"] == 2**63 - 1
        for tool, field in (("recall", "query"), ("search", "query"), ("ask", "question")):
            assert tools[tool].input_schema["properties"][field]["maxLength"] == 10_000, tool
        assert tools["build_context"].input_schema["properties"]["query"]["anyOf"][0]["maxLength"] == 10_000
        assert tools["recall"].annotations is not None and tools["recall"].annotations.read_only_hint
        assert tools["forget_memory"].annotations is not None and tools["forget_memory"].annotations.destructive_hint
        assert tools["forget_me"].annotations is not None and tools["forget_me"].annotations.destructive_hint

        for tool, arguments, expected in BAD_CALLS:
            failed = await session.call_tool(tool, arguments)
            assert failed.is_error, (tool, arguments, text(failed))
            assert expected in text(failed), (tool, arguments, text(failed))
        assert ok(await session.call_tool("list_memories", {}))["memories"] == []  # still serving, nothing stored


async def test_forget_me_erases_only_on_the_boolean_true(sample_url: str, tmp_path: Path) -> None:
    """The schema says ``confirm`` is a boolean: a string or a number is refused, never coerced into
    consent — "true", "yes", "on", 1 erase nothing."""
    async with stdio_session("--workspace", GUILD, "--user", "hana", "--db", sample_url, cwd=tmp_path) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert tools["forget_me"].input_schema["properties"]["confirm"]["type"] == "boolean"
        kept = ok(await session.call_tool("remember", {"content": "好きな花はひまわり"}))["memory"]["id"]
        for confirm in ("true", "True", "yes", "on", "1", 1, 1.0):
            refused = await session.call_tool("forget_me", {"confirm": confirm})
            assert refused.is_error and "confirm" in text(refused), (confirm, text(refused))
        assert [m["id"] for m in ok(await session.call_tool("list_memories", {}))["memories"]] == [kept]
        erased = ok(await session.call_tool("forget_me", {"confirm": True}))
        assert erased["erased"]["memories"] == 1


async def test_forget_me_also_erases_the_session_build_context_keeps_for_the_user(
    sample_url: str, tmp_path: Path
) -> None:
    """build_context without a channel keeps an agent session keyed by the user (mcp:<ws>:a=<user>);
    the user does not own it as a bot's sessions are owned, so forget_user alone left it — and the
    user's id in its key — behind."""
    async with stdio_session("--workspace", GUILD, "--user", "iris", "--db", sample_url, cwd=tmp_path) as session:
        built = ok(await session.call_tool("build_context", {"query": "リリース"}))
        assert built["session_key"] == f"mcp:{GUILD}:a=iris"
        erased = ok(await session.call_tool("forget_me", {"confirm": True}))
        assert erased["erased"]["sessions"] == 1

    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as mem:
        keys = [s.key for s in await mem.sessions.list_sessions(workspace=GUILD, platform="mcp")]
        assert not any("iris" in k for k in keys), keys


async def test_build_context_does_not_show_a_private_channels_window_to_a_non_member(
    sample_url: str, tmp_path: Path
) -> None:
    """Under a channel (or thread) key policy a channel's session is shared; a private one (a
    private channel, a group DM) is for its members. search and ask hide private knowledge
    from non-members; build_context must not hand them its window either."""
    async with omoide.Memory.open(database_url=sample_url, embedder="hashing", session_key_policy="channel") as mem:
        key = mem.session_key(platform="discord", workspace=GUILD, channel="board-room")
        secret = omoide.Message.user("来期の予算は3000万円", author_id="kate")
        await mem.append(key, secret, private=True, members=["kate", "liam"])
    env = server_env(OMOIDE_SESSION_KEY_POLICY="channel")
    for user, member in (("mallory", False), ("liam", True)):
        async with stdio_session("--workspace", GUILD, "--user", user, "--db", sample_url, env=env, cwd=tmp_path) as s:
            built = await s.call_tool("build_context", {"channel": "board-room", "query": "予算"})
            if member:
                assert [m["text"] for m in ok(built)["messages"]] == ["来期の予算は3000万円"]
            else:
                assert built.is_error and "NOT_FOUND" in text(built), text(built)
                assert "3000万円" not in text(built)
            public = ok(await s.call_tool("build_context", {"channel": "lobby", "query": "予算"}))
            assert public["session_key"] == f"discord:{GUILD}:c=lobby"  # a public channel works for anyone
