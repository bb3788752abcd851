"""Driver errors -> omoide errors, in one place.

Every public method of :class:`~omoide.stores.postgres.PostgresStore` runs inside
:func:`translate_errors`, which maps what asyncpg and the socket layer raise to the most
specific :class:`~omoide.errors.OmoideError` (the pattern of httpx's
``map_httpcore_exceptions``). Errors omoide raises on purpose pass through untouched, and
``asyncio.CancelledError`` is never caught. URLs in messages never carry the password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from omoide.errors import ConfigError, InvalidContent, StoreError, StoreUnavailable

_CONNECT_HINT = (
    "Is the server running, and does OMOIDE_DATABASE_URL point at it "
    "(postgresql://USER:PASSWORD@HOST:PORT/DB, or postgresql://USER@/DB?host=/socket/dir)?"
)

# SQLSTATEs and classes that mean "the database cannot be reached or used right now".
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    asyncpg.PostgresConnectionError,  # class 08, incl. a connection lost mid-query
    asyncpg.exceptions.CannotConnectNowError,  # 57P03: starting up / shutting down
    asyncpg.exceptions.AdminShutdownError,  # 57P01
    asyncpg.exceptions.CrashShutdownError,  # 57P02
    asyncpg.exceptions.TooManyConnectionsError,  # 53300
)


def redact_url(url: str) -> str:
    """``url`` without its password (in the userinfo or a ``password=`` query parameter).

    >>> redact_url("postgresql://bot:s3cret@db.example/omoide?password=x&host=/tmp")
    'postgresql://bot:***@db.example/omoide?password=%2A%2A%2A&host=%2Ftmp'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable database URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, password = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if sep and password else f"{user}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k == "password" for k, _ in pairs):
            query = urlencode([(k, "***" if k == "password" else v) for k, v in pairs])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _sqlstate(exc: BaseException) -> str:
    return str(getattr(exc, "sqlstate", "") or "")


def translate(exc: BaseException, url: str) -> Exception | None:
    """The omoide error for a driver / socket exception, or ``None`` if it is not one."""
    where = redact_url(url)
    if isinstance(exc, OSError):  # refused, no such socket file, DNS, timeouts (TimeoutError is an OSError)
        return StoreUnavailable(
            f"cannot connect to PostgreSQL at {where}: {exc}. {_CONNECT_HINT}", url=where, reason=str(exc)
        )
    if isinstance(exc, asyncpg.exceptions.InvalidAuthorizationSpecificationError):  # 28000 / 28P01
        return StoreUnavailable(
            f"PostgreSQL at {where} rejected the login: {exc}. Check the user name and password in "
            "OMOIDE_DATABASE_URL.",
            url=where,
            sqlstate=_sqlstate(exc),
        )
    if isinstance(exc, asyncpg.exceptions.InvalidCatalogNameError):  # 3D000
        return StoreUnavailable(
            f"PostgreSQL at {where}: {exc}. Create it first (createdb NAME, or CREATE DATABASE NAME).",
            url=where,
            sqlstate=_sqlstate(exc),
        )
    if isinstance(exc, _UNAVAILABLE):
        return StoreUnavailable(
            f"PostgreSQL at {where} is unavailable: {exc}. {_CONNECT_HINT}", url=where, sqlstate=_sqlstate(exc)
        )
    if isinstance(
        exc, asyncpg.exceptions.UntranslatableCharacterError | asyncpg.exceptions.CharacterNotInRepertoireError
    ):
        return InvalidContent(
            f"PostgreSQL cannot store this text: {exc}. Text may not contain the NUL character (U+0000).",
            sqlstate=_sqlstate(exc),
        )
    if isinstance(exc, asyncpg.exceptions.ClientConfigurationError):
        return ConfigError(f"OMOIDE_DATABASE_URL ({where}) is not usable: {exc}")
    if isinstance(exc, asyncpg.PostgresError):
        return StoreError(f"PostgreSQL error {_sqlstate(exc)} at {where}: {exc}", url=where, sqlstate=_sqlstate(exc))
    if isinstance(exc, asyncpg.InterfaceError | asyncpg.exceptions.InternalClientError):
        return StoreError(f"PostgreSQL driver error at {where}: {exc}", url=where)
    return None


@contextmanager
def translate_errors(url: str) -> Iterator[None]:
    """Re-raise asyncpg and socket errors raised inside the block as omoide errors.

    Raises:
        StoreUnavailable: the server cannot be reached, refuses the login, lacks the
            database, is shutting down or has no free connection slots.
        InvalidContent: the server cannot store some text (a NUL character).
        ConfigError: the URL has an option the driver does not understand.
        StoreError: any other database or driver error.
    """
    try:
        yield
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError) as exc:
        mapped = translate(exc, url)
        if mapped is None:  # pragma: no cover - every caught class maps to something
            raise
        raise mapped from exc


__all__ = ["redact_url", "translate", "translate_errors"]
