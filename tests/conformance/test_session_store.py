"""The SessionStore contract, run against every backend (SQLite file, PostgreSQL + pgvector)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest

from omoide.errors import InvalidInput, SessionNotFound, VersionConflict
from omoide.keys import session_key
from omoide.models import Message, SessionStatus, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.stores.sessions import SessionStore


def _key(user: str = "u1", channel: str = "c1", workspace: str = "g1"):
    return session_key(platform="discord", workspace=workspace, channel=channel, user=user)


async def test_store_satisfies_protocol(store):
    assert isinstance(store.sessions, SessionStore)
    assert store.backend in {"sqlite", "postgresql"}


async def test_migrate_is_idempotent(store):
    version = await store.schema_version()
    assert version >= 1
    assert await store.migrate() == []
    assert await store.schema_version() == version


async def test_get_or_create_returns_same_session(store):
    key = _key()
    first = await store.sessions.get_or_create_session(key)
    second = await store.sessions.get_or_create_session(key)
    assert first.id == second.id
    assert first.key == key.value
    assert first.status is SessionStatus.ACTIVE
    assert (first.workspace_id, first.channel_id, first.user_id, first.thread_id) == ("g1", "c1", "u1", None)
    assert first.policy == key.policy
    assert first.platform == "discord"
    assert first.last_seq == first.archived_seq == first.window_start_seq == 0
    assert first.created_at.tzinfo is not None
    assert first.created_at.utcoffset() == timedelta(0)


async def test_concurrent_get_or_create_makes_one_session(store):
    key = _key(user="racer")
    sessions = await asyncio.gather(*(store.sessions.get_or_create_session(key) for _ in range(10)))
    assert len({s.id for s in sessions}) == 1


async def test_missing_sessions_are_none(store):
    assert await store.sessions.get_session("discord:g1:c=nope:u=nobody") is None
    assert await store.sessions.get_session_by_id(987654321) is None


async def test_append_assigns_seq_and_round_trips_fields(store):
    session = await store.sessions.get_or_create_session(_key())
    when = datetime(2026, 3, 15, 9, 30, 0, 123456, tzinfo=UTC)
    blocks = (
        TextBlock("天気を調べます"),
        ToolUseBlock("toolu_1", "weather", {"city": "東京", "days": [1, 2]}),
    )
    first, created = await store.sessions.append_message(
        session.id, Message.user("こんにちは、andy です", author_id="u1", author_name="Andy", message_id="m1")
    )
    assert created
    second, _ = await store.sessions.append_message(
        session.id, Message("assistant", blocks, author_id="bot", is_bot=True, created_at=when)
    )
    third, _ = await store.sessions.append_message(
        session.id, Message("user", (ToolResultBlock("toolu_1", "晴れ", is_error=False),), created_at=when)
    )
    assert [first.seq, second.seq, third.seq] == [1, 2, 3]
    assert first.id is not None and first.session_id == session.id

    stored = await store.sessions.messages(session.id)
    assert [m.seq for m in stored] == [1, 2, 3]
    assert stored[0].text == "こんにちは、andy です"
    assert (stored[0].author_id, stored[0].author_name, stored[0].message_id, stored[0].is_bot) == (
        "u1",
        "Andy",
        "m1",
        False,
    )
    assert stored[1].content == blocks
    assert stored[1].is_bot is True
    assert stored[1].created_at == when
    assert stored[2].content == (ToolResultBlock("toolu_1", "晴れ"),)
    for m in stored:
        assert m.created_at.utcoffset() == timedelta(0)

    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert after.last_seq == 3
    assert after.version == session.version + 3


async def test_text_messages_are_stored_with_their_token_count(store):
    """A one-text message is counted once when appended and loads with its count, so the
    first prompt built from the window after a restart encodes nothing (issue 4)."""
    from omoide.providers.tokens import get_token_counter

    counter = get_token_counter()
    session = await store.sessions.get_or_create_session(_key())
    text = "今日は渋谷で新しいカフェを見つけました。 The latte was great!"
    await store.sessions.append_message(session.id, Message.user(text))
    await store.sessions.append_message(session.id, Message("assistant", (TextBlock("a"), TextBlock("b"))))
    await store.sessions.append_message(session.id, Message("assistant", (ToolUseBlock("t1", "recall", {"q": "x"}),)))
    for loaded in (await store.sessions.history(session.id, window=10), await store.sessions.messages(session.id)):
        assert loaded[0].content == (TextBlock(text),)
        assert loaded[0].content[0].tokens == counter.count(text) > 0
        assert [b.tokens for b in loaded[1].content] == [None, None]  # several blocks: counted when used
        assert counter.count_messages(loaded) == counter.count_messages(
            [
                Message(m.role, tuple(TextBlock(b.text) if isinstance(b, TextBlock) else b for b in m.content))
                for m in loaded
            ]
        )


async def test_append_converts_other_timezones_to_utc(store):
    session = await store.sessions.get_or_create_session(_key())
    jst = timezone(timedelta(hours=9))
    msg, _ = await store.sessions.append_message(
        session.id, Message.user("x", created_at=datetime(2026, 1, 1, 9, 0, tzinfo=jst))
    )
    [stored] = await store.sessions.messages(session.id)
    assert stored.created_at == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert msg.created_at == stored.created_at


async def test_append_moves_last_active_forward(store):
    session = await store.sessions.get_or_create_session(_key())
    future = datetime.now(UTC) + timedelta(minutes=5)
    await store.sessions.append_message(session.id, Message.user("later", created_at=future))
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert after.last_active_at >= future - timedelta(microseconds=1)
    old = future - timedelta(days=30)
    await store.sessions.append_message(session.id, Message.user("imported old message", created_at=old))
    again = await store.sessions.get_session_by_id(session.id)
    assert again is not None
    assert again.last_active_at >= future - timedelta(microseconds=1)


async def test_append_to_missing_session_raises(store):
    with pytest.raises(SessionNotFound):
        await store.sessions.append_message(123456789, Message.user("hello"))


async def test_platform_message_id_is_idempotent(store):
    session = await store.sessions.get_or_create_session(_key())
    first, created = await store.sessions.append_message(session.id, Message.user("one", message_id="dup"))
    again, created_again = await store.sessions.append_message(
        session.id, Message.user("one (redelivered)", message_id="dup")
    )
    assert created and not created_again
    assert again.id == first.id and again.seq == first.seq and again.text == "one"
    assert len(await store.sessions.messages(session.id)) == 1
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and after.last_seq == 1

    # the same platform id is the same message anywhere in the workspace ...
    other = await store.sessions.get_or_create_session(_key(user="u2"))
    same, created_other = await store.sessions.append_message(other.id, Message.user("one", message_id="dup"))
    assert not created_other and same.id == first.id
    # ... but another workspace has its own ids
    elsewhere = await store.sessions.get_or_create_session(_key(workspace="g2"))
    new, created_new = await store.sessions.append_message(elsewhere.id, Message.user("one", message_id="dup"))
    assert created_new and new.id != first.id


async def test_concurrent_redelivery_stores_once(store):
    session = await store.sessions.get_or_create_session(_key())
    results = await asyncio.gather(
        *(store.sessions.append_message(session.id, Message.user("same", message_id="race")) for _ in range(8))
    )
    assert sum(created for _, created in results) == 1
    assert len({m.id for m, _ in results}) == 1
    assert len(await store.sessions.messages(session.id)) == 1


async def test_history_returns_newest_window_in_order(store):
    session = await store.sessions.get_or_create_session(_key())
    for i in range(1, 26):
        await store.sessions.append_message(session.id, Message.user(f"message {i}"))
    window = await store.sessions.history(session.id, window=20)
    assert [m.seq for m in window] == list(range(6, 26))
    assert window[-1].text == "message 25"
    assert [m.seq for m in await store.sessions.history(session.id, window=100)] == list(range(1, 26))
    # messages beyond the window are still stored (nothing is deleted before archiving)
    assert len(await store.sessions.messages(session.id)) == 25
    assert [m.seq for m in await store.sessions.messages(session.id, after_seq=20)] == [21, 22, 23, 24, 25]
    assert [m.seq for m in await store.sessions.messages(session.id, after_seq=3, limit=2)] == [4, 5]


async def test_history_of_empty_session(store):
    session = await store.sessions.get_or_create_session(_key())
    assert await store.sessions.history(session.id, window=20) == []
    assert await store.sessions.messages(session.id) == []


async def test_window_start_hides_older_messages(store):
    session = await store.sessions.get_or_create_session(_key())
    for i in range(5):
        await store.sessions.append_message(session.id, Message.user(f"m{i}"))
    current = await store.sessions.get_session_by_id(session.id)
    assert current is not None
    reset = await store.sessions.update_session(
        session.id, expected_version=current.version, window_start_seq=current.last_seq
    )
    assert reset.window_start_seq == 5
    assert reset.version == current.version + 1
    assert await store.sessions.history(session.id, window=20) == []
    await store.sessions.append_message(session.id, Message.user("fresh start"))
    assert [m.text for m in await store.sessions.history(session.id, window=20)] == ["fresh start"]
    assert len(await store.sessions.messages(session.id)) == 6


async def test_update_session_with_stale_version_conflicts(store):
    session = await store.sessions.get_or_create_session(_key())
    await store.sessions.append_message(session.id, Message.user("bumps the version"))
    with pytest.raises(VersionConflict):
        await store.sessions.update_session(session.id, expected_version=session.version, status=SessionStatus.ARCHIVED)
    unchanged = await store.sessions.get_session_by_id(session.id)
    assert unchanged is not None and unchanged.status is SessionStatus.ACTIVE


async def test_update_missing_session_raises_not_found(store):
    with pytest.raises(SessionNotFound):
        await store.sessions.update_session(424242, expected_version=1, status=SessionStatus.ARCHIVED)


async def test_append_reactivates_archived_and_expired_sessions(store):
    for status in (SessionStatus.ARCHIVED, SessionStatus.EXPIRED):
        session = await store.sessions.get_or_create_session(_key(user=f"re-{status.value}"))
        changed = await store.sessions.update_session(session.id, expected_version=session.version, status=status)
        assert changed.status is status
        await store.sessions.append_message(session.id, Message.user("I'm back"))
        back = await store.sessions.get_session_by_id(session.id)
        assert back is not None and back.status is SessionStatus.ACTIVE


async def test_list_sessions_filters_and_orders(store):
    base = datetime(2026, 1, 1, tzinfo=UTC)
    ids = []
    for i, ws in enumerate(["g1", "g1", "g2"]):
        s = await store.sessions.get_or_create_session(_key(user=f"u{i}", workspace=ws))
        await store.sessions.append_message(s.id, Message.user("hi", created_at=base + timedelta(hours=i)))
        ids.append(s.id)
    everything = await store.sessions.list_sessions()
    assert [s.id for s in everything] == list(reversed(ids))
    g1 = await store.sessions.list_sessions(workspace_id="g1")
    assert [s.id for s in g1] == [ids[1], ids[0]]
    page = await store.sessions.list_sessions(workspace_id="g1", limit=1, offset=1)
    assert [s.id for s in page] == [ids[0]]
    expired = await store.sessions.get_session_by_id(ids[2])
    assert expired is not None
    await store.sessions.update_session(ids[2], expected_version=expired.version, status=SessionStatus.EXPIRED)
    assert [s.id for s in await store.sessions.list_sessions(status=SessionStatus.EXPIRED)] == [ids[2]]
    assert ids[2] not in [s.id for s in await store.sessions.list_sessions(status=SessionStatus.ACTIVE)]


async def test_list_sessions_by_platform_channel_and_user(store):
    base = datetime(2026, 1, 1, tzinfo=UTC)
    keys = [
        session_key(platform="discord", workspace="g1", channel="c1", user="u1"),
        session_key(platform="discord", workspace="g1", channel="c1", user="u2"),
        session_key(platform="discord", workspace="g1", channel="c2", user="u1"),
        session_key(platform="slack", workspace="g1", channel="c1", user="u1"),
        session_key(platform="discord", workspace="g2", channel="c1", user="u1"),
    ]
    ids = []
    for i, key in enumerate(keys):
        s = await store.sessions.get_or_create_session(key)
        await store.sessions.append_message(s.id, Message.user("hi", created_at=base + timedelta(hours=i)))
        ids.append(s.id)

    async def listed(**filters: object) -> list[int]:
        return [s.id for s in await store.sessions.list_sessions(**filters)]

    assert await listed(workspace_id="g1", channel_id="c1") == [ids[3], ids[1], ids[0]]
    assert await listed(workspace_id="g1", user_id="u1") == [ids[3], ids[2], ids[0]]
    assert await listed(workspace_id="g1", platform="discord", channel_id="c1", user_id="u1") == [ids[0]]
    assert await listed(platform="slack") == [ids[3]]
    assert await listed(channel_id="c1", user_id="u1") == [ids[4], ids[3], ids[0]]  # every workspace
    assert await listed(workspace_id="g1", channel_id="c1", limit=1, offset=1) == [ids[1]]
    assert await listed(workspace_id="g1", channel_id="nowhere") == []
    assert await listed(workspace_id="g1", channel_id="c1", status=SessionStatus.EXPIRED) == []
    for bad in ({"channel_id": ""}, {"user_id": 5}, {"platform": ""}):
        with pytest.raises(InvalidInput):
            await store.sessions.list_sessions(**bad)


async def test_list_workspaces_is_distinct_and_paged(store):
    for ws, user in (("g2", "u1"), ("g1", "u1"), ("g2", "u2"), ("g3", "u1")):
        await store.sessions.get_or_create_session(_key(user=user, workspace=ws))
    assert await store.sessions.list_workspaces() == ["g1", "g2", "g3"]
    assert await store.sessions.list_workspaces(limit=1, offset=1) == ["g2"]
    with pytest.raises(InvalidInput):
        await store.sessions.list_workspaces(limit=-1)


async def test_expire_idle_in_batches(store):
    # last activity is never moved backwards, so "idle" here means: before a cutoff in the future
    now = datetime.now(UTC)
    idle_ids = []
    for i in range(5):
        s = await store.sessions.get_or_create_session(_key(user=f"idle{i}"))
        await store.sessions.append_message(s.id, Message.user("old", created_at=now - timedelta(days=3)))
        idle_ids.append(s.id)
    fresh = await store.sessions.get_or_create_session(_key(user="fresh"))
    await store.sessions.append_message(fresh.id, Message.user("new", created_at=now + timedelta(days=3)))

    cutoff = now + timedelta(days=1)
    assert await store.sessions.expire_idle(idle_before=cutoff, batch_size=2) == 2
    # oldest first: the first batch took the two sessions that were idle longest
    statuses = [(await store.sessions.get_session_by_id(sid)).status for sid in idle_ids]  # type: ignore[union-attr]
    assert statuses[:2] == [SessionStatus.EXPIRED, SessionStatus.EXPIRED]
    assert statuses[2:] == [SessionStatus.ACTIVE] * 3
    assert await store.sessions.expire_idle(idle_before=cutoff, batch_size=2) == 2
    assert await store.sessions.expire_idle(idle_before=cutoff, batch_size=2) == 1
    assert await store.sessions.expire_idle(idle_before=cutoff, batch_size=2) == 0
    for sid in idle_ids:
        s = await store.sessions.get_session_by_id(sid)
        assert s is not None and s.status is SessionStatus.EXPIRED
    kept = await store.sessions.get_session_by_id(fresh.id)
    assert kept is not None and kept.status is SessionStatus.ACTIVE
    # a new message re-activates an expired session
    await store.sessions.append_message(idle_ids[0], Message.user("hello again"))
    back = await store.sessions.get_session_by_id(idle_ids[0])
    assert back is not None and back.status is SessionStatus.ACTIVE


async def test_expire_idle_bumps_version(store):
    s = await store.sessions.get_or_create_session(_key())
    before = await store.sessions.get_session_by_id(s.id)
    assert before is not None
    assert await store.sessions.expire_idle(idle_before=datetime.now(UTC) + timedelta(days=1), batch_size=10) == 1
    after = await store.sessions.get_session_by_id(s.id)
    assert after is not None and after.version == before.version + 1
    assert after.status is SessionStatus.EXPIRED


async def test_delete_session_removes_messages(store):
    s = await store.sessions.get_or_create_session(_key())
    await store.sessions.append_message(s.id, Message.user("bye", message_id="gone"))
    assert await store.sessions.delete_session(s.id) is True
    assert await store.sessions.get_session_by_id(s.id) is None
    assert await store.sessions.delete_session(s.id) is False
    # its platform message id is free again
    again = await store.sessions.get_or_create_session(_key())
    _, created = await store.sessions.append_message(again.id, Message.user("bye", message_id="gone"))
    assert created


async def test_concurrent_writers_lose_nothing(store):
    """20 writers x 100 messages into one session: exactly 2,000 messages, each writer's order kept."""
    session = await store.sessions.get_or_create_session(_key(user="busy"))
    writers, per_writer = 20, 100

    async def writer(w: int) -> None:
        for i in range(per_writer):
            await store.sessions.append_message(session.id, Message.user(f"{w}:{i}", author_id=f"w{w}"))

    await asyncio.gather(*(writer(w) for w in range(writers)))
    stored = await store.sessions.messages(session.id)
    assert len(stored) == writers * per_writer
    assert [m.seq for m in stored] == list(range(1, writers * per_writer + 1))
    for w in range(writers):
        mine = [int(m.text.split(":")[1]) for m in stored if m.author_id == f"w{w}"]
        assert mine == list(range(per_writer))
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert after.last_seq == writers * per_writer
    assert after.version == session.version + writers * per_writer


