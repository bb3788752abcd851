"""SessionArchiver on both backends: seed 000 §4 completion criteria, filters, metadata, races."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from omoide import Memory, Message
from omoide.errors import InvalidInput, VersionConflict
from omoide.knowledge.archiver import (
    ARCHIVE_ATTEMPTS,
    SessionArchiver,
    archive_concurrency,
    filter_reason,
    source_type,
    source_uri,
)
from omoide.models import SessionStatus, utcnow
from omoide.stores.knowledge import SourceStatus

from .helpers import archived_ids, later, talk, tuned

# ------------------------------------------------------------------ seed 000 §4


async def test_criterion_session_archiver_class_exists_and_runs(mem: Memory):
    """§4: `SessionArchiver` is implemented (and reachable from the facade)."""
    archiver = mem.knowledge.archiver()
    assert isinstance(archiver, SessionArchiver)
    report = await archiver.run()
    assert report.sessions == 0 and report.idle


async def test_criterion_inactive_sessions_become_knowledge(mem: Memory):
    """§4: an inactive session is turned into a knowledge source with chunks (embedding NULL)."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 23)
    assert (await mem.knowledge.archive()).sessions == 0  # still active: nothing to do
    report = await mem.knowledge.archive(at=later())
    assert (report.archived, report.sources, report.messages) == (1, 1, 23)
    (source,) = await mem.knowledge.sources()
    assert source.status is SourceStatus.PENDING  # the embedder's job, later
    assert source.type == "discord_session"
    chunks = await mem.store.knowledge.chunks_of_source(source.id)
    assert [(c.location["seq_start"], c.location["seq_end"]) for c in chunks] == [(1, 10), (9, 18), (17, 23)]
    assert await mem.store.knowledge.get_embedding(chunks[0].id, model=mem.embedder.model_id) is None
    session = await mem.sessions.get(key)
    assert session.status is SessionStatus.ARCHIVED
    assert session.archived_seq == 23
    assert sorted(await archived_ids(mem.store)) == sorted(m.id for m in stored)


async def test_criterion_sliding_window_overlap(mem: Memory):
    """§4: archiving keeps the newest N messages (default 5) in the session for context."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 30)
    await mem.knowledge.archive(at=later())
    kept = await mem.sessions.messages(key)
    assert [m.seq for m in kept] == [26, 27, 28, 29, 30]
    assert [m.text for m in await mem.history(key)] == [m.text for m in stored[-5:]]
    assert await mem.sessions.unarchived(key) == []


async def test_overlap_is_never_archived_again_and_later_messages_are_never_skipped(mem: Memory):
    """DESIGN.md defect 1: with seed 000's index, messages 31-50 would never reach long-term memory."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    first = await talk(mem, key, 30)
    await mem.knowledge.archive(at=later())
    second = await talk(mem, key, 20, start=30)
    session = await mem.sessions.get(key)
    assert session.status is SessionStatus.ACTIVE  # a message re-activates an archived session
    report = await mem.knowledge.archive(at=later() + timedelta(hours=1))
    assert report.messages == 20
    ids = await archived_ids(mem.store)
    assert Counter(ids) == Counter(m.id for m in first + second)  # each exactly once
    sources = await mem.knowledge.sources()
    assert sorted((s.metadata["seq_from"], s.metadata["seq_to"]) for s in sources) == [(1, 30), (31, 50)]


async def test_criterion_optimistic_lock_stale_plan_is_refused(mem: Memory):
    """§4: the version column guards the archive: a plan made before an append cannot commit."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 12)
    session = await mem.sessions.get(key)
    archiver = mem.knowledge.archiver()
    messages = await mem.store.sessions.messages(session.id, after_seq=session.archived_seq)
    plan, reason = archiver.plan(session, messages, idle=True)
    assert reason is None
    await talk(mem, key, 1, start=12)  # bumps the version
    with pytest.raises(VersionConflict):
        await archiver.knowledge.archive_session(plan)
    assert (await mem.sessions.get(key)).archived_seq == 0  # nothing of the plan was applied
    assert await mem.knowledge.sources() == []


class _AppendFirst:
    """The real knowledge store, with a user appending just before each of the first ``times`` archive commits."""

    def __init__(self, mem: Memory, key: Any, times: int) -> None:
        self._store = mem.store.knowledge
        self._mem = mem
        self._key = key
        self.times = times
        self.appended: list[Message] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def archive_session(self, plan: Any) -> Any:
        if self.times > 0:
            self.times -= 1
            n = len(self.appended) + 100
            self.appended.extend(await talk(self._mem, self._key, 1, start=n))
        return await self._store.archive_session(plan)


async def test_criterion_optimistic_lock_conflict_rereads_and_replans(mem: Memory):
    """§4 + DESIGN.md defect 2: a conflict retries with a *fresh* read, so the retry succeeds and
    includes the message that caused the conflict."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 12)
    racing = _AppendFirst(mem, key, times=2)
    archiver = SessionArchiver(mem.store.sessions, racing, mem.settings)
    report = await archiver.run(now=later())
    assert report.archived == 1 and report.conflicts == 0
    assert len(racing.appended) == 2
    assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored + racing.appended)


