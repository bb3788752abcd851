"""``omoide reindex --units`` (issue 16): units for chunks stored before units existed —
resumable, batched, through ``KnowledgeService.reindex_units`` and the CLI."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from omoide import Memory, Message
from omoide.cli import app
from omoide.knowledge.chunking import Chunker, ChunkingOptions
from omoide.knowledge.embedding import EmbeddingProcessor, chunk_text
from omoide.knowledge.unit_reindex import reindex_units
from omoide.providers.local.hashing import HashingEmbedder
from omoide.settings import Settings
from omoide.stores._erasure_common import content_hash
from omoide.stores.knowledge import ChunkDraft, ChunkId, EmbeddingRow, SourceDraft
from omoide.stores.units import chunk_lines, unit_embedding_texts, unit_lexical_of

T0 = datetime(2026, 1, 19, 10, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(384)  # the "hashing" spec's
MODEL = EMBEDDER.model_id


def conversation(n: int, *, start: int = 0) -> list[Message]:
    out = []
    for i in range(start, start + n):
        at = T0 + timedelta(minutes=i)
        if i % 2 == 0:
            out.append(
                Message.user(f"質問 {i}: 週末は山に登る予定です。", author_id="u1", author_name="Alice", created_at=at)
            )
        else:
            out.append(Message.assistant(f"返事 {i}: 山の天気は変わりやすいです。", author_id="bot", created_at=at))
    return out


def old_drafts(n_sources: int = 3, messages: int = 12) -> list[list[ChunkDraft]]:
    """Chunks as an omoide before units wrote them: line records, no unit tokens."""
    chunker = Chunker(ChunkingOptions(messages=4, overlap=0))
    return [
        [dataclasses.replace(d, unit_lexical=None) for d in chunker.chunk(conversation(messages, start=100 * s))]
        for s in range(n_sources)
    ]


async def store_old_knowledge(mem: Memory, sources: Sequence[Sequence[ChunkDraft]]) -> list[tuple[ChunkId, ChunkDraft]]:
    """Write ``sources`` and embed their chunks without unit vectors, as an older omoide did."""
    out: list[tuple[ChunkId, ChunkDraft]] = []
    for i, drafts in enumerate(sources):
        _, ids = await mem.store.knowledge.add_source(
            SourceDraft(workspace_id="w", type="discord_session", title=f"s{i}"), drafts
        )
        out.extend(zip(ids, drafts, strict=True))
    rows = [
        EmbeddingRow(
            chunk_id=cid, vector=EMBEDDER.embed_sync(chunk_text(d.content)), content_hash=content_hash(d.content)
        )
        for cid, d in out
    ]
    await mem.store.knowledge.put_embeddings(model=MODEL, dimensions=EMBEDDER.dimensions, rows=rows)
    return out


def vectors_missing(status: Any) -> dict[str, int]:
    """``unit_vectors_missing`` without the models that miss none."""
    return {model: n for model, n in status.unit_vectors_missing.items() if n}


def settings_for(db_url: str, tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(
        database_url=db_url, transcripts_dir=tmp_path / "t", embedder="hashing", db_pool_max=25, **overrides
    )


@pytest.fixture
async def mem(db_url: str, tmp_path: Path) -> AsyncIterator[Memory]:
    async with Memory.open(settings_for(db_url, tmp_path, embed_batch_size=4)) as m:
        yield m


async def assert_units_built(mem: Memory, chunks: Sequence[tuple[ChunkId, ChunkDraft]]) -> None:
    units = await mem.store.search.fetch_units([cid for cid, _ in chunks], model=MODEL)
    for cid, draft in chunks:
        lines = chunk_lines(draft.content, draft.location)
        assert lines is not None
        assert units[cid].lexical == unit_lexical_of(draft.content, draft.location)
        vectors = units[cid].vectors
        assert vectors is not None and vectors.shape == (len(lines), EMBEDDER.dimensions)
        expected = np.stack([EMBEDDER.embed_sync(t) for t in unit_embedding_texts(lines)])
        np.testing.assert_allclose(vectors, expected, atol=2e-3)


async def test_reindex_units_builds_tokens_and_vectors_of_old_chunks(mem: Memory) -> None:
    chunks = await store_old_knowledge(mem, old_drafts())
    status = await mem.knowledge.status()
    assert status.units_missing == len(chunks) == 9
    assert vectors_missing(status) == {MODEL: 9}
    # search works on chunks without units
    before = await mem.store.search.fetch_units([chunks[0][0]], model=MODEL)
    assert before[chunks[0][0]].lexical is None and before[chunks[0][0]].vectors is None

    progress: list[tuple[str, int, int]] = []
    report = await mem.knowledge.reindex_units(on_progress=lambda *a: progress.append(a))
    assert (report.model, report.lexical, report.vectors, report.units) == (MODEL, 9, 9, 36)
    assert (report.unusable, report.skipped, report.stopped) == (0, 0, False)
    assert progress[0] == ("lexical", 0, 9) and ("lexical", 9, 9) in progress
    assert ("vectors", 0, 9) in progress and progress[-1] == ("vectors", 9, 9)
    assert [p for p in progress if p[0] == "vectors"] == [("vectors", n, 9) for n in (0, 4, 8, 9)]  # embed_batch_size 4

    status = await mem.knowledge.status()
    assert status.units_missing == 0 and status.unit_vectors_missing.get(MODEL, 0) == 0
    await assert_units_built(mem, chunks)
    # nothing left: a rerun does nothing
    again = await mem.knowledge.reindex_units()
    assert (again.lexical, again.vectors, again.units) == (0, 0, 0)


async def test_an_interrupted_reindex_loses_nothing_and_a_rerun_finishes(mem: Memory) -> None:
    chunks = await store_old_knowledge(mem, old_drafts())

    class Crash(Exception):
        pass

    def crash_after_first_vectors(phase: str, done: int, total: int) -> None:
        if phase == "vectors" and done > 0:
            raise Crash  # the process dies after the first batch was stored

    with pytest.raises(Crash):
        await mem.knowledge.reindex_units(on_progress=crash_after_first_vectors)
    status = await mem.knowledge.status()
    assert status.units_missing == 0 and status.unit_vectors_missing.get(MODEL, 0) == 9 - 4

    report = await mem.knowledge.reindex_units()
    assert (report.lexical, report.vectors, report.units) == (0, 5, 20)
    await assert_units_built(mem, chunks)


async def test_a_stop_ends_after_the_batch_in_flight(mem: Memory) -> None:
    import asyncio

    await store_old_knowledge(mem, old_drafts())
    stop = asyncio.Event()

    def stop_in_lexical(phase: str, done: int, total: int) -> None:
        if phase == "lexical" and done:
            stop.set()

    report = await reindex_units(
        mem.store.knowledge,
        mem.knowledge.embedding_processor(),
        stop=stop,
        on_progress=stop_in_lexical,
        lexical_batch=2,
    )
    assert report.stopped and report.lexical == 2 and report.vectors == 0
    assert (await mem.knowledge.status()).units_missing == 7
    report = await mem.knowledge.reindex_units()
    assert report.lexical == 7 and report.vectors == 9


async def test_tokens_only_and_another_model(mem: Memory) -> None:
    chunks = await store_old_knowledge(mem, old_drafts(1))
    report = await mem.knowledge.reindex_units(vectors=False)
    assert (report.model, report.lexical, report.vectors) == (None, 3, 0)
    assert vectors_missing(await mem.knowledge.status()) == {MODEL: 3}
    # another model's vectors (e.g. during a model switch): only those get units
    other = HashingEmbedder(32)
    processor = EmbeddingProcessor(mem.store.knowledge, other, mem.settings)
    await processor.backfill()  # new vectors come with their units
    assert vectors_missing(await mem.knowledge.status()) == {MODEL: 3}
    report = await mem.knowledge.reindex_units(embedder="hashing@32")
    assert report.vectors == 0 and report.model == other.model_id
    report = await mem.knowledge.reindex_units(embedder=EMBEDDER)
    assert report.vectors == 3
    await assert_units_built(mem, chunks)


async def test_chunks_erased_meanwhile_are_skipped(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user erased while the unit vectors are being computed: the rewritten chunks lost their
    vectors, so their unit vectors are not written; the next embedding pass brings both."""
    await store_old_knowledge(mem, old_drafts(1))
    knowledge = mem.store.knowledge
    read = knowledge.embeddings_missing_units

    async def read_then_erase(**kwargs: Any) -> Any:
        chunks = await read(**kwargs)
        if chunks:
            await mem.forget_user(workspace="w", user="u1")
        return chunks

    monkeypatch.setattr(knowledge, "embeddings_missing_units", read_then_erase)
    report = await mem.knowledge.reindex_units()
    assert (report.lexical, report.vectors, report.units) == (3, 0, 0)
    monkeypatch.undo()

    report_embed = await mem.knowledge.embedding_processor().backfill()
    assert report_embed.chunks == 3 and report_embed.units == 6  # the bot's lines are left
    status = await mem.knowledge.status()
    assert status.units_missing == 0 and vectors_missing(status) == {}
    units = await mem.store.search.fetch_units([c.id for c in await first_source_chunks(mem)], model=MODEL)
    for chunk in await first_source_chunks(mem):
        assert units[chunk.id].lexical == unit_lexical_of(chunk.content, chunk.location)
        assert all("alic" not in u for u in units[chunk.id].lexical or ())
        assert units[chunk.id].vectors is not None and len(units[chunk.id].vectors) == 2