async def test_reset_window_is_atomic_and_bumps_version(store):
    session = await store.sessions.get_or_create_session(_key())
    for i in range(3):
        await store.sessions.append_message(session.id, Message.user(f"m{i}"))
    before = await store.sessions.get_session_by_id(session.id)
    reset = await store.sessions.reset_window(session.id)
    assert reset.window_start_seq == 3
    assert reset.version == before.version + 1
    assert await store.sessions.history(session.id, window=20) == []
    with pytest.raises(SessionNotFound):
        await store.sessions.reset_window(999_999)


async def test_reset_window_races_appends_without_losing_any(store):
    session = await store.sessions.get_or_create_session(_key())

    async def appender() -> None:
        for i in range(30):
            await store.sessions.append_message(session.id, Message.user(f"a{i}"))

    async def resetter() -> None:
        for _ in range(10):
            await store.sessions.reset_window(session.id)

    await asyncio.gather(appender(), appender(), resetter())
    after = await store.sessions.get_session_by_id(session.id)
    assert after.last_seq == 60
    assert 0 <= after.window_start_seq <= 60
    assert len(await store.sessions.messages(session.id)) == 60


async def test_context_summary_only_moves_forward(store):
    session = await store.sessions.get_or_create_session(_key())
    for i in range(6):
        await store.sessions.append_message(session.id, Message.user(f"m{i}"))
    assert session.context_summary is None
    assert session.context_summary_seq == 0
    saved = await store.sessions.save_context_summary(session.id, summary="要約: m0〜m3", through_seq=4)
    assert saved is not None
    assert (saved.context_summary, saved.context_summary_seq) == ("要約: m0〜m3", 4)
    # an older (or equal) compaction never replaces a newer one
    assert await store.sessions.save_context_summary(session.id, summary="stale", through_seq=3) is None
    assert await store.sessions.save_context_summary(session.id, summary="same", through_seq=4) is None
    newer = await store.sessions.save_context_summary(session.id, summary="要約: m0〜m4", through_seq=5)
    assert newer is not None
    assert newer.context_summary_seq == 5
    reread = await store.sessions.get_session_by_id(session.id)
    assert reread.context_summary == "要約: m0〜m4"
    # the messages themselves are all still stored
    assert len(await store.sessions.messages(session.id)) == 6
    with pytest.raises(InvalidInput):
        await store.sessions.save_context_summary(session.id, summary="future", through_seq=99)
    with pytest.raises(InvalidInput):
        await store.sessions.save_context_summary(session.id, summary="  ", through_seq=6)
    with pytest.raises(SessionNotFound):
        await store.sessions.save_context_summary(999_999, summary="x", through_seq=1)
