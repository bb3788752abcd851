"""The Discord bot, driven through discord.py itself: no network, no patched internals.

The bot is a real :class:`omoide.bots.discord_bot.OmoideBot` (a ``discord.Client``) whose
HTTP client is discord.py's own, given a public ``connector`` whose resolver sends
``discord.com`` to a local TLS server (:class:`FakeDiscord`) that speaks the few REST
endpoints the bot uses: login, application info, interaction callbacks, the follow-up
webhook, editing the original response, creating messages, typing and channel history.
Interactions and messages enter as the gateway delivers them — API-shaped payloads given
to discord.py's ``ConnectionState`` — so the command tree parses the options, runs the
permission checks and calls the handlers exactly as in production.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import re
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import discord
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from omoide import Memory
from omoide.bots._erasure import kind_name
from omoide.bots._split import DISCORD_LIMIT
from omoide.bots.discord_bot import DiscordBotConfig, OmoideBot
from omoide.errors import ProviderError
from omoide.importers import read_export
from omoide.models import ContentBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.sample_data import discord_export_paths
from omoide.settings import Settings

GUILD = 1290478288896131072  # the sample export's guild
GENERAL = 1290478288896131073  # its #general
OTHER_CHANNEL = 1290478288896139999
APP_ID = 900000000000000002
BOT = {
    "id": "900000000000000001",
    "username": "omoide",
    "discriminator": "0",
    "global_name": "omoide",
    "avatar": None,
    "bot": True,
}
ALICE = {"id": "700000000000000001", "username": "alice", "discriminator": "0", "global_name": "Alice", "avatar": None}
BOB = {"id": "700000000000000002", "username": "bob", "discriminator": "0", "global_name": "Bob", "avatar": None}
MANAGE_GUILD = 1 << 5
ADMINISTRATOR = 1 << 3
EPHEMERAL = 64
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def snowflake(at: dt.datetime, n: int = 0) -> int:
    return discord.utils.time_snowflake(at) + n


# ------------------------------------------------------------------ the fake Discord REST API


@dataclass
class Call:
    method: str
    path: str
    body: dict[str, Any]
    query: dict[str, str]

    @property
    def content(self) -> str | None:
        data = self.body.get("data", self.body) if "/callback" in self.path else self.body
        return data.get("content") if isinstance(data, dict) else None

    @property
    def ephemeral(self) -> bool:
        data = self.body.get("data", self.body) if "/callback" in self.path else self.body
        return bool(isinstance(data, dict) and int(data.get("flags") or 0) & EPHEMERAL)


def api_json(data: Any) -> web.Response:
    """A JSON response as Discord sends it (``Content-Type: application/json``, no charset)."""
    return web.Response(body=json.dumps(data).encode(), content_type="application/json")


@dataclass
class FakeDiscord:
    """Discord's REST API as far as the bot uses it; records every call."""

    calls: list[Call] = field(default_factory=list)
    reject_token: bool = False
    forbidden: set[int] = field(default_factory=set)
    history: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)
    """Messages deleted since the gateway delivered them: a reply to one fails unless
    ``fail_if_not_exists`` is false (then Discord posts it without the reference)."""
    rejected: list[Call] = field(default_factory=list)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(snowflake(T0 + dt.timedelta(days=30))))

    def app(self) -> web.Application:
        app = web.Application()
        r = app.router
        r.add_get("/api/v10/users/@me", self.me)
        r.add_get("/api/v10/oauth2/applications/@me", self.application)
        r.add_post("/api/v10/interactions/{iid}/{token}/callback", self.callback)
        r.add_patch("/api/v10/webhooks/{app}/{token}/messages/@original", self.webhook_message)
        r.add_post("/api/v10/webhooks/{app}/{token}", self.webhook_message)
        r.add_post("/api/v10/channels/{cid}/messages", self.create_message)
        r.add_post("/api/v10/channels/{cid}/typing", self.typing)
        r.add_get("/api/v10/channels/{cid}/messages", self.channel_history)
        r.add_put("/api/v10/applications/{app}/guilds/{guild}/commands", self.put_commands)
        r.add_put("/api/v10/applications/{app}/commands", self.put_commands)
        return app

    async def put_commands(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(Call(request.method, request.path, {"commands": body}, {}))
        ids = itertools.count(1)
        return api_json([{**c, "id": str(next(ids)), "application_id": str(APP_ID), "version": "1"} for c in body])

    async def record(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "multipart/form-data":
            form = await request.post()
            body = json.loads(str(form["payload_json"]))
        else:
            raw = await request.read()
            body = json.loads(raw) if raw else {}
        self.calls.append(Call(request.method, request.path, body, dict(request.query)))
        return body

    def message(
        self, channel_id: int, content: str | None, author: dict[str, Any] = BOT, **extra: Any
    ) -> dict[str, Any]:
        mid = next(self.ids)
        data = {
            "id": str(mid),
            "channel_id": str(channel_id),
            "author": author,
            "content": content or "",
            "timestamp": discord.utils.snowflake_time(mid).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            **extra,
        }
        self.messages[mid] = data
        return data

    async def me(self, _: web.Request) -> web.Response:
        if self.reject_token:
            return web.Response(
                status=401, body=b'{"message": "401: Unauthorized", "code": 0}', content_type="application/json"
            )
        return api_json(BOT)

    async def application(self, _: web.Request) -> web.Response:
        return api_json(
            {
                "id": str(APP_ID),
                "name": "omoide",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": ALICE,
                "verify_key": "0" * 64,
                "flags": 0,
            }
        )

    async def callback(self, request: web.Request) -> web.Response:
        body = await self.record(request)
        data = body.get("data") or {}
        message = self.message(
            0, data.get("content"), flags=data.get("flags", 0), components=data.get("components", [])
        )
        return api_json(
            {
                "interaction": {
                    "id": request.match_info["iid"],
                    "type": 2,
                    "response_message_id": message["id"],
                    "response_message_loading": body["type"] == 5,
                    "response_message_ephemeral": bool(int(data.get("flags") or 0) & EPHEMERAL),
                },
                "resource": {"type": body["type"], "message": message},
            }
        )

    async def webhook_message(self, request: web.Request) -> web.Response:
        body = await self.record(request)
        return api_json(self.message(0, body.get("content"), flags=body.get("flags", 0)))

    async def create_message(self, request: web.Request) -> web.Response:
        body = await self.record(request)
        reference = body.get("message_reference") or {}
        deleted = bool(reference) and int(reference["message_id"]) in self.deleted
        if deleted and reference.get("fail_if_not_exists", True):
            self.rejected.append(self.calls.pop())
            unknown = {"code": "REPLIES_UNKNOWN_MESSAGE", "message": "Unknown message"}
            error = {
                "code": 50035,
                "errors": {"message_reference": {"_errors": [unknown]}},
                "message": "Invalid Form Body",
            }
            return web.Response(status=400, body=json.dumps(error).encode(), content_type="application/json")
        return api_json(self.message(int(request.match_info["cid"]), body.get("content")))

    async def typing(self, request: web.Request) -> web.Response:
        self.calls.append(Call(request.method, request.path, {}, {}))
        return web.Response(status=204)

    async def channel_history(self, request: web.Request) -> web.Response:
        """GET /channels/{id}/messages: ``after`` → the oldest ``limit`` newer messages; newest first, as Discord."""
        self.calls.append(Call(request.method, request.path, {}, dict(request.query)))
        if int(request.match_info["cid"]) in self.forbidden:
            return web.Response(
                status=403, body=b'{"message": "Missing Access", "code": 50001}', content_type="application/json"
            )
        stored = sorted(self.history.get(int(request.match_info["cid"]), []), key=lambda m: int(m["id"]))
        limit = int(request.query.get("limit", 50))
        if "after" in request.query:
            page = [m for m in stored if int(m["id"]) > int(request.query["after"])][:limit]
        elif "before" in request.query:
            page = [m for m in stored if int(m["id"]) < int(request.query["before"])][-limit:]
        else:
            page = stored[-limit:]
        return api_json(list(reversed(page)))

    def sent(self, *, since: int = 0) -> list[Call]:
        """Calls that show text to users (responses, follow-ups, edits, channel messages)."""
        return [c for c in self.calls[since:] if c.method in ("POST", "PATCH") and c.content is not None]


class Loopback(AbstractResolver):
    """Resolves every host (discord.com) to the fake server on 127.0.0.1."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=self.port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for the fake server (the client does not verify it).

    Made with ``cryptography`` when installed, else with the ``openssl`` command.
    """
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        import shutil
        import subprocess

        if shutil.which("openssl") is None:
            pytest.skip("needs the cryptography package or the openssl command for a local TLS server")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key_path), "-out", str(cert_path), "-days", "1", "-subj", "/CN=discord.com"],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "discord.com")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


