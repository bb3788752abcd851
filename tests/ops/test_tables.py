"""The backup's table list matches the schema of both backends, column for column.

A migration that adds a table or a column must add it to ``omoide.ops.tables`` too, or
backups would drop it: this test fails first (and a backup refuses to run).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from omoide.errors import StoreError
from omoide.ops import _postgres, _sqlite
from omoide.ops.tables import DERIVED_COLUMNS, TABLES, check_columns
from omoide.settings import Settings
from omoide.stores import open_store


async def _live(url: str, tmp_path: Path) -> dict[str, tuple[str, ...]]:
    async with open_store(settings=Settings(database_url=url, transcripts_dir=tmp_path / "t"), migrate=True):
        pass
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return _sqlite._live_columns(conn)
        finally:
            conn.close()
    pg = await asyncpg.connect(url)
    try:
        return {k: tuple(v) for k, v in (await _postgres._live_columns(pg)).items()}
    finally:
        await pg.close()


async def test_every_table_and_column_of_the_schema_is_backed_up(db_url: str, tmp_path: Path) -> None:
    live = await _live(db_url, tmp_path)
    check_columns(live, where=db_url)  # nothing in the database is unknown to the backup
    for table in TABLES:
        assert table.name in live, f"{table.name} is missing from a freshly migrated database"
        columns = [c for c in live[table.name] if c not in DERIVED_COLUMNS]
        assert sorted(columns) == sorted(table.columns), table.name


def test_an_unknown_table_or_column_stops_the_backup() -> None:
    with pytest.raises(StoreError, match="table 'surprise'"):
        check_columns({"surprise": ("id",)}, where="db")
    with pytest.raises(StoreError, match="column"):
        check_columns({"memories": ("id", "mood")}, where="db")


def test_citus_shards_of_known_tables_are_not_unknown_tables() -> None:
    check_columns({"sessions_102008": ("id", "session_key"), "knowledge_chunks_fts_data": ("id",)}, where="db")
