"""The Slack bot, driven through a real slack-bolt AsyncApp with recorded-shape payloads.

No network: the app's AsyncWebClient talks to a local aiohttp server (``slack_fakes``);
the memory engine is a real ``Memory`` on a SQLite file (and once on PostgreSQL) with a
scripted chat model and the hashing embedder.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from omoide import Memory
from omoide.bots._erasure import kind_name
from omoide.bots.slack_bot import build_app, run_slack_bot, slack_tokens, time_ts, to_mrkdwn, ts_time
from omoide.errors import ConfigError
from omoide.models import TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.settings import Settings

from .slack_fakes import (
    BOT_USER,
    SIGNING_SECRET,
    TEAM,
    FakeSlack,
    block_action,
    direct_message,
    event_callback,
    http_dispatch,
    mention,
    new_ts,
    slash_command,
    socket_dispatch,
)

ALICE, BOB = "U0ALICE", "U0BOB"
LONG = "\n\n".join(f"Paragraph {i}: " + "word " * 380 for i in range(4))  # ~7,700 characters


def reply(request: ChatRequest) -> Any:
    """Answers seed 004 prompts with a citation; remembers and recalls (naming a foreign user,
    which must be ignored); answers "long" at length; otherwise echoes and counts the prompt."""
    if request.system and "RAG" in request.system:
        return "The release moved to **Friday** because of the login bug [#1]."
    last = request.messages[-1]
    results = [b for b in last.content if isinstance(b, ToolResultBlock)]
    if results:
        data = json.loads(results[0].content)
        return f"Your birthday: {data[0]['content']}" if isinstance(data, list) and data else "Noted <!channel>."
    text = last.text
    if "remember" in text:
        return [TextBlock("ok"), ToolUseBlock("t1", "remember", {"content": "birthday is 15 March", "user_id": BOB})]
    if "when" in text:
        return [ToolUseBlock("t2", "recall", {"query": "birthday", "user_id": BOB})]
    if "long" in text:
        return LONG
    return f"echo: {text} ({len(request.messages)} in prompt)"


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    runner = web.AppRunner(fake.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    fake.base_url = f"http://{host}:{port}"
    yield fake
    await runner.cleanup()


def _settings(url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=url, embedder="hashing", transcripts_dir=tmp_path / "transcripts", db_pool_max=5)


@pytest.fixture
async def model() -> ScriptedChatModel:
    return ScriptedChatModel(reply)


@pytest.fixture
async def mem(sqlite_url: str, tmp_path: Path, model: ScriptedChatModel) -> AsyncIterator[Memory]:
    async with Memory.open(_settings(sqlite_url, tmp_path), chat_model=model) as m:
        yield m


def _app(mem: Memory, fake: FakeSlack, **kwargs: Any) -> Any:
    client = AsyncWebClient(token="xoxb-test", base_url=f"{fake.base_url}/api/")
    kwargs.setdefault("process_before_response", True)
    return build_app(mem, client=client, signing_secret=SIGNING_SECRET, **kwargs)


async def test_a_mention_is_a_turn_in_the_users_channel_session(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    event = mention("what is <https://example.com|the plan> &amp; who is <@U0CAROL>? cc <@U0BOB>", user=ALICE)
    response = await socket_dispatch(app, event_callback(event))
    assert response.status == 200

    [post] = fake_slack.posted()
    assert post["channel"] == "C0GENERAL"
    assert "thread_ts" not in post  # a top-level mention is answered in the channel
    said = "what is the plan (https://example.com) & who is @U0CAROL? cc @Bob Builder"  # names from users.info
    assert post["text"] == f"echo: {said.replace('&', '&amp;')} (1 in prompt)"

    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
    assert key.value == f"slack:{TEAM}:c=C0GENERAL:u={ALICE}"
    user_turn, answer = await mem.history(key)
    assert user_turn.text == said  # without the bot's mention
    assert (user_turn.author_id, user_turn.author_name) == (ALICE, "alice")
    assert user_turn.message_id == f"C0GENERAL:{event['ts']}"
    assert user_turn.created_at == ts_time(event["ts"])
    assert answer.role == "assistant"

    # a second mention by the same user continues the session; another user has their own
    await socket_dispatch(app, event_callback(mention("again", user=ALICE)))
    await socket_dispatch(app, event_callback(mention("hi", user=BOB)))
    assert [p["text"] for p in fake_slack.posted()[1:]] == ["echo: again (3 in prompt)", "echo: hi (1 in prompt)"]
    looked_up = [c["user"] for c in fake_slack.method_calls("users.info")]
    assert sorted(looked_up) == [ALICE, BOB, "U0CAROL"]  # once per user, failures included


async def test_a_thread_keeps_one_thread_session_and_replies_go_into_the_thread(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    parent = new_ts()
    await socket_dispatch(app, event_callback(mention("first", user=ALICE, thread_ts=parent)))
    await socket_dispatch(app, event_callback(mention("second", user=BOB, thread_ts=parent)))

    posts = fake_slack.posted()
    assert [p["thread_ts"] for p in posts] == [parent, parent]
    assert posts[1]["text"] == "echo: second (3 in prompt)"  # Bob sees the thread's conversation so far

    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", thread=parent, policy="thread")
    assert key.value == f"slack:{TEAM}:c=C0GENERAL:t={parent}"
    stored = await mem.history(key)
    assert [(m.role, m.author_id) for m in stored if m.role == "user"] == [("user", ALICE), ("user", BOB)]
    channel_key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
    assert await mem.history(channel_key) == []  # the channel session is untouched


async def test_direct_messages_converse_and_other_messages_are_ignored(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    await socket_dispatch(app, event_callback(direct_message("hello there", user=ALICE)))
    [post] = fake_slack.posted()
    assert (post["channel"], post["text"]) == ("D0ALICE", "echo: hello there (1 in prompt)")

    ignored = [
        direct_message("a channel message", user=ALICE, channel="C0GENERAL", channel_type="channel"),
        direct_message("edited", user=ALICE, subtype="message_changed"),
        direct_message("from a bot", user="U0OTHERBOT", bot_id="B0OTHER", subtype="bot_message"),
        direct_message("our own post", user=BOT_USER, bot_id="B0BOT"),
    ]
    for event in ignored:
        response = await socket_dispatch(app, event_callback(event))
        assert response.status == 200
    assert len(fake_slack.posted()) == 1
    sessions = await mem.sessions.list_sessions(workspace=TEAM)
    assert [s.key for s in sessions] == [f"slack:{TEAM}:c=D0ALICE:u={ALICE}"]

    await socket_dispatch(app, event_callback(mention("", user=ALICE)))  # a bare mention: a hint, nothing stored
    assert "メンション" in fake_slack.posted()[-1]["text"]  # no words to go by: OMOIDE_ANSWER_LANGUAGE (ja)
    assert len(await mem.sessions.list_sessions(workspace=TEAM)) == 1


async def test_redelivered_events_store_nothing_twice(mem: Memory, fake_slack: FakeSlack, model: ScriptedChatModel):
    app = _app(mem, fake_slack)
    event = mention("hello", user=ALICE)
    body = event_callback(event)
    await socket_dispatch(app, body)
    await socket_dispatch(app, body, retry_attempt=1)  # Socket Mode retry (becomes X-Slack-Retry-Num)
    await http_dispatch(app, body, retry_num=2)  # HTTP-mode retry with the header
    dm = event_callback(direct_message("hi", user=ALICE))
    await http_dispatch(app, dm)
    await http_dispatch(app, dm, retry_num=1)

    assert len(fake_slack.posted()) == 2
    assert len(model.calls) == 2
    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
    assert [m.role for m in await mem.history(key)] == ["user", "assistant"]


async def test_http_mode_requires_a_valid_signature(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    forged = await http_dispatch(app, event_callback(mention("hello", user=ALICE)), secret="not-the-secret")
    assert forged.status == 401
    assert fake_slack.posted() == [] and await mem.sessions.list_sessions() == []


async def test_memory_tools_run_for_the_events_user_only(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    await socket_dispatch(app, event_callback(mention("please remember my birthday", user=ALICE)))
    assert [m.content for m in await mem.memories.list(TEAM, ALICE)] == ["birthday is 15 March"]
    assert await mem.memories.list(TEAM, BOB) == []  # the id the model proposed was ignored
    assert fake_slack.posted()[-1]["text"] == "Noted &lt;!channel&gt;."  # no @channel ping from a reply

    await socket_dispatch(app, event_callback(direct_message("when is my birthday?", user=ALICE)))
    assert fake_slack.posted()[-1]["text"] == "Your birthday: birthday is 15 March"
    await socket_dispatch(app, event_callback(direct_message("when is my birthday?", user=BOB, channel="D0BOB")))
    assert fake_slack.posted()[-1]["text"] == "Noted &lt;!channel&gt;."  # Bob has no memories to recall


async def test_long_replies_are_split_on_paragraphs_in_the_thread(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    parent = new_ts()
    await socket_dispatch(app, event_callback(mention("a long answer please", user=ALICE, thread_ts=parent)))
    posts = fake_slack.posted()
    assert len(posts) >= 3
    assert all(len(p["text"]) <= 3_500 for p in posts)
    assert all(p["thread_ts"] == parent for p in posts)
    assert all(p["text"].startswith("Paragraph") for p in posts)  # cut on paragraph boundaries
    assert "\n\n".join(p["text"] for p in posts).split() == LONG.split()  # nothing lost

    small = _app(mem, fake_slack, split_at=1_000)
    await socket_dispatch(small, event_callback(direct_message("long again", user=BOB, channel="D0BOB")))
    assert all(len(p["text"]) <= 1_000 for p in fake_slack.posted()[len(posts) :])


async def test_the_default_app_acknowledges_before_answering(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack, process_before_response=False)
    response = await socket_dispatch(app, event_callback(mention("hello", user=ALICE)))
    assert response.status == 200
    await fake_slack.wait_for(lambda: len(fake_slack.posted()) == 1)
    assert fake_slack.posted()[0]["text"] == "echo: hello (1 in prompt)"

    response = await socket_dispatch(
        app, slash_command("/memory", "add I like tea", user=ALICE, hook="h1", fake=fake_slack), kind="slash_commands"
    )
    assert response.status == 200
    await fake_slack.wait_for(lambda: len(fake_slack.responses("h1")) == 1)


async def test_memory_command_covers_only_the_invoking_users_memories(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)

    async def memory(text: str, user: str, hook: str, *, http: bool = False) -> str:
        payload = slash_command("/memory", text, user=user, hook=hook, fake=fake_slack)
        if http:
            response = await http_dispatch(app, payload, form=True)
        else:
            response = await socket_dispatch(app, payload, kind="slash_commands")
        assert response.status == 200
        [body] = fake_slack.responses(hook)
        assert body["response_type"] == "ephemeral"
        return str(body["text"])

    assert await memory("list", ALICE, "l0") == "You have no memories here yet. Add one with `/memory add …`."
    added = await memory("add I prefer &lt;green&gt; tea &amp; rice", ALICE, "a1")  # as Slack escapes it
    assert added.startswith("Remembered as memory `#")
    memory_id = added.split("`#")[1].split("`")[0]
    assert (await memory("add 誕生日は3月15日", ALICE, "a2", http=True)).startswith("メモリ `#")
    assert (await memory("add my own note", BOB, "a3")).startswith("Remembered")

    listed = await memory("list", ALICE, "l1")
    assert "I prefer &lt;green&gt; tea &amp; rice" in listed and "誕生日は3月15日" in listed
    assert "my own note" not in listed
    found = await memory("search tea", ALICE, "s1")
    assert found.startswith(f"`#{memory_id}` I prefer")
    bobs = await memory("search tea", BOB, "s2")
    assert "my own note" in bobs and "I prefer" not in bobs

    # Bob cannot delete Alice's memory: it is not found for him, and it stays
    assert (
        await memory(f"delete {memory_id}", BOB, "d1")
        == f"You have no memory `#{memory_id}`. `/memory list` shows yours."
    )
    assert [m.content for m in await mem.memories.list(TEAM, ALICE)] == [
        "誕生日は3月15日",
        "I prefer <green> tea & rice",
    ]
    assert await memory(f"delete #{memory_id}", ALICE, "d2") == f"Deleted memory `#{memory_id}`."
    assert [m.content for m in await mem.memories.list(TEAM, ALICE)] == ["誕生日は3月15日"]

    assert "`/memory add" in await memory("", ALICE, "u1")  # usage (in OMOIDE_ANSWER_LANGUAGE)
    assert await memory("delete twelve", ALICE, "u2") == "Memory ids are numbers, e.g. `/memory delete 12`."
    assert await memory("list 3", ALICE, "u3") == "No memories on page 3."
    assert [m for m in fake_slack.calls if m[0] == "chat.postMessage"] == []  # all ephemeral


async def test_forget_me_confirms_then_erases_only_the_presser(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    for user in (ALICE, BOB):  # each has a memory and a conversation in #general
        await mem.remember(f"{user} likes green tea", workspace=TEAM, user=user)
        await socket_dispatch(app, event_callback(mention("hello there", user=user)))
    keys = {u: mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=u) for u in (ALICE, BOB)}
    for key in keys.values():
        assert len(await mem.history(key)) == 2

    async def stored(user: str) -> tuple[int, int]:
        return len(await mem.memories.list(TEAM, user)), len(await mem.history(keys[user]))

    async def press(action_id: str, value: str, user: str, hook: str, *, http: bool = False) -> dict[str, Any]:
        payload = block_action(action_id, value, user=user, hook=hook, fake=fake_slack)
        if http:
            response = await http_dispatch(app, {"payload": json.dumps(payload)}, form=True)
        else:
            response = await socket_dispatch(app, payload, kind="interactive")
        assert response.status == 200
        [body] = fake_slack.responses(hook)
        return body

    # the command only asks (in OMOIDE_ANSWER_LANGUAGE, ja by default): what goes, and two buttons
    payload = slash_command("/memory", "forget-me", user=ALICE, hook="f0", fake=fake_slack)
    assert (await socket_dispatch(app, payload, kind="slash_commands")).status == 200
    [asked] = fake_slack.responses("f0")
    assert asked["response_type"] == "ephemeral"
    for what in ("メモリ", "メッセージ", "長期記憶", "要約", "会話ログ", "元に戻せません"):
        assert what in asked["text"], what
    [section, actions] = asked["blocks"]
    assert section["text"]["text"] == asked["text"]
    buttons = {b["action_id"]: b for b in actions["elements"]}
    assert set(buttons) == {"omoide_forget_me_confirm", "omoide_forget_me_cancel"}
    assert buttons["omoide_forget_me_confirm"]["style"] == "danger"
    assert buttons["omoide_forget_me_confirm"]["value"] == "ja"
    assert await stored(ALICE) == (1, 2)  # nothing erased yet

    cancelled = await press("omoide_forget_me_cancel", "ja", ALICE, "f1")
    assert cancelled["replace_original"] is True and "何も消去していません" in cancelled["text"]
    assert await stored(ALICE) == (1, 2)

    # Alice presses Erase: Alice's data goes (whatever the button carries), Bob's stays
    done = await press("omoide_forget_me_confirm", "ja", ALICE, "f2")
    assert done["replace_original"] is True and done["response_type"] == "ephemeral"
    receipt = done["text"].splitlines()
    assert receipt[0] == "このワークスペースであなたについて保存していたデータを消去しました:"
    counts = dict(line.removeprefix("• ").removesuffix(" 件").rsplit(": ", 1) for line in receipt[1:])
    assert (counts["メモリ"], counts["会話セッション"], counts["メッセージ"]) == ("1", "1", "2")
    assert await stored(ALICE) == (0, 0)
    assert await stored(BOB) == (1, 2)

    # again (English this time, over HTTP mode): idempotent, nothing left to erase
    again = await press("omoide_forget_me_confirm", "en", ALICE, "f3", http=True)
    assert again["text"] == "I had nothing stored about you in this workspace: nothing was erased."
    assert await stored(BOB) == (1, 2)

    # an English receipt names every kind the report counts
    done = await press("omoide_forget_me_confirm", "en", BOB, "f4")
    lines = done["text"].splitlines()
    assert lines[0] == "Erased everything I kept about you in this workspace:"
    kinds = (await mem.forget_user(workspace=TEAM, user=BOB)).as_dict()
    assert [line.removeprefix("• ").rsplit(": ", 1)[0] for line in lines[1:]] == [kind_name(k, "en") for k in kinds]
    assert await stored(BOB) == (0, 0)
    assert len(fake_slack.posted()) == 2  # the two mention replies: everything else was ephemeral


def _write_slack_export(root: Path) -> Path:
    export = root / "acme-export"
    (export / "general").mkdir(parents=True)
    (export / "channels.json").write_text(json.dumps([{"id": "C0GENERAL", "name": "general"}]))
    (export / "users.json").write_text(
        json.dumps([{"id": ALICE, "name": "alice", "team_id": TEAM, "profile": {"display_name": "alice"}}])
    )
    messages = [
        {"type": "message", "user": ALICE, "ts": "1762603200.000100", "text": "The v0.4.0 release moved to Friday."},
        {
            "type": "message",
            "user": ALICE,
            "ts": "1762603260.000200",
            "text": "Reason: the login bug in the installer.",
        },
    ]
    (export / "general" / "2025-11-08.json").write_text(json.dumps(messages))
    return export


async def test_ask_answers_with_citations_linked_to_slack_messages(mem: Memory, fake_slack: FakeSlack, tmp_path: Path):
    await mem.knowledge.import_export([_write_slack_export(tmp_path)], workspace=TEAM)
    await mem.knowledge.embed()
    app = _app(mem, fake_slack)
    payload = slash_command("/ask", "Why was v0.4.0 release moved?", user=BOB, hook="q1", fake=fake_slack)
    assert (await socket_dispatch(app, payload, kind="slash_commands")).status == 200

    [body] = fake_slack.responses("q1")
    assert body["response_type"] == "ephemeral"
    assert body["unfurl_links"] is False
    lines = body["text"].split("\n")
    assert lines[0] == "*Q:* Why was v0.4.0 release moved?"
    assert "The release moved to *Friday* because of the login bug [#1]." in lines
    assert "*Sources*" in lines
    permalink = "https://acme.slack.com/archives/C0GENERAL/p1762603200000100"
    assert lines[-1].startswith(f"[#1] <{permalink}|#general · 2025-11-08 12:00")
    [lookup] = fake_slack.method_calls("chat.getPermalink")
    assert (lookup["channel"], lookup["message_ts"]) == ("C0GENERAL", "1762603200.000100")

    # without a permalink the citation keeps its label; a blank question gets the usage
    fake_slack.missing_permalinks.add("C0GENERAL")
    await socket_dispatch(
        app, slash_command("/ask", "v0.4.0 release", user=BOB, hook="q2", fake=fake_slack), kind="slash_commands"
    )
    assert fake_slack.responses("q2")[0]["text"].split("\n")[-1].startswith("[#1] #general · 2025-11-08")
    await socket_dispatch(app, slash_command("/ask", "  ", user=BOB, hook="q3", fake=fake_slack), kind="slash_commands")
    assert "`/ask &lt;" in fake_slack.responses("q3")[0]["text"]  # usage, escaped


async def test_a_model_failure_is_reported_without_details(sqlite_url: str, tmp_path: Path, fake_slack: FakeSlack):
    from omoide.errors import ProviderUnavailable

    failing = ScriptedChatModel([ProviderUnavailable("upstream 503 at http://10.0.0.7/v1", provider="openai")])
    async with Memory.open(_settings(sqlite_url, tmp_path), chat_model=failing) as mem:
        await socket_dispatch(_app(mem, fake_slack), event_callback(mention("hello", user=ALICE)))
        [post] = fake_slack.posted()
        assert post["text"] == (
            ":warning: The language model failed (PROVIDER_UNAVAILABLE). Please try again in a moment."
        )
        key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
        assert [m.role for m in await mem.history(key)] == ["user"]  # what was said stays stored


@pytest.mark.postgres
async def test_conversation_and_retries_on_postgresql(pg_url: str, tmp_path: Path, fake_slack: FakeSlack):
    async with Memory.open(_settings(pg_url, tmp_path), chat_model=ScriptedChatModel(reply)) as mem:
        app = _app(mem, fake_slack)
        parent = new_ts()
        body = event_callback(mention("remember this", user=ALICE, thread_ts=parent))
        await socket_dispatch(app, body)
        await socket_dispatch(app, body, retry_attempt=1)
        key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", thread=parent, policy="thread")
        stored = await mem.history(key)
        assert [m.role for m in stored].count("user") == 2  # the message and the tool result, once
        assert [m.content for m in await mem.memories.list(TEAM, ALICE)] == ["birthday is 15 March"]
        assert len(fake_slack.posted()) == 1


def test_tokens_come_from_the_environment_and_errors_name_the_variable():
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN is not set"):
        slack_tokens({})
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN is not set"):
        slack_tokens({"SLACK_BOT_TOKEN": "xoxb-1"})
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN must start with 'xapp-'"):
        slack_tokens({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"})
    assert slack_tokens({"SLACK_BOT_TOKEN": " xoxb-1 ", "SLACK_APP_TOKEN": "xapp-2"}) == ("xoxb-1", "xapp-2")


def test_mrkdwn_rendering_and_timestamps():
    assert to_mrkdwn("# Plan\n**bold** ~~old~~ [docs](https://x.test/a?b=1&c=2) <!here>") == (
        "*Plan*\n*bold* ~old~ <https://x.test/a?b=1&amp;c=2|docs> &lt;!here&gt;"
    )
    assert to_mrkdwn("> quoted\n```\n**not bold** <b>\n```") == "> quoted\n```\n**not bold** &lt;b&gt;\n```"
    assert to_mrkdwn("* one\n  - two **b**\n-3 stays") == "• one\n  • two *b*\n-3 stays"
    for ts in ("1762603200.000100", "1712345678.123456", "1700000000.999999"):
        assert time_ts(ts_time(ts)) == ts


async def test_the_bot_serves_over_socket_mode_with_the_workers(mem: Memory, fake_slack: FakeSlack):
    client = AsyncWebClient(token="xoxb-test", base_url=f"{fake_slack.base_url}/api/")
    bot = asyncio.create_task(run_slack_bot(mem, bot_token="xoxb-test", app_token="xapp-test", client=client))
    event = event_callback(mention("hello over the socket", user=ALICE))
    envelope = {"envelope_id": "env-1", "type": "events_api", "accepts_response_payload": False, "payload": event}
    fake_slack.outbox.put_nowait({**envelope, "retry_attempt": 0, "retry_reason": ""})
    await fake_slack.wait_for(lambda: len(fake_slack.posted()) == 1)
    assert fake_slack.posted()[0]["text"] == "echo: hello over the socket (1 in prompt)"
    assert {"envelope_id": "env-1"} in fake_slack.acks
    assert fake_slack.method_calls("apps.connections.open")

    bot.cancel()  # Ctrl-C: the connection closes and the workers stop
    with pytest.raises(asyncio.CancelledError):
        await bot


def test_the_cli_command_names_a_missing_token(monkeypatch: pytest.MonkeyPatch, sqlite_url: str):
    from typer.testing import CliRunner

    from omoide.cli import app

    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["slack", "--db", sqlite_url])
    assert result.exit_code == 1
    assert "SLACK_BOT_TOKEN is not set" in result.output

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    result = runner.invoke(app, ["slack", "--db", sqlite_url])
    assert result.exit_code == 1
    assert "SLACK_APP_TOKEN is not set" in result.output
    assert "--memory-command" in runner.invoke(app, ["slack", "--help"]).output


async def test_ask_links_archived_bot_conversations_to_their_first_message(mem: Memory, fake_slack: FakeSlack):
    app = _app(mem, fake_slack)
    event = mention("The offsite is in Hakone on 12 December; Carol books the ryokan for the v0.4.0 team.", user=ALICE)
    await socket_dispatch(app, event_callback(event))
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    payload = slash_command("/ask", "Where is the offsite?", user=BOB, hook="q1", fake=fake_slack)
    await socket_dispatch(app, payload, kind="slash_commands")
    [lookup] = fake_slack.method_calls("chat.getPermalink")
    assert (lookup["channel"], lookup["message_ts"]) == ("C0GENERAL", event["ts"])
    assert f"p{event['ts'].replace('.', '')}|" in fake_slack.responses("q1")[0]["text"]


async def test_a_users_dm_knowledge_is_retrievable_by_their_ask_only(mem: Memory, fake_slack: FakeSlack):
    """Alice's DM with the bot (and a mention in a private channel) is archived private to her:
    Bob's /ask never cites it, Alice's does; a public-channel mention stays public."""
    fake_slack.private_channels.add("C0SECRET")
    app = _app(mem, fake_slack)
    secret = "The Bluebird codename is for the Hakone merger; nobody else may know about Bluebird."
    await socket_dispatch(app, event_callback(direct_message(secret, user=ALICE)))
    await socket_dispatch(
        app, event_callback(mention("Bluebird budget is 3 million yen.", user=ALICE, channel="C0SECRET"))
    )
    await socket_dispatch(app, event_callback(mention("Bluebird is also the cafeteria's name.", user=ALICE)))
    sessions = {s.channel_id: s for s in await mem.sessions.list_sessions(workspace=TEAM)}
    assert (sessions["D0ALICE"].private, sessions["D0ALICE"].members) == (True, (ALICE,))
    assert sessions["C0SECRET"].private and not sessions["C0GENERAL"].private
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace=TEAM)}
    assert sources["D0ALICE"].private and ALICE in sources["D0ALICE"].members
    assert sources["C0SECRET"].private and not sources["C0GENERAL"].private

    async def cited_channels(user: str, hook: str) -> set[str]:
        before = len(fake_slack.method_calls("chat.getPermalink"))
        payload = slash_command("/ask", "What is Bluebird?", user=user, hook=hook, fake=fake_slack)
        await socket_dispatch(app, payload, kind="slash_commands")
        assert fake_slack.responses(hook)
        return {c["channel"] for c in fake_slack.method_calls("chat.getPermalink")[before:]}

    assert await cited_channels(BOB, "bob") == {"C0GENERAL"}
    assert await cited_channels(ALICE, "alice") <= {"D0ALICE", "C0SECRET", "C0GENERAL"}
    result = await mem.ask("What is Bluebird?", workspace=TEAM, viewer=ALICE, k=5)
    assert {h.chunk.channel_id for h in result.hits} == {"D0ALICE", "C0SECRET", "C0GENERAL"}
    result = await mem.ask("What is Bluebird?", workspace=TEAM, viewer=BOB, k=5)
    assert {h.chunk.channel_id for h in result.hits} == {"C0GENERAL"}


async def test_a_rejected_token_stops_the_bot_at_once_naming_the_variable(mem: Memory, fake_slack: FakeSlack):
    """A revoked or mistyped token (right prefix, ``invalid_auth``) stops ``run_slack_bot`` with a
    ConfigError naming the variable, instead of reconnecting for ever (app token) or connecting and
    failing every event (bot token)."""
    fake_slack.rejected_tokens |= {"xoxb-revoked", "xapp-revoked"}

    async def run(bot_token: str, app_token: str) -> None:
        client = AsyncWebClient(token=bot_token, base_url=f"{fake_slack.base_url}/api/")
        await asyncio.wait_for(
            run_slack_bot(mem, bot_token=bot_token, app_token=app_token, client=client, workers=False), timeout=30
        )

    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN") as bot_error:
        await run("xoxb-revoked", "xapp-test")
    assert "invalid_auth" in str(bot_error.value) and bot_error.value.details["setting"] == "SLACK_BOT_TOKEN"
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN") as app_error:
        await run("xoxb-test", "xapp-revoked")
    assert "invalid_auth" in str(app_error.value) and app_error.value.details["setting"] == "SLACK_APP_TOKEN"
    assert fake_slack.acks == []  # never connected


async def test_a_rate_limited_reply_is_posted_after_retry_after(mem: Memory, fake_slack: FakeSlack):
    """``chat.postMessage`` answered 429 with ``Retry-After``: the reply is posted once the limit
    has passed, not lost (the user's message is already stored, so a redelivery would not answer)."""
    app = _app(mem, fake_slack)
    fake_slack.rate_limited["chat.postMessage"] = 1
    await socket_dispatch(app, event_callback(mention("hello", user=ALICE)))
    posts = fake_slack.method_calls("chat.postMessage")
    assert len(posts) == 2 and posts[0] == posts[1]  # the 429, then the same message again
    assert posts[1]["text"] == "echo: hello (1 in prompt)"


async def test_memory_verbs_accept_a_japanese_ime_space(mem: Memory, fake_slack: FakeSlack):
    """A Japanese IME types a full-width space (U+3000) after the verb, and full-width digits."""
    app = _app(mem, fake_slack)

    async def memory(text: str, hook: str) -> str:
        await socket_dispatch(
            app, slash_command("/memory", text, user=ALICE, hook=hook, fake=fake_slack), kind="slash_commands"
        )
        [body] = fake_slack.responses(hook)
        return str(body["text"])

    assert (await memory("add\u3000誕生日は3月15日", "a1")).startswith("メモリ `#")
    assert [m.content for m in await mem.memories.list(TEAM, ALICE)] == ["誕生日は3月15日"]
    assert "誕生日は3月15日" in await memory("search\u3000誕生日", "s1")
    assert "誕生日は3月15日" in await memory("list\u3000１", "l1")
    memory_id = (await mem.memories.list(TEAM, ALICE))[0].id
    assert await memory(f"delete\u3000＃{memory_id}", "d1") == f"Deleted memory `#{memory_id}`."
    assert await mem.memories.list(TEAM, ALICE) == []
    # digits that are not decimal, and numbers too large for the database, are answered, not crashed on
    assert await memory("delete ²", "d2") == "You have no memory `#2`. `/memory list` shows yours."
    assert "`/memory add" in await memory("list ²", "l2")
    assert await memory("delete 99999999999999999999999", "d3") == (
        "You have no memory `#99999999999999999999999`. `/memory list` shows yours."
    )
    assert await memory("list 99999999999999999999999", "l3") == "No memories on page 99999999999999999999999."


async def test_channel_links_are_stored_by_name_but_never_a_private_channels(mem: Memory, fake_slack: FakeSlack):
    """Slack sends channel links as ``<#C…|>`` (no label): the name comes from
    ``conversations.info``, once per channel; a private channel's name is not looked up
    into a conversation others may read, and an unknown channel keeps its id."""
    fake_slack.private_channels.add("C0SECRET")
    app = _app(mem, fake_slack)
    text = "compare <#C0RANDOM|> with <#C0SECRET|> and <#C0GONE|>, not <#C0GENERAL|general>"
    await socket_dispatch(app, event_callback(mention(text, user=ALICE)))
    await socket_dispatch(app, event_callback(mention("again <#C0RANDOM|>", user=ALICE)))
    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
    said = [m.text for m in await mem.history(key) if m.role == "user"]
    assert said == ["compare #random with #C0SECRET and #C0GONE, not #general", "again #random"]
    looked_up = [c["channel"] for c in fake_slack.method_calls("conversations.info")]
    assert looked_up.count("C0RANDOM") == 1 and looked_up.count("C0GONE") == 1  # failures are remembered too


async def test_a_response_longer_than_five_messages_is_not_cut_off(mem: Memory, fake_slack: FakeSlack):
    """A ``response_url`` takes five messages: a page of twenty long memories (~80,000
    characters, 23 messages of 3,500) must still arrive whole, in at most five."""
    app = _app(mem, fake_slack)
    for i in range(20):
        await mem.remember(" ".join(f"m{i}w{j}" for j in range(600))[:3_900], workspace=TEAM, user=ALICE)
    payload = slash_command("/memory", "list", user=ALICE, hook="l1", fake=fake_slack)
    await socket_dispatch(app, payload, kind="slash_commands")
    bodies = fake_slack.responses("l1")
    assert 1 < len(bodies) <= 5 and all(len(b["text"]) <= 40_000 for b in bodies)
    shown = "\n".join(b["text"] for b in bodies)
    assert all(f"`#{m.id}`" in shown for m in await mem.memories.list(TEAM, ALICE, page_size=20))


async def test_a_message_shared_into_a_dm_is_a_turn_with_its_text(mem: Memory, fake_slack: FakeSlack):
    """Sharing (forwarding) a message to the app: the event's ``text`` is empty and the shared
    message is a legacy attachment. It is stored as the importer stores it, and answered —
    not met with the "mention me" hint and dropped."""
    app = _app(mem, fake_slack)
    shared = {
        "fallback": "[November 8th, 2025 12:00 PM] alice: The v0.4.0 release moved to Friday.",
        "text": "The v0.4.0 release moved to Friday.",
        "author_id": ALICE,
        "author_subname": "alice",
        "channel_id": "C0GENERAL",
        "channel_name": "general",
        "is_msg_unfurl": True,
        "is_share": True,
        "from_url": "https://acme.slack.com/archives/C0GENERAL/p1762603200000100",
        "ts": "1762603200.000100",
        "id": 1,
    }
    await socket_dispatch(app, event_callback(direct_message("", user=ALICE, attachments=[shared])))
    await socket_dispatch(app, event_callback(direct_message("覚えておいて", user=ALICE, attachments=[shared])))
    key = mem.session_key(platform="slack", workspace=TEAM, channel="D0ALICE", user=ALICE)
    said = [m.text for m in await mem.history(key) if m.role == "user"]
    line = "[embed: [November 8th, 2025 12:00 PM] alice: The v0.4.0 release moved to Friday.]"
    assert said == [line, f"覚えておいて\n{line}"]
    assert not any("DM" in p["text"] for p in fake_slack.posted())  # no hint


async def test_an_edited_mention_is_not_a_new_turn(mem: Memory, fake_slack: FakeSlack):
    """Editing a message that mentions the app makes Slack send ``app_mention`` again, with an
    ``edited`` field and the original ``ts``: edits are ignored, also when the edit added the
    mention (the message was never a turn) — a typo fixed is not a second question."""
    app = _app(mem, fake_slack)
    original = mention("what is the plan?", user=ALICE)
    await socket_dispatch(app, event_callback(original))
    edited = {**original, "text": f"<@{BOT_USER}> what is the plan for Friday?"}
    edited["edited"] = {"user": ALICE, "ts": new_ts()}
    added = {**mention("I forgot to mention you", user=BOB), "edited": {"user": BOB, "ts": new_ts()}}
    for event in (edited, added):
        assert (await socket_dispatch(app, event_callback(event))).status == 200
    assert len(fake_slack.posted()) == 1
    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=ALICE)
    assert [m.text for m in await mem.history(key) if m.role == "user"] == ["what is the plan?"]
    bobs = mem.session_key(platform="slack", workspace=TEAM, channel="C0GENERAL", user=BOB)
    assert await mem.history(bobs) == []


