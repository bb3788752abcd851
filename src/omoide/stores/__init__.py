"""Storage backends, chosen by the database URL.

>>> store = open_store("sqlite:///./data/omoide.db")   # doctest: +SKIP
>>> async with store: ...                              # connects and migrates
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omoide.errors import ConfigError
from omoide.stores.base import Store

if TYPE_CHECKING:
    from omoide.settings import Settings


def open_store(url: str | None = None, *, settings: Settings | None = None, migrate: bool | None = None) -> Store:
    """Create the store for ``url`` (default: ``settings.database_url``); not yet connected.

    Use it as ``async with open_store(url) as store:`` or call ``await store.open()``.

    Raises:
        ConfigError: unknown URL scheme, or the backend's extra is not installed.
    """
    from omoide.settings import load_settings

    settings = settings or load_settings()
    url = url or settings.database_url
    do_migrate = settings.migrate_on_start if migrate is None else migrate
    check_backend(url)
    if url.startswith(_POSTGRES):
        from omoide.stores.postgres import PostgresStore

        return PostgresStore(url, settings=settings, migrate=do_migrate)
    from omoide.stores.sqlite import SqliteStore

    return SqliteStore(url, settings=settings, migrate=do_migrate)


def check_backend(url: str) -> None:
    """Check that ``url`` names a backend omoide has and whose extra is installed (no connection).

    Raises:
        ConfigError: unknown URL scheme, or the backend's extra is not installed (says which).
    """
    if url.startswith("sqlite:///"):
        return
    if url.startswith(_POSTGRES):
        try:
            import omoide.stores.postgres  # noqa: F401
        except ImportError as exc:  # asyncpg / pgvector missing
            raise ConfigError(
                f"PostgreSQL support is not installed ({exc.name} is missing): pip install 'omoide[postgres]'"
            ) from exc
        return
    raise ConfigError(f"database URL {url!r} is not supported: use sqlite:///PATH or postgresql://…")


_POSTGRES = ("postgresql://", "postgres://")


__all__ = ["Store", "check_backend", "open_store"]
