"""One copy loop between any row source and any row sink.

A backup, a restore and a move between backends are the same job with different ends:

=====================  ==============================  ===============================
job                    source                          sink
=====================  ==============================  ===============================
``omoide backup``      a database (one snapshot)       a backup folder (JSONL + manifest)
``omoide restore``     a backup folder or SQLite file  an empty database
=====================  ==============================  ===============================

:func:`copy_rows` walks :data:`~omoide.ops.tables.TABLES` parents first and streams each
table in batches, so memory stays flat whatever the size of the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from omoide.errors import StoreError
from omoide.ops._codec import Row
from omoide.ops.tables import TABLES, Table

OnProgress = Callable[[str, int, int], None]
"""Progress: ``(table, rows just copied, rows in that table)``; called with 0 rows when a table starts."""

BATCH_ROWS = 1000
READ_AHEAD = 2
"""Batches read ahead of the sink (bounded: memory stays flat)."""


@dataclass(slots=True)
class SourceInfo:
    """What a source says about itself, written into a backup's manifest.

    Attributes:
        backend: ``sqlite`` or ``postgresql``.
        schema_version: the source's newest applied migration (of that backend).
        sequences: table → the highest id the source ever handed out (ids are never reused,
            not even the ids of deleted rows).
        embeddings: whether the vectors are in it (a backup made with ``--no-embeddings`` has none).
    """

    backend: str
    schema_version: int
    sequences: dict[str, int] = field(default_factory=dict)
    embeddings: bool = True


class RowSource(Protocol):
    """Rows of the logical schema, read from one consistent snapshot."""

    info: SourceInfo

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        """Table → its columns that the logical schema knows, for the tables the source has."""
        ...

    async def count(self, table: Table) -> int:
        """How many rows ``table`` has (for progress)."""
        ...

    def batches(
        self,
        table: Table,
        columns: tuple[str, ...],
        *,
        where: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[list[Row]]:
        """The rows of ``table`` in key order, in batches, as backup rows of ``columns``."""
        ...


class RowSink(Protocol):
    """Where :func:`copy_rows` writes."""

    async def columns(self) -> Mapping[str, tuple[str, ...]]:
        """Table → the columns it accepts."""
        ...

    async def write(self, table: Table, columns: tuple[str, ...], rows: list[Row]) -> None:
        """Write one batch (an empty one first, when the table starts)."""
        ...

    async def finish(self, info: SourceInfo, counts: Mapping[str, int]) -> None:
        """Make it durable (commit, write the manifest) after the last batch."""
        ...


async def copy_rows(
    source: RowSource,
    sink: RowSink,
    *,
    embeddings: bool = True,
    on_progress: OnProgress | None = None,
) -> dict[str, int]:
    """Copy every table of ``source`` into ``sink``; return the rows copied per table.

    Args:
        embeddings: copy the vector tables (``False``: leave them out, to re-compute).
        on_progress: progress callback.

    Raises:
        StoreError: the sink lacks a table or column the source has rows in (the sink's
            omoide is older than the source's).
    """
    have = await source.columns()
    accept = await sink.columns()
    counts: dict[str, int] = {}
    for table in TABLES:
        if table.name not in have or (table.embeddings and not embeddings):
            continue
        columns = have[table.name]
        total = await source.count(table)
        if table.name not in accept:
            if total == 0:
                continue
            raise StoreError(
                f"the target has no table {table.name!r} for the {total} row(s) of the backup: the target's omoide "
                "is older than the one that made the backup; upgrade it"
            )
        missing = [c for c in columns if c not in accept[table.name]]
        if missing:
            raise StoreError(
                f"the target's table {table.name!r} lacks column(s) {', '.join(missing)}: upgrade the target's omoide"
            )
        if on_progress is not None:
            on_progress(table.name, 0, total)
        await sink.write(table, columns, [])  # the table exists in the sink even when it has no rows
        counts[table.name] = await _copy_table(source, sink, table, columns, total, on_progress)
    info = SourceInfo(
        backend=source.info.backend,
        schema_version=source.info.schema_version,
        sequences=dict(source.info.sequences),
        embeddings=source.info.embeddings and embeddings,
    )
    await sink.finish(info, counts)
    return counts


async def _copy_table(
    source: RowSource,
    sink: RowSink,
    table: Table,
    columns: tuple[str, ...],
    total: int,
    on_progress: OnProgress | None,
) -> int:
    """Stream one table, reading the next batch while the sink writes this one (both sides
    spend most of their time in a driver or a thread, so they overlap)."""
    queue: asyncio.Queue[list[Row] | Exception | None] = asyncio.Queue(maxsize=READ_AHEAD)

    async def read() -> None:
        try:
            async for batch in source.batches(table, columns):
                await queue.put(batch)
        except Exception as exc:  # handed to the writing side, which raises it as it is
            await queue.put(exc)
            return
        await queue.put(None)

    reader = asyncio.create_task(read(), name=f"omoide-ops-read-{table.name}")
    done = 0
    try:
        while (batch := await queue.get()) is not None:
            if isinstance(batch, Exception):
                raise batch
            await sink.write(table, columns, batch)
            done += len(batch)
            if on_progress is not None:
                on_progress(table.name, len(batch), total)
    finally:
        if not reader.done():
            reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    return done


__all__ = ["BATCH_ROWS", "OnProgress", "RowSink", "RowSource", "SourceInfo", "copy_rows"]