async def test_a_session_too_busy_for_optimistic_plans_is_archived_under_its_lock(mem: Memory):
    """Users appending before every optimistic commit: the locked fallback still archives it, exactly once."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 12)
    racing = _AppendFirst(mem, key, times=ARCHIVE_ATTEMPTS)
    report = await SessionArchiver(mem.store.sessions, racing, mem.settings).run(now=later())
    assert report.conflicts == 0 and report.archived == 1
    assert len(racing.appended) == ARCHIVE_ATTEMPTS
    assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored + racing.appended)


class _LockRace(_AppendFirst):
    """Also loses every locked attempt, like PostgreSQL when an append commits as the lock is taken."""

    async def archive_session_locked(self, session_id: Any, planner: Any) -> Any:
        raise VersionConflict("an append was committing as the lock was taken", session_id=session_id)


async def test_a_session_that_keeps_conflicting_is_left_for_the_next_run(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 12)
    racing = _LockRace(mem, key, times=ARCHIVE_ATTEMPTS)
    report = await SessionArchiver(mem.store.sessions, racing, mem.settings).run(now=later())
    assert report.conflicts == 1 and report.archived == 0
    assert await mem.knowledge.sources() == []
    report = await mem.knowledge.archive(at=later())
    assert report.archived == 1
    assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored + racing.appended)


@pytest.mark.postgres
async def test_criterion_repeatable_read_on_postgresql(pg_url, tmp_path):
    """§4: the archive transaction runs at REPEATABLE READ (observed from inside it by a trigger)."""
    import asyncpg

    from omoide.settings import Settings

    settings = Settings(database_url=pg_url, embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute(
                """
                CREATE TABLE isolation_seen (level text);
                CREATE FUNCTION note_isolation() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN INSERT INTO isolation_seen VALUES (current_setting('transaction_isolation')); RETURN NEW; END $$;
                CREATE TRIGGER note_isolation AFTER INSERT ON knowledge_sources
                    FOR EACH ROW EXECUTE FUNCTION note_isolation();
                """
            )
            key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
            await talk(mem, key, 12)
            assert (await mem.knowledge.archive(at=later())).archived == 1
            assert [r["level"] for r in await conn.fetch("SELECT level FROM isolation_seen")] == ["repeatable read"]
        finally:
            await conn.close()


async def test_sqlite_archive_waits_for_another_writer_and_then_rereads(sqlite_url, tmp_path):
    """SQLite's counterpart of REPEATABLE READ: the archive is a BEGIN IMMEDIATE transaction. Another
    process's write transaction that changes the session makes the archiver wait, conflict and re-read."""
    import sqlite3

    from omoide.settings import Settings

    settings = Settings(database_url=sqlite_url, embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
        stored = await talk(mem, key, 12)
        other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None, timeout=10)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("UPDATE sessions SET version = version + 1")
            task = asyncio.create_task(mem.knowledge.archive(at=later()))
            await asyncio.sleep(0.3)
            assert not task.done()  # waiting for the other writer
            other.execute("COMMIT")
            report = await asyncio.wait_for(task, 10)
        finally:
            other.close()
        assert report.archived == 1
        assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored)


