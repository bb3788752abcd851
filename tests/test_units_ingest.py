"""Retrieval units at ingest (issue 16): the chunker and the importers write each chunk's
per-line tokens (``unit_lexical``), and the embedding processor embeds each line with its
neighbours in the same provider call as the chunk texts and stores the unit vectors with the
chunk's vector."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide import Memory, Message
from omoide.errors import BadRequest
from omoide.importers import ImportedMessage, message_windows
from omoide.knowledge.chunking import Chunker, ChunkingOptions
from omoide.knowledge.embedding import EmbeddingProcessor, chunk_text, unit_texts
from omoide.knowledge.importing import window_chunks
from omoide.providers.local.hashing import HashingEmbedder
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, ChunkId, ChunkText, SourceDraft, SourceId
from omoide.stores.units import chunk_lines, unit_embedding_texts, unit_lexical_of

T0 = datetime(2026, 1, 19, 10, 0, tzinfo=UTC)


class RecordingEmbedder:
    """The hashing embedder, remembering the texts of every call (``poison``: a text holding it
    is refused, as a provider refuses an input)."""

    max_batch = 1024

    def __init__(self, dimensions: int = 32, *, poison: str | None = None) -> None:
        self._inner = HashingEmbedder(dimensions)
        self.dimensions = dimensions
        self.model_id = f"recording@{dimensions}"
        self.calls: list[list[str]] = []
        self.poison = poison

    async def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        self.calls.append(list(texts))
        if self.poison and any(self.poison in t for t in texts):
            raise BadRequest(
                "the provider refused a text", provider="recording", status_code=400
            )  # a permanent, non-retryable error
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Any:
        return await self._inner.embed_query(text)

    def expected(self, text: str) -> np.ndarray:
        return np.asarray(self._inner.embed_sync(text), dtype=np.float32)


def conversation(n: int, *, start: int = 0) -> list[Message]:
    out = []
    for i in range(start, start + n):
        at = T0 + timedelta(minutes=i)
        if i % 2 == 0:
            m = Message.user(f"質問 {i}: 週末は山に登る予定です。", author_id="u1", author_name="Alice", created_at=at)
        else:
            m = Message.assistant(f"返事 {i}: 山の天気は変わりやすいです。", author_id="bot", created_at=at)
        out.append(m)
    return out


def imported(n: int, *, text: str = "ラーメンの話をしよう") -> list[ImportedMessage]:
    return [
        ImportedMessage(
            platform="discord",
            workspace_id="g1",
            workspace_name=None,
            channel_id="c1",
            channel_name="general",
            thread_id=None,
            thread_name=None,
            message_id=str(1000 + i),
            author_id=f"a{i % 3}",
            author_name=f"user{i % 3}",
            is_bot=False,
            created_at=T0 + timedelta(minutes=i),
            text=f"{text} {i}\n二行目 {i}",
        )
        for i in range(n)
    ]


# ---------------------------------------------------------------------------- chunker / importers


def test_the_chunker_writes_one_unit_token_string_per_line() -> None:
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2)).chunk(conversation(14))
    assert len(drafts) == 2
    for draft in drafts:
        lines = chunk_lines(draft.content, draft.location)
        assert lines is not None and draft.unit_lexical is not None
        assert len(draft.unit_lexical) == len(lines) == len(draft.location["lines"])
        assert draft.unit_lexical == unit_lexical_of(draft.content, draft.location)
        # every unit's tokens are a part of the chunk's
        assert set(" ".join(draft.unit_lexical).split()) <= set(draft.lexical.split())
    first = drafts[0].unit_lexical
    assert first is not None and "alic" in first[0] and "返事" in first[1]


def test_a_long_message_cut_into_parts_has_one_unit_per_part() -> None:
    long = Message.user("長い文章です。" * 400, author_id="u1", author_name="Alice", created_at=T0)
    drafts = Chunker(ChunkingOptions(max_tokens=128)).chunk([long])
    assert len(drafts) > 1
    for draft in drafts:
        assert draft.unit_lexical is not None and len(draft.unit_lexical) == 1
        assert draft.unit_lexical == unit_lexical_of(draft.content, draft.location)


def test_imported_chunks_carry_unit_tokens_too() -> None:
    (window,) = message_windows(imported(5), max_tokens=512)
    (draft,) = window_chunks(window, max_tokens=512)
    assert draft.unit_lexical is not None and len(draft.unit_lexical) == 5
    assert draft.unit_lexical == unit_lexical_of(draft.content, draft.location)
    assert all("ラーメン" in unit for unit in draft.unit_lexical)
    # a window cut into parts (one message too long for a chunk)
    big = imported(1, text="とても長い話。" * 600)
    (window,) = message_windows(big, max_tokens=4096)
    parts = window_chunks(window, max_tokens=256)
    assert len(parts) > 1
    assert all(p.unit_lexical == unit_lexical_of(p.content, p.location) for p in parts)


def test_unit_texts_are_each_line_with_its_neighbours() -> None:
    (draft,) = Chunker(ChunkingOptions()).chunk(conversation(3))
    chunk = ChunkText(ChunkId(1), SourceId(1), "w", draft.content, draft.location)
    texts = unit_texts(chunk)
    assert texts is not None and len(texts) == 3
    assert texts[0] == "Alice: 質問 0: 週末は山に登る予定です。\n返事 1: 山の天気は変わりやすいです。"
    assert texts[1].count("\n") == 2 and texts[2].count("\n") == 1
    assert unit_texts(ChunkText(ChunkId(1), SourceId(1), "w", "a document", {})) is None


# ---------------------------------------------------------------------------- embedding


@pytest.fixture
async def mem(db_url: str, tmp_path: Path) -> AsyncIterator[Memory]:
    settings = Settings(database_url=db_url, transcripts_dir=tmp_path / "t", embedder="hashing", db_pool_max=25)
    async with Memory.open(settings) as m:
        yield m


async def add_chunks(mem: Memory, drafts: Sequence[ChunkDraft], *, title: str = "s") -> list[ChunkId]:
    _, ids = await mem.store.knowledge.add_source(SourceDraft(workspace_id="w", type="document", title=title), drafts)
    return ids


def processor(mem: Memory, embedder: RecordingEmbedder, **overrides: Any) -> EmbeddingProcessor:
    settings = Settings(**{**mem.settings.model_dump(), **overrides})
    return EmbeddingProcessor(mem.store.knowledge, embedder, settings)


async def test_embedding_stores_unit_vectors_from_the_same_provider_call(mem: Memory) -> None:
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2)).chunk(conversation(14))
    ids = await add_chunks(mem, drafts)
    embedder = RecordingEmbedder()
    progress: list[int] = []
    report = await processor(mem, embedder).run(on_chunks=progress.append)

    lines = [len(d.location["lines"]) for d in drafts]
    assert (report.chunks, report.units, report.ready) == (2, sum(lines), 1)
    assert progress == [2]  # progress counts chunks, as before
    assert len(embedder.calls) == 1 and len(embedder.calls[0]) == 2 + sum(lines)  # one call for all of it
    assert report.as_log()["units"] == sum(lines)

    units = await mem.store.search.fetch_units(ids, model=embedder.model_id)
    for chunk_id, draft in zip(ids, drafts, strict=True):
        got = units[chunk_id]
        assert got.lexical == draft.unit_lexical
        assert got.vectors is not None and got.vectors.shape == (len(draft.location["lines"]), 32)
        texts = unit_embedding_texts(chunk_lines(draft.content, draft.location) or [])
        expected = np.stack([embedder.expected(t) for t in texts])
        np.testing.assert_allclose(got.vectors, expected, atol=2e-3)  # PostgreSQL stores half precision
        chunk_vector = await mem.store.knowledge.get_embedding(chunk_id, embedder.model_id)
        assert chunk_vector is not None
        np.testing.assert_allclose(chunk_vector, embedder.expected(chunk_text(draft.content)), atol=2e-3)
    # no model: the tokens only
    assert units[ids[0]].lexical is not None
    assert (await mem.store.search.fetch_units(ids, model=None))[ids[0]].vectors is None


async def test_a_chunk_without_line_records_gets_no_unit_vectors(mem: Memory) -> None:
    (doc,) = await add_chunks(mem, [ChunkDraft(content="a plain document", lexical="plain document", token_count=3)])
    embedder = RecordingEmbedder()
    report = await processor(mem, embedder).run()
    assert (report.chunks, report.units) == (1, 0)
    assert embedder.calls == [["a plain document"]]
    got = (await mem.store.search.fetch_units([doc], model=embedder.model_id))[doc]
    assert got.lexical is None and got.vectors is None


async def test_batches_span_sources_with_their_unit_texts(mem: Memory) -> None:
    chunker = Chunker(ChunkingOptions(messages=4, overlap=0))
    for i in range(3):
        await add_chunks(mem, chunker.chunk(conversation(8, start=10 * i)), title=f"s{i}")  # 2 chunks x 4 lines each
    embedder = RecordingEmbedder()
    report = await processor(mem, embedder, embed_batch_size=4).run()
    assert (report.chunks, report.units) == (6, 24)
    assert [len(c) for c in embedder.calls] == [4 + 16, 2 + 8]


async def test_backfill_embeds_units_too_and_skips_refused_chunks(mem: Memory) -> None:
    chunker = Chunker(ChunkingOptions(messages=3, overlap=0))
    msgs = conversation(6)
    msgs[4] = Message.user("poison pill", author_id="u1", author_name="Alice", created_at=msgs[4].created_at)
    ids = await add_chunks(mem, chunker.chunk(msgs))
    embedder = RecordingEmbedder(poison="poison")
    progress: list[int] = []
    report = await processor(mem, embedder).backfill(on_chunks=progress.append)
    assert (report.chunks, report.units, report.skipped) == (1, 3, 1)
    assert sum(progress) == 2
    units = await mem.store.search.fetch_units(ids, model=embedder.model_id)
    assert units[ids[0]].vectors is not None and units[ids[0]].vectors.shape == (3, 32)
    assert units[ids[1]].vectors is None
    assert await mem.store.knowledge.get_embedding(ids[1], embedder.model_id) is None


async def test_archived_sessions_get_units_end_to_end(mem: Memory) -> None:
    key = "discord:1:c=2:u=3"
    for m in conversation(12):
        await mem.append(key, m)
    archived = await mem.knowledge.archive(now=True)
    assert archived.chunks == 2
    status = await mem.knowledge.status()
    assert status.units_missing == 0  # the archiver wrote the unit tokens
    report = await mem.knowledge.embed()
    assert report.chunks == 2 and report.units == 10 + 4
    status = await mem.knowledge.status()
    assert status.unit_vectors_missing.get(mem.embedder.model_id, 0) == 0