async def test_a_channel_made_private_is_private_for_the_next_turns(mem: Memory, fake_slack: FakeSlack):
    """A public channel converted to private: its next conversations must be archived private.
    A channel's privacy was asked once per process and cached for good, so a long-running bot
    kept archiving the now-private channel's turns as public knowledge. A public answer is now
    asked again after ``privacy_ttl`` seconds (10 minutes by default); a private one is kept."""
    from slack_bolt.async_app import AsyncApp

    from omoide.bots.slack_bot import SlackBot

    client = AsyncWebClient(token="xoxb-test", base_url=f"{fake_slack.base_url}/api/")
    app = AsyncApp(client=client, signing_secret=SIGNING_SECRET, process_before_response=True)
    SlackBot(mem, privacy_ttl=0).register(app)
    key = mem.session_key(platform="slack", workspace=TEAM, channel="C0RANDOM", user=ALICE)
    await socket_dispatch(app, event_callback(mention("the offsite is in Hakone", user=ALICE, channel="C0RANDOM")))
    assert not (await mem.sessions.get(key)).private
    fake_slack.private_channels.add("C0RANDOM")  # an admin converts #random to a private channel
    await socket_dispatch(app, event_callback(mention("the budget is 3 million yen", user=ALICE, channel="C0RANDOM")))
    assert (await mem.sessions.get(key)).private
    asked = len(fake_slack.method_calls("conversations.info"))
    fake_slack.private_channels.discard("C0RANDOM")
    await socket_dispatch(app, event_callback(mention("and lunch?", user=ALICE, channel="C0RANDOM")))
    assert len(fake_slack.method_calls("conversations.info")) == asked  # "private" is not asked again
    assert (await mem.sessions.get(key)).private