async def test_criterion_message_based_chunking(mem: Memory):
    """§4: chunks are windows of messages (default 10, overlap 2), not arbitrary text cuts."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 20)
    await mem.knowledge.archive(at=later())
    (source,) = await mem.knowledge.sources()
    chunks = await mem.store.knowledge.chunks_of_source(source.id)
    assert [c.location["message_count"] for c in chunks] == [10, 10, 4]
    for chunk in chunks:
        lines = chunk.content.split("\n\n")
        assert len(lines) == chunk.location["message_count"]
        assert all("**name-u1 (User)**: " in line or "**omoide (Assistant)**: " in line for line in lines)
        assert chunk.token_count > 0
        assert chunk.started_at is not None and chunk.ended_at is not None
        assert chunk.channel_id == "222"


async def test_criterion_filters_bot_only_and_short_sessions(mem: Memory):
    """§4: bot-only and too-short sessions are marked archived without knowledge; the watermark moves."""
    bot_key = mem.session_key(platform="discord", workspace="111", channel="222", user="bot-only")
    for i in range(6):
        await mem.append(bot_key, Message.assistant(f"定期のお知らせ {i}: メンテナンスは明日の午前です。"))
    short_key = mem.session_key(platform="discord", workspace="111", channel="222", user="short")
    await mem.append(short_key, Message.user("hi", author_id="short"))
    await mem.append(short_key, Message.assistant("hello!"))
    report = await mem.knowledge.archive(at=later())
    assert (report.filtered, report.archived, report.sources) == (2, 0, 0)
    reasons = sorted(o.reason for o in report.outcomes)
    assert reasons == ["no_user_message", "too_short"]
    assert await mem.knowledge.sources() == []
    for key, n in ((bot_key, 6), (short_key, 2)):
        session = await mem.sessions.get(key)
        assert session.status is SessionStatus.ARCHIVED
        assert session.archived_seq == n
    # the short session continues: only the new messages become knowledge
    more = await talk(mem, short_key, 4, start=10, user="short")
    await mem.knowledge.archive(at=later() + timedelta(hours=1))
    (source,) = await mem.knowledge.sources()
    assert (source.metadata["seq_from"], source.metadata["seq_to"]) == (3, 6)
    assert sorted(await archived_ids(mem.store)) == sorted(m.id for m in more)


def test_filter_reason_rules():
    assert filter_reason([], min_chars=0) == "empty"
    assert filter_reason([Message.assistant("long enough text " * 5)], min_chars=10) == "no_user_message"
    assert filter_reason([Message.user("bot said it " * 5, is_bot=True)], min_chars=10) == "no_user_message"
    assert filter_reason([Message.user("hi"), Message.assistant("hello")], min_chars=30) == "too_short"
    assert filter_reason([Message.user("hi"), Message.assistant("hello")], min_chars=7) is None


# ------------------------------------------------------------------ metadata


async def test_a_message_hit_of_an_archived_conversation_links_to_that_message(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", policy="channel")
    said = [
        ("10", "Alice", "9001", "週末はどこか出かけますか？"),
        ("20", "Bob", "9002", "鎌倉で紫陽花を見る予定です"),
        ("30", "Carol", "9003", "いいですね、天気が心配です"),
        ("10", "Alice", None, None),  # a message without a platform id
    ]
    for author, name, message_id, text in said:
        await mem.append(
            key, Message.user(text or "晴れるといいですね", author_id=author, author_name=name, message_id=message_id)
        )
    await mem.knowledge.archive(at=later())
    await mem.knowledge.embed()
    (source,) = await mem.knowledge.sources()
    (chunk,) = await mem.store.knowledge.chunks_of_source(source.id)
    assert sorted(chunk.location["platform_message_ids"].values()) == ["9001", "9002", "9003"]
    result = await mem.search("鎌倉の紫陽花", workspace="111", k=4)
    links = {h.quote.rsplit(": ", 1)[-1]: h.jump_url for h in result.hits if h.unit == "turn" and h.quote}
    assert links == {
        "週末はどこか出かけますか？": "https://discord.com/channels/111/222/9001",
        "鎌倉で紫陽花を見る予定です": "https://discord.com/channels/111/222/9002",
        "いいですね、天気が心配です": "https://discord.com/channels/111/222/9003",
        "晴れるといいですね": source.uri,  # no platform id: the conversation's link
    }

    await mem.forget_user(workspace="111", user="20")  # Bob's line and its platform id go
    (chunk,) = await mem.store.knowledge.chunks_of_source(source.id)
    assert sorted(chunk.location["platform_message_ids"].values()) == ["9001", "9003"]


async def test_metadata_records_every_participant_and_the_discord_jump_url(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", policy="channel")
    first = await mem.append(
        key,
        Message.user(
            "最初の発言です。みんなで週末の予定を話しましょう。", author_id="10", author_name="Alice", message_id="9001"
        ),
    )
    await mem.append(key, Message.user("いいね、土曜日はどう？", author_id="20", author_name="Bob", message_id="9002"))
    await mem.append(
        key, Message.assistant("土曜日は晴れの予報です。", author_id="99", author_name="omoide", message_id="9003")
    )
    last = await mem.append(
        key, Message.user("じゃあ土曜日で！", author_id="30", author_name="Carol", message_id="9004")
    )
    await mem.knowledge.archive(at=later(), channel_names=lambda s: "general" if s.channel_id == "222" else None)
    (source,) = await mem.knowledge.sources()
    meta = source.metadata
    assert meta["participants"] == ["10", "20", "99", "30"]
    assert meta["participant_names"] == {"10": "Alice", "20": "Bob", "99": "omoide", "30": "Carol"}
    assert meta["channel_id"] == "222" and meta["channel_name"] == "general"
    assert meta["workspace_id"] == "111"
    assert meta["message_count"] == 4
    assert meta["origin_session_key"] == str(key)
    assert meta["origin_session_id"] == int((await mem.sessions.get(key)).id)
    assert datetime.fromisoformat(meta["first_message_at"]) == first.created_at
    assert datetime.fromisoformat(meta["last_message_at"]) == last.created_at
    assert datetime.fromisoformat(meta["first_message_at"]).utcoffset() == timedelta(0)
    assert source.uri == "https://discord.com/channels/111/222/9001"
    assert source.title.startswith("Discord conversation in #general with Alice, Bob, Carol · ")


async def test_channel_id_is_not_reported_as_a_channel_name(mem: Memory):
    """DESIGN.md defect 2: seed 000 stored the channel id as 'channel_name'."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 4)
    await mem.knowledge.archive(at=later())
    (source,) = await mem.knowledge.sources()
    assert "channel_name" not in source.metadata
    assert "channel 222" in source.title


