"""Helpers for the worker tests (conversations, settings, exactly-once checks)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from omoide import Memory, Message
from omoide.models import SessionKey
from omoide.settings import Settings
from omoide.stores.knowledge import SourceStatus


def tuned(settings: Settings, **overrides: Any) -> Settings:
    return Settings(**{**settings.model_dump(), **overrides})


async def talk(mem: Memory, key: SessionKey | str, n: int, *, start: int, user: str) -> list[Message]:
    """``n`` messages by two people, each long enough for the archive filters: a worker may
    archive between any two of them, and every message must still become knowledge."""
    out = []
    for i in range(start, start + n):
        author = user if i % 2 == 0 else f"{user}-friend"
        m = Message.user(
            f"{author} のメッセージ {i}: 週末は山に登る予定です。天気が心配です。",
            author_id=author,
            message_id=f"{user}-{i}",
        )
        out.append(await mem.append(key, m))
    return out


async def archived_ids(store: Any) -> list[int]:
    out: list[int] = []
    offset = 0
    while True:
        page = await store.knowledge.list_sources(limit=500, offset=offset)
        for source in page:
            ids: set[int] = set()
            for chunk in await store.knowledge.chunks_of_source(source.id):
                ids.update(chunk.location["message_ids"])
            assert len(ids) == source.metadata["message_count"], source
            out.extend(ids)
        if len(page) < 500:
            return out
        offset += 500


async def check_nothing_lost(mem: Memory, keys: list[Any], appended: list[Message]) -> None:
    """No message in long-term memory twice, none that was never appended, and every
    message not yet archived still stored in its session."""
    ids = await archived_ids(mem.store)
    counts = Counter(ids)
    assert not [i for i, n in counts.items() if n > 1], "a message reached long-term memory twice"
    known = {m.id for m in appended}
    assert set(ids) <= known
    by_session: dict[int, list[Message]] = {}
    for m in appended:
        assert m.session_id is not None
        by_session.setdefault(int(m.session_id), []).append(m)
    for key in keys:
        session = await mem.sessions.get(key)
        mine = by_session.get(int(session.id), [])
        assert session.last_seq == len(mine)
        stored = await mem.sessions.messages(key)
        assert [m.id for m in stored if m.seq > session.archived_seq] == [
            m.id for m in mine if m.seq > session.archived_seq
        ]
        archived_here = {m.id for m in mine if m.seq <= session.archived_seq}
        assert archived_here <= set(ids)  # every message here passes the filters


async def check_all_done(mem: Memory, appended: list[Message]) -> None:
    """Everything archived exactly once, every source ready, every chunk embedded."""
    assert Counter(await archived_ids(mem.store)) == Counter(m.id for m in appended)
    status = await mem.knowledge.status()
    assert status.unarchived_messages == 0
    assert status.sources[SourceStatus.PROCESSING.value] == 0
    assert status.sources[SourceStatus.PENDING.value] == 0
    assert status.sources[SourceStatus.FAILED.value] == 0
    assert status.embedded.get(mem.embedder.model_id) == status.chunks
