"""The logical schema of a backup: every table omoide keeps, in a form both backends read and write.

SQLite and PostgreSQL store the same data in different shapes (ISO text vs ``timestamptz``,
JSON text vs ``jsonb``, ``0/1`` vs ``boolean``, float32 BLOBs vs ``halfvec`` and float16
``bytea``). A backup holds one neutral form per column :class:`Kind`, so a backup of either
backend restores into either:

* ``TS``: ISO-8601 UTC text with microseconds (``2026-11-26T09:43:35.123456+00:00``);
* ``JSON``: the parsed JSON value (not its text);
* ``BOOL``: ``true`` / ``false``;
* ``VECTOR``: base64 of little-endian float32. PostgreSQL keeps float16, so a vector read
  from it round-trips exactly through either backend; a float32 vector from SQLite is rounded
  to float16 when restored into PostgreSQL (what PostgreSQL would have stored in the first place).
* ``UNITS`` / ``HALF``: base64 of little-endian float32 too (a ``lines × dimensions`` matrix of
  unit vectors; the line reader's ``lines × 512``), stored by both backends as int8 with a scale
  per line (:mod:`omoide.stores.unit_codec`): restored, a matrix is stored in that form again
  (a row written before it, float32 or float16, is restored in it too).

Derived data is left out and rebuilt by the target: the FTS5 tables and PostgreSQL's
generated columns (``lexical_tsv``, ``lexical_len``, from ``lexical``), SQLite's
``search_generations`` / ``memory_generations`` caches (by their triggers),
``schema_migrations`` (the target is migrated by this omoide). :func:`check_columns`
compares this list with a live database, so a column added by a later migration and not
listed here stops a backup instead of being silently dropped.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from omoide.errors import StoreError


class Kind(enum.Enum):
    """How a column is written in a backup (see the module docstring)."""

    INT = "int"
    TEXT = "text"
    BOOL = "bool"
    TS = "ts"
    JSON = "json"
    VECTOR = "vector"
    UNITS = "units"
    HALF = "half"


@dataclass(frozen=True, slots=True)
class Table:
    """One table of the logical schema.

    Attributes:
        name: the table name (the same on both backends).
        columns: name → kind, in backup order.
        key: the columns rows are ordered by (the primary key).
        identity: the column with a generated id (AUTOINCREMENT / IDENTITY), whose counter a
            restore moves past the restored ids and past the source's own counter.
        embeddings: a table of vectors, left out by ``--no-embeddings`` / ``--reembed``.
        optional: a table of a newer migration; skipped where the database lacks it.
    """

    name: str
    columns: Mapping[str, Kind]
    key: tuple[str, ...] = ("id",)
    identity: str | None = "id"
    embeddings: bool = False
    optional: bool = False

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(self.columns)


def columns(spec: str) -> dict[str, Kind]:
    """``"id:int name:text"`` → ``{"id": Kind.INT, "name": Kind.TEXT}`` (one line per table below)."""
    return {name: Kind(kind) for name, _, kind in (item.partition(":") for item in spec.split())}


TABLES: tuple[Table, ...] = (
    Table(
        "sessions",
        columns(
            "id:int session_key:text policy:text platform:text workspace_id:text channel_id:text thread_id:text "
            "user_id:text agent_id:text status:text version:int last_seq:int archived_seq:int window_start_seq:int "
            "last_active_at:ts created_at:ts context_summary:text context_summary_seq:int private:bool members:json"
        ),
    ),
    Table(
        "session_messages",
        columns(
            "id:int session_id:int workspace_id:text seq:int role:text content:json author_id:text author_name:text "
            "is_bot:bool platform_message_id:text created_at:ts token_count:int"
        ),
    ),
    Table(
        "knowledge_sources",
        columns(
            "id:int workspace_id:text type:text title:text uri:text status:text metadata:json error:text attempts:int "
            "claimed_at:ts created_at:ts updated_at:ts private:bool members:json"
        ),
    ),
    Table(
        "knowledge_chunks",
        columns(
            "id:int source_id:int workspace_id:text channel_id:text thread_id:text chunk_index:int content:text "
            "lexical:text location:json author_ids:json token_count:int started_at:ts ended_at:ts created_at:ts "
            "private:bool members:json unit_lexical:json"
        ),
    ),
    Table(
        "chunk_embeddings",
        columns(
            "chunk_id:int workspace_id:text model:text dimensions:int embedding:vector content_hash:text "
            "embedded_at:ts unit_vectors:units reader_vectors:half"
        ),
        key=("chunk_id", "model"),
        identity=None,
        embeddings=True,
    ),
    Table(
        "memories",
        columns(
            "id:int workspace_id:text user_id:text content:text lexical:text category:text tags:json metadata:json "
            "created_at:ts updated_at:ts"
        ),
    ),
    Table(
        "memory_embeddings",
        columns(
            "memory_id:int workspace_id:text user_id:text model:text dimensions:int embedding:vector embedded_at:ts"
        ),
        key=("memory_id", "model"),
        identity=None,
        embeddings=True,
    ),
    Table(
        "memory_events",
        columns(
            "id:int workspace_id:text user_id:text memory_id:int action:text actor:text content:text created_at:ts"
        ),
        optional=True,
    ),
    Table(
        "summaries",
        columns(
            "id:int workspace_id:text scope:text scope_id:text kind:text version:int content:text "
            "source_message_count:int source_latest_message_at:ts metadata:json created_at:ts"
        ),
    ),
    Table("store_meta", columns("key:text value:text updated_at:ts"), key=("key",), identity=None),
    Table(
        "api_keys",
        columns("id:int workspace_id:text name:text prefix:text token_hash:text created_at:ts revoked_at:ts"),
    ),
    Table("erasure_state", columns("workspace_id:text generation:int"), key=("workspace_id",), identity=None),
    Table(
        "erased_users",
        columns("workspace_id:text user_hash:text erased_at:ts"),
        key=("workspace_id", "user_hash"),
        identity=None,
    ),
)
"""Every table of a backup, parents before children (the order a restore inserts them in)."""

BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}

DERIVED_TABLES = frozenset(
    {
        "schema_migrations",
        "sqlite_sequence",
        "search_generations",
        "memory_generations",
        "knowledge_chunks_fts",
        "memories_fts",
        "worker_state",  # what running workers report (omoide.stores.worker_state): not data, never restored
    }
)
"""Tables a backup leaves out: the target rebuilds them (see the module docstring), or they only describe
running processes (``worker_state``)."""

DERIVED_COLUMNS = frozenset({"lexical_tsv", "lexical_len"})
"""PostgreSQL generated columns (computed from ``lexical``); the readers skip every generated column anyway."""


def table(name: str) -> Table:
    """The table called ``name``.

    Raises:
        StoreError: no such table in the logical schema.
    """
    try:
        return BY_NAME[name]
    except KeyError:
        raise StoreError(f"{name!r} is not a table omoide backs up (known: {', '.join(BY_NAME)})") from None


_SHARD = re.compile(r"^(?P<table>[a-z_]+)_\d+$")


def _is_shard(name: str) -> bool:
    """A Citus shard of a known table (``sessions_102008``), listed where the coordinator holds shards."""
    match = _SHARD.match(name)
    return match is not None and (match["table"] in BY_NAME or match["table"] in DERIVED_TABLES)


def check_columns(live: Mapping[str, Iterable[str]], *, where: str) -> None:
    """Check that the logical schema covers every table and column of a live database.

    Args:
        live: table → its columns, as the database lists them (FTS shadow tables and the
            like may be included; anything derived is ignored).
        where: the database, for the message.

    Raises:
        StoreError: the database has a table or column this omoide would not back up (a
            newer migration than this module knows): nothing is written.
    """
    for name, columns in live.items():
        if name in DERIVED_TABLES or name.startswith(("knowledge_chunks_fts_", "memories_fts_", "sqlite_")):
            continue
        spec = BY_NAME.get(name)
        if spec is None and _is_shard(name):
            continue
        if spec is None:
            raise StoreError(
                f"the database {where} has a table {name!r} that omoide's backup does not know: this omoide is "
                "older than the database's schema; back it up with the omoide that migrated it"
            )
        unknown = [c for c in columns if c not in spec.columns and c not in DERIVED_COLUMNS]
        if unknown:
            raise StoreError(
                f"the table {name!r} in {where} has column(s) {', '.join(unknown)} that omoide's backup does not "
                "know: back it up with the omoide that migrated it"
            )


__all__ = [
    "BY_NAME",
    "DERIVED_COLUMNS",
    "DERIVED_TABLES",
    "TABLES",
    "Kind",
    "Table",
    "check_columns",
    "columns",
    "table",
]
