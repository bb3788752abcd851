"""SQLite connections: URL parsing, connection set-up, timestamps and error mapping.

Every connection is opened in autocommit mode (``isolation_level=None``): the store
issues ``BEGIN IMMEDIATE`` / ``COMMIT`` itself, so a write transaction takes the write
lock up front (waiting up to ``busy_timeout``) instead of failing half-way through with
``SQLITE_BUSY_SNAPSHOT`` when it upgrades a read lock.

:func:`map_sqlite_errors` is the one place where :mod:`sqlite3` exceptions become
omoide errors (the idea of ``map_httpcore_exceptions`` in httpx).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from omoide.errors import ConfigError, InvalidInput, StoreError, StoreUnavailable
from omoide.models import ensure_utc

logger = logging.getLogger(__name__)

SCHEME = "sqlite:///"
MEMORY = ":memory:"
MIN_SQLITE_VERSION = (3, 35, 0)  # RETURNING

T = TypeVar("T")

# primary result codes (extended codes carry them in the low byte)
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26


def path_from_url(url: str) -> str:
    """The database path of a ``sqlite:///PATH`` URL (``:memory:`` for an in-memory database).

    ``sqlite:///./data/omoide.db`` and ``sqlite:///data/omoide.db`` are relative to the
    working directory; ``sqlite:////var/lib/omoide.db`` is absolute.

    Raises:
        ConfigError: the URL does not start with ``sqlite:///`` or has no path.
    """
    if not url.startswith(SCHEME):
        raise ConfigError(f"SQLite database URL {url!r} must start with {SCHEME} (e.g. sqlite:///./data/omoide.db)")
    path = url[len(SCHEME) :]
    if not path.strip():
        raise ConfigError(f"SQLite database URL {url!r} has no file path (e.g. sqlite:///./data/omoide.db)")
    return path


def format_ts(value: datetime) -> str:
    """Store form of a timestamp: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (text order is time order)."""
    return ensure_utc(value).isoformat(timespec="microseconds")


def parse_ts(text: str) -> datetime:
    """Read back a stored timestamp as an aware UTC datetime."""
    return datetime.fromisoformat(text)


def connect(path: str, *, busy_timeout_ms: int, readonly: bool = False) -> sqlite3.Connection:
    """Open one connection with omoide's pragmas.

    WAL journal mode (readers never block the writer), ``synchronous=NORMAL`` (durable
    across application crashes; a power loss may drop the last commits, never corrupt),
    foreign keys on (``ON DELETE CASCADE`` works) and the busy timeout from settings.
    A reader connection is also ``query_only``.

    The connection may be used from any thread, but only by one thread at a time; the
    store guarantees that by giving each connection to one task at a time.
    """
    if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
        need = ".".join(map(str, MIN_SQLITE_VERSION))
        raise StoreError(
            f"SQLite {sqlite3.sqlite_version} is too old: omoide needs SQLite >= {need} "
            "(use a newer Python build, or PostgreSQL)"
        )
    with map_sqlite_errors("open", path):
        if path != MEMORY:
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreUnavailable(
                    f"cannot create the directory of the SQLite database {path!r}: {exc.strerror or exc}; "
                    "check the path in OMOIDE_DATABASE_URL and the permissions of its parent directory"
                ) from exc
        conn = sqlite3.connect(
            path,
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
            cached_statements=256,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if not readonly and path != MEMORY:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    logger.warning("sqlite_wal_unavailable path=%s journal_mode=%s", path, mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            if readonly:
                conn.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            raise
    return conn


def _code(exc: sqlite3.Error) -> int:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else -1


def translate(exc: sqlite3.Error, operation: str, path: str) -> StoreError:
    """The omoide error for one :mod:`sqlite3` exception (see :func:`map_sqlite_errors`)."""
    code = _code(exc)
    text = str(exc)
    where = f"SQLite {operation} on {path!r}"
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in text or "database table is locked" in text:
        return StoreUnavailable(
            f"{where} failed: the database is locked by another writer and stayed locked longer than the busy "
            "timeout. Retry later; if this keeps happening, raise OMOIDE_DB_BUSY_TIMEOUT_MS, look for a process "
            "holding a long write transaction on this file, or use PostgreSQL for many concurrent writers",
            operation=operation,
            path=path,
        )
    if code == _SQLITE_CANTOPEN or "unable to open database file" in text:
        return StoreUnavailable(
            f"{where} failed: cannot open the database file; check that the path in OMOIDE_DATABASE_URL "
            "is a file (not a directory) and that its directory is writable",
            operation=operation,
            path=path,
        )
    if code in (_SQLITE_NOTADB, _SQLITE_CORRUPT):
        return StoreError(
            f"{where} failed: {text}; the file is not an intact SQLite database — point OMOIDE_DATABASE_URL "
            "at an omoide database or at a new file",
            operation=operation,
            path=path,
        )
    if code in (_SQLITE_FULL, _SQLITE_IOERR, _SQLITE_READONLY):
        return StoreUnavailable(
            f"{where} failed: {text}; check free disk space and the permissions of the database file "
            "and of its directory (SQLite writes -wal and -shm files next to it)",
            operation=operation,
            path=path,
        )
    if "no such table" in text:
        return StoreError(
            f"{where} failed: {text}; the database has no omoide schema yet — run `omoide migrate` "
            "or open the store with migrate=True",
            operation=operation,
            path=path,
        )
    return StoreError(f"{where} failed: {type(exc).__name__}: {text}", operation=operation, path=path)


@contextmanager
def map_sqlite_errors(operation: str, path: str) -> Iterator[None]:
    """Re-raise any :class:`sqlite3.Error` raised inside as the matching :class:`StoreError`.

    Raises:
        StoreUnavailable: the database stayed locked past the busy timeout, cannot be
            opened, or the disk is full / read-only.
        StoreError: any other SQLite failure.
        InvalidInput: a string to store is not valid Unicode (a lone surrogate).
    """
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, operation, path) from exc
    except UnicodeEncodeError as exc:  # sqlite3 encodes every bound str as UTF-8
        raise InvalidInput(
            f"SQLite {operation}: a text value is not valid Unicode ({exc.reason} at position {exc.start}); "
            "lone surrogates such as '\\ud800' cannot be stored",
            operation=operation,
        ) from exc


def in_write_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn(conn)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``; roll back if it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error as exc:  # keep the original error; the connection rolls back on close
                logger.warning("sqlite_rollback_failed error=%s", exc)
        raise
    return result


__all__ = [
    "MEMORY",
    "connect",
    "format_ts",
    "in_write_transaction",
    "map_sqlite_errors",
    "parse_ts",
    "path_from_url",
    "translate",
]
