"""SummaryStore conformance on SQLite and PostgreSQL: versions, overwrite, scoping, concurrency."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from omoide.errors import InvalidInput, VersionConflict
from omoide.keys import session_key
from omoide.models import Message
from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope, SummaryStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _draft(content: str, *, workspace: str = "g1", scope_id: str = "c1", kind=SummaryKind.SHORT_TERM) -> SummaryDraft:
    return SummaryDraft(workspace, SummaryScope.CHANNEL, scope_id, kind, content, 3, T0, {"by": "test"})


async def test_protocol(store):
    assert isinstance(store.summaries, SummaryStore)


async def test_versions_history_and_overwrite(store):
    first = await store.summaries.save_summary(_draft("v1"), new_version=True)
    second = await store.summaries.save_summary(_draft("v2"), new_version=True)
    assert (first.version, second.version) == (1, 2)
    assert second.source_latest_message_at == T0 and second.metadata == {"by": "test"}
    assert [
        s.content
        for s in await store.summaries.summary_history("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    ] == ["v2", "v1"]
    over = await store.summaries.save_summary(_draft("v2b"), new_version=False)
    assert (over.version, over.content) == (2, "v2b")
    assert (
        await store.summaries.latest_summary("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
    ).content == "v2b"
    assert await store.summaries.latest_summary("g2", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM) is None
    first_long = await store.summaries.save_summary(_draft("long", kind=SummaryKind.LONG_TERM), new_version=False)
    assert first_long.version == 1  # overwrite with nothing stored yet: version 1


async def test_concurrent_new_versions_get_distinct_numbers(store):
    done = await asyncio.gather(*(store.summaries.save_summary(_draft(f"v{i}"), new_version=True) for i in range(8)))
    assert sorted(s.version for s in done) == list(range(1, 9))


async def test_expected_version_stores_a_scope_once_when_writers_race(store):
    """Writers that read the same latest version (none here) and summarise at once: one is stored,
    the others are refused, whichever order the store serialises them in."""
    from dataclasses import replace

    drafts = [replace(_draft(f"w{i}"), expected_version=0) for i in range(6)]
    done = await asyncio.gather(
        *(store.summaries.save_summary(d, new_version=True) for d in drafts), return_exceptions=True
    )
    stored = [d for d in done if not isinstance(d, BaseException)]
    assert len(stored) == 1 and stored[0].version == 1
    assert all(isinstance(d, VersionConflict) for d in done if isinstance(d, BaseException))
    nxt = await store.summaries.save_summary(replace(_draft("next"), expected_version=1), new_version=True)
    assert nxt.version == 2
    with pytest.raises(VersionConflict):
        await store.summaries.save_summary(replace(_draft("stale"), expected_version=1), new_version=False)
    with pytest.raises(InvalidInput):
        await store.summaries.save_summary(replace(_draft("bad"), expected_version=-1), new_version=True)


async def test_latest_summaries_per_channel(store):
    await store.summaries.save_summary(_draft("a1", scope_id="a", kind=SummaryKind.LONG_TERM), new_version=True)
    await store.summaries.save_summary(_draft("a2", scope_id="a", kind=SummaryKind.LONG_TERM), new_version=True)
    await store.summaries.save_summary(_draft("b1", scope_id="b", kind=SummaryKind.LONG_TERM), new_version=True)
    await store.summaries.save_summary(
        _draft("other", workspace="g2", scope_id="z", kind=SummaryKind.LONG_TERM), new_version=True
    )
    found = await store.summaries.latest_summaries("g1", SummaryScope.CHANNEL, SummaryKind.LONG_TERM)
    assert [(s.scope_id, s.content) for s in found] == [("a", "a2"), ("b", "b1")]
    first = await store.summaries.latest_summaries("g1", SummaryScope.CHANNEL, SummaryKind.LONG_TERM, limit=1)
    assert [(s.scope_id, s.content) for s in first] == [("a", "a2")]  # a page: the newest version still
    rest = await store.summaries.latest_summaries("g1", SummaryScope.CHANNEL, SummaryKind.LONG_TERM, after="a", limit=5)
    assert [(s.scope_id, s.content) for s in rest] == [("b", "b1")]
    assert await store.summaries.latest_summaries("g1", SummaryScope.CHANNEL, SummaryKind.LONG_TERM, after="b") == []


async def test_scope_messages_and_active_scopes(store):
    for user in ("u1", "u2"):
        s = await store.sessions.get_or_create_session(
            session_key(platform="discord", workspace="g1", channel="c1", user=user)
        )
        for i in range(3):
            await store.sessions.append_message(
                s.id, Message.user(f"{user} {i}", author_id=user, created_at=T0 + timedelta(minutes=i))
            )
    other = await store.sessions.get_or_create_session(
        session_key(platform="discord", workspace="g2", channel="c1", user="u1")
    )
    await store.sessions.append_message(other.id, Message.user("other workspace", author_id="u1", created_at=T0))
    channel = await store.summaries.scope_messages("g1", SummaryScope.CHANNEL, "c1", since=T0 - timedelta(hours=1))
    assert len(channel) == 6 and [m.created_at for m in channel] == sorted(m.created_at for m in channel)
    user = await store.summaries.scope_messages("g1", SummaryScope.USER, "u2", since=T0)
    assert [m.text for m in user] == ["u2 0", "u2 1", "u2 2"]
    assert await store.summaries.scope_messages("g1", SummaryScope.CHANNEL, "c1", since=T0 + timedelta(hours=1)) == []
    assert await store.summaries.scope_messages("g1", SummaryScope.CHANNEL, "c1", since=T0, limit=2) != []
    active = await store.summaries.active_scopes(since=T0 - timedelta(days=3650), scope=SummaryScope.CHANNEL)
    assert ("g1", "c1") in active and ("g2", "c1") in active


async def test_bad_input(store):
    with pytest.raises(InvalidInput, match="scope"):
        await store.summaries.latest_summary("g1", "galaxy", "c1", SummaryKind.SHORT_TERM)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="content"):
        await store.summaries.save_summary(_draft(" "), new_version=True)
    with pytest.raises(InvalidInput):
        await store.summaries.scope_messages("g1", SummaryScope.WORKSPACE, "g1", since=T0)
