"""Sessions through the Memory facade, on every backend."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from omoide import Memory, Message
from omoide.errors import (
    InvalidContent,
    InvalidInput,
    InvalidSessionKey,
    MessageTooLarge,
    SessionNotFound,
    VersionConflict,
)
from omoide.models import SessionStatus, ToolResultBlock, ToolUseBlock, utcnow


@pytest.fixture
async def mem(settings):
    async with Memory.open(settings) as m:
        yield m


def key_for(mem: Memory, user: str = "u1"):
    return mem.session_key(platform="discord", workspace="g1", channel="c1", user=user)


async def test_window_is_fifo_but_nothing_is_deleted(mem):
    key = key_for(mem)
    for i in range(30):
        await mem.append(key, Message.user(f"m{i}"))
    window = await mem.history(key)
    assert [m.text for m in window] == [f"m{i}" for i in range(10, 30)]  # default window: 20 (seed 001)
    assert len(await mem.sessions.unarchived(key)) == 30  # still stored for the archiver
    assert [m.text for m in await mem.history(key, window=3)] == ["m27", "m28", "m29"]


async def test_unknown_key_has_empty_history(mem):
    assert await mem.history(key_for(mem, "ghost")) == []
    with pytest.raises(SessionNotFound, match="omoide sessions list"):
        await mem.sessions.get(key_for(mem, "ghost"))


async def test_string_keys_are_parsed_and_checked(mem):
    await mem.append("discord:g1:c=c1:u=u9", Message.user("hi"))
    assert [m.text for m in await mem.history("discord:g1:c=c1:u=u9")] == ["hi"]
    with pytest.raises(InvalidSessionKey):
        await mem.append("discord::c=1", Message.user("hi"))


async def test_bad_messages_store_nothing(mem, settings):
    key = key_for(mem)
    await mem.append(key, Message.user("kept"))
    with pytest.raises(MessageTooLarge, match="OMOIDE_MAX_MESSAGE_BYTES"):
        await mem.append(key, Message.user("x" * (settings.max_message_bytes + 1)))
    with pytest.raises(InvalidContent, match="empty"):
        await mem.append(key, Message.user("  \n "))
    with pytest.raises(InvalidContent):
        await mem.append(key, "just a string")  # type: ignore[arg-type]
    with pytest.raises(InvalidContent, match="surrogate"):  # not UTF-8: typed, before any write
        await mem.append(key, Message.user("壊れた\ud800テキスト"))
    with pytest.raises(InvalidContent, match="surrogate"):
        await mem.chat(key, "壊れた\ud800テキスト")
    for not_text in (None, 42, b"bytes"):  # a text block's text must be text: typed, nothing stored
        with pytest.raises(InvalidContent, match="text"):
            await mem.append(key, Message.user(not_text))  # type: ignore[arg-type]
        with pytest.raises(InvalidContent, match="text"):
            await mem.chat(key, not_text)  # type: ignore[arg-type]
    for window in ("5", 2.5, -1):
        with pytest.raises(InvalidContent, match="window"):
            await mem.history(key, window=window)  # type: ignore[arg-type]
    assert [m.text for m in await mem.sessions.messages(key)] == ["kept"]


async def test_tool_turns_are_stored_as_blocks(mem):
    key = key_for(mem)
    use = ToolUseBlock("toolu_1", "recall", {"query": "誕生日"})
    await mem.append(key, Message("assistant", (use,), is_bot=True))
    await mem.append(key, Message("user", (ToolResultBlock("toolu_1", "3月15日"),)))
    window = await mem.history(key)
    assert window[0].content == (use,)
    assert window[1].content[0] == ToolResultBlock("toolu_1", "3月15日")


class _InterleavingStore:
    """A real store with one concurrent append injected just before the first guarded update."""

    def __init__(self, inner, key):
        self._inner = inner
        self._key = key
        self.conflicts = 0
        self.injected = False

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def update_session(self, session_id, **kwargs):
        if not self.injected:
            self.injected = True
            await self._inner.append_message(session_id, Message.user("sneaked in"))
        try:
            return await self._inner.update_session(session_id, **kwargs)
        except VersionConflict:
            self.conflicts += 1
            raise


async def test_guarded_update_rereads_after_a_conflict(mem):
    key = key_for(mem)
    for text in ("a", "b"):
        await mem.append(key, Message.user(text))
    proxy = _InterleavingStore(mem.store.sessions, key)
    mem.sessions.store = proxy  # type: ignore[assignment]
    session = await mem.sessions.set_status(key, SessionStatus.ARCHIVED)
    assert proxy.conflicts == 1
    # the retry read the session again: it saw the message that sneaked in and its version
    assert session.status is SessionStatus.ARCHIVED
    assert session.last_seq == 3


async def test_reset_empties_the_window_and_keeps_the_messages(mem):
    key = key_for(mem)
    for text in ("a", "b"):
        await mem.append(key, Message.user(text))
    session = await mem.reset(key)
    assert session.window_start_seq == 2
    assert await mem.history(key) == []
    assert [m.text for m in await mem.sessions.messages(key)] == ["a", "b"]


async def test_concurrent_resets_and_appends_all_succeed(mem):
    key = key_for(mem)
    await mem.append(key, Message.user("start"))

    async def appender(n: int) -> None:
        for i in range(20):
            await mem.append(key, Message.user(f"{n}-{i}"))

    async def resetter() -> None:
        for _ in range(5):
            await mem.reset(key)

    await asyncio.gather(appender(1), appender(2), resetter())
    session = await mem.sessions.get(key)
    assert session.last_seq == 41
    assert len(await mem.sessions.messages(key)) == 41


async def test_expire_idle_loops_over_batches(settings):
    async with Memory.open(settings, session_expire_batch_size=2) as mem:
        for i in range(5):
            await mem.append(key_for(mem, f"u{i}"), Message.user("hi"))
        expired = await mem.sessions.expire_idle(now=utcnow() + timedelta(days=2), idle_for=timedelta(days=1))
        assert expired == 5
        assert all(s.status is SessionStatus.EXPIRED for s in await mem.sessions.list_sessions())
        await mem.append(key_for(mem, "u0"), Message.user("back"))
        assert (await mem.sessions.get(key_for(mem, "u0"))).status is SessionStatus.ACTIVE


async def test_expire_idle_refuses_a_negative_idle_time(mem):
    """A negative idle time would expire the sessions written a moment ago (``omoide sessions expire
    --idle-hours -1`` did); it is refused like the archiver's, and nothing changes."""
    key = key_for(mem, "u1")
    await mem.append(key, Message.user("hi"))
    with pytest.raises(InvalidInput, match="must not be negative"):
        await mem.sessions.expire_idle(idle_for=timedelta(hours=-1))
    assert (await mem.sessions.get(key)).status is SessionStatus.ACTIVE
    assert await mem.sessions.expire_idle(idle_for=timedelta(0)) == 1  # 0: every session, idle or not


