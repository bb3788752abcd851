"""The KnowledgeStore contract, run against every backend (SQLite file, PostgreSQL + pgvector).

Archiving (watermark, overlap pruning, the seed-000 defect, version conflicts, races with
appends), the embedding queue (claims, leases, finishing), vectors, listing and status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from omoide.errors import InvalidInput, NotFoundError, SessionNotFound, VersionConflict
from omoide.keys import session_key
from omoide.models import Message, Session, SessionStatus
from omoide.stores._erasure_common import content_hash
from omoide.stores.knowledge import (
    ArchivePlan,
    ArchiveResult,
    ChunkDraft,
    EmbeddingRow,
    KnowledgeStore,
    SourceDraft,
    SourceStatus,
)

T0 = datetime(2024, 1, 19, 9, 0, tzinfo=UTC)  # in the past: messages never move last_active_at


def _key(user: str = "u1", channel: str = "c1", workspace: str = "g1"):
    return session_key(platform="discord", workspace=workspace, channel=channel, user=user)


async def _session_with(store, n: int, *, user: str = "u1", workspace: str = "g1") -> Session:
    session = await store.sessions.get_or_create_session(_key(user=user, workspace=workspace))
    await _append(store, session.id, n)
    fresh = await store.sessions.get_session_by_id(session.id)
    assert fresh is not None
    return fresh


async def _append(store, session_id: int, n: int, *, tag: str = "m") -> None:
    current = await store.sessions.get_session_by_id(session_id)
    assert current is not None
    for i in range(n):
        seq_hint = current.last_seq + i + 1
        if i % 2 == 0:
            msg = Message.user(
                f"{tag}{seq_hint} こんにちは", author_id="u1", author_name="Andy", created_at=T0 + timedelta(seconds=i)
            )
        else:
            msg = Message.assistant(f"{tag}{seq_hint} はい", author_id="bot", created_at=T0 + timedelta(seconds=i))
        await store.sessions.append_message(session_id, msg)


def _chunks_for(messages: Sequence[Message], size: int = 10) -> list[ChunkDraft]:
    chunks = []
    for start in range(0, len(messages), size):
        part = messages[start : start + size]
        chunks.append(
            ChunkDraft(
                content="\n\n".join(f"**{m.author_name or m.role}**: {m.text}" for m in part),
                lexical=" ".join(m.text for m in part),
                token_count=sum(len(m.text) for m in part),
                location={
                    "session_id": part[0].session_id,
                    "seq_start": part[0].seq,
                    "seq_end": part[-1].seq,
                    "seqs": [m.seq for m in part],
                    "total": len(messages),
                },
                channel_id="c1",
                author_ids=sorted({m.author_id for m in part if m.author_id}),
                started_at=part[0].created_at,
                ended_at=part[-1].created_at,
            )
        )
    return chunks


async def _plan(
    store,
    session_id: int,
    *,
    upto: int | None = None,
    keep: int = 5,
    status: SessionStatus = SessionStatus.ARCHIVED,
    with_source: bool = True,
) -> ArchivePlan | None:
    """What an archiver would plan now (``None`` when there is nothing to archive)."""
    session = await store.sessions.get_session_by_id(session_id)
    assert session is not None
    stored = await store.sessions.messages(session_id, after_seq=session.archived_seq)
    return _plan_for(session, stored, upto=upto, keep=keep, status=status, with_source=with_source)


def _plan_for(
    session: Session,
    stored,
    *,
    upto: int | None = None,
    keep: int = 5,
    status: SessionStatus = SessionStatus.ARCHIVED,
    with_source: bool = True,
) -> ArchivePlan | None:
    """The plan for ``session`` and its unarchived messages as read (also a locked-archive planner)."""
    upto = session.last_seq if upto is None else upto
    if upto <= session.archived_seq:
        return None
    messages = [m for m in stored if session.archived_seq < m.seq <= upto]
    source = SourceDraft(
        workspace_id=session.workspace_id,
        type="discord_session",
        title=f"会話ログ: {session.key}",
        uri="https://discord.com/channels/g1/c1",
        metadata={
            "origin_session_key": session.key,
            "origin_session_id": session.id,
            "participants": sorted({m.author_id for m in messages if m.author_id}),
            "message_count": len(messages),
            "first_message_at": messages[0].created_at if messages else None,
        },
    )
    return ArchivePlan(
        session_id=session.id,
        expected_version=session.version,
        upto_seq=upto,
        source=source if with_source else None,
        chunks=_chunks_for(messages) if with_source else (),
        keep_newest=keep,
        status=status,
    )


async def _archive_until_done(store, session_id: int, *, keep: int = 5) -> ArchiveResult | None:
    """Archive like the archiver does: on a conflict, re-read and plan again."""
    for _ in range(100):
        plan = await _plan(store, session_id, keep=keep)
        if plan is None:
            return None
        try:
            return await store.knowledge.archive_session(plan)
        except VersionConflict:
            await asyncio.sleep(0)
    raise AssertionError("the archive kept conflicting")


async def _archived_seqs(store, session_id: int) -> list[int]:
    """Every message seq that reached long-term memory for this session (with repeats)."""
    seqs: list[int] = []
    for source in await store.knowledge.list_sources(limit=10_000):
        if source.metadata.get("origin_session_id") != session_id:
            continue
        for chunk in await store.knowledge.chunks_of_source(source.id):
            seqs.extend(chunk.location["seqs"])
    return sorted(seqs)


async def _assert_exactly_once(store, session_id: int) -> Session:
    session = await store.sessions.get_session_by_id(session_id)
    assert session is not None
    archived = await _archived_seqs(store, session_id)
    assert archived == list(range(1, session.archived_seq + 1)), "every archived message exactly once"
    remaining = [m.seq for m in await store.sessions.messages(session_id, after_seq=session.archived_seq)]
    assert remaining == list(range(session.archived_seq + 1, session.last_seq + 1)), "nothing unarchived lost"
    return session


def _vec(seed: int, dims: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


async def _sources(store, n: int, *, workspace: str = "g1", chunks: int = 2) -> list[int]:
    ids = []
    for i in range(n):
        drafts = [
            ChunkDraft(content=f"doc {i} part {j}", lexical=f"doc {i} part {j}", token_count=4) for j in range(chunks)
        ]
        source_id, _ = await store.knowledge.add_source(
            SourceDraft(workspace_id=workspace, type="document", title=f"doc {i}"), drafts
        )
        ids.append(source_id)
    return ids


# --------------------------------------------------------------------------- protocol


async def test_store_satisfies_knowledge_protocol(store):
    assert isinstance(store.knowledge, KnowledgeStore)


# --------------------------------------------------------------------------- archiving


async def test_archive_happy_path_moves_watermark_and_keeps_overlap(store):
    session = await _session_with(store, 20)
    plan = await _plan(store, session.id, keep=5)
    assert plan is not None
    result = await store.knowledge.archive_session(plan)

    assert result.source_id is not None
    assert len(result.chunk_ids) == 2 and result.chunk_ids[0] < result.chunk_ids[1]
    assert result.pruned == 15
    assert result.session_version == session.version + 1

    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert (after.archived_seq, after.last_seq, after.status) == (20, 20, SessionStatus.ARCHIVED)
    assert after.version == session.version + 1
    assert [m.seq for m in await store.sessions.messages(session.id)] == [16, 17, 18, 19, 20]  # the overlap stays
    assert await store.sessions.messages(session.id, after_seq=after.archived_seq) == []

    source = await store.knowledge.get_source(result.source_id)
    assert source is not None
    assert source.status is SourceStatus.PENDING
    assert (source.type, source.workspace_id, source.chunk_count, source.attempts) == ("discord_session", "g1", 2, 0)
    assert source.title == f"会話ログ: {session.key}"
    assert source.uri == "https://discord.com/channels/g1/c1"
    assert source.metadata["origin_session_id"] == session.id
    assert source.metadata["participants"] == ["bot", "u1"]
    assert source.metadata["first_message_at"] == T0.isoformat()  # datetimes are stored as ISO text
    assert source.created_at.utcoffset() == timedelta(0)

    chunks = await store.knowledge.chunks_of_source(result.source_id)
    assert [c.id for c in chunks] == list(result.chunk_ids)
    assert [c.chunk_index for c in chunks] == [0, 1]
    first = chunks[0]
    assert first.location["seqs"] == list(range(1, 11))
    assert first.content.startswith("**Andy**: m1 こんにちは")
    assert first.lexical.startswith("m1 こんにちは")
    assert first.author_ids == ("bot", "u1")
    assert first.channel_id == "c1" and first.thread_id is None
    assert first.started_at == T0 and first.ended_at == T0 + timedelta(seconds=9)
    assert first.workspace_id == "g1" and first.source_id == result.source_id
    assert first.token_count == plan.chunks[0].token_count
    await _assert_exactly_once(store, session.id)


async def test_seed_000_defect_every_message_archived_exactly_once(store):
    """Seed 000 sliced the pruned list with the old index and lost the next 20 messages."""
    session = await _session_with(store, 30)
    first = await _archive_until_done(store, session.id, keep=5)
    assert first is not None and first.pruned == 25
    assert [m.seq for m in await store.sessions.messages(session.id)] == [26, 27, 28, 29, 30]

    await _append(store, session.id, 20)
    again = await store.sessions.get_session_by_id(session.id)
    assert again is not None and again.status is SessionStatus.ACTIVE  # a message re-activates it
    second = await _archive_until_done(store, session.id, keep=5)
    assert second is not None and second.source_id != first.source_id
    assert second.pruned == 20  # the old overlap 26..30 and 31..45

    second_seqs = [s for c in await store.knowledge.chunks_of_source(second.source_id) for s in c.location["seqs"]]
    assert second_seqs == list(range(31, 51))  # the overlap is never archived again
    final = await _assert_exactly_once(store, session.id)
    assert (final.archived_seq, final.last_seq) == (50, 50)
    assert [m.seq for m in await store.sessions.messages(session.id)] == [46, 47, 48, 49, 50]


async def test_version_conflict_writes_nothing(store):
    session = await _session_with(store, 12)
    plan = await _plan(store, session.id)
    assert plan is not None
    await store.sessions.append_message(session.id, Message.user("arrives after the archiver read"))

    with pytest.raises(VersionConflict) as info:
        await store.knowledge.archive_session(plan)
    assert info.value.details["session_id"] == session.id

    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert (after.archived_seq, after.last_seq, after.status) == (0, 13, SessionStatus.ACTIVE)
    assert after.version == session.version + 1  # only the append
    assert len(await store.sessions.messages(session.id)) == 13
    assert await store.knowledge.list_sources() == []
    status = await store.knowledge.knowledge_status()
    assert status.chunks == 0 and sum(status.sources.values()) == 0

    replanned = await _plan(store, session.id)  # re-read, plan again: succeeds
    assert replanned is not None
    assert (await store.knowledge.archive_session(replanned)).source_id is not None
    await _assert_exactly_once(store, session.id)


async def test_upto_seq_must_be_beyond_watermark_and_within_messages(store):
    session = await _session_with(store, 10)
    plan = await _plan(store, session.id)
    assert plan is not None
    for bad in (11, 100):
        with pytest.raises(InvalidInput, match="upto_seq"):
            await store.knowledge.archive_session(ArchivePlan(**{**_fields(plan), "upto_seq": bad, "chunks": ()}))
    with pytest.raises(InvalidInput, match="upto_seq"):
        await store.knowledge.archive_session(ArchivePlan(**{**_fields(plan), "upto_seq": 0, "chunks": ()}))

    partial = await _plan(store, session.id, upto=6)
    assert partial is not None
    result = await store.knowledge.archive_session(partial)
    assert result.pruned == 5  # 1..6 archived, but 6..10 are the newest 5: only 1..5 go
    again = await store.sessions.get_session_by_id(session.id)
    assert again is not None and again.archived_seq == 6
    with pytest.raises(InvalidInput, match="watermark"):
        await store.knowledge.archive_session(ArchivePlan(**{**_fields(partial), "expected_version": again.version}))
    assert len(await store.knowledge.list_sources()) == 1
    await _assert_exactly_once(store, session.id)


def _fields(plan: ArchivePlan) -> dict:
    return {f: getattr(plan, f) for f in plan.__dataclass_fields__}


async def test_archive_of_missing_session_raises(store):
    plan = ArchivePlan(session_id=987654, expected_version=1, upto_seq=1, source=None)
    with pytest.raises(SessionNotFound):
        await store.knowledge.archive_session(plan)


async def test_filtered_plan_without_source_only_moves_the_watermark(store):
    session = await _session_with(store, 8)
    plan = await _plan(store, session.id, keep=3, with_source=False)
    assert plan is not None
    result = await store.knowledge.archive_session(plan)
    assert result.source_id is None and result.chunk_ids == ()
    assert result.pruned == 5
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None
    assert (after.archived_seq, after.status, after.version) == (8, SessionStatus.ARCHIVED, session.version + 1)
    assert [m.seq for m in await store.sessions.messages(session.id)] == [6, 7, 8]
    assert await store.knowledge.list_sources() == []


async def test_keep_newest_bounds(store):
    session = await _session_with(store, 6)
    plan = await _plan(store, session.id, keep=0)
    assert plan is not None
    assert (await store.knowledge.archive_session(plan)).pruned == 6
    assert await store.sessions.messages(session.id) == []

    other = await _session_with(store, 6, user="u2")
    plan = await _plan(store, other.id, keep=100)
    assert plan is not None
    assert (await store.knowledge.archive_session(plan)).pruned == 0
    assert len(await store.sessions.messages(other.id)) == 6


async def test_archiving_an_active_sessions_overflow_keeps_it_active(store):
    session = await _session_with(store, 40)
    plan = await _plan(store, session.id, keep=20, status=SessionStatus.ACTIVE)
    assert plan is not None
    result = await store.knowledge.archive_session(plan)
    assert result.pruned == 20
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and after.status is SessionStatus.ACTIVE and after.archived_seq == 40
    assert [m.seq for m in await store.sessions.history(session.id, window=20)] == list(range(21, 41))


async def test_malformed_plans_are_refused_before_anything_is_written(store):
    session = await _session_with(store, 4)
    plan = await _plan(store, session.id)
    assert plan is not None
    bad_plans = [
        ArchivePlan(**{**_fields(plan), "keep_newest": -1}),
        ArchivePlan(**{**_fields(plan), "source": None}),  # chunks without a source
        ArchivePlan(**{**_fields(plan), "status": "gone"}),
        ArchivePlan(**{**_fields(plan), "source": SourceDraft(workspace_id="g1", type="", title="x")}),
        ArchivePlan(**{**_fields(plan), "chunks": [ChunkDraft(content="x", lexical="x", token_count=-1)]}),
        ArchivePlan(
            **{**_fields(plan), "chunks": [ChunkDraft(content="x", lexical="x", token_count=1, author_ids="u1")]}
        ),
        ArchivePlan(
            **{**_fields(plan), "source": SourceDraft(workspace_id="g1", type="t", title="x", metadata={"s": {1}})}
        ),
        ArchivePlan(**{**_fields(plan), "source": SourceDraft(workspace_id="other", type="t", title="x")}),
    ]
    for bad in bad_plans:
        with pytest.raises(InvalidInput):
            await store.knowledge.archive_session(bad)
    with pytest.raises(InvalidInput):
        await store.knowledge.archive_session("not a plan")
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and (after.version, after.archived_seq) == (session.version, 0)
    assert await store.knowledge.list_sources() == [] and len(await store.sessions.messages(session.id)) == 4


async def test_appends_racing_archives_lose_nothing(store):
    session = await _session_with(store, 10)

    async def user_typing(round_: int) -> None:
        for i in range(8):
            await store.sessions.append_message(session.id, Message.user(f"race {round_}.{i}", author_id="u1"))
            await asyncio.sleep(0)

    for round_ in range(6):
        await asyncio.gather(_archive_until_done(store, session.id, keep=3), user_typing(round_))
        await _assert_exactly_once(store, session.id)
    await _archive_until_done(store, session.id, keep=3)
    final = await _assert_exactly_once(store, session.id)
    assert final.last_seq == 10 + 6 * 8 == final.archived_seq


async def test_locked_archive_plans_against_what_it_read_under_the_lock(store):
    session = await _session_with(store, 12)
    await _append(store, session.id, 3, tag="later")  # the caller's copy is stale now: no matter
    seen: list[tuple[int, int]] = []

    def planner(current: Session, messages) -> ArchivePlan | None:
        seen.append((current.last_seq, len(messages)))
        return _plan_for(current, messages, keep=3)

    done = await store.knowledge.archive_session_locked(session.id, planner)
    assert done is not None
    plan, result = done
    assert seen == [(15, 15)] and plan.upto_seq == 15
    assert result.source_id is not None and result.pruned == 12
    after = await _assert_exactly_once(store, session.id)
    assert (after.archived_seq, after.status, after.version) == (15, SessionStatus.ARCHIVED, plan.expected_version + 1)


async def test_locked_archive_with_nothing_planned_writes_nothing(store):
    session = await _session_with(store, 4)
    assert await store.knowledge.archive_session_locked(session.id, lambda s, m: None) is None
    after = await store.sessions.get_session_by_id(session.id)
    assert after is not None and (after.version, after.archived_seq) == (session.version, 0)
    assert await store.knowledge.list_sources() == []


async def test_locked_archive_refuses_a_plan_for_another_version_or_session(store):
    session = await _session_with(store, 6)
    other = await _session_with(store, 6, user="u2")
    stale = await _plan(store, session.id)
    foreign = await _plan(store, other.id)
    await _append(store, session.id, 1)
    for bad in (stale, foreign, "not a plan"):
        with pytest.raises(InvalidInput):
            await store.knowledge.archive_session_locked(session.id, lambda s, m, bad=bad: bad)
    with pytest.raises(InvalidInput, match="planner"):
        await store.knowledge.archive_session_locked(session.id, "not callable")  # type: ignore[arg-type]
    with pytest.raises(SessionNotFound):
        await store.knowledge.archive_session_locked(987654, lambda s, m: None)
    assert await store.knowledge.list_sources() == [] and len(await store.sessions.messages(session.id)) == 7


async def test_appends_racing_locked_archives_lose_nothing(store):
    session = await _session_with(store, 10)

    async def user_typing(round_: int) -> None:
        for i in range(8):
            await store.sessions.append_message(session.id, Message.user(f"race {round_}.{i}", author_id="u1"))
            await asyncio.sleep(0)

    async def locked_archive() -> None:
        for _ in range(100):
            try:
                await store.knowledge.archive_session_locked(session.id, lambda s, m: _plan_for(s, m, keep=3))
                return
            except VersionConflict:  # PostgreSQL: an append was committing as the lock was taken
                await asyncio.sleep(0)
        raise AssertionError("the locked archive kept conflicting")

    for round_ in range(6):
        await asyncio.gather(locked_archive(), user_typing(round_))
        await _assert_exactly_once(store, session.id)
    await locked_archive()
    final = await _assert_exactly_once(store, session.id)
    assert final.last_seq == 10 + 6 * 8 == final.archived_seq


async def test_concurrent_archivers_of_one_session_archive_once(store):
    session = await _session_with(store, 15)
    plans = [await _plan(store, session.id) for _ in range(4)]
    results = await asyncio.gather(*(store.knowledge.archive_session(p) for p in plans if p), return_exceptions=True)
    assert sum(isinstance(r, ArchiveResult) for r in results) == 1
    assert all(isinstance(r, ArchiveResult | VersionConflict) for r in results)
    assert len(await store.knowledge.list_sources()) == 1
    await _assert_exactly_once(store, session.id)


async def test_sessions_to_archive_picks_idle_or_overflowing_oldest_first(store):
    idle = await _session_with(store, 3, user="idle")
    expired = await _session_with(store, 2, user="expired")
    await store.sessions.update_session(expired.id, expected_version=expired.version, status=SessionStatus.EXPIRED)
    done = await _session_with(store, 4, user="done")
    plan = await _plan(store, done.id)
    assert plan is not None
    await store.knowledge.archive_session(plan)
    await asyncio.sleep(0.01)
    cutoff = datetime.now(UTC)
    await asyncio.sleep(0.01)
    busy = await _session_with(store, 12, user="busy")
    quiet = await _session_with(store, 2, user="quiet")
    empty = await store.sessions.get_or_create_session(_key(user="empty"))

    picked = await store.knowledge.sessions_to_archive(idle_before=cutoff, min_unarchived=10, limit=10)
    assert [s.id for s in picked] == [idle.id, expired.id, busy.id]
    assert quiet.id not in {s.id for s in picked} and empty.id not in {s.id for s in picked}
    assert [
        s.id for s in await store.knowledge.sessions_to_archive(idle_before=cutoff, min_unarchived=10, limit=2)
    ] == [
        idle.id,
        expired.id,
    ]
    everything = await store.knowledge.sessions_to_archive(
        idle_before=datetime.now(UTC) + timedelta(hours=1), min_unarchived=1000, limit=100
    )
    assert [s.id for s in everything] == [idle.id, expired.id, busy.id, quiet.id]
    with pytest.raises(InvalidInput):
        await store.knowledge.sessions_to_archive(idle_before=cutoff, min_unarchived=0, limit=10)
    with pytest.raises(InvalidInput):
        await store.knowledge.sessions_to_archive(idle_before="yesterday", min_unarchived=1, limit=10)


# ------------------------------------------------------------------------- sources


async def test_add_source_list_and_get(store):
    drafts = [
        ChunkDraft(
            content="**Andy**: 誕生日は3月15日",
            lexical="誕生 日 3 月 15 日",
            token_count=9,
            location={"page": 1},
            author_ids=("u1",),
            started_at=T0,
            ended_at=T0,
            thread_id="t1",
        ),
        ChunkDraft(content="second", lexical="second", token_count=1),
    ]
    first_id, chunk_ids = await store.knowledge.add_source(
        SourceDraft(workspace_id="g1", type="document", title="readme", uri="file:///readme.md", metadata={"a": 1}),
        drafts,
    )
    empty_id, none = await store.knowledge.add_source(
        SourceDraft(workspace_id="g2", type="document", title="empty"), []
    )
    assert none == [] and len(chunk_ids) == 2
    third = await _sources(store, 3, workspace="g1")

    listed = await store.knowledge.list_sources()
    assert [s.id for s in listed] == [*reversed(third), empty_id, first_id]  # newest first
    assert [s.id for s in await store.knowledge.list_sources(workspace_id="g2")] == [empty_id]
    assert [s.id for s in await store.knowledge.list_sources(workspace_id="g1", limit=2, offset=1)] == [
        third[1],
        third[0],
    ]
    assert await store.knowledge.list_sources(workspace_id="nowhere") == []

    # sources archived from one session (metadata origin_session_id), by index
    from_session = []
    for i, origin in enumerate([7, 8, 7]):
        sid, _ = await store.knowledge.add_source(
            SourceDraft(workspace_id="g1", type="session", title=f"s{i}", metadata={"origin_session_id": origin}), []
        )
        from_session.append(sid)
    listed_7 = await store.knowledge.list_sources(workspace_id="g1", origin_session_id=7)
    assert [s.id for s in listed_7] == [from_session[2], from_session[0]]
    assert await store.knowledge.list_sources(workspace_id="g2", origin_session_id=7) == []
    assert [s.id for s in await store.knowledge.list_sources(workspace_id="g1", origin_session_id=8)] == [
        from_session[1]
    ]
    with pytest.raises(InvalidInput):
        await store.knowledge.list_sources(origin_session_id=7)  # needs the workspace

    source = await store.knowledge.get_source(first_id)
    assert source is not None
    assert (source.chunk_count, source.metadata, source.uri, source.status) == (
        2,
        {"a": 1},
        "file:///readme.md",
        SourceStatus.PENDING,
    )
    assert source.error is None
    chunks = await store.knowledge.chunks_of_source(first_id)
    assert [c.id for c in chunks] == chunk_ids
    assert chunks[0].location == {"page": 1} and chunks[0].thread_id == "t1" and chunks[0].author_ids == ("u1",)
    assert chunks[1].started_at is None and chunks[1].author_ids == () and chunks[1].location == {}
    assert (await store.knowledge.get_source(empty_id)).chunk_count == 0
    assert await store.knowledge.get_source(999_999) is None
    assert await store.knowledge.chunks_of_source(999_999) == []
    with pytest.raises(InvalidInput):
        await store.knowledge.add_source(SourceDraft(workspace_id="", type="document", title="x"), [])
    with pytest.raises(InvalidInput):
        await store.knowledge.list_sources(limit=-1)


# -------------------------------------------------------------------------- claims


async def test_claims_take_pending_oldest_first_and_respect_leases(store):
    ids = await _sources(store, 3)
    assert await store.knowledge.claim_sources(limit=2, lease_seconds=60) == ids[:2]
    assert await store.knowledge.claim_sources(limit=10, lease_seconds=60) == ids[2:]
    assert await store.knowledge.claim_sources(limit=10, lease_seconds=60) == []  # all leased
    claimed = await store.knowledge.get_source(ids[0])
    assert claimed is not None and claimed.status is SourceStatus.PROCESSING and claimed.attempts == 1


async def test_an_expired_lease_is_reclaimed(store):
    [source_id] = await _sources(store, 1)
    assert await store.knowledge.claim_sources(limit=5, lease_seconds=60) == [source_id]
    assert await store.knowledge.claim_sources(limit=5, lease_seconds=60) == []  # leased
    await asyncio.sleep(0.4)  # the worker "crashed"; a claimer with a 0.2 s lease finds it expired
    assert await store.knowledge.claim_sources(limit=5, lease_seconds=0.2) == [source_id]
    again = await store.knowledge.get_source(source_id)
    assert again is not None and again.attempts == 2 and again.status is SourceStatus.PROCESSING
    assert await store.knowledge.claim_sources(limit=5, lease_seconds=60) == []  # the new claim has a fresh lease


async def test_concurrent_claimers_never_share_a_source(store):
    ids = await _sources(store, 24, chunks=1)
    batches = await asyncio.gather(*(store.knowledge.claim_sources(limit=5, lease_seconds=60) for _ in range(6)))
    claimed = [i for batch in batches for i in batch]
    assert len(claimed) == len(set(claimed)) == 24
    assert sorted(claimed) == ids


async def test_finish_source_transitions(store):
    ids = await _sources(store, 3)
    await store.knowledge.claim_sources(limit=3, lease_seconds=60)
    await store.knowledge.finish_source(ids[0], status=SourceStatus.READY)
    await store.knowledge.finish_source(ids[1], status=SourceStatus.FAILED, error="embedder said 400: input too long")
    await store.knowledge.finish_source(ids[2], status=SourceStatus.PENDING, error="timeout, will retry")

    ready, failed, retry = [await store.knowledge.get_source(i) for i in ids]
    assert ready.status is SourceStatus.READY and ready.error is None
    assert failed.status is SourceStatus.FAILED and failed.error == "embedder said 400: input too long"
    assert retry.status is SourceStatus.PENDING and retry.error == "timeout, will retry"
    assert ready.updated_at >= ready.created_at

    assert await store.knowledge.claim_sources(limit=10, lease_seconds=60) == [ids[2]]  # only the retry
    assert (await store.knowledge.get_source(ids[2])).attempts == 2
    await store.knowledge.finish_source(ids[0], status="pending")  # reindex: ready -> pending
    assert (await store.knowledge.get_source(ids[0])).status is SourceStatus.PENDING

    with pytest.raises(InvalidInput, match="claim_sources"):
        await store.knowledge.finish_source(ids[0], status=SourceStatus.PROCESSING)
    with pytest.raises(InvalidInput):
        await store.knowledge.finish_source(ids[0], status="done")
    with pytest.raises(NotFoundError):
        await store.knowledge.finish_source(987654, status=SourceStatus.READY)
    with pytest.raises(InvalidInput):
        await store.knowledge.claim_sources(limit=0, lease_seconds=60)
    with pytest.raises(InvalidInput):
        await store.knowledge.claim_sources(limit=1, lease_seconds=-1)


async def test_release_sources_hands_claims_back_without_counting_an_attempt(store):
    """A clean stop (SIGTERM) hands its claims back at once instead of waiting for the lease."""
    ids = await _sources(store, 4)
    await store.knowledge.finish_source(ids[3], status=SourceStatus.PENDING, error="timeout, will retry")
    assert await store.knowledge.claim_sources(limit=4, lease_seconds=600) == ids
    await store.knowledge.finish_source(ids[0], status=SourceStatus.READY)
    assert await store.knowledge.release_sources([ids[0], ids[1], ids[2], ids[3], 987654]) == 3
    done, *released = [await store.knowledge.get_source(i) for i in ids]
    assert done.status is SourceStatus.READY and done.attempts == 1  # finished: left alone
    assert [(s.status, s.attempts) for s in released] == [(SourceStatus.PENDING, 0)] * 3
    assert released[-1].error == "timeout, will retry"  # the last real error stays
    assert await store.knowledge.release_sources([]) == 0
    assert await store.knowledge.claim_sources(limit=4, lease_seconds=600) == ids[1:]  # at once, no lease to wait for
    assert [(await store.knowledge.get_source(i)).attempts for i in ids[1:]] == [1, 1, 1]


async def test_renew_claims_keeps_a_live_workers_sources_out_of_other_claims(store):
    """The embedder renews its claims while it works: a renewed claim is not taken over when
    the lease it started with runs out; a finished or unclaimed source is left alone."""
    ids = await _sources(store, 3)
    assert await store.knowledge.claim_sources(limit=2, lease_seconds=600) == ids[:2]
    await store.knowledge.finish_source(ids[1], status=SourceStatus.READY)
    await asyncio.sleep(0.05)
    assert await store.knowledge.renew_claims([ids[0], ids[1], ids[2], 987654]) == 1
    assert await store.knowledge.renew_claims([]) == 0
    # a claim with a lease of 0.03 s: the renewed source is still held, the unclaimed one is taken
    assert await store.knowledge.claim_sources(limit=3, lease_seconds=0.03) == [ids[2]]
    assert [(s.status, s.attempts) for s in [await store.knowledge.get_source(i) for i in ids]] == [
        (SourceStatus.PROCESSING, 1),
        (SourceStatus.READY, 1),
        (SourceStatus.PROCESSING, 1),
    ]


# ---------------------------------------------------------------------- embeddings


async def test_put_and_get_embeddings_per_model(store):
    ids = await _sources(store, 2, chunks=3)
    missing = await store.knowledge.chunks_missing_embedding(model="m8")
    assert len(missing) == 6 and [c.id for c in missing] == sorted(c.id for c in missing)
    assert missing[0].content == "doc 0 part 0" and missing[0].workspace_id == "g1" and missing[0].source_id == ids[0]

    rows = [EmbeddingRow(chunk_id=c.id, vector=_vec(c.id), content_hash=content_hash(c.content)) for c in missing[:4]]
    assert await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=rows) == 4
    left = await store.knowledge.chunks_missing_embedding(model="m8")
    assert [c.id for c in left] == [c.id for c in missing[4:]]
    assert len(await store.knowledge.chunks_missing_embedding(model="other")) == 6  # per model

    got = await store.knowledge.get_embedding(missing[0].id, model="m8")
    assert got is not None and got.dtype == np.float32 and got.shape == (8,)
    np.testing.assert_allclose(got, _vec(missing[0].id), atol=2e-3)  # halfvec on PostgreSQL
    assert await store.knowledge.get_embedding(missing[0].id, model="other") is None
    assert await store.knowledge.get_embedding(missing[5].id, model="m8") is None

    # upsert replaces
    assert (
        await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=[EmbeddingRow(missing[0].id, _vec(99))])
        == 1
    )
    np.testing.assert_allclose(await store.knowledge.get_embedding(missing[0].id, model="m8"), _vec(99), atol=2e-3)
    # another model of another size beside it
    assert (
        await store.knowledge.put_embeddings(model="m4", dimensions=4, rows=[EmbeddingRow(missing[0].id, _vec(1, 4))])
        == 1
    )
    assert (await store.knowledge.get_embedding(missing[0].id, model="m4")).shape == (4,)


async def test_a_vector_of_text_the_chunk_no_longer_holds_is_not_stored(store):
    """The embedder read a chunk, an erasure rewrote it, then the vector arrives: it is dropped."""
    await _sources(store, 1, chunks=2)
    first, second = await store.knowledge.chunks_missing_embedding(model="m8")
    rows = [
        EmbeddingRow(first.id, _vec(1), content_hash=content_hash("what the chunk held before")),
        EmbeddingRow(second.id, _vec(2), content_hash=content_hash(second.content)),
    ]
    assert await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=rows) == 1
    assert await store.knowledge.get_embedding(first.id, model="m8") is None
    assert await store.knowledge.get_embedding(second.id, model="m8") is not None


async def test_chunks_missing_embedding_filters_and_pages(store):
    ids = await _sources(store, 3, chunks=2)
    of_two = await store.knowledge.chunks_missing_embedding(model="m", source_ids=[ids[0], ids[2]])
    assert {c.source_id for c in of_two} == {ids[0], ids[2]} and len(of_two) == 4
    assert await store.knowledge.chunks_missing_embedding(model="m", source_ids=[]) == []
    first = await store.knowledge.chunks_missing_embedding(model="m", limit=4)
    rest = await store.knowledge.chunks_missing_embedding(model="m", after_id=first[-1].id, limit=4)
    assert len(first) == 4 and len(rest) == 2 and rest[0].id > first[-1].id
    with pytest.raises(InvalidInput):
        await store.knowledge.chunks_missing_embedding(model="")
    with pytest.raises(InvalidInput):
        await store.knowledge.chunks_missing_embedding(model="m", limit=0)


async def test_settled_only_leaves_the_waiting_sources_to_the_claims(store):
    pending, ready, failed = await _sources(store, 3, chunks=2)
    await store.knowledge.finish_source(ready, status=SourceStatus.READY)
    await store.knowledge.finish_source(failed, status=SourceStatus.FAILED, error="gave up")
    settled = await store.knowledge.chunks_missing_embedding(model="m", settled_only=True)
    assert {c.source_id for c in settled} == {ready, failed} and len(settled) == 4
    everything = await store.knowledge.chunks_missing_embedding(model="m")
    assert {c.source_id for c in everything} == {pending, ready, failed}
    with pytest.raises(InvalidInput):
        await store.knowledge.chunks_missing_embedding(model="m", source_ids=[ready], settled_only=True)


async def test_bad_vectors_are_refused_and_nothing_is_written(store):
    await _sources(store, 1, chunks=2)
    a, b = await store.knowledge.chunks_missing_embedding(model="m8")
    good = EmbeddingRow(a.id, _vec(1))
    bad_calls = [
        [good, EmbeddingRow(b.id, _vec(2, 7))],  # wrong length
        [good, EmbeddingRow(b.id, np.full(8, np.nan, dtype=np.float32))],
        [good, EmbeddingRow(b.id, np.full(8, 1e6, dtype=np.float32))],  # beyond halfvec
        [good, EmbeddingRow(b.id, np.ones((2, 4), dtype=np.float32))],
        [good, EmbeddingRow(a.id, _vec(3))],  # the same chunk twice
    ]
    for rows in bad_calls:
        with pytest.raises(InvalidInput):
            await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=rows)
    with pytest.raises(InvalidInput, match="dimensions"):
        await store.knowledge.put_embeddings(model="m8", dimensions=0, rows=[good])
    with pytest.raises(InvalidInput, match="model"):
        await store.knowledge.put_embeddings(model="", dimensions=8, rows=[good])
    assert len(await store.knowledge.chunks_missing_embedding(model="m8")) == 2
    assert await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=[]) == 0
    assert (
        await store.knowledge.put_embeddings(model="m8", dimensions=8, rows=[EmbeddingRow(987654, _vec(1))]) == 0
    )  # gone


async def test_ensure_vector_index(store):
    if store.backend == "postgresql":  # the one backend with an ANN index
        assert await store.knowledge.ensure_vector_index(model="m8", dimensions=8) is True
    assert await store.knowledge.ensure_vector_index(model="m8", dimensions=8) is False
    with pytest.raises(InvalidInput):
        await store.knowledge.ensure_vector_index(model="", dimensions=8)
    with pytest.raises(InvalidInput):
        await store.knowledge.ensure_vector_index(model="m", dimensions=5000)


# -------------------------------------------------------------------------- status


async def test_knowledge_status_counts(store):
    a = await _session_with(store, 12, user="a")
    await _session_with(store, 3, user="b")
    plan = await _plan(store, a.id, keep=2)
    assert plan is not None
    await store.knowledge.archive_session(plan)  # 2 chunks
    await _append(store, a.id, 4)  # a is active again with 4 unarchived
    expired = await _session_with(store, 1, user="c")
    await store.sessions.update_session(expired.id, expected_version=expired.version, status=SessionStatus.EXPIRED)
    ids = await _sources(store, 2, chunks=3)
    await store.knowledge.claim_sources(limit=1, lease_seconds=60)
    await store.knowledge.finish_source(ids[0], status=SourceStatus.FAILED, error="x")
    chunks = await store.knowledge.chunks_missing_embedding(model="m8", limit=3)
    await store.knowledge.put_embeddings(
        model="m8", dimensions=8, rows=[EmbeddingRow(c.id, _vec(c.id)) for c in chunks]
    )
    await store.knowledge.put_embeddings(model="m4", dimensions=4, rows=[EmbeddingRow(chunks[0].id, _vec(0, 4))])

    status = await store.knowledge.knowledge_status()
    assert status.sessions == {"active": 2, "archived": 0, "expired": 1}
    assert status.unarchived_messages == 4 + 3 + 1
    assert status.sources == {"pending": 1, "processing": 1, "ready": 0, "failed": 1}  # the oldest was claimed
    assert status.chunks == 2 + 6
    assert status.embedded == {"m8": 3, "m4": 1}
