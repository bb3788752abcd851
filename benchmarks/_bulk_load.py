"""Bulk loading for ``benchmarks/scale.py``: the store's rows written by binary ``COPY``.

Why: through the store's own write paths (``add_source`` + ``put_embeddings``) 100k chunks took
955 s on the Citus cluster and 635 s on one PostgreSQL (under load 15): a million would not
load in a session. ``COPY … FORMAT binary`` (asyncpg's ``copy_records_to_table``) writes the
same rows straight into the tables the store uses, so what the benchmark searches is what the
store would have written:

* ``knowledge_sources``: one source per 1,000 chunks, ``status 'ready'`` (what a source is once
  archived and embedded), ``metadata '{}'``, not private;
* ``knowledge_chunks``: every column ``insert_source`` writes (``lexical``, ``location``,
  ``author_ids``, ``unit_lexical`` as the same JSON, ``token_count``, channel, times,
  ``private``/``members`` of the source); the generated ``lexical_tsv`` / ``lexical_len`` are
  computed by the server on ``COPY`` exactly as on ``INSERT``;
* ``chunk_embeddings``: the ``halfvec`` in pgvector's binary form and the unit vectors as the
  ``bytea`` of ``encode_unit_vectors`` (``content_hash`` NULL, as the
  benchmark's earlier loader wrote);
* ``store_meta``'s lexical tokenizer, as the first ``insert_source`` records it; the identity
  sequences moved past the ids written (ids are ``1..n`` on every target, so the single node
  and the cluster hold the same ids).

The secondary indexes of ``knowledge_chunks`` / ``chunk_embeddings`` (GIN over the tsvector,
the channel index, the workspace/model index) are dropped before the load and created again
from their own ``pg_get_indexdef`` after it: one sorted build instead of a million index
insertions (on Citus, DDL on the distributed table builds every shard's). Keys and foreign
keys stay. The HNSW index is then built once by ``ensure_vector_index`` (``scale.py``).

The data are ``benchmarks/search.py``'s (``TextModel``, vectors around 256 centres, unit
vectors around each chunk's), drawn block by block from fixed seeds in the order the earlier
loader drew them, so the rows equal what it wrote. One generator feeds every target in the
same pass (the single node, the cluster, and a database holding one workspace only), each
``COPY`` running concurrently with the others and with the next block's generation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import struct
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np

MODEL = "hashing:v1@384"  # the hashing embedder's model id: `omoide serve` searches these vectors
DIMS = 384
PER_SOURCE = 1000
UNIT_LINES = 10
WORKSPACES = (("w01", 1), ("w19", 19), ("w80", 80))  # name, blocks of every 100
CHANNELS = 20
SEED = 2026
BASE = datetime(2025, 1, 1, tzinfo=UTC)
DEFERRED_TABLES = ("knowledge_chunks", "chunk_embeddings")

SOURCE_COLUMNS = ("id", "workspace_id", "type", "title", "status", "metadata", "private", "members")
CHUNK_COLUMNS = (
    "id", "source_id", "workspace_id", "channel_id", "thread_id", "chunk_index", "content", "lexical",
    "location", "author_ids", "token_count", "started_at", "ended_at", "private", "members", "unit_lexical",
)  # fmt: skip
EMBEDDING_COLUMNS = ("chunk_id", "workspace_id", "model", "dimensions", "embedding", "content_hash", "unit_vectors")


def bench_search() -> Any:
    """``benchmarks/search.py`` (its text and vector model), imported by path: under pytest the
    name ``search`` is the ``tests/search`` package."""
    import importlib.util
    import sys
    from pathlib import Path

    module = sys.modules.get("bench_search")
    if module is None:
        spec = importlib.util.spec_from_file_location("bench_search", Path(__file__).with_name("search.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_search"] = module
        spec.loader.exec_module(module)
    return module


def workspace_of(block: int) -> str:
    """Blocks of 1,000 chunks dealt out 1 : 19 : 80 in every 100, spread over the load."""
    r = (block * 37) % 100  # a permutation of 0..99: the small workspaces are not all at the start
    return "w01" if r < 1 else "w19" if r < 20 else "w80"


def halfvec_binary(vectors: np.ndarray) -> list[bytes]:
    """pgvector's binary ``halfvec`` of each row (``>HH`` dimensions, 0; big-endian float16),
    the bytes ``HalfVector.to_binary`` sends, without an object per row."""
    head = struct.pack(">HH", vectors.shape[1], 0)
    big = np.ascontiguousarray(vectors, dtype=">f2")
    return [head + big[i].tobytes() for i in range(big.shape[0])]


def fast_text_model(rng: np.random.Generator) -> Any:
    """``search.TextModel`` with its ``chunks`` rewritten for speed (same random draws, same
    rows: :meth:`ScaleData.block` checks the first blocks against ``TextModel.chunks``).

    The original spends ~0.5 s per 1,000 chunks (≈ 8 CPU-minutes per million) in
    ``lexical_text`` per line and ``strftime`` per line; here each word's and name's token
    string is joined once (``lexical_text`` of a chat line is the plain join: no token near
    its 1 KB bound, no line near its 256 KB one) and a minute's stamp is formatted once."""
    from omoide.stores._erasure_common import LINES_KEY

    bs = bench_search()
    LINES_PER_CHUNK, SPEAKERS_PER_CHUNK, TOKENS_PER_CHUNK = (
        bs.LINES_PER_CHUNK,
        bs.SPEAKERS_PER_CHUNK,
        bs.TOKENS_PER_CHUNK,
    )
    ChatChunk, TextModel, AUTHORS_ = bs.ChatChunk, bs.TextModel, bs.AUTHORS

    class FastTextModel(TextModel):  # type: ignore[misc]
        def __init__(self, rng: np.random.Generator) -> None:
            super().__init__(rng)
            self.word_lex = [" ".join(t for t in tokens if t) for tokens in self.word_tokens]
            self.name_lex = [" ".join(t for t in tokens if t) for tokens in self.name_tokens]
            self.stamps: dict[int, str] = {}

        def _stamp(self, base: datetime, minute: int) -> str:
            stamp = self.stamps.get(minute)
            if stamp is None:
                if len(self.stamps) > 64:
                    self.stamps.clear()
                stamp = self.stamps[minute] = (base + timedelta(minutes=minute)).strftime("%Y-%m-%d %H:%M")
            return stamp

        def chunks(self, n: int, first: int, base: datetime) -> list[Any]:
            picks = self.rng.choice(len(self.words), size=(n, TOKENS_PER_CHUNK), p=self.p)
            spare = TOKENS_PER_CHUNK - LINES_PER_CHUNK
            sizes = 1 + self.rng.multinomial(spare, [1 / LINES_PER_CHUNK] * LINES_PER_CHUNK, size=n)
            who = self.rng.integers(0, SPEAKERS_PER_CHUNK, size=(n, LINES_PER_CHUNK))
            words, word_lex, names, name_lex = self.words, self.word_lex, self.names, self.name_lex
            picks_l, sizes_l, who_l = picks.tolist(), sizes.tolist(), who.tolist()
            out = []
            for c in range(n):
                index = first + c
                authors = [(index + step) % AUTHORS_ for step in (0, 1, 7)][:SPEAKERS_PER_CHUNK]
                row_picks, row_sizes, row_who = picks_l[c], sizes_l[c], who_l[c]
                lines: list[str] = []
                spans: list[list[Any]] = []
                units: list[str] = []
                used: set[str] = set()
                at = pos = 0
                for line in range(LINES_PER_CHUNK):
                    author = authors[row_who[line]]
                    row = row_picks[at : at + row_sizes[line]]
                    at += row_sizes[line]
                    said = " ".join([words[i] for i in row])
                    text = f"[{self._stamp(base, index + line)}] **{names[author]} (User)**: {said}"
                    if line:
                        pos += 1
                    spans.append([pos, pos + len(text), f"u{author}", index * 16 + line])
                    pos += len(text)
                    lines.append(text)
                    used.add(f"u{author}")
                    units.append(" ".join([x for x in (name_lex[author], *[word_lex[i] for i in row]) if x]))
                location = {"message_ids": [s[3] for s in spans], "message_count": LINES_PER_CHUNK, LINES_KEY: spans}
                lexical = " ".join([u for u in units if u])
                out.append(ChatChunk("\n".join(lines), lexical, location, tuple(units), tuple(sorted(used))))
            return out

    return FastTextModel(rng)


