"""pgvector: installing the extension and registering its types on each connection.

The extension may live in any schema (``public`` by default; managed services often use
``extensions``), so the schema is looked up, not assumed. ``halfvec`` needs pgvector 0.7.
"""

from __future__ import annotations

import asyncpg
from pgvector.asyncpg import register_vector

from omoide.errors import MigrationError

MIN_PGVECTOR = (0, 7, 0)
_INSTALL_HINT = (
    "omoide needs the pgvector extension (https://github.com/pgvector/pgvector#installation): "
    "install it on the database server (e.g. apt install postgresql-NN-pgvector), then have a superuser "
    "run CREATE EXTENSION vector; in this database once, and run omoide migrate again."
)


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


async def vector_extension(conn: asyncpg.Connection) -> tuple[str, str] | None:
    """``(schema, version)`` of the installed ``vector`` extension, or ``None``."""
    row = await conn.fetchrow(
        "SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    )
    return None if row is None else (str(row[0]), str(row[1]))


async def ensure_vector_extension(conn: asyncpg.Connection, *, where: str) -> None:
    """Create the ``vector`` extension if absent and check that it has ``halfvec``.

    Runs inside the migration transaction, so a failure leaves nothing behind.

    Raises:
        MigrationError: pgvector is not installed on the server, this role may not create
            it, or it is older than 0.7.
    """
    found = await vector_extension(conn)
    if found is None:
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except (
            asyncpg.exceptions.FeatureNotSupportedError,  # 0A000: not installed on the server
            asyncpg.exceptions.UndefinedFileError,  # 58P01: older servers, no control file
            asyncpg.exceptions.InsufficientPrivilegeError,  # 42501: not a superuser
        ) as exc:
            raise MigrationError(
                f"cannot create the pgvector extension in {where}: {exc}. {_INSTALL_HINT}", sqlstate=exc.sqlstate
            ) from exc
        found = await vector_extension(conn)
        assert found is not None
    if _version_tuple(found[1]) < MIN_PGVECTOR:
        raise MigrationError(
            f"pgvector {found[1]} in {where} is too old: omoide stores halfvec embeddings, which need pgvector "
            f">= {'.'.join(map(str, MIN_PGVECTOR))}. Upgrade the package on the server, then run "
            "ALTER EXTENSION vector UPDATE; as a superuser."
        )


async def register_vector_types(conn: asyncpg.Connection, schema: str) -> None:
    """Register pgvector's ``vector``/``halfvec``/``sparsevec`` codecs (binary) on one connection.

    ``halfvec`` values are :class:`pgvector.HalfVector` (numpy arrays and lists are accepted as input).
    """
    await register_vector(conn, schema=schema)


__all__ = ["MIN_PGVECTOR", "ensure_vector_extension", "register_vector_types", "vector_extension"]