# ------------------------------------------------------------------ payloads (shapes as Discord sends them)


def user_payload(user: dict[str, Any], permissions: int = 0, roles: tuple[int, ...] = ()) -> dict[str, Any]:
    return {
        "user": user,
        "roles": [str(r) for r in roles],
        "joined_at": "2025-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "nick": None,
        "permissions": str(permissions),
    }


def channel_payload(channel_id: int = GENERAL, name: str = "general") -> dict[str, Any]:
    return {
        "id": str(channel_id),
        "type": 0,
        "guild_id": str(GUILD),
        "name": name,
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


_interaction_ids = itertools.count(snowflake(T0 + dt.timedelta(days=10)))


def command(
    name: str,
    options: list[dict[str, Any]] | None = None,
    *,
    user: dict[str, Any] = ALICE,
    permissions: int = 0,
    channel_id: int = GENERAL,
    channel: dict[str, Any] | None = None,
    guild: bool = True,
    roles: tuple[int, ...] = (),
) -> dict[str, Any]:
    """An INTERACTION_CREATE payload for a chat-input (slash) command."""
    iid = next(_interaction_ids)
    payload: dict[str, Any] = {
        "id": str(iid),
        "application_id": str(APP_ID),
        "type": 2,
        "token": f"token-{iid}",
        "version": 1,
        "locale": "ja",
        "channel_id": str(channel_id),
        "channel": channel or channel_payload(channel_id, "general" if channel_id == GENERAL else "other"),
        "app_permissions": str(discord.Permissions.all().value),
        "entitlements": [],
        "attachment_size_limit": 10 * 1024 * 1024,
        "data": {"id": "1", "name": name, "type": 1, "options": options or []},
    }
    if guild:
        payload.update(guild_id=str(GUILD), guild_locale="ja", member=user_payload(user, permissions, roles), context=0)
        payload["authorizing_integration_owners"] = {"0": str(GUILD)}
    else:
        payload.update(user=user, context=1)
        payload.pop("channel")
    return payload


def opt(name: str, value: Any) -> dict[str, Any]:
    kind = 4 if isinstance(value, int) else 3
    return {"name": name, "type": kind, "value": value}


def sub(name: str, *options: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "type": 1, "options": list(options)}]


def button_click(custom_id: str, message: dict[str, Any], *, user: dict[str, Any] = ALICE) -> dict[str, Any]:
    iid = next(_interaction_ids)
    return {
        "id": str(iid),
        "application_id": str(APP_ID),
        "type": 3,
        "token": f"token-{iid}",
        "version": 1,
        "locale": "ja",
        "guild_id": str(GUILD),
        "channel_id": str(GENERAL),
        "channel": channel_payload(),
        "member": user_payload(user),
        "app_permissions": "0",
        "entitlements": [],
        "attachment_size_limit": 10 * 1024 * 1024,
        "message": message,
        "data": {"custom_id": custom_id, "component_type": 2},
        "context": 0,
    }


READ = (1 << 10) | (1 << 11) | (1 << 16)  # view channel, send messages, read message history


