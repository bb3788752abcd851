"""``omoide restore``: bring a backup back into an empty database of either backend.

A backup is a logical folder (any backend → any backend) or an SQLite file (copied back
page for page into an SQLite target, or read row by row into a PostgreSQL one). The target
must be empty — a new SQLite file, or a new PostgreSQL database — and a restore refuses
anything else rather than mixing two histories. It is migrated first, the rows go in in one
transaction (a failed restore leaves it empty), the id counters are moved past every id the
source handed out, and a backup from an older omoide is migrated up afterwards.

``reembed=True`` leaves the stored vectors out and computes them again with the configured
embedder (a backup made without vectors, or a move to another embedding model).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from omoide.errors import InvalidInput, NotFoundError
from omoide.ops._codec import Row, iso, vector_b64
from omoide.ops._logical import MANIFEST, FolderReader
from omoide.ops._pipeline import OnProgress, RowSink, RowSource, SourceInfo, copy_rows
from omoide.ops.backup import backend_of, open_source, sqlite_path
from omoide.ops.tables import BY_NAME, Table
from omoide.settings import Settings
from omoide.stores import open_store

SourceKind = Literal["logical", "sqlite-file"]


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What a restore did.

    Attributes:
        source: ``logical`` (a backup folder) or ``sqlite-file``.
        source_backend: the backend the backup was made from.
        backend: the target's backend.
        rows: rows restored per table (``{}`` for a page copy).
        reembedded: vectors computed again per table (``reembed=True``).
        embeddings: whether the target has vectors for what was restored.
        schema_version: the target's schema version afterwards.
        seconds: how long it took.
    """

    source: SourceKind
    source_backend: str
    backend: str
    rows: dict[str, int] = field(default_factory=dict)
    reembedded: dict[str, int] = field(default_factory=dict)
    embeddings: bool = True
    schema_version: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "source_backend": self.source_backend,
            "backend": self.backend,
            "rows": self.rows,
            "reembedded": self.reembedded,
            "embeddings": self.embeddings,
            "schema_version": self.schema_version,
            "seconds": round(self.seconds, 3),
        }


def source_kind(path: Path) -> SourceKind:
    """What kind of backup ``path`` is.

    Raises:
        NotFoundError: nothing at ``path``.
        InvalidInput: neither a backup folder nor an SQLite file.
    """
    from omoide.ops._sqlite import is_sqlite_file

    if path.is_dir():
        if not (path / MANIFEST).is_file():
            raise InvalidInput(f"{path} is a folder without {MANIFEST}: not an omoide backup (or an unfinished one)")
        return "logical"
    if not path.exists():
        raise NotFoundError(f"there is no backup at {path}", path=str(path))
    if is_sqlite_file(path):
        return "sqlite-file"
    raise InvalidInput(f"{path} is neither an omoide backup folder nor an SQLite database file")


@asynccontextmanager
async def open_backup(path: Path) -> AsyncIterator[RowSource]:
    """Rows of a backup folder or an SQLite backup file, checked (an async context manager)."""
    if source_kind(path) == "logical":
        async with FolderReader(path) as folder:
            yield folder
    else:
        from omoide.ops._sqlite import SqliteReader

        async with SqliteReader(str(path)) as sqlite_reader:
            yield sqlite_reader


@asynccontextmanager
async def open_sink(url: str, *, require_empty: bool = True) -> AsyncIterator[RowSink]:
    """A writer into the migrated database at ``url``, in one transaction."""
    if backend_of(url) == "sqlite":
        from omoide.ops._sqlite import SqliteWriter

        async with SqliteWriter(sqlite_path(url), require_empty=require_empty) as sqlite_writer:
            yield sqlite_writer
    else:
        from omoide.ops._postgres import PostgresWriter

        async with PostgresWriter(url, require_empty=require_empty) as pg_writer:
            yield pg_writer


def _check_source_version(info: SourceInfo, where: Path) -> None:
    """Refuse a backup whose schema is newer than this omoide knows for its backend."""
    if info.backend == "sqlite":
        from omoide.stores.sqlite import migrations as sqlite_migrations

        sqlite_migrations.check_not_newer(info.schema_version, where=f"backed up in {where}")
        return
    try:
        from omoide.stores.postgres import migrations as pg_migrations
    except ImportError:  # restoring a PostgreSQL backup into SQLite without the extra: the columns were checked
        return
    pg_migrations.check_not_newer(info.schema_version, where=f"backed up in {where}")


async def _migrate(url: str, settings: Settings) -> int:
    async with open_store(url, settings=settings, migrate=True) as store:
        return await store.schema_version()


async def _refuse_non_empty(url: str) -> None:
    """Check emptiness before migrating, so a refused restore changes nothing."""
    if backend_of(url) == "sqlite":
        from omoide.ops._sqlite import check_restore_target

        path = sqlite_path(url)
        if await asyncio.to_thread(Path(path).is_file):
            await asyncio.to_thread(check_restore_target, path)  # read-only: another application's file stays as it is
        return
    async with open_sink(url):
        pass


class _VectorModels:
    """A sink that passes rows on and notes each (model, dimensions) of the chunk vectors written."""

    def __init__(self, sink: RowSink) -> None:
        self._sink = sink
        self.models: set[tuple[str, int]] = set()

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        return await self._sink.columns()

    async def write(self, table: Table, columns: tuple[str, ...], rows: list[Row]) -> None:
        if table.name == "chunk_embeddings":
            self.models.update((str(r["model"]), int(r["dimensions"])) for r in rows)
        await self._sink.write(table, columns, rows)

    async def finish(self, info: SourceInfo, counts: Mapping[str, int]) -> None:
        await self._sink.finish(info, counts)