async def test_set_status(mem):
    key = key_for(mem)
    await mem.append(key, Message.user("hi"))
    archived = await mem.sessions.set_status(key, SessionStatus.ARCHIVED)
    assert archived.status is SessionStatus.ARCHIVED


async def test_delete_then_append_recreates(mem):
    key = key_for(mem)
    await mem.append(key, Message.user("one"))
    assert await mem.sessions.delete(key) is True
    assert await mem.sessions.delete(key) is False
    await mem.append(key, Message.user("two"))
    assert [m.text for m in await mem.history(key)] == ["two"]


async def test_append_after_the_session_was_deleted_elsewhere(mem):
    key = key_for(mem)
    await mem.append(key, Message.user("one"))
    session = await mem.sessions.get(key)
    await mem.store.sessions.delete_session(session.id)  # as another process would: the cached id is now stale
    await mem.append(key, Message.user("two"))
    assert [m.text for m in await mem.history(key)] == ["two"]


async def test_a_message_id_is_unique_per_workspace_and_a_repeat_elsewhere_is_visible(mem):
    """The rule: a platform message id is unique per workspace (Discord snowflakes; Slack bots
    use ``channel:ts``), so the same id in another session of the workspace is a re-delivery.
    It used to be dropped silently; now the returned message names the session that holds it
    and a warning is logged."""
    from structlog.testing import capture_logs

    first_key, second_key = key_for(mem, "u1"), key_for(mem, "u2")
    first = await mem.append(first_key, Message.user("こんにちは", message_id="m-1"))
    with capture_logs() as logs:
        again, created = await mem.sessions.append_checked(second_key, Message.user("こんにちは", message_id="m-1"))
    assert created is False
    assert (again.id, again.session_id, again.seq) == (first.id, first.session_id, first.seq)  # the stored one
    assert await mem.history(second_key) == []  # nothing stored in the second session
    warned = [e for e in logs if e["event"] == "message_id_in_another_session"]
    assert len(warned) == 1 and warned[0]["log_level"] == "warning"
    assert warned[0]["stored_session_id"] == int(first.session_id) and warned[0]["message_id"] == "m-1"

    with capture_logs() as logs:  # a plain re-delivery to the same session: no warning
        _, created = await mem.sessions.append_checked(first_key, Message.user("こんにちは", message_id="m-1"))
    assert created is False and not logs

    other_workspace = mem.session_key(platform="discord", workspace="g2", channel="c1", user="u1")
    elsewhere = await mem.append(other_workspace, Message.user("こんにちは", message_id="m-1"))
    assert elsewhere.id != first.id  # another workspace: another message


def test_cli_append_names_the_session_that_already_holds_the_id(db_url):
    import json

    from typer.testing import CliRunner

    from omoide.cli import app

    runner = CliRunner()
    base = ["sessions", "append", "--text", "こんにちは", "--message-id", "m-1", "--db", db_url]
    first = runner.invoke(app, [*base[:2], "discord:g1:c=c1:u=u1", *base[2:]])
    assert first.exit_code == 0 and "Stored message #1" in first.stdout
    again = runner.invoke(app, [*base[:2], "discord:g1:c=c1:u=u2", *base[2:]])
    assert again.exit_code == 0
    said = " ".join(again.stdout.split())
    assert "already stored as #1 of another session, discord:g1:c=c1:u=u1" in said and "unique per workspace" in said
    data = json.loads(runner.invoke(app, [*base[:2], "discord:g1:c=c1:u=u2", *base[2:], "--json"]).stdout)
    assert data["created"] is False and data["stored_in_session"] == "discord:g1:c=c1:u=u1"
