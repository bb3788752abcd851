"""The open SQLite database that every role object of one :class:`SqliteStore` shares.

Threading model (chosen by measurement, ``docs/bench-notes/sqlite-driver.md``): every
store operation is one synchronous function that runs, whole, in a worker thread, so the
event loop pays one thread hop per operation instead of one per statement as with aiosqlite.

* **One writer**: a single-thread executor owns the only write connection. Writes are
  serialised in the process (SQLite allows one writer anyway) and each runs in
  ``BEGIN IMMEDIATE`` … ``COMMIT``, which also serialises them against other processes
  (waiting up to ``db_busy_timeout_ms``).
* **Readers**: a small pool of ``query_only`` connections in their own executor. In WAL
  mode they read a committed snapshot while the writer writes; a read started after a
  write returned sees that write.
* An in-memory database (``sqlite:///:memory:``) exists only on its one connection, so
  there every operation runs on the writer.

:mod:`sqlite3` errors become omoide errors inside the worker thread, in
:func:`~omoide.stores.sqlite._conn.map_sqlite_errors`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from omoide.errors import ConfigError, StoreError
from omoide.settings import Settings
from omoide.stores.sqlite import migrations
from omoide.stores.sqlite._conn import MEMORY, connect, in_write_transaction, map_sqlite_errors, path_from_url
from omoide.stores.sqlite._memory_cache import MemoryRecallCache
from omoide.stores.sqlite._search import VectorCache

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_READERS = 2
MIGRATE_BUSY_TIMEOUT_MS = 60_000  # a process migrating waits at least this long for another one


@dataclass(slots=True)
class _Connections:
    """The open state: executors and connections."""

    writer: sqlite3.Connection
    writer_executor: ThreadPoolExecutor
    readers: list[sqlite3.Connection] = field(default_factory=list)
    reader_pool: queue.SimpleQueue[sqlite3.Connection] = field(default_factory=queue.SimpleQueue)
    reader_executor: ThreadPoolExecutor | None = None


class SqliteDb:
    """Connections, executors and the in-process caches of one SQLite database.

    Role objects (``SqliteSessions``, ``SqliteKnowledge``, …) run their operations through
    :meth:`read`, :meth:`write` and :meth:`on_writer`; the store opens and closes it.

    Args:
        url: ``sqlite:///PATH`` or ``sqlite:///:memory:``.
        settings: ``db_busy_timeout_ms`` is used.
        migrate: apply pending migrations in :meth:`open`.
        readers: reader connections (and threads) beside the writer.

    Raises:
        ConfigError: the URL is not an SQLite URL or ``readers`` is below 1.
    """

    def __init__(self, url: str, *, settings: Settings, migrate: bool, readers: int = DEFAULT_READERS) -> None:
        if readers < 1:
            raise ConfigError(f"SqliteStore needs at least one reader connection, got readers={readers}")
        self.url = url
        self.path = path_from_url(url)
        self.settings = settings
        self._migrate_on_open = migrate
        self._reader_count = readers
        self._conns: _Connections | None = None
        self._lifecycle_lock = asyncio.Lock()
        self.vector_cache = VectorCache(prefilter_rows=settings.sqlite_vector_prefilter_rows)
        """Normalised vector matrices per workspace and model (see ``_search.VectorCache``)."""
        self.memory_cache = MemoryRecallCache()
        """Memory vectors per user, kept in step with every memory write (see ``_memory_cache``)."""

    @property
    def is_open(self) -> bool:
        return self._conns is not None

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect (creating the file and its directory), migrate if asked, start the readers."""
        async with self._lifecycle_lock:
            if self._conns is not None:
                return
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="omoide-sqlite-writer")
            future = executor.submit(self._open_sync, executor)
            try:
                self._conns = await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                future.add_done_callback(_close_when_done)
                executor.shutdown(wait=False)
                raise
            except BaseException:
                executor.shutdown(wait=False)
                raise
            logger.debug("sqlite_store_opened path=%s readers=%d", self.path, len(self._conns.readers))

    def _open_sync(self, executor: ThreadPoolExecutor) -> _Connections:
        busy = self.settings.db_busy_timeout_ms
        # a process migrating the same new file holds its lock for the whole migration (seconds
        # on a loaded machine): opening to migrate waits as long as migrating does
        opening = max(busy, MIGRATE_BUSY_TIMEOUT_MS) if self._migrate_on_open else busy
        writer = connect(self.path, busy_timeout_ms=opening)
        readers: list[sqlite3.Connection] = []
        try:
            with map_sqlite_errors("open", self.path):
                if self._migrate_on_open:
                    self.migrate_sync(writer)
                else:
                    migrations.check_not_newer(migrations.current_version(writer), where=repr(self.path))
            if self.path != MEMORY:
                for _ in range(self._reader_count):
                    readers.append(connect(self.path, busy_timeout_ms=busy, readonly=True))
        except BaseException:
            for conn in (*readers, writer):
                conn.close()
            raise
        conns = _Connections(writer=writer, writer_executor=executor, readers=readers)
        if readers:
            for conn in readers:
                conns.reader_pool.put(conn)
            conns.reader_executor = ThreadPoolExecutor(
                max_workers=len(readers), thread_name_prefix="omoide-sqlite-reader"
            )
        return conns

    async def close(self) -> None:
        """Finish queued work and close every connection. Idempotent."""
        async with self._lifecycle_lock:
            conns, self._conns = self._conns, None
            if conns is None:
                return
            if conns.reader_executor is not None:
                await asyncio.to_thread(conns.reader_executor.shutdown, True)
            await asyncio.wrap_future(conns.writer_executor.submit(_close_all, conns))
            conns.writer_executor.shutdown(wait=True)
            logger.debug("sqlite_store_closed path=%s", self.path)

    def migrate_sync(self, conn: sqlite3.Connection) -> list[int]:
        """Apply pending migrations on ``conn`` (the writer), waiting long for another migrating process."""
        busy = self.settings.db_busy_timeout_ms
        wait = max(busy, MIGRATE_BUSY_TIMEOUT_MS)
        conn.execute(f"PRAGMA busy_timeout = {wait}")
        try:
            return migrations.apply_pending(conn, where=repr(self.path))
        finally:
            conn.execute(f"PRAGMA busy_timeout = {busy}")

    # ------------------------------------------------------------------ running operations

    def _require_open(self) -> _Connections:
        conns = self._conns
        if conns is None:
            raise StoreError(
                f"the SQLite store {self.url!r} is not open: use `async with store:` or call `await store.open()` first"
            )
        return conns

    async def on_writer(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(writer, *args)`` in the writer thread, outside any transaction."""
        conns = self._require_open()
        return await asyncio.wrap_future(conns.writer_executor.submit(self._run, operation, fn, conns.writer, args))

    async def write(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(writer, *args)`` in the writer thread inside ``BEGIN IMMEDIATE`` … ``COMMIT``."""
        conns = self._require_open()
        return await asyncio.wrap_future(conns.writer_executor.submit(self._run_tx, operation, fn, conns.writer, args))

    async def read(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(reader, *args)`` on a reader connection (the writer for ``:memory:``)."""
        conns = self._require_open()
        if conns.reader_executor is None:
            return await asyncio.wrap_future(conns.writer_executor.submit(self._run, operation, fn, conns.writer, args))
        return await asyncio.wrap_future(conns.reader_executor.submit(self._run_pooled, operation, fn, conns, args))

    def _run(self, operation: str, fn: Callable[..., T], conn: sqlite3.Connection, args: tuple[Any, ...]) -> T:
        with map_sqlite_errors(operation, self.path):
            return fn(conn, *args)

    def _run_tx(self, operation: str, fn: Callable[..., T], conn: sqlite3.Connection, args: tuple[Any, ...]) -> T:
        with map_sqlite_errors(operation, self.path):
            return in_write_transaction(conn, lambda c: fn(c, *args))

    def _run_pooled(self, operation: str, fn: Callable[..., T], conns: _Connections, args: tuple[Any, ...]) -> T:
        conn = conns.reader_pool.get()
        try:
            with map_sqlite_errors(operation, self.path):
                return fn(conn, *args)
        finally:
            conns.reader_pool.put(conn)


def _close_all(conns: _Connections) -> None:
    for conn in (*conns.readers, conns.writer):  # the writer last: the last connection checkpoints the WAL
        try:
            conn.close()
        except sqlite3.Error as exc:
            logger.warning("sqlite_close_failed error=%s", exc)


def _close_when_done(future: Future[_Connections]) -> None:
    """Close the connections of an :meth:`SqliteDb.open` whose caller was cancelled."""
    if not future.cancelled() and future.exception() is None:
        conns = future.result()
        _close_all(conns)
        if conns.reader_executor is not None:
            conns.reader_executor.shutdown(wait=False)


__all__ = ["DEFAULT_READERS", "SqliteDb"]
