"""PostgreSQL + pgvector backend (asyncpg).

>>> from omoide.stores import open_store
>>> store = open_store("postgresql://bot:pw@localhost/omoide")   # doctest: +SKIP
>>> async with store: ...                                        # connects and migrates

See :mod:`omoide.stores.postgres.sessions` for how appends, version checks and expiry stay
correct under concurrency, and :mod:`omoide.stores.postgres.migrations` for migrations.
"""

from __future__ import annotations

from omoide.stores.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