def role(role_id: int, name: str, permissions: int) -> dict[str, Any]:
    return {
        "id": str(role_id),
        "name": name,
        "permissions": str(permissions),
        "position": 1,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def guild_create(
    channels: list[dict[str, Any]] | None = None, roles: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "id": str(GUILD),
        "name": "omoide lab",
        "icon": None,
        "owner_id": "700000000000000099",  # the owner may read everything: neither Alice nor Bob
        "roles": [
            *(roles or []),
            {
                "id": str(GUILD),
                "name": "@everyone",
                "permissions": str(READ),
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            },
        ],
        "emojis": [],
        "stickers": [],
        "features": [],
        "channels": channels or [channel_payload(), channel_payload(OTHER_CHANNEL, "other")],
        "threads": [],
        "members": [],
        "member_count": 3,
        "large": False,
        "unavailable": False,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "premium_tier": 0,
        "preferred_locale": "ja",
        "nsfw_level": 0,
    }


def chat_message(
    content: str,
    *,
    author: dict[str, Any] = ALICE,
    mentions: list[dict[str, Any]] | None = None,
    at: dt.datetime,
    n: int = 0,
    channel_id: int = GENERAL,
) -> dict[str, Any]:
    mid = snowflake(at, n)
    return {
        "id": str(mid),
        "channel_id": str(channel_id),
        "guild_id": str(GUILD),
        "author": author,
        "member": {k: v for k, v in user_payload(author).items() if k not in ("user", "permissions")},
        "content": content,
        "timestamp": at.isoformat(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
    }


# ------------------------------------------------------------------ the harness


@dataclass
class Harness:
    bot: OmoideBot
    fake: FakeDiscord
    mem: Memory
    model: ScriptedChatModel
    port: int

    def connector(self) -> aiohttp.TCPConnector:
        return aiohttp.TCPConnector(resolver=Loopback(self.port), ssl=False)

    async def deliver(self, event: str, payload: dict[str, Any]) -> None:
        """Hand a gateway event to discord.py's ConnectionState, then wait for the handlers it started."""
        parser = getattr(self.bot._connection, f"parse_{event}")
        parser(payload)
        await self.settle()

    async def settle(self) -> None:
        prefixes = ("CommandTree-invoker", "discord-ui-view", "discord.py: on_")
        for _ in range(50):
            await asyncio.sleep(0)
            pending = [t for t in asyncio.all_tasks() if t.get_name().startswith(prefixes) and not t.done()]
            if not pending:
                return
            await asyncio.wait(pending, timeout=60)

    async def run(self, payload: dict[str, Any]) -> list[Call]:
        """Deliver an interaction; return the calls that showed text to the user."""
        before = len(self.fake.calls)
        await self.deliver("interaction_create", payload)
        return self.fake.sent(since=before)


def answer_from(request: ChatRequest) -> str | list[ContentBlock] | ProviderError:
    """The scripted model: echo the question; a question with "long" gets a 4,500-character answer."""
    last = request.messages[-1]
    result = next((b for b in last.content if isinstance(b, ToolResultBlock)), None)
    if result is not None:  # seed 001: the tool ran; answer from its result
        data = json.loads(result.content)
        if isinstance(data, list):
            return f"{data[0]['content']}ですね。" if data else "覚えていません。"
        return "覚えました。"
    question = last.text
    if "覚えておいて" in question:  # an injected user id must be ignored: the memory is the asker's
        return [ToolUseBlock("t1", "remember", {"content": "誕生日は3月15日", "user_id": BOB["id"]})]
    if "誕生日はいつ" in question:
        return [ToolUseBlock("t2", "recall", {"query": "誕生日", "user_id": BOB["id"]})]
    if "fail" in question:
        return ProviderError("upstream is down", provider="scripted", status_code=503)
    if "long" in question:
        return "\n".join(f"{i:03d} " + "説明の行です。" * 12 for i in range(50)) + "\n\n```python\nprint('done')\n```"
    if (
        "根拠" in (request.system or "")
        or "[#1]" in (request.system or "")
        or "evidence" in (request.system or "").lower()
    ):
        return "v0.4.0 のリリースは延期されました [#1][#2][#3][#4][#5]。"  # cites every passage
    return f"echo: {question}"


@pytest.fixture
async def harness(tmp_path: Path, tls_files: tuple[Path, Path]) -> AsyncIterator[Harness]:
    fake = FakeDiscord()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls_files)
    runner = web.AppRunner(fake.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'bot.db'}", transcripts_dir=tmp_path / "transcripts", embedder="hashing"
    )
    model = ScriptedChatModel(answer_from)
    async with Memory.open(settings, chat_model=model) as mem:
        connector = aiohttp.TCPConnector(resolver=Loopback(port), ssl=False)
        bot = OmoideBot(mem, config=DiscordBotConfig(sync_commands=False, sync_batch=40), connector=connector)
        await bot.login("test-token")
        try:
            yield Harness(bot, fake, mem, model, port)
        finally:
            await bot.close()
    await runner.cleanup()


# ------------------------------------------------------------------ /ask and mentions


async def test_ask_converses_with_session_memory_and_splits_long_answers(harness: Harness):
    sent = await harness.run(command("ask", [opt("question", "こんにちは、覚えてる？")]))
    callbacks = [c for c in harness.fake.calls if c.path.endswith("/callback")]
    assert callbacks[-1].body["type"] == 5  # deferred ("omoide is thinking…")
    assert [c.content for c in sent] == ["echo: こんにちは、覚えてる？"]
    assert sent[0].method == "PATCH" and sent[0].path.endswith("/messages/@original")

    key = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=ALICE["id"])
    window = await harness.mem.history(key)
    assert [m.role for m in window] == ["user", "assistant"]
    assert window[0].author_id == ALICE["id"] and window[0].author_name == "Alice"
    # the model got the long-term context and the memory tools
    request = harness.model.calls[-1]
    assert {t.name for t in request.tools} >= {"remember", "recall"}

    sent = await harness.run(command("ask", [opt("question", "long answer please")]))
    texts = [c.content or "" for c in sent]
    assert len(texts) == 3 and all(len(t) <= DISCORD_LIMIT for t in texts)
    assert sent[0].method == "PATCH" and all(c.path.startswith("/api/v10/webhooks/") for c in sent[1:])
    assert "".join(texts).count("```") == 2 and texts[-1].endswith("```")  # the code block is whole
    assert all(t.splitlines()[0][:3].isdigit() or t.startswith("```") for t in texts)  # cut between lines
    assert len(await harness.mem.history(key)) == 4  # same session: the conversation continues

    # replies never ping: the model's or the user's "@everyone" stays text
    await harness.run(command("ask", [opt("question", "@everyone 集合！")]))
    assert all(c.body.get("allowed_mentions") == {"parse": []} for c in harness.fake.sent())

    # another user in the same channel has another session
    await harness.run(command("ask", [opt("question", "hi")], user=BOB))
    bob = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=BOB["id"])
    assert [m.text for m in await harness.mem.history(bob)] == ["hi", "echo: hi"]


async def test_ask_remembers_and_recalls_with_the_memory_tools_for_the_asker(harness: Harness):
    sent = await harness.run(command("ask", [opt("question", "私の誕生日は3月15日です。覚えておいて")]))
    assert [c.content for c in sent] == ["覚えました。"]
    assert [m.content for m in await harness.mem.memories.list(GUILD, ALICE["id"])] == ["誕生日は3月15日"]
    assert await harness.mem.memories.list(GUILD, BOB["id"]) == []  # the id in the tool call was ignored

    sent = await harness.run(command("ask", [opt("question", "私の誕生日はいつ？")]))
    assert [c.content for c in sent] == ["誕生日は3月15日ですね。"]
    sent = await harness.run(command("ask", [opt("question", "私の誕生日はいつ？")], user=BOB))
    assert [c.content for c in sent] == ["覚えていません。"]  # Bob's recall finds nothing of Alice's


