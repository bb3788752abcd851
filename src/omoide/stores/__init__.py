"""Storage backends, chosen by the database URL.

>>> store = open_store("sqlite:///./data/omoide.db")   # doctest: +SKIP
>>> async with store: ...                              # connects and migrates
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omoide.errors import ConfigError
from omoide.stores.base import Capability, Lifecycle, SessionStore

if TYPE_CHECKING:
    from omoide.settings import Settings


def open_store(
    url: str | None = None, *, settings: Settings | None = None, migrate: bool | None = None
) -> SessionStore:
    """Create the store for ``url`` (default: ``settings.database_url``); not yet connected.

    Use it as ``async with open_store(url) as store:`` or call ``await store.open()``.

    Raises:
        ConfigError: unknown URL scheme, or the backend's extra is not installed.
    """
    from omoide.settings import load_settings

    settings = settings or load_settings()
    url = url or settings.database_url
    do_migrate = settings.migrate_on_start if migrate is None else migrate
    if url.startswith("sqlite:///"):
        from omoide.stores.sqlite import SqliteStore

        return SqliteStore(url, settings=settings, migrate=do_migrate)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from omoide.stores.postgres import PostgresStore
        except ImportError as exc:  # asyncpg / pgvector missing
            raise ConfigError(
                f"PostgreSQL support is not installed ({exc.name} is missing): pip install 'omoide[postgres]'"
            ) from exc
        return PostgresStore(url, settings=settings, migrate=do_migrate)
    raise ConfigError(f"database URL {url!r} is not supported: use sqlite:///PATH or postgresql://…")


__all__ = ["Capability", "Lifecycle", "SessionStore", "open_store"]