async def _index_vectors(url: str, settings: Settings, models: set[tuple[str, int]]) -> None:
    """Build the ANN index of each restored embedding model (PostgreSQL's HNSW; nothing on SQLite),
    as the embedder does after embedding."""
    from omoide.stores._checks import MAX_INDEX_DIMENSIONS

    indexable = sorted((m, d) for m, d in models if d <= MAX_INDEX_DIMENSIONS)
    if not indexable:
        return
    async with open_store(url, settings=settings, migrate=False) as store:
        for model, dimensions in indexable:
            await store.knowledge.ensure_vector_index(model=model, dimensions=dimensions)


async def restore(
    path: Path,
    url: str,
    *,
    settings: Settings,
    reembed: bool = False,
    on_progress: OnProgress | None = None,
) -> RestoreReport:
    """Restore the backup at ``path`` into the empty database at ``url``.

    Args:
        path: a backup folder or an SQLite backup file.
        url: the target (``sqlite:///NEW.db`` or ``postgresql://…/new_db``), empty or absent.
        settings: the embedder (for ``reembed``) and store settings.
        reembed: leave the backup's vectors out and compute them with the configured embedder.
        on_progress: ``(table, rows just restored, rows in the table)``.

    Raises:
        ConflictError: the target is not empty.
        NotFoundError / InvalidInput: no backup at ``path``, or a damaged one.
        MigrationError: the backup comes from a newer omoide.
        StoreError / StoreUnavailable: the target cannot be written.
        ProviderError: re-computing the vectors failed (the rows stay restored).
    """
    started = time.perf_counter()
    kind = source_kind(path)
    backend = backend_of(url)
    if kind == "sqlite-file":
        from omoide.ops._sqlite import check_backup_file

        await asyncio.to_thread(check_backup_file, str(path))
    await _refuse_non_empty(url)
    if kind == "sqlite-file" and backend == "sqlite" and not reembed:
        from omoide.ops._sqlite import restore_file

        await asyncio.to_thread(restore_file, path, sqlite_path(url))
        version = await _migrate(url, settings)
        return RestoreReport(kind, "sqlite", backend, schema_version=version, seconds=time.perf_counter() - started)
    async with open_backup(path) as source:
        _check_source_version(source.info, path)
        version = await _migrate(url, settings)
        async with open_sink(url) as sink:
            tracked = _VectorModels(sink)
            rows = await copy_rows(source, tracked, embeddings=not reembed, on_progress=on_progress)
        info = source.info
    await _index_vectors(url, settings, tracked.models)
    reembedded: dict[str, int] = {}
    if reembed:
        reembedded = await reembed_all(url, settings, rows, on_progress=on_progress)
    return RestoreReport(
        kind,
        info.backend,
        backend,
        rows=rows,
        reembedded=reembedded,
        embeddings=reembed or info.embeddings,
        schema_version=version,
        seconds=time.perf_counter() - started,
    )


async def reembed_all(
    url: str, settings: Settings, rows: dict[str, int], *, on_progress: OnProgress | None = None
) -> dict[str, int]:
    """Compute the vectors of every chunk and memory of a restored database with the configured embedder.

    Chunks go through the same path as ``omoide reindex`` (their unit vectors too); memories are
    embedded from their stored text, as ``remember`` embeds them.
    """
    from omoide.engine import Memory

    done: dict[str, int] = {}
    async with Memory.open(settings, database_url=url) as mem:
        embedder = mem.embedder
        total = rows.get("knowledge_chunks", 0)

        def on_chunks(n: int) -> None:
            if on_progress is not None:
                on_progress("chunk_embeddings", n, total)

        if on_progress is not None:
            on_progress("chunk_embeddings", 0, total)
        report = await mem.knowledge.reindex(embedder, on_chunks=on_chunks)
        done["chunk_embeddings"] = report.chunks

    memories = BY_NAME["memories"]
    vectors = BY_NAME["memory_embeddings"]
    columns = vectors.column_names
    count = 0
    async with open_source(url) as source, open_sink(url, require_empty=False) as sink:
        total = await source.count(memories)
        if on_progress is not None:
            on_progress("memory_embeddings", 0, total)
        async for batch in source.batches(memories, ("id", "workspace_id", "user_id", "content")):
            embedded = await embedder.embed_documents([r["content"] for r in batch])
            now = iso(datetime.now(UTC))
            out: list[Row] = [
                {
                    "memory_id": r["id"],
                    "workspace_id": r["workspace_id"],
                    "user_id": r["user_id"],
                    "model": embedder.model_id,
                    "dimensions": len(v),
                    "embedding": vector_b64(v),
                    "embedded_at": now,
                }
                for r, v in zip(batch, embedded, strict=True)
            ]
            await sink.write(vectors, columns, out)
            count += len(out)
            if on_progress is not None:
                on_progress("memory_embeddings", len(out), total)
        await sink.finish(SourceInfo(backend=backend_of(url), schema_version=0), {"memory_embeddings": count})
    done["memory_embeddings"] = count
    return done


__all__ = ["RestoreReport", "open_backup", "reembed_all", "restore", "source_kind"]