@dataclasses.dataclass(frozen=True)
class Block:
    """One source and its chunks and vectors, as ``COPY`` records."""

    index: int
    workspace: str
    source: tuple[Any, ...]
    chunks: list[tuple[Any, ...]]
    embeddings: list[tuple[Any, ...]]


class ScaleData:
    """The benchmark's synthetic chunks, one block of ``PER_SOURCE`` at a time (in order:
    the random streams are drawn block after block, as ``scale.py``'s earlier loader did)."""

    def __init__(self, *, units: bool = True) -> None:
        TextModel, UNIT_NOISE = bench_search().TextModel, bench_search().UNIT_NOISE

        self.check_blocks = 3  # blocks whose chats are compared with TextModel's own

        self.units = units
        self.rng = np.random.default_rng(SEED)
        centres = self.rng.standard_normal((256, DIMS)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self.text_model = fast_text_model(self.rng)
        self.reference = TextModel.__new__(TextModel)  # the original chunks(), same vocabulary: checks block()
        self.reference.__dict__.update(vars(self.text_model))
        self.unit_rng = np.random.default_rng(7)
        self.unit_noise = UNIT_NOISE
        self.next_block = 0

    def block(self, total: int) -> Block:
        """The next block of a ``total``-chunk load."""
        from omoide.stores._knowledge_common import to_json
        from omoide.stores.postgres._units import encode_unit_vectors, unit_lexical_json

        _vectors = bench_search()._vectors
        index = self.next_block
        self.next_block += 1
        done = index * PER_SOURCE
        count = min(PER_SOURCE, total - done)
        workspace = workspace_of(index)
        source_id = index + 1
        if index < self.check_blocks:  # the fast generator writes what TextModel writes
            state = self.rng.bit_generator.state
            self.reference.rng = np.random.default_rng()
            self.reference.rng.bit_generator.state = state
            expected = self.reference.chunks(count, done, BASE)
        chats = self.text_model.chunks(count, done, BASE)
        if index < self.check_blocks and chats != expected:
            raise AssertionError(f"block {index}: the fast chat generator differs from search.TextModel")
        vectors = _vectors(count, DIMS, self.centres, self.rng)
        units: list[bytes | None] = [None] * count
        if self.units:  # the same normals, in the same order, as one (10, dims) draw per chunk
            noise = self.unit_rng.standard_normal((count, UNIT_LINES, DIMS)).astype(np.float32)
            u = vectors[:, None, :] + self.unit_noise * noise / np.sqrt(DIMS)
            u /= np.linalg.norm(u, axis=2, keepdims=True)
            units = [encode_unit_vectors(u[i]) for i in range(count)]
        chunks = []
        for i, chat in enumerate(chats):
            n = done + i
            chunks.append((
                n + 1, source_id, workspace, f"c{n % CHANNELS}", None, i, chat.content, chat.lexical,
                to_json(chat.location, what="location"), to_json(list(chat.author_ids), what="author_ids"),
                len(chat.content), BASE + timedelta(minutes=n), BASE + timedelta(minutes=n + 9), False, "[]",
                unit_lexical_json(chat.unit_lexical) if self.units else None,
            ))  # fmt: skip
        halves = halfvec_binary(vectors)
        embeddings = [(done + i + 1, workspace, MODEL, DIMS, halves[i], None, units[i]) for i in range(count)]
        source = (source_id, workspace, "discord_channel", f"#chan {done}", "ready", "{}", False, "[]")
        return Block(index, workspace, source, chunks, embeddings)


@dataclasses.dataclass
class Target:
    """A database to load; ``workspaces``: only these (``None``: all)."""

    label: str
    url: str
    workspaces: frozenset[str] | None = None
    conn: asyncpg.Connection | None = None
    deferred: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    chunks: int = 0
    seconds: float = 0.0

    def wants(self, block: Block) -> bool:
        return self.workspaces is None or block.workspace in self.workspaces


async def _connect(url: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(url)
    # the halfvec column takes pgvector's binary form, encoded once per block (halfvec_binary)
    await conn.set_type_codec("halfvec", schema="public", encoder=bytes, decoder=bytes, format="binary")
    return conn


_SECONDARY_INDEXES = """
SELECT i.relname AS name, pg_get_indexdef(i.oid) AS ddl
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
WHERE x.indrelid IN ('knowledge_chunks'::regclass, 'chunk_embeddings'::regclass)
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
  AND i.relname NOT LIKE 'chunk_embeddings_hnsw_%'
ORDER BY i.relname
"""


async def defer_indexes(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    """Drop the secondary (non-constraint, non-HNSW) indexes of the loaded tables; their DDL."""
    rows = await conn.fetch(_SECONDARY_INDEXES)
    for row in rows:
        await conn.execute(f'DROP INDEX IF EXISTS "{row["name"]}"')  # one DDL per execute (Citus)
    return [(str(r["name"]), str(r["ddl"])) for r in rows]


async def restore_indexes(conn: asyncpg.Connection, deferred: Sequence[tuple[str, str]]) -> None:
    for _, ddl in deferred:
        await conn.execute(ddl.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))


async def _copy_block(target: Target, block: Block) -> None:
    assert target.conn is not None
    started = time.perf_counter()
    async with target.conn.transaction():
        await target.conn.copy_records_to_table("knowledge_sources", records=[block.source], columns=SOURCE_COLUMNS)
        await target.conn.copy_records_to_table("knowledge_chunks", records=block.chunks, columns=CHUNK_COLUMNS)
        await target.conn.copy_records_to_table("chunk_embeddings", records=block.embeddings, columns=EMBEDDING_COLUMNS)
    target.chunks += len(block.chunks)
    target.seconds += time.perf_counter() - started


async def bulk_load(
    targets: Sequence[Target],
    total: int,
    *,
    units: bool = True,
    maintenance: Callable[[Target], Awaitable[None]] | None = None,
    progress_every: int = 50,
    stop_at: float | None = None,
) -> dict[str, Any]:
    """Load ``total`` chunks into every (empty) target in one pass; the seconds of each phase.

    ``maintenance(target)``: called with the target's connection open before its indexes are
    rebuilt (``scale.py`` raises ``maintenance_work_mem`` there, on every node of a cluster).
    ``stop_at`` (a ``time.time()``): stop after the block that passes it — the blocks are dealt
    1 : 19 : 80 all along, so any prefix is the same mix, smaller (``out["chunks"]``: what was loaded)."""
    from omoide.stores.postgres._search import record_tokenizer
    from omoide.text import search_tokenizer_name

    data = ScaleData(units=units)
    blocks = (total + PER_SOURCE - 1) // PER_SOURCE
    out: dict[str, Any] = {"chunks": total, "units": units}
    for target in targets:
        target.conn = await _connect(target.url)
        await record_tokenizer(target.conn, search_tokenizer_name())
        target.deferred = await defer_indexes(target.conn)
    started = time.perf_counter()
    gen_seconds = 0.0
    try:
        t = time.perf_counter()
        block = data.block(total)
        gen_seconds += time.perf_counter() - t
        for b in range(blocks):
            copies = [asyncio.create_task(_copy_block(tg, block)) for tg in targets if tg.wants(block)]
            t = time.perf_counter()
            last = b + 1 == blocks or (stop_at is not None and time.time() > stop_at)
            upcoming = None if last else await asyncio.to_thread(data.block, total)
            gen_seconds += time.perf_counter() - t
            await asyncio.gather(*copies)
            if (b + 1) % progress_every == 0 or last:
                rate = (b + 1) * PER_SOURCE / (time.perf_counter() - started)
                print(
                    f"    bulk load: {min(total, (b + 1) * PER_SOURCE)} / {total} chunks, {rate:.0f} chunks/s",
                    flush=True,
                )
            if upcoming is None:
                blocks = b + 1
                break
            block = upcoming
        out["chunks"] = min(total, blocks * PER_SOURCE)
        out["copy_s"] = round(time.perf_counter() - started, 1)
        out["generate_s"] = round(gen_seconds, 1)
        finished = await asyncio.gather(*(_finish(tg, blocks, maintenance) for tg in targets))
        out.update(zip([tg.label for tg in targets], finished, strict=True))
    finally:
        for target in targets:
            if target.conn is not None:
                if target.deferred:  # a failed load: put the indexes back all the same
                    await restore_indexes(target.conn, target.deferred)
                await target.conn.close()
                target.conn = None
    return out


async def _finish(
    target: Target, blocks: int, maintenance: Callable[[Target], Awaitable[None]] | None
) -> dict[str, Any]:
    """Indexes back, sequences past the ids written; what it took."""
    assert target.conn is not None
    t = time.perf_counter()
    if maintenance is not None:
        await maintenance(target)
    await restore_indexes(target.conn, target.deferred)
    target.deferred = []
    sequences: dict[str, str] = {}
    for table, last in (("knowledge_sources", blocks), ("knowledge_chunks", blocks * PER_SOURCE)):
        try:
            await target.conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), $1)", last)
            sequences[table] = f"past {last}"
        except asyncpg.PostgresError as exc:  # reported, not fatal: searching does not need it
            sequences[table] = f"not moved: {exc}"
    return {
        "sequences": sequences,
        "chunks": target.chunks,
        "copy_s": round(target.seconds, 1),
        "indexes_s": round(time.perf_counter() - t, 1),
        "indexes": [str(r["name"]) for r in await target.conn.fetch(_SECONDARY_INDEXES)],
    }


def describe(result: dict[str, Any]) -> str:
    return json.dumps(result, default=str)