async def test_mentions_converse_like_ask(harness: Harness):
    await harness.deliver("guild_create", guild_create())
    bot_mention = f"<@{BOT['id']}>"
    msg = chat_message(f"{bot_mention} 明日の予定は？", mentions=[BOT], at=T0)
    before = len(harness.fake.calls)
    await harness.deliver("message_create", msg)
    sent = harness.fake.sent(since=before)
    assert [c.content for c in sent] == ["echo: 明日の予定は？"]
    assert sent[0].path == f"/api/v10/channels/{GENERAL}/messages"
    assert str(sent[0].body["message_reference"]["message_id"]) == msg["id"]  # a reply to the mention
    key = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=ALICE["id"])
    stored = await harness.mem.history(key)
    assert stored[0].message_id == msg["id"] and stored[0].text == "明日の予定は？"

    # the same gateway event delivered twice stores the user's message once and is answered once
    before = len(harness.fake.calls)
    await harness.deliver("message_create", msg)
    assert [m.role for m in await harness.mem.history(key)] == ["user", "assistant"]
    assert harness.fake.sent(since=before) == [] and len(harness.model.calls) == 1

    # messages without a mention, and bots' messages, are ignored
    before = len(harness.fake.calls)
    await harness.deliver("message_create", chat_message("no mention here", at=T0, n=5))
    await harness.deliver(
        "message_create", chat_message(f"{bot_mention} hi", author={**BOB, "bot": True}, mentions=[BOT], at=T0, n=6)
    )
    assert harness.fake.sent(since=before) == []

    # a long answer to a mention is split into channel messages
    await harness.deliver("message_create", chat_message(f"{bot_mention} long one", mentions=[BOT], at=T0, n=7))
    texts = [c.content or "" for c in harness.fake.sent(since=before)]
    assert len(texts) == 3 and all(len(t) <= DISCORD_LIMIT for t in texts)
    assert all(c.body.get("allowed_mentions", {}).get("parse") == [] for c in harness.fake.sent(since=before))


# ------------------------------------------------------------------ /chat


async def test_chat_answers_from_the_servers_history_with_citations(harness: Harness):
    sent = await harness.run(command("chat", [opt("question", "v0.4.0 のリリースが延期された理由は？")]))
    assert len(sent) == 1 and "見つかりませんでした" in (sent[0].content or "")  # nothing to search
    assert "`/sync`" in (sent[0].content or "")  # the hint

    await harness.mem.knowledge.import_export(discord_export_paths())
    await harness.mem.knowledge.embed()
    sent = await harness.run(command("chat", [opt("question", "ドキュメントの担当は誰？ デモ用のボットはどこ？")]))
    text = "\n".join(c.content or "" for c in sent)
    assert "延期" in text and "[#1]" in text
    assert "根拠" in text
    assert f"<https://discord.com/channels/{GUILD}/{GENERAL}/" in text  # jump links, embeds suppressed
    # the guild is not in the gateway cache here: only the channel asked in is used
    assert all(f"/{GUILD}/{GENERAL}/" in line for line in text.splitlines() if "https://" in line)


DEV, DEV_THREAD, EVENTS, RANDOM, DEV_ROLE = (
    1290479547187331073,
    1429801575383171072,
    1291338960076931072,
    1290479798845571073,
    1290478288896132000,
)


def sample_guild_with_a_private_channel() -> dict[str, Any]:
    """The sample server's channels; #dev is visible only to the dev role."""
    dev = channel_payload(DEV, "dev")
    dev["permission_overwrites"] = [
        {"id": str(GUILD), "type": 0, "allow": "0", "deny": str(1 << 10)},
        {"id": str(DEV_ROLE), "type": 0, "allow": str(1 << 10), "deny": "0"},
    ]
    channels = [channel_payload(), channel_payload(RANDOM, "random"), channel_payload(EVENTS, "イベント"), dev]
    return guild_create(channels, roles=[role(DEV_ROLE, "dev", 0)])


async def test_answers_draw_only_on_channels_the_member_can_read(harness: Harness):
    await harness.deliver("guild_create", sample_guild_with_a_private_channel())
    await harness.mem.knowledge.import_export(discord_export_paths())
    await harness.mem.knowledge.embed()
    question = "Why was the v0.4.0 release postponed? What changed in the release checklist?"
    private = (f"/{DEV}/", f"/{DEV_THREAD}/")

    def links(calls: list[Call]) -> list[str]:
        return [w for c in calls for w in (c.content or "").split() if w.startswith("<https://")]

    alice = links(await harness.run(command("chat", [opt("question", question)])))
    assert alice and not any(p in url for url in alice for p in private)  # #dev is not Alice's to read
    bob = links(await harness.run(command("chat", [opt("question", question)], user=BOB, roles=(DEV_ROLE,))))
    assert any(p in url for url in bob for p in private)

    # conversations too: the long-term context given to the model
    await harness.run(command("ask", [opt("question", question)]))
    assert not any(p in (harness.model.calls[-1].system or "") for p in private)
    await harness.run(command("ask", [opt("question", question)], user=BOB, roles=(DEV_ROLE,)))
    assert any(p in (harness.model.calls[-1].system or "") for p in private)


# ------------------------------------------------------------------ /memory


async def run_private(harness: Harness, payload: dict[str, Any]) -> list[Call]:
    """Run a command whose response only its user sees; return what it showed."""
    before = len(harness.fake.calls)
    sent = await harness.run(payload)
    [callback] = [c for c in harness.fake.calls[before:] if c.path.endswith("/callback")]
    assert callback.ephemeral  # the response, deferred or not, is the invoking user's only
    return sent


