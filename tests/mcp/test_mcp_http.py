"""``omoide mcp --http``: streamable HTTP behind API keys, with a real MCP client over
loopback (the server runs under uvicorn on 127.0.0.1, on a random port)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import uvicorn
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_support import GUILD, TOOLS, make_sample_db, ok, text

import omoide
from mcp import ClientSession, MCPError
from omoide.mcp import USER_HEADER, Authenticator, http_app

OTHER = "other-guild"
KEYS = {"key-a": GUILD, "key-b": OTHER}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture(scope="module")
async def sample_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return await make_sample_db(tmp_path_factory.mktemp("mcp-http") / "omoide.db")


@pytest.fixture
async def mem(sample_url: str) -> AsyncIterator[omoide.Memory]:
    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as m:
        yield m


async def by_table(token: str) -> str | None:
    return KEYS.get(token)


@asynccontextmanager
async def serving(
    mem: omoide.Memory, authenticate: Authenticator = by_table, *, default_user: str | None = None
) -> AsyncIterator[str]:
    """The MCP HTTP app under uvicorn on 127.0.0.1 (random port); yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = http_app(mem, authenticate, default_user=default_user)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@asynccontextmanager
async def session_at(url: str, key: str, user: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"}
    if user is not None:
        headers[USER_HEADER] = user
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_a_valid_key_serves_its_workspace(mem: omoide.Memory) -> None:
    async with serving(mem) as url, session_at(url, "key-a", user="alice") as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        done = ok(await session.call_tool("remember", {"content": "好きな色は青"}))
        recalled = ok(await session.call_tool("recall", {"query": "好きな色"}))["memories"]
        assert [m["id"] for m in recalled] == [done["memory"]["id"]]
        hits = ok(await session.call_tool("search", {"query": "v0.4.0 延期"}))["hits"]
        assert hits and all(h["jump_url"].startswith(f"https://discord.com/channels/{GUILD}/") for h in hits)
        answer = ok(await session.call_tool("ask", {"question": "v0.4.0 のリリースが延期された理由は？"}))
        assert answer["citations"] and not answer["no_data"]
    assert [h.memory.content for h in await mem.recall("好きな色", workspace=GUILD, user="alice")] == ["好きな色は青"]


async def test_a_missing_or_bad_key_is_401(mem: omoide.Memory) -> None:
    seen: list[str] = []

    async def counting(token: str) -> str | None:
        seen.append(token)
        return await by_table(token)

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with serving(mem, counting) as url, httpx2.AsyncClient(timeout=10) as http:
        for auth in (None, "Bearer nope", "Bearer  key-a", "Basic a2V5LWE6", "key-a", "Bearer key-a-but-longer"):
            sent = headers | ({"Authorization": auth} if auth is not None else {})
            response = await http.post(url, json=INITIALIZE, headers=sent)
            assert response.status_code == 401, (auth, response.status_code)
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert response.json()["error"] == "invalid_token"
        accepted = await http.post(url, json=INITIALIZE, headers=headers | {"Authorization": "Bearer key-a"})
        assert accepted.status_code == 200
    assert "nope" in seen and "key-a" in seen

    async with serving(mem) as url:
        with pytest.raises(ExceptionGroup) as refused:  # the SDK client gives up on the 401
            async with session_at(url, "revoked-or-unknown") as session:
                await session.list_tools()
        assert refused.group_contains(MCPError)


async def test_a_session_opened_with_one_key_is_not_found_with_another(mem: omoide.Memory) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with serving(mem) as url, httpx2.AsyncClient(timeout=10) as http:
        opened = await http.post(url, json=INITIALIZE, headers=headers | {"Authorization": "Bearer key-a"})
        assert opened.status_code == 200
        session_id = opened.headers["mcp-session-id"]
        stolen = headers | {"Authorization": "Bearer key-b", "Mcp-Session-Id": session_id}
        assert (await http.post(url, json=listing, headers=stolen)).status_code == 404


async def test_a_key_cannot_reach_another_workspace(mem: omoide.Memory) -> None:
    async with serving(mem) as url:
        async with session_at(url, "key-a", user="u1") as a:
            secret = ok(await a.call_tool("remember", {"content": "金庫の番号は4721"}))["memory"]["id"]

        async with session_at(url, "key-b", user="u1") as b:  # same user id, other workspace
            scoped = {"workspace": GUILD, "workspace_id": GUILD, "guild": GUILD}
            assert ok(await b.call_tool("recall", {"query": "金庫の番号", **scoped}))["memories"] == []
            assert ok(await b.call_tool("list_memories", scoped))["memories"] == []
            refused = await b.call_tool("forget_memory", {"memory_id": secret, **scoped})
            assert refused.is_error and "NOT_FOUND" in text(refused)
            assert ok(await b.call_tool("search", {"query": "v0.4.0 延期", **scoped}))["hits"] == []
            assert ok(await b.call_tool("ask", {"question": "v0.4.0 はいつ？", **scoped}))["no_data"] is True
            built = ok(await b.call_tool("build_context", {"query": "金庫の番号", "channel": "1290478288896131073"}))
            assert built["session_key"].startswith(f"discord:{OTHER}:")
            assert "4721" not in built["system"]

    # A's memory is untouched
    assert [h.memory.id for h in await mem.recall("金庫の番号", workspace=GUILD, user="u1")] == [secret]


async def test_the_memory_user_comes_from_the_header_or_the_default(mem: omoide.Memory) -> None:
    async with serving(mem) as url:
        async with session_at(url, "key-a") as anonymous:  # no X-Omoide-User, no default user
            refused = await anonymous.call_tool("remember", {"content": "x", "user": "alice"})
            assert refused.is_error and "NO_USER" in text(refused) and USER_HEADER in text(refused)
            assert ok(await anonymous.call_tool("search", {"query": "リリース"}))["hits"]
        async with session_at(url, "key-a", user="bob") as bob:
            ok(await bob.call_tool("remember", {"content": "ボブの秘密はカレー", "user": "carol"}))
        async with session_at(url, "key-a", user="carol") as carol:
            assert ok(await carol.call_tool("recall", {"query": "ボブの秘密"}))["memories"] == []
        async with session_at(url, "key-a", user="x" * 300) as bad:
            refused = await bad.call_tool("recall", {"query": "x"})
            assert refused.is_error and USER_HEADER in text(refused) and "300" in text(refused)
        async with session_at(url, "key-a", user="bob\tx") as bad:  # 5 characters: the tab is the problem
            refused = await bad.call_tool("recall", {"query": "x"})
            assert refused.is_error and USER_HEADER in text(refused) and "control character" in text(refused)

    async with serving(mem, default_user="default-user") as url, session_at(url, "key-a") as session:
        ok(await session.call_tool("remember", {"content": "既定ユーザーのメモ"}))
    assert await mem.recall("既定ユーザーのメモ", workspace=GUILD, user="default-user")
    assert not await mem.recall("ボブの秘密", workspace=GUILD, user="carol")


async def test_forget_me_erases_the_scopes_user_only_after_confirmation(mem: omoide.Memory) -> None:
    def channel_key(workspace: str, user: str) -> omoide.SessionKey:
        return mem.session_key(platform="discord", workspace=workspace, channel="42", user=user)

    for workspace, user in ((GUILD, "erin"), (GUILD, "gina"), (OTHER, "erin")):
        await mem.remember(f"{user}の好きな花はひまわり", workspace=workspace, user=user)
        await mem.append(channel_key(workspace, user), omoide.Message.user("こんにちは", author_id=user))

    async def intact(workspace: str, user: str) -> bool:
        stored = await mem.memories.list(workspace, user)
        return len(stored) == 1 and len(await mem.history(channel_key(workspace, user))) == 1

    async with serving(mem) as url:
        async with session_at(url, "key-a", user="erin") as erin:
            tools = {t.name: t for t in (await erin.list_tools()).tools}
            hints = tools["forget_me"].annotations
            assert hints is not None and hints.destructive_hint and not hints.read_only_hint
            # without confirm=true: a tool error telling the model to ask first; nothing erased
            for arguments in ({}, {"confirm": False}):
                refused = await erin.call_tool("forget_me", arguments)
                assert refused.is_error and "CONFIRMATION_REQUIRED" in text(refused) and "ask the user" in text(refused)
            assert await intact(GUILD, "erin")

            # a model naming another user or workspace changes nothing: the scope's user is erased
            erased = await erin.call_tool("forget_me", {"confirm": True, "user": "gina", "workspace": OTHER})
            done = ok(erased)
            assert (done["workspace"], done["user"]) == (GUILD, "erin")
            assert done["erased"]["memories"] == 1 and done["erased"]["sessions"] == 1
            assert done["erased"]["messages"] == 1
            assert "memories: 1" in text(erased) and "messages: 1" in text(erased)
            again = await erin.call_tool("forget_me", {"confirm": True})  # idempotent
            assert ok(again)["erased"] == dict.fromkeys(done["erased"], 0) and "nothing to erase" in text(again)

        async with session_at(url, "key-a") as anonymous:  # no user: refused, like the memory tools
            refused = await anonymous.call_tool("forget_me", {"confirm": True})
            assert refused.is_error and "NO_USER" in text(refused)

    assert await mem.memories.list(GUILD, "erin") == []
    assert await mem.history(channel_key(GUILD, "erin")) == []
    assert await intact(GUILD, "gina") and await intact(OTHER, "erin")


async def test_a_real_api_key_through_omoide_mcp_http(sample_url: str, tmp_path: Path) -> None:
    """The command itself: ``omoide mcp --http`` checks bearer tokens with Memory.api_keys."""
    from mcp_support import OMOIDE, server_env

    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as m:
        created = await m.api_keys.create(GUILD, name="mcp-test")
        other = await m.api_keys.create(OTHER, name="mcp-test-other")
        revoked = await m.api_keys.create(GUILD, name="mcp-test-revoked")
        await m.api_keys.revoke(int(revoked.record.id))

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    env = {"PATH": "/usr/bin:/bin", **server_env(OMOIDE_DATABASE_URL=sample_url)}
    with (tmp_path / "server.stderr").open("w") as errlog:
        process = await asyncio.create_subprocess_exec(
            OMOIDE, "mcp", "--http", "--port", str(port), "--user", "cli-user", env=env, cwd=tmp_path, stderr=errlog
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            async with httpx2.AsyncClient(timeout=5) as http:
                for _ in range(300):
                    try:
                        await http.post(url, json=INITIALIZE)
                        break
                    except httpx2.TransportError:
                        assert process.returncode is None, (tmp_path / "server.stderr").read_text()
                        await asyncio.sleep(0.05)
                headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
                for token in (revoked.token, "omk_not-a-key", None):
                    auth = {"Authorization": f"Bearer {token}"} if token else {}
                    assert (await http.post(url, json=INITIALIZE, headers=headers | auth)).status_code == 401

            async with session_at(url, created.token) as session:
                ok(await session.call_tool("remember", {"content": "CLI 経由のメモ"}))
                assert ok(await session.call_tool("search", {"query": "v0.4.0 延期"}))["hits"]
            async with session_at(url, other.token, user="cli-user") as session:
                assert ok(await session.call_tool("recall", {"query": "CLI 経由のメモ"}))["memories"] == []
                assert ok(await session.call_tool("search", {"query": "v0.4.0 延期"}))["hits"] == []
        finally:
            process.terminate()
            await asyncio.wait_for(process.wait(), 15)

    async with omoide.Memory.open(database_url=sample_url, embedder="hashing") as m:
        assert [h.memory.content for h in await m.recall("CLI 経由のメモ", workspace=GUILD, user="cli-user")] == [
            "CLI 経由のメモ"
        ]
