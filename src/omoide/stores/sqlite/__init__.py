"""The embedded SQLite backend (the default): WAL mode, FTS5, float32 vector BLOBs.

>>> from omoide.stores import open_store
>>> store = open_store("sqlite:///./data/omoide.db")   # doctest: +SKIP
"""

from __future__ import annotations

from omoide.stores.sqlite.migrations import LATEST_VERSION, MIGRATIONS, Migration
from omoide.stores.sqlite.store import SqliteStore

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "SqliteStore"]