async def test_memory_commands_are_ephemeral_and_scoped_to_the_invoking_user(harness: Harness):
    before = len(harness.fake.calls)
    sent = await run_private(
        harness, command("memory", sub("add", opt("content", "誕生日は3月15日"), opt("tags", "profile, 誕生日")))
    )
    # remembering embeds (a remote embedder may take more than Discord's 3 s): deferred first
    assert harness.fake.calls[before].body["type"] == 5
    assert len(sent) == 1 and sent[0].method == "PATCH" and "Remembered as `#" in (sent[0].content or "")
    alice_id = int((sent[0].content or "").split("`#")[1].split("`")[0])
    await harness.run(command("memory", sub("add", opt("content", "好きな食べ物はラーメン")), user=BOB))

    sent = await harness.run(command("memory", sub("list")))
    assert (
        sent[0].ephemeral and "誕生日は3月15日" in (sent[0].content or "") and "ラーメン" not in (sent[0].content or "")
    )
    assert "profile" in (sent[0].content or "")

    before = len(harness.fake.calls)
    sent = await run_private(harness, command("memory", sub("search", opt("query", "誕生日はいつ？"))))
    assert harness.fake.calls[before].body["type"] == 5  # recalling embeds the query: deferred too
    assert "3月15日" in (sent[0].content or "")
    assert not re.search(r"· 0\.\d{3}", sent[0].content or "")  # no raw fusion score such as 0.033
    sent = await harness.run(command("memory", sub("search", opt("query", "ラーメン"))))
    assert "ラーメン" not in (sent[0].content or "")  # Bob's memory is not Alice's

    # Bob deleting Alice's memory by its id: not found, and it stays
    sent = await harness.run(command("memory", sub("delete", opt("memory_id", alice_id)), user=BOB))
    assert sent[0].ephemeral and f"no memory `#{alice_id}`" in (sent[0].content or "")
    assert [m.id for m in await harness.mem.memories.list(GUILD, ALICE["id"])] == [alice_id]

    sent = await harness.run(command("memory", sub("delete", opt("memory_id", alice_id))))
    assert f"Deleted memory `#{alice_id}`" in (sent[0].content or "")
    assert await harness.mem.memories.list(GUILD, ALICE["id"]) == []
    sent = await harness.run(command("memory", sub("list")))
    assert "no memories" in (sent[0].content or "")


async def test_a_long_memory_list_is_split(harness: Harness):
    for i in range(20):
        await harness.mem.remember(f"メモ {i}: " + "あ" * 150, workspace=GUILD, user=ALICE["id"], category=f"c{i}")
    sent = await harness.run(command("memory", sub("list")))
    assert len(sent) == 2 and all(c.ephemeral and len(c.content or "") <= DISCORD_LIMIT for c in sent)
    assert sent[0].path.endswith("/callback") and sent[1].path.startswith("/api/v10/webhooks/")


# ------------------------------------------------------------------ /sync


def seed_history(fake: FakeDiscord, n: int, *, start: int = 0, channel_id: int = GENERAL) -> list[dict[str, Any]]:
    authors = [ALICE, BOB]
    messages = [
        chat_message(
            f"メッセージ {i}: 来週のもくもく会は渋谷で {i} 時から。",
            author=authors[i % 2],
            at=T0 + dt.timedelta(minutes=i),
            channel_id=channel_id,
        )
        for i in range(start, start + n)
    ]
    fake.history.setdefault(channel_id, []).extend(messages)
    return messages


async def test_sync_is_admin_only(harness: Harness):
    seed_history(harness.fake, 5)
    sent = await harness.run(command("sync"))  # no permissions
    assert len(sent) == 1 and sent[0].ephemeral and "Manage Server" in (sent[0].content or "")
    assert not any(c.path.endswith("/messages") and c.method == "GET" for c in harness.fake.calls)
    assert await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL) is None

    sent = await harness.run(command("sync", permissions=ADMINISTRATOR))
    assert "5 new messages" in (sent[-1].content or "")


async def test_sync_ingests_new_history_with_progress_and_a_cursor(harness: Harness):
    messages = seed_history(harness.fake, 100)
    harness.fake.history[GENERAL].append(harness.fake.message(GENERAL, "bot's own answer"))  # skipped
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    texts = [c.content or "" for c in sent]
    assert texts[0].startswith("Reading #general from the beginning")
    assert any("40 messages read" in t for t in texts) and any("80 messages read" in t for t in texts)  # progress
    assert "100 new messages stored" in texts[-1] and "101 messages read" in texts[-1]
    assert all(c.method == "PATCH" for c in sent)  # every update edits the deferred response
    cursor = await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL)
    assert cursor is not None and cursor.message_id == messages[-1]["id"]
    hits = await harness.mem.search("もくもく会 渋谷", workspace=GUILD, mode="lexical")
    assert (
        hits.hits
        and hits.hits[0].jump_url is not None
        and hits.hits[0].jump_url.startswith(f"https://discord.com/channels/{GUILD}/{GENERAL}/")
    )
    sources = await harness.mem.knowledge.sources(workspace=GUILD)
    assert sources[0].metadata["files"] == ["discord:sync"] and sources[0].metadata["participants"] == [
        ALICE["id"],
        BOB["id"],
    ]

    # the next sync asks Discord only for what came after the cursor, and stores only that
    harness.fake.calls.clear()
    new = seed_history(harness.fake, 7, start=100)
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    history_calls = [c for c in harness.fake.calls if c.method == "GET"]
    assert history_calls[0].query["after"] == messages[-1]["id"]
    assert "7 new messages" in (sent[-1].content or "")
    cursor = await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL)
    assert cursor is not None and cursor.message_id == new[-1]["id"]

    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    assert (sent[-1].content or "").startswith("Nothing new in #general since the last sync")
    assert (
        sum(s.chunk_count for s in await harness.mem.knowledge.sources(workspace=GUILD)) >= 4
    )  # 107 messages, ≤ 30 a window


async def test_sync_continues_after_an_imported_export(harness: Harness):
    path = next(p for p in discord_export_paths() if "general" in p.name)
    await harness.mem.knowledge.import_export(path)
    exported = [m for m in read_export([path]).messages if m.thread_id is None]
    newest = max(exported, key=lambda m: int(m.message_id))
    after = newest.created_at + dt.timedelta(minutes=5)
    harness.fake.history[GENERAL] = [
        chat_message("エクスポートの後の新しい話題です。", at=after, n=1),
        chat_message("続きの話です。", author=BOB, at=after + dt.timedelta(minutes=1), n=2),
    ]
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    assert next(c for c in harness.fake.calls if c.method == "GET").query["after"] == newest.message_id
    assert "2 new messages" in (sent[-1].content or "")


# ------------------------------------------------------------------ /forget-me


