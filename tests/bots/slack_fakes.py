"""A local stand-in for the Slack Web API and recorded-shape Slack payloads, for the Slack bot tests.

The bot runs as a real slack-bolt ``AsyncApp`` whose ``AsyncWebClient`` points at an aiohttp
server on 127.0.0.1 that answers the few methods the bot uses (``auth.test``,
``chat.postMessage``, ``chat.getPermalink``, ``users.info``, ``apps.connections.open`` and
the Socket Mode WebSocket) and records every call, plus the
``response_url`` webhooks of slash commands. Payloads are dispatched the way
slack-bolt's Socket Mode adapter does it (``run_async_bolt_app`` with a
``SocketModeRequest``), or as signed HTTP-mode requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import WSMsgType, web
from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.request import SocketModeRequest

TEAM = "T0ACME"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
APP_ID = "A0OMOIDE"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
USERS = {
    "U0ALICE": {"display_name": "alice", "real_name": "Alice Liddell"},
    "U0BOB": {"display_name": "", "real_name": "Bob Builder"},
}
"""What ``users.info`` knows (profiles); any other user is ``user_not_found``."""
RESPONSE_URL_USES = 5
"""A ``response_url`` takes at most five messages (within 30 minutes); then Slack answers 404 ``used_url``."""
CHANNELS = {"C0GENERAL": "general", "C0RANDOM": "random", "C0SECRET": "secret"}
"""What ``conversations.info`` knows (names); any other channel but a DM is ``channel_not_found``."""
_ts = itertools.count(1)


def new_ts() -> str:
    """A fresh, increasing Slack ``ts``."""
    return f"17639{next(_ts):05d}.{next(_ts):06d}"


@dataclass
class FakeSlack:
    """The recorded Web API calls and webhook posts."""

    base_url: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    webhooks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    missing_permalinks: set[str] = field(default_factory=set)
    private_channels: set[str] = field(default_factory=set)
    """Channels ``conversations.info`` reports as private (``is_private``); ``D…`` ids are DMs."""
    outbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    """Envelopes the Socket Mode endpoint sends to the connected app."""
    acks: list[dict[str, Any]] = field(default_factory=list)
    """What the app sent back over the socket (acknowledgements)."""
    rejected_tokens: set[str] = field(default_factory=set)
    """Tokens answered with ``invalid_auth`` (a revoked or mistyped token), as Slack does."""
    rate_limited: dict[str, int] = field(default_factory=dict)
    """Method → how many of its next calls get HTTP 429 with ``Retry-After: 1`` (Slack's rate limit)."""

    def posted(self) -> list[dict[str, Any]]:
        return [params for method, params in self.calls if method == "chat.postMessage"]

    def responses(self, hook: str | None = None) -> list[dict[str, Any]]:
        return [body for name, body in self.webhooks if hook is None or name == hook]

    def method_calls(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == method]

    def response_url(self, hook: str) -> str:
        return f"{self.base_url}/hooks/{hook}"

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; calls so far: {self.calls} {self.webhooks}")
            await asyncio.sleep(0.02)

    def app(self) -> web.Application:
        async def api(request: web.Request) -> web.Response:
            method = request.match_info["method"]
            if request.method == "GET":
                params: dict[str, Any] = dict(request.query)
            elif request.content_type == "application/json":
                params = await request.json()
            else:
                params = dict(await request.post())
            self.calls.append((method, params))
            token = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if token in self.rejected_tokens:
                return web.json_response({"ok": False, "error": "invalid_auth"})
            if self.rate_limited.get(method, 0) > 0:
                self.rate_limited[method] -= 1
                return web.json_response(
                    {"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "1"}
                )
            if method == "auth.test":
                return web.json_response(
                    {
                        "ok": True,
                        "url": "https://acme.slack.com/",
                        "team": "Acme",
                        "user": "omoide",
                        "team_id": TEAM,
                        "user_id": BOT_USER,
                        "bot_id": BOT_ID,
                    }
                )
            if method == "apps.connections.open":
                return web.json_response({"ok": True, "url": f"{self.base_url.replace('http', 'ws', 1)}/socket"})
            if method == "users.info":
                profile = USERS.get(str(params.get("user")))
                if profile is None:
                    return web.json_response({"ok": False, "error": "user_not_found"})
                return web.json_response({"ok": True, "user": {"id": params["user"], "profile": profile}})
            if method == "chat.postMessage":
                return web.json_response({"ok": True, "channel": params["channel"], "ts": new_ts()})
            if method == "chat.getPermalink":
                channel, ts = str(params["channel"]), str(params["message_ts"])
                if channel in self.missing_permalinks:
                    return web.json_response({"ok": False, "error": "channel_not_found"})
                url = f"https://acme.slack.com/archives/{channel}/p{ts.replace('.', '')}"
                return web.json_response({"ok": True, "channel": channel, "permalink": url})
            if method == "conversations.info":
                channel = str(params["channel"])
                if channel not in CHANNELS and not channel.startswith("D"):
                    return web.json_response({"ok": False, "error": "channel_not_found"})
                info = {"id": channel, "is_im": channel.startswith("D"), "is_private": channel in self.private_channels}
                if channel in CHANNELS:
                    info["name"] = CHANNELS[channel]
                return web.json_response({"ok": True, "channel": info})
            return web.json_response({"ok": False, "error": "unknown_method"})

        async def hook(request: web.Request) -> web.Response:
            name = request.match_info["name"]
            if len(self.responses(name)) >= RESPONSE_URL_USES:
                return web.Response(status=404, text="used_url")
            self.webhooks.append((name, await request.json()))
            return web.Response(text="ok")

        async def socket(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            hello = {"type": "hello", "num_connections": 1, "connection_info": {"app_id": APP_ID}}
            await ws.send_json({**hello, "debug_info": {"host": "applink-local", "approximate_connection_time": 3600}})

            async def pump() -> None:
                while True:
                    await ws.send_json(await self.outbox.get())

            sender = asyncio.create_task(pump())
            try:
                async for message in ws:
                    if message.type == WSMsgType.TEXT:
                        self.acks.append(json.loads(message.data))
            finally:
                sender.cancel()
            return ws

        app = web.Application()
        app.router.add_get("/socket", socket)
        app.router.add_post("/api/{method}", api)
        app.router.add_get("/api/{method}", api)
        app.router.add_post("/hooks/{name}", hook)
        return app


def event_callback(event: dict[str, Any], *, team: str = TEAM) -> dict[str, Any]:
    """An Events API ``event_callback`` body, as Slack sends it."""
    return {
        "token": "XXYYZZ",
        "team_id": team,
        "context_team_id": team,
        "api_app_id": APP_ID,
        "event": {**event, "event_ts": event.get("ts", new_ts())},
        "type": "event_callback",
        "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team,
                "user_id": BOT_USER,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-" + uuid.uuid4().hex,
    }


def mention(text: str, *, user: str, channel: str = "C0GENERAL", ts: str | None = None, thread_ts: str | None = None):
    """An ``app_mention`` event."""
    event: dict[str, Any] = {
        "client_msg_id": str(uuid.uuid4()),
        "type": "app_mention",
        "text": f"<@{BOT_USER}> {text}",
        "user": user,
        "ts": ts or new_ts(),
        "blocks": [],
        "team": TEAM,
        "channel": channel,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
        event["parent_user_id"] = user
    return event


def direct_message(text: str, *, user: str, channel: str = "D0ALICE", **extra: Any) -> dict[str, Any]:
    """A ``message`` event in a DM (``channel_type: im``)."""
    return {
        "client_msg_id": str(uuid.uuid4()),
        "type": "message",
        "text": text,
        "user": user,
        "ts": new_ts(),
        "blocks": [],
        "team": TEAM,
        "channel": channel,
        "channel_type": "im",
        **extra,
    }


def slash_command(command: str, text: str, *, user: str, hook: str, fake: FakeSlack, channel: str = "C0GENERAL"):
    """A slash command payload (the form fields Slack posts, as Socket Mode delivers them)."""
    return {
        "token": "XXYYZZ",
        "team_id": TEAM,
        "team_domain": "acme",
        "channel_id": channel,
        "channel_name": "general",
        "user_id": user,
        "user_name": user.lower(),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": fake.response_url(hook),
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    }


def block_action(
    action_id: str,
    value: str,
    *,
    user: str,
    hook: str,
    fake: FakeSlack,
    channel: str = "C0GENERAL",
    team: str = TEAM,
) -> dict[str, Any]:
    """A ``block_actions`` payload: ``user`` pressed a button of an ephemeral message the app sent."""
    ts = new_ts()
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "api_app_id": APP_ID,
        "token": "XXYYZZ",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": True},
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": team, "domain": "acme"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "general"},
        "state": {"values": {}},
        "response_url": fake.response_url(hook),
        "actions": [
            {
                "action_id": action_id,
                "block_id": "b" + uuid.uuid4().hex[:4],
                "text": {"type": "plain_text", "text": "button", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": new_ts(),
            }
        ],
    }


async def socket_dispatch(
    app: AsyncApp, payload: dict[str, Any], *, kind: str = "events_api", retry_attempt: int | None = None
) -> BoltResponse:
    """Dispatch like slack-bolt's Socket Mode adapter does with an envelope from the socket."""
    request = SocketModeRequest(
        type=kind,
        envelope_id=str(uuid.uuid4()),
        payload=payload,
        accepts_response_payload=kind != "events_api",
        retry_attempt=retry_attempt,
        retry_reason="timeout" if retry_attempt else None,
    )
    response: BoltResponse = await run_async_bolt_app(app, request)
    return response


async def http_dispatch(
    app: AsyncApp,
    payload: dict[str, Any],
    *,
    form: bool = False,
    retry_num: int | None = None,
    secret: str = SIGNING_SECRET,
) -> BoltResponse:
    """Dispatch as a signed HTTP-mode request (Events API JSON, or a slash command's form body)."""
    body = urlencode(payload) if form else json.dumps(payload)
    timestamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    headers = {
        "content-type": "application/x-www-form-urlencoded" if form else "application/json",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": f"v0={digest}",
    }
    if retry_num is not None:
        headers |= {"x-slack-retry-num": str(retry_num), "x-slack-retry-reason": "http_timeout"}
    return await app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