def test_source_type_and_uri_per_platform():
    from omoide.keys import session_key
    from omoide.models import KeyPolicy, Session, SessionId

    def session(platform: str, workspace: str, channel: str | None, thread: str | None = None) -> Session:
        now = utcnow()
        key = session_key(platform=platform, workspace=workspace, channel=channel or "x", policy=KeyPolicy.CHANNEL)
        return Session(
            SessionId(1), key.value, KeyPolicy.CHANNEL, platform, workspace, channel, thread, None, None,
            SessionStatus.ACTIVE, 1, 0, 0, 0, now, now,
        )  # fmt: skip

    assert source_type("discord") == "discord_session"
    assert source_type("slack") == "slack_session"
    assert source_type("agent") == "agent_session"
    assert source_uri(session("discord", "111", "222"), None) == "https://discord.com/channels/111/222"
    assert source_uri(session("discord", "111", "222", thread="333"), "9") == "https://discord.com/channels/111/333/9"
    assert source_uri(session("discord", "guild-name", "222"), "9") is None  # not snowflakes
    assert source_uri(session("slack", "T01", "C02"), "1712.5") == "slack://channel?team=T01&id=C02"
    assert source_uri(session("agent", "default", None), None) is None


async def test_agent_sessions_become_agent_session_sources(mem: Memory):
    key = mem.session_key(workspace="default", agent="notes", policy="agent")
    await talk(mem, key, 6)
    await mem.knowledge.archive(now=True)
    (source,) = await mem.knowledge.sources()
    assert source.type == "agent_session"
    assert source.uri is None
    assert source.metadata["agent_id"] == "notes"
    assert "agent session notes" in source.title


# ------------------------------------------------------------------ triggers, batches


async def test_a_large_active_session_is_archived_and_keeps_its_window(settings):
    async with Memory.open(tuned(settings, archive_message_threshold=30)) as mem:
        key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
        stored = await talk(mem, key, 35)
        window_before = [m.id for m in await mem.history(key)]
        report = await mem.knowledge.archive()  # not idle: archived for its size
        assert report.archived == 1
        assert report.outcomes[0].reason == "threshold"
        session = await mem.sessions.get(key)
        assert session.status is SessionStatus.ACTIVE
        assert session.archived_seq == 35
        assert [m.id for m in await mem.history(key)] == window_before  # the prompt window is untouched
        assert len(await mem.sessions.messages(key)) == mem.settings.session_window
        more = await talk(mem, key, 3, start=35)
        assert (await mem.knowledge.archive()).archived == 0  # 3 < 30 and not idle
        await mem.knowledge.archive(at=later())
        assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored + more)


async def test_now_and_older_than(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 4)
    assert (await mem.knowledge.archive(older_than=timedelta(minutes=5))).archived == 0
    assert (await mem.knowledge.archive(older_than=timedelta(0))).archived == 1
    await talk(mem, key, 4, start=4)
    assert (await mem.knowledge.archive(now=True)).archived == 1
    with pytest.raises(InvalidInput, match="negative"):
        await mem.knowledge.archive(older_than=timedelta(seconds=-1))