async def test_forget_me_asks_for_confirmation_and_erases_only_the_invoker(harness: Harness):
    await harness.mem.remember("誕生日は3月15日", workspace=GUILD, user=ALICE["id"])
    await harness.mem.remember("好きな食べ物はラーメン", workspace=GUILD, user=BOB["id"])
    await harness.run(command("ask", [opt("question", "こんにちは")]))
    await harness.run(command("ask", [opt("question", "やあ")], user=BOB))
    alices = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=ALICE["id"])
    bobs = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=BOB["id"])
    assert len(await harness.mem.history(alices)) == 2 and len(await harness.mem.history(bobs)) == 2

    before = len(harness.fake.calls)
    sent = await harness.run(command("forget-me"))
    prompt = harness.fake.calls[before]
    assert sent[0].ephemeral and "cannot be undone" in (sent[0].content or "")
    for what in ("memories", "sessions", "every message", "long-term knowledge", "summaries", "transcripts"):
        assert what in (sent[0].content or ""), what
    buttons = [c["custom_id"] for row in prompt.body["data"]["components"] for c in row["components"]]
    assert buttons == ["omoide:forget:yes", "omoide:forget:no"]
    assert len(await harness.mem.memories.list(GUILD, ALICE["id"])) == 1  # nothing erased yet
    shown = harness.fake.messages[max(harness.fake.messages)]

    # Bob cannot press Alice's button
    before = len(harness.fake.calls)
    await harness.deliver("interaction_create", button_click("omoide:forget:yes", shown, user=BOB))
    assert "not yours" in (harness.fake.sent(since=before)[0].content or "")
    assert len(await harness.mem.memories.list(GUILD, ALICE["id"])) == 1

    before = len(harness.fake.calls)
    await harness.deliver("interaction_create", button_click("omoide:forget:yes", shown))
    # acknowledged at once (Discord wants a response within 3 s; erasing re-embeds and
    # rewrites transcripts, which can take longer), then the confirmation becomes the receipt
    ack = harness.fake.calls[before]
    assert ack.path.endswith("/callback") and ack.body["type"] == 6  # deferred update of the message
    done = harness.fake.sent(since=before)
    assert done[0].method == "PATCH" and done[0].path.endswith("/messages/@original")
    assert done[0].body.get("components") == []  # the buttons are gone
    receipt = (done[0].content or "").splitlines()
    assert receipt[0] == "Erased everything I kept about you in this server:"
    counts = dict(line.removeprefix("• ").rsplit(": ", 1) for line in receipt[1:])
    assert (counts["memories"], counts["sessions"], counts["messages"]) == ("1", "1", "2")
    report_kinds = (await harness.mem.forget_user(workspace=GUILD, user=ALICE["id"])).as_dict()
    assert set(counts) == {kind_name(kind, "en") for kind in report_kinds}  # every kind, none left out
    assert await harness.mem.memories.list(GUILD, ALICE["id"]) == []
    assert await harness.mem.history(alices) == []
    assert len(await harness.mem.memories.list(GUILD, BOB["id"])) == 1
    assert len(await harness.mem.history(bobs)) == 2


async def test_forget_me_cancel_erases_nothing(harness: Harness):
    await harness.mem.remember("誕生日は3月15日", workspace=GUILD, user=ALICE["id"])
    await harness.run(command("forget-me"))
    shown = harness.fake.messages[max(harness.fake.messages)]
    before = len(harness.fake.calls)
    await harness.deliver("interaction_create", button_click("omoide:forget:no", shown))
    assert "nothing was erased" in (harness.fake.sent(since=before)[0].content or "")
    assert len(await harness.mem.memories.list(GUILD, ALICE["id"])) == 1


# ------------------------------------------------------------------ errors


async def test_errors_are_shown_as_replies(harness: Harness):
    sent = await run_private(
        harness, command("memory", sub("add", opt("content", "メモ"), opt("category", "not valid!")))
    )
    assert len(sent) == 1 and "category must be" in (sent[0].content or "")  # replaces the deferred "thinking…"
    assert await harness.mem.memories.list(GUILD, ALICE["id"]) == []

    # the model fails after the deferral: the "thinking…" message becomes the error
    sent = await harness.run(command("ask", [opt("question", "please fail")]))
    assert len(sent) == 1 and sent[0].method == "PATCH" and "⚠️" in (sent[0].content or "")
    assert "upstream is down" in (sent[0].content or "")

    # commands need a server
    sent = await harness.run(command("memory", sub("list"), guild=False))
    assert len(sent) == 1 and sent[0].ephemeral and "server" in (sent[0].content or "")


THREAD = 1290478288896131999


def thread_payload() -> dict[str, Any]:
    return {
        "id": str(THREAD),
        "type": 11,
        "guild_id": str(GUILD),
        "parent_id": str(GENERAL),
        "owner_id": ALICE["id"],
        "name": "v0.4.0 の相談",
        "message_count": 3,
        "member_count": 2,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": T0.isoformat(),
            "locked": False,
        },
    }


async def test_sync_in_a_thread_keeps_its_own_cursor(harness: Harness):
    await harness.deliver("guild_create", guild_create())  # the gateway's guild cache knows the parent's name
    seed_history(harness.fake, 3)  # in the parent channel
    in_thread = seed_history(harness.fake, 4, start=10, channel_id=THREAD)
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD, channel_id=THREAD, channel=thread_payload()))
    assert "Synced #v0.4.0 の相談: 4 new messages" in (sent[-1].content or "")
    assert [c.path for c in harness.fake.calls if c.method == "GET"] == [f"/api/v10/channels/{THREAD}/messages"]
    cursor = await harness.mem.knowledge.ingest_cursor(
        platform="discord", workspace=GUILD, channel=GENERAL, thread=THREAD
    )
    assert cursor is not None and cursor.message_id == in_thread[-1]["id"]
    assert await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL) is None
    source = (await harness.mem.knowledge.sources(workspace=GUILD))[0]
    assert source.title == "#general › v0.4.0 の相談"


