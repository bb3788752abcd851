"""An erasure in the middle of every job that writes people's words, forced, on both backends.

Each test holds a job at the point where it has read the user's words and not yet written
what it made of them (an archive plan, an embedding, a summary, an import), erases the user
there, lets the job finish, and checks that nothing of theirs was written back.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from omoide import Memory, Message
from omoide.models import utcnow
from omoide.providers.local.hashing import HashingEmbedder
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash
from omoide.stores.summaries import SummaryKind, SummaryScope

from .test_erasure import ALICE, BOB, MARK, WS, history, text_columns_holding, tuned


@pytest.fixture
async def mem(settings: Settings) -> AsyncIterator[Memory]:
    async with Memory.open(tuned(settings, embedder="hashing", summary_message_threshold=1)) as m:
        yield m


async def shared_channel(mem: Memory) -> Any:
    key = mem.session_key(platform="discord", workspace=WS, channel="general", policy="channel")
    for i in range(6):
        who, text = (ALICE, f"Alice says {MARK} {i}") if i % 2 else (BOB, f"bobword{i} 勉強会は金曜日です。")
        await mem.append(key, Message.user(text, author_id=who, author_name=who.title(), message_id=f"m{i}"))
    return key


async def assert_clean(mem: Memory) -> None:
    assert await text_columns_holding(mem.settings, MARK) == []
    hits = (await mem.search("bobword4", workspace=WS, mode="lexical")).hits
    assert hits, "the other user's words must stay"


async def test_an_archive_planned_before_the_erasure_writes_nothing_of_theirs(mem: Memory) -> None:
    key = await shared_channel(mem)
    session = await mem.store.sessions.get_session(key.value)
    archiver = mem.knowledge.archiver()
    reached, gate = threading.Event(), threading.Event()
    real = archiver._plan_due
    calls = 0

    def held(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first plan holds Alice's messages
            reached.set()
            assert gate.wait(30)
        return real(*args)

    archiver._plan_due = held  # type: ignore[method-assign]
    later = utcnow() + timedelta(hours=2)
    job = asyncio.create_task(archiver.archive_session(session.id, idle_before=later))
    assert await asyncio.to_thread(reached.wait, 30)
    await mem.forget_user(workspace=WS, user=ALICE)
    gate.set()
    outcome = await job
    assert calls >= 2, "the stale plan must have been refused and made again"
    assert outcome.outcome.value == "archived"
    await mem.knowledge.embed()
    await assert_clean(mem)


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder, holding its first call until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.reached, self.gate, self.calls = asyncio.Event(), asyncio.Event(), 0

    async def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        self.calls += 1
        if self.calls == 1:
            self.reached.set()
            await self.gate.wait()
        return await super().embed_documents(texts)


async def stored_vectors_match_their_text(mem: Memory) -> bool:
    """Every stored vector was made of the text its chunk holds now."""
    for source in await mem.store.knowledge.list_sources(workspace_id=WS, limit=100):
        for chunk in await mem.store.knowledge.chunks_of_source(source.id):
            if await mem.store.knowledge.get_embedding(chunk.id, model=mem.embedder.model_id) is None:
                return False
    url = mem.settings.database_url
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.split("sqlite:///", 1)[1])
        rows = conn.execute(
            "SELECT c.content, e.content_hash FROM chunk_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id"
        ).fetchall()
        conn.close()
    else:
        import asyncpg

        pg = await asyncpg.connect(url)
        rows = [
            tuple(r)
            for r in await pg.fetch(
                "SELECT c.content, e.content_hash FROM chunk_embeddings e JOIN knowledge_chunks c ON c.id = e.chunk_id"
            )
        ]
        await pg.close()
    return bool(rows) and all(content_hash(text) == h for text, h in rows)


async def test_an_embedding_made_before_the_erasure_is_not_stored(mem: Memory) -> None:
    await shared_channel(mem)
    await mem.knowledge.archive(now=True)
    embedder = GatedEmbedder()
    job = asyncio.create_task(mem.knowledge.embedding_processor(embedder).run())
    await asyncio.wait_for(embedder.reached.wait(), 30)
    report = await mem.forget_user(workspace=WS, user=ALICE)
    assert report.chunks_rewritten == 1
    embedder.gate.set()
    await job
    # the vector of the old text was refused; the rewritten chunk was embedded again in the same run
    assert await stored_vectors_match_their_text(mem)
    await assert_clean(mem)


class GatedModel:
    """A chat model holding its first call until ``gate`` is set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reached, self.gate, self.calls = asyncio.Event(), asyncio.Event(), 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.reached.set()
            await self.gate.wait()
        return await self.inner.complete(*args, **kwargs)


async def test_a_summary_written_after_the_erasure_is_refused(mem: Memory) -> None:
    await shared_channel(mem)
    model = GatedModel(mem.chat_model)
    generator = mem.summary_generator()
    generator._model = lambda: model  # type: ignore[assignment]
    job = asyncio.create_task(generator.run())
    await asyncio.wait_for(model.reached.wait(), 30)
    await mem.forget_user(workspace=WS, user=ALICE)
    model.gate.set()
    await job
    assert await text_columns_holding(mem.settings, MARK) == []
    # the next pass summarises what remains
    await mem.summary_generator().run()
    summaries = await mem.store.summaries.latest_summaries(WS, SummaryScope.CHANNEL, SummaryKind.LONG_TERM)
    assert summaries and all(MARK not in s.content for s in summaries)


async def test_an_import_that_read_before_the_erasure_skips_their_messages(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = mem.store.knowledge.add_source
    erased = False

    async def erase_first(source: Any, chunks: Any, **kwargs: Any) -> Any:
        nonlocal erased
        if not erased:  # the import has read and cut the messages: now the erasure commits
            erased = True
            await mem.forget_user(workspace=WS, user=ALICE)
        return await real(source, chunks, **kwargs)

    monkeypatch.setattr(mem.store.knowledge, "add_source", erase_first)
    summary = await mem.knowledge.ingest_messages(history(), workspace=WS)
    assert erased and summary.sources == 1
    assert await text_columns_holding(mem.settings, MARK) == []
    hits = (await mem.search("bobimport2", workspace=WS, mode="lexical")).hits
    assert hits and MARK not in hits[0].content