async def test_every_due_session_is_archived_in_batches(settings):
    async with Memory.open(tuned(settings, archive_batch_size=2)) as mem:
        keys = [mem.session_key(platform="discord", workspace="111", channel="222", user=f"u{i}") for i in range(7)]
        stored = []
        for key in keys:
            stored += await talk(mem, key, 4, user=str(key).rsplit("=", 1)[1])
        seen = []
        report = await mem.knowledge.archive(at=later(), on_session=seen.append)
        assert report.archived == 7 and len(seen) == 7
        assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in stored)


async def test_expired_sessions_are_still_archived(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 6)
    assert await mem.sessions.expire_idle(now=later() + timedelta(days=2)) == 1
    assert (await mem.sessions.get(key)).status is SessionStatus.EXPIRED
    assert (await mem.knowledge.archive(at=later())).archived == 1
    assert (await mem.sessions.get(key)).status is SessionStatus.ARCHIVED
    assert sorted(await archived_ids(mem.store)) == sorted(m.id for m in stored)


def test_concurrency_follows_seed_000():
    from omoide.settings import Settings

    assert [archive_concurrency(Settings(db_pool_min=1, db_pool_max=n)) for n in (1, 4, 8, 10, 20, 100)] == [
        1,
        1,
        2,
        2,
        5,
        5,
    ]


async def test_sessions_run_concurrently_up_to_the_semaphore(settings):
    async with Memory.open(tuned(settings, db_pool_max=8)) as mem:
        for i in range(6):
            await talk(
                mem, mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}"), 4, user=f"u{i}"
            )
        archiver = mem.knowledge.archiver()
        assert archiver.concurrency == 2
        inflight, peak = 0, 0
        plan = archiver.plan

        def slow_plan(*args: Any, **kwargs: Any) -> Any:
            nonlocal inflight, peak
            inflight += 1
            peak = max(peak, inflight)
            import time

            time.sleep(0.05)
            inflight -= 1
            return plan(*args, **kwargs)

        archiver.plan = slow_plan  # type: ignore[method-assign]
        report = await archiver.run(now=later())
        assert report.archived == 6
        assert peak == 2


# ------------------------------------------------------------------ races


async def test_appends_racing_the_archiver_lose_nothing(settings):
    """A user appending while the archiver archives the same sessions: every message exactly once."""
    async with Memory.open(tuned(settings, archive_message_threshold=5, archive_overlap=2)) as mem:
        keys = [mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}") for i in range(3)]
        appended: list[Message] = []
        done = asyncio.Event()

        async def user(key: Any, name: str) -> None:
            for i in range(60):
                appended.extend(await talk(mem, key, 1, start=i, user=name))
                await asyncio.sleep(0.003 if i % 5 == 0 else 0)  # a fast typist, with short pauses

        async def archiver() -> int:
            runs = 0
            while not done.is_set():
                await mem.knowledge.archive()
                runs += 1
                await asyncio.sleep(0.001)
            return runs

        arch = asyncio.create_task(archiver())
        await asyncio.gather(*(user(k, f"u{i}") for i, k in enumerate(keys)))
        done.set()
        assert await arch > 1
        archived_while_typing = len(await mem.knowledge.sources())
        await mem.knowledge.archive(now=True)
        ids = await archived_ids(mem.store)
        assert len(ids) == len(set(ids))  # no duplicates
        assert Counter(ids) == Counter(m.id for m in appended)  # nothing lost
        assert archived_while_typing > 0  # it really archived while the users were typing


async def test_a_bot_reply_archived_apart_from_its_question_is_kept(mem: Memory):
    """The filters judge the conversation: a bot-only increment after a user's turn is not "bot-only"."""
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    stored = await talk(mem, key, 11)  # ends with the user's turn
    assert (await mem.knowledge.archive(at=later())).archived == 1
    reply = await mem.append(
        key, Message.assistant("返事: 明日は雨の予報です。", author_id="bot", author_name="omoide")
    )
    report = await mem.knowledge.archive(at=later())
    assert (report.archived, report.filtered) == (1, 0)
    assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in [*stored, reply])


async def test_a_bot_only_session_is_still_filtered(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    for i in range(3):
        await mem.append(key, Message.assistant(f"お知らせ {i}: メンテナンスは明日です。", author_id="bot"))
    report = await mem.knowledge.archive(at=later())
    assert (report.archived, report.filtered) == (0, 1)
    await mem.append(key, Message.assistant("お知らせ: 終わりました。", author_id="bot"))
    assert (await mem.knowledge.archive(at=later())).filtered == 1  # the kept overlap is bot-only too
    assert await mem.knowledge.sources() == []