async def test_commands_are_registered_with_their_permissions(harness: Harness):
    config = DiscordBotConfig(command_guild=GUILD)
    bot = OmoideBot(harness.mem, config=config, connector=harness.connector())
    try:
        await bot.login("test-token")
    finally:
        await bot.close()
    put = next(c for c in harness.fake.calls if c.method == "PUT")
    assert put.path == f"/api/v10/applications/{APP_ID}/guilds/{GUILD}/commands"  # instant, one server
    commands = {c["name"]: c for c in put.body["commands"]}
    assert set(commands) == {"ask", "chat", "memory", "sync", "forget-me"}
    assert {o["name"] for o in commands["memory"]["options"]} == {"add", "search", "list", "delete"}
    assert int(commands["sync"]["default_member_permissions"]) == MANAGE_GUILD  # hidden from members by default
    assert all(c.get("default_member_permissions") is None for n, c in commands.items() if n != "sync")
    assert all(c["contexts"] == [0] for c in commands.values())  # servers only
    assert commands["ask"]["options"][0] == {
        "name": "question",
        "description": "What you want to say or ask",
        "type": 3,
        "required": True,
        "min_length": 1,
        "max_length": 4000,
    }


async def test_a_rejected_token_is_a_config_error_and_the_workers_stop(harness: Harness):
    from omoide.bots.discord_bot import run_discord_bot
    from omoide.errors import ConfigError

    harness.fake.reject_token = True
    with pytest.raises(ConfigError, match="rejected DISCORD_TOKEN"):
        await run_discord_bot(harness.mem, "bad-token", config=DiscordBotConfig(), connector=harness.connector())
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "omoide-workers" and not t.done()]
    with pytest.raises(ConfigError, match="set DISCORD_TOKEN"):
        await run_discord_bot(harness.mem, " ")


def test_cli_without_a_token_says_what_to_set(monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from omoide.cli import app

    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["discord"])
    assert result.exit_code == 1
    assert "set DISCORD_TOKEN" in result.output


async def test_sync_stops_at_its_time_limit_and_the_next_one_continues(harness: Harness):
    messages = seed_history(harness.fake, 100)
    harness.bot.config = DiscordBotConfig(sync_commands=False, sync_batch=40, sync_time_limit=0)
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    assert "Synced part of #general: 40 new messages" in (sent[-1].content or "")
    assert "Run `/sync` again" in (sent[-1].content or "")
    cursor = await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL)
    assert cursor is not None and cursor.message_id == messages[39]["id"]  # whole batches only

    harness.bot.config = DiscordBotConfig(sync_commands=False, sync_batch=40)
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    assert "Synced #general: 60 new messages" in (sent[-1].content or "")


async def test_sync_without_read_history_permission_says_so(harness: Harness):
    harness.fake.forbidden.add(GENERAL)
    sent = await harness.run(command("sync", permissions=MANAGE_GUILD))
    assert "Read Message History" in (sent[-1].content or "")
    assert await harness.mem.knowledge.ingest_cursor(platform="discord", workspace=GUILD, channel=GENERAL) is None


async def test_forget_me_times_out_without_erasing(harness: Harness):
    harness.bot.config = DiscordBotConfig(sync_commands=False, confirm_timeout=0.05)
    await harness.mem.remember("誕生日は3月15日", workspace=GUILD, user=ALICE["id"])
    await harness.run(command("forget-me"))
    before = len(harness.fake.calls)
    for _ in range(500):  # up to 10 s on a busy machine
        await asyncio.sleep(0.02)
        if harness.fake.sent(since=before):
            break
    timed_out = harness.fake.sent(since=before)
    assert [c.content for c in timed_out] == ["Timed out: nothing was erased."]
    assert timed_out[0].method == "PATCH" and timed_out[0].body.get("components") == []  # buttons removed
    assert len(await harness.mem.memories.list(GUILD, ALICE["id"])) == 1


# ------------------------------------------------------------------ mention event shapes


async def test_a_system_message_that_mentions_the_bot_is_not_answered(harness: Harness):
    """Adding the bot to a thread (or mentioning it in a private thread it is not in) makes
    Discord post a RECIPIENT_ADD system message whose ``mentions`` hold the bot: not a question."""
    await harness.deliver("guild_create", guild_create())
    await harness.deliver("thread_create", {**thread_payload(), "newly_created": True})
    added = chat_message("", mentions=[BOT], at=T0, channel_id=THREAD)
    added["type"] = 1  # RECIPIENT_ADD: "Alice added omoide to the thread"
    before = len(harness.fake.calls)
    await harness.deliver("message_create", added)
    assert harness.fake.calls[before:] == [] and harness.fake.rejected == []
    assert await harness.mem.sessions.list_sessions(workspace=GUILD) == []


async def test_a_mention_deleted_before_the_answer_still_gets_it(harness: Harness):
    """The user deletes their message while the model answers: the answer is still posted
    (Discord drops the reply reference) instead of failing with "Unknown message"."""
    await harness.deliver("guild_create", guild_create())
    msg = chat_message(f"<@{BOT['id']}> 明日の予定は？", mentions=[BOT], at=T0)
    harness.fake.deleted.add(int(msg["id"]))
    before = len(harness.fake.calls)
    await harness.deliver("message_create", msg)
    sent = harness.fake.sent(since=before)
    assert [c.content for c in sent] == ["echo: 明日の予定は？"] and harness.fake.rejected == []
    assert sent[0].body["message_reference"]["fail_if_not_exists"] is False


async def test_a_mentions_attachments_stickers_and_channel_links_are_kept(harness: Harness):
    """What the model sees and the session stores: channel links by name (as in /sync), and one
    line per attachment and sticker; a mention with only an image is a turn, not the usage hint."""
    await harness.deliver("guild_create", guild_create())
    image = {
        "id": "1290478288896555555",
        "filename": "plan.png",
        "size": 2048,
        "url": "https://cdn.discordapp.com/attachments/1/2/plan.png",
        "proxy_url": "https://media.discordapp.net/attachments/1/2/plan.png",
        "content_type": "image/png",
    }
    sticker = {"id": "749054660769218631", "name": "よろしく", "format_type": 1}
    bot = f"<@{BOT['id']}>"
    msg = chat_message(f"{bot} <#{OTHER_CHANNEL}> のこれ、どう思う？ <@{BOB['id']}>", mentions=[BOT, BOB], at=T0)
    msg["attachments"] = [image]
    only_image = chat_message(bot, mentions=[BOT], at=T0, n=1)
    only_image["attachments"] = [image]
    only_sticker = chat_message(bot, mentions=[BOT], at=T0, n=2)
    only_sticker["sticker_items"] = [sticker]
    for payload in (msg, only_image, only_sticker):
        await harness.deliver("message_create", payload)

    key = harness.mem.session_key(platform="discord", workspace=GUILD, channel=GENERAL, user=ALICE["id"])
    said = [m.text for m in await harness.mem.history(key) if m.role == "user"]
    assert said == [
        "#other のこれ、どう思う？ @Bob\n[attachment: plan.png]",
        "[attachment: plan.png]",
        "[sticker: よろしく]",
    ]
    assert not any("Ask me anything" in (c.content or "") for c in harness.fake.sent())


