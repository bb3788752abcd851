"""``omoide backup`` of a Citus database, restored into one PostgreSQL server (leaving Citus).

The backup reads through the coordinator like any PostgreSQL backup (one ``REPEATABLE READ READ
ONLY`` transaction; docs/scale.md, "Backups on Citus" says what that means on a cluster). The
folder restores into a single-node database row for row, and the restored database works: its
search finds the archived messages and new rows get ids the cluster never used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omoide import Memory
from omoide.models import Message
from omoide.ops import backup, restore
from omoide.ops._logical import read_manifest
from ops.conftest import dump, filled, make_settings


async def test_a_logical_backup_of_citus_restores_into_one_postgresql_server(
    citus_url: str, pg_server: Any, tmp_path: Path
) -> None:
    settings = await filled(citus_url, tmp_path)
    before = await dump(citus_url)
    report = await backup(citus_url, tmp_path / "backup", logical=True)
    assert report.kind == "logical" and report.rows == {k: len(v) for k, v in before.items()}
    assert all(before[name] for name in before), "every table has rows"

    single = pg_server.new_database()  # tests/conftest.py's PostgreSQL server: no Citus there
    restored = await restore(tmp_path / "backup", single, settings=settings)
    assert restored.rows == report.rows
    assert await dump(single) == before

    highest = read_manifest(tmp_path / "backup").source.sequences["session_messages"]
    async with Memory.open(make_settings(single, tmp_path)) as mem:
        found = await mem.search("会場はどこ", workspace="g1", k=3)
        key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
        fresh = await mem.append(key, Message.user("また来週", author_id="u1"))
    assert found.hits, "the restored knowledge is searchable"
    assert fresh.id is not None and int(fresh.id) > highest