async def first_source_chunks(mem: Memory) -> list[Any]:
    (source,) = await mem.store.knowledge.list_sources()
    return await mem.store.knowledge.chunks_of_source(source.id)


# ---------------------------------------------------------------------------- the CLI

runner = CliRunner()


def omoide(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"OMOIDE_EMBEDDER": "hashing"})
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())  # rich wraps lines


async def _seed(db_url: str, tmp_path: Path) -> None:
    async with Memory.open(settings_for(db_url, tmp_path)) as m:
        await store_old_knowledge(m, old_drafts())


def test_cli_status_and_reindex_units(db_url: str, tmp_path: Path) -> None:
    import asyncio

    asyncio.run(_seed(db_url, tmp_path))
    code, out, _ = omoide("status", "--db", db_url, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["units_missing"] == 9 and {k: v for k, v in data["unit_vectors_missing"].items() if v} == {MODEL: 9}
    assert data["reader_vectors_missing"] == {MODEL: 9}  # stored without the line reader's vectors too
    code, out, _ = omoide("status", "--db", db_url)
    assert code == 0 and "chunks without units" in out and "omoide reindex --units" in out
    assert f"vectors without line reader, {MODEL} (in use) │ 9" in out

    code, out, err = omoide("reindex", "--units", "--db", db_url)
    assert code == 0, err
    assert "per-message tokens for 9 chunk(s), 36 per-message vector(s) for 9 chunk(s)" in out

    code, out, _ = omoide("status", "--db", db_url, "--json")
    data = json.loads(out)
    assert data["units_missing"] == 0 and data["unit_vectors_missing"].get(MODEL, 0) == 0
    code, out, _ = omoide("status", "--db", db_url)
    assert "omoide reindex --units" not in out

    code, out, _ = omoide("reindex", "--units", "--db", db_url, "--json")
    assert code == 0 and json.loads(out)["lexical"] == 0 and json.loads(out)["model"] == MODEL


async def _as_written_before_int8(db_url: str) -> dict[int, bytes]:
    """Rewrite every stored unit and reader matrix in the form an omoide before the int8 form
    wrote (SQLite float32 / float16, PostgreSQL float16 / float16); the rows as they were."""
    from omoide.stores.unit_codec import decode_matrix
    from omoide.stores.units import HALF_DTYPE, READER_DIMENSIONS

    legacy_units = np.dtype("<f2") if db_url.startswith("postgresql") else np.dtype("<f4")
    select = "SELECT chunk_id, dimensions, unit_vectors, reader_vectors FROM chunk_embeddings"
    update = "UPDATE chunk_embeddings SET unit_vectors = {0}, reader_vectors = {1} WHERE chunk_id = {2}"

    def legacy(row: Any) -> tuple[bytes, bytes, int]:
        units = decode_matrix(bytes(row[2]), row[1], legacy=legacy_units)
        reader = decode_matrix(bytes(row[3]), READER_DIMENSIONS, legacy=HALF_DTYPE) if row[3] is not None else None
        assert units is not None
        return (
            units.astype(legacy_units).tobytes(),
            None if reader is None else reader.astype(HALF_DTYPE).tobytes(),
            row[0],
        )

    if db_url.startswith("postgresql"):
        import asyncpg

        conn = await asyncpg.connect(db_url)
        try:
            rows = [legacy(r) for r in await conn.fetch(select)]
            await conn.executemany(update.format("$1", "$2", "$3"), rows)
        finally:
            await conn.close()
    else:
        import sqlite3

        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            rows = [legacy(r) for r in conn.execute(select).fetchall()]
            conn.executemany(update.format("?", "?", "?"), rows)
    return {chunk_id: units for units, _, chunk_id in rows}


def test_cli_reindex_compact_re_encodes_vectors_stored_in_the_older_forms(db_url: str, tmp_path: Path) -> None:
    import asyncio

    asyncio.run(_seed(db_url, tmp_path))
    assert omoide("reindex", "--units", "--db", db_url)[0] == 0
    code, out, _ = omoide("reindex", "--compact", "--db", db_url, "--json")
    assert code == 0 and json.loads(out)["rewritten"] == 0  # written now: int8 already
    before = asyncio.run(_as_written_before_int8(db_url))
    assert len(before) == 9

    code, out, err = omoide("reindex", "--compact", "--db", db_url)

    assert code == 0, err
    assert "Re-encoded the per-message vectors of 9 stored vector(s) as int8" in out

    async def read() -> dict[Any, Any]:
        async with Memory.open(settings_for(db_url, tmp_path)) as m:
            return await m.store.search.fetch_units(list(before), model=MODEL)

    units = asyncio.run(read())
    legacy_units = np.dtype("<f2") if db_url.startswith("postgresql") else np.dtype("<f4")
    for chunk_id, data in before.items():
        got = units[ChunkId(chunk_id)].vectors
        assert got is not None
        np.testing.assert_allclose(got, np.frombuffer(data, dtype=legacy_units).reshape(got.shape), atol=2e-3)
    code, out, _ = omoide("reindex", "--compact", "--db", db_url, "--json")
    assert code == 0 and json.loads(out)["rewritten"] == 0
    code, _, err = omoide("reindex", "--compact", "--units", "--db", db_url)
    assert code == 2 and "--compact runs on its own" in err


def test_cli_reindex_flags(sqlite_url: str) -> None:
    code, _, err = omoide("reindex", "--db", sqlite_url)
    assert code != 0 and "--units" in err
    code, _, err = omoide("reindex", "--lexical", "--units", "--db", sqlite_url)
    assert code != 0 and "--lexical runs on its own" in err
    code, out, _ = omoide("reindex", "--help")
    assert code == 0 and "--units" in out and "omoide reindex --units" in out