async def test_an_unreachable_discord_is_a_clear_error_not_a_traceback(harness: Harness):
    """No network (DNS fails, a proxy refuses): ``omoide discord`` stops with one line saying so."""
    from omoide.bots.discord_bot import run_discord_bot
    from omoide.errors import ConfigError

    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    connector = aiohttp.TCPConnector(resolver=Loopback(port), ssl=False)
    with pytest.raises(ConfigError, match="cannot reach Discord"):
        await run_discord_bot(harness.mem, "test-token", config=DiscordBotConfig(), connector=connector)
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "omoide-workers" and not t.done()]


async def test_a_mention_of_the_bots_own_role_is_a_mention(harness: Harness):
    """Invited with permissions, the bot gets a managed role of its own name, and Discord's
    autocomplete offers it next to the bot: "@omoide" picked as the role is ``<@&role>``."""
    bot_role = {**role(1290478288896133333, "omoide", 0), "managed": True, "tags": {"bot_id": BOT["id"]}}
    other_role = role(1290478288896134444, "dev", 0)
    await harness.deliver("guild_create", guild_create(roles=[bot_role, other_role]))
    msg = chat_message(f"<@&{bot_role['id']}> 明日の予定は？ <@&{other_role['id']}>", at=T0)
    msg["mention_roles"] = [bot_role["id"], other_role["id"]]
    before = len(harness.fake.calls)
    await harness.deliver("message_create", msg)
    assert [c.content for c in harness.fake.sent(since=before)] == ["echo: 明日の予定は？ @dev"]

    other = chat_message(f"<@&{other_role['id']}> 明日の予定は？", at=T0, n=1)  # another role: not for the bot
    other["mention_roles"] = [other_role["id"]]
    before = len(harness.fake.calls)
    await harness.deliver("message_create", other)
    assert harness.fake.sent(since=before) == []


async def test_an_agent_key_policy_still_gives_each_user_a_session(harness: Harness, tmp_path: Path):
    """``OMOIDE_SESSION_KEY_POLICY=agent`` (set for an agent on the same database) has no
    meaning on Discord: every turn failed with "session key part 'agent' is required"."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'agent.db'}",
        transcripts_dir=tmp_path / "agent-transcripts",
        embedder="hashing",
        session_key_policy="agent",
    )
    async with Memory.open(settings, chat_model=ScriptedChatModel(answer_from)) as mem:
        bot = OmoideBot(mem, config=DiscordBotConfig(sync_commands=False), connector=harness.connector())
        await bot.login("test-token")
        try:
            before = len(harness.fake.calls)
            bot._connection.parse_interaction_create(command("ask", [opt("question", "こんにちは")]))
            await harness.settle()  # waits for the command tree's tasks, whichever client runs them
            assert [c.content for c in harness.fake.sent(since=before)] == ["echo: こんにちは"]
        finally:
            await bot.close()
        key = mem.session_key(
            platform="discord", workspace=GUILD, channel=GENERAL, user=ALICE["id"], policy="user_channel"
        )
        assert [m.text for m in await mem.history(key)] == ["こんにちは", "echo: こんにちは"]


async def test_a_private_threads_answer_draws_on_no_ones_private_knowledge(harness: Harness):
    """Alice is in two private threads: one with Carol (synced, private to its members) and one
    with Bob. Her mention in Bob's thread is answered where Bob reads it, so the long-term
    context must not carry what only Alice and Carol may read (a private session with a user
    is not a DM here: its audience is the thread)."""
    from omoide.importers import ImportedMessage

    await harness.deliver("guild_create", guild_create())
    carol = "700000000000000003"
    secret = [
        ImportedMessage(
            platform="discord",
            workspace_id=str(GUILD),
            workspace_name="omoide lab",
            channel_id=str(GENERAL),
            channel_name="general",
            thread_id="1290478288896132222",
            thread_name="alice and carol",
            message_id=str(snowflake(T0, i)),
            author_id=author,
            author_name=name,
            is_bot=False,
            text=text,
            created_at=T0 + dt.timedelta(minutes=i),
        )
        for i, (author, name, text) in enumerate(
            [
                (ALICE["id"], "Alice", "The Bluebird codename is the Hakone merger; keep Bluebird between us."),
                (carol, "Carol", "Bluebird closes on 12 December, budget 3 million yen."),
            ]
        )
    ]
    await harness.mem.knowledge.ingest_messages(
        secret, workspace=GUILD, origin="discord:sync", private=True, members=[ALICE["id"], carol]
    )
    await harness.mem.knowledge.embed()
    question = "What is Bluebird and when does Bluebird close?"
    assert (await harness.mem.search(question, workspace=GUILD, viewer=ALICE["id"])).hits  # Alice may read it

    private_thread = {**thread_payload(), "type": 12, "name": "alice and bob"}
    await harness.deliver("thread_create", {**private_thread, "newly_created": True})
    msg = chat_message(f"<@{BOT['id']}> {question}", mentions=[BOT], at=T0, n=9, channel_id=THREAD)
    await harness.deliver("message_create", msg)
    system = harness.model.calls[-1].system or ""
    assert "Hakone" not in system and "3 million" not in system

    # and /ask in the same private thread
    await harness.run(command("ask", [opt("question", question)], channel_id=THREAD, channel=private_thread))
    system = harness.model.calls[-1].system or ""
    assert "Hakone" not in system and "3 million" not in system

    # /chat there answers from Alice's view (her private knowledge is what she may read) but
    # only to her: an answer citing Alice and Carol's thread must not be posted where Bob reads it
    before = len(harness.fake.calls)
    sent = await harness.run(command("chat", [opt("question", question)], channel_id=THREAD, channel=private_thread))
    [callback] = [c for c in harness.fake.calls[before:] if c.path.endswith("/callback")]
    assert callback.body["type"] == 5 and callback.ephemeral
    assert "alice and carol" in "\n".join(c.content or "" for c in sent)  # cited, to Alice alone
    # in a public channel /chat is public, from public knowledge only
    before = len(harness.fake.calls)
    sent = await harness.run(command("chat", [opt("question", question)]))
    [callback] = [c for c in harness.fake.calls[before:] if c.path.endswith("/callback")]
    assert not callback.ephemeral and "alice and carol" not in "\n".join(c.content or "" for c in sent)
