"""Backup and restore between every pair of backends, compared row by row."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from omoide import Memory
from omoide.errors import ConflictError, InvalidInput, StoreError
from omoide.models import Message
from omoide.ops import backup, restore
from omoide.ops._codec import Row, vector_from_b64
from omoide.ops._logical import file_sha256, read_manifest

from .conftest import dump, filled, make_settings, url_for

PAIRS = [
    ("sqlite", "sqlite"),
    pytest.param("sqlite", "postgres", marks=pytest.mark.postgres),
    pytest.param("postgres", "sqlite", marks=pytest.mark.postgres),
    pytest.param("postgres", "postgres", marks=pytest.mark.postgres),
]


def _as_f16(text: str | None) -> list[float] | None:
    if text is None:
        return None
    return [float(x) for x in vector_from_b64(text).astype(np.float16).astype(np.float32)]


def _comparable(rows: dict[str, list[Row]], *, half: bool) -> dict[str, list[Row]]:
    """Rows with vectors as float lists (a chunk's vector rounded to float16 where PostgreSQL
    stores it so; unit vectors are int8 with a scale per line on both backends, restored as read)."""
    out: dict[str, list[Row]] = {}
    for name, table_rows in rows.items():
        fixed = []
        for row in table_rows:
            row = dict(row)
            for col in ("embedding", "unit_vectors"):
                if col in row and row[col] is not None:
                    rounded = half and col == "embedding"
                    row[col] = _as_f16(row[col]) if rounded else [float(x) for x in vector_from_b64(row[col])]
            fixed.append(row)
        out[name] = fixed
    return out


@pytest.mark.parametrize(("source", "target"), PAIRS)
async def test_logical_backup_restores_every_row_into_either_backend(
    source: str, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = url_for(source, request, tmp_path, "source")
    dst = url_for(target, request, tmp_path, "target")
    settings = await filled(src, tmp_path)
    before = await dump(src)
    report = await backup(src, tmp_path / "backup")
    assert report.kind == "logical" and report.rows == {k: len(v) for k, v in before.items()}
    manifest = read_manifest(tmp_path / "backup")
    assert manifest.source.backend == ("sqlite" if source == "sqlite" else "postgresql")
    assert all(len(t.sha256) == 64 for t in manifest.tables)

    restored = await restore(tmp_path / "backup", dst, settings=settings)
    assert restored.rows == report.rows
    after = await dump(dst)
    half = target == "postgres" and source == "sqlite"  # float32 vectors become PostgreSQL's float16
    assert _comparable(after, half=False) == _comparable(before, half=half)
    assert all(after[name] for name in after), "every table has rows"
    if target == "postgres":  # the vector index was built, as the embedder builds it
        conn = await asyncpg.connect(dst)
        try:
            indexes = await conn.fetch("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunk_embeddings'")
        finally:
            await conn.close()
        assert any("hnsw" in r[0] and "hashing" in r[0] for r in indexes), indexes


@pytest.mark.postgres
async def test_vectors_round_trip_exactly_postgres_sqlite_postgres(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    pg = url_for("postgres", request, tmp_path, "pg")
    settings = await filled(pg, tmp_path)
    await backup(pg, tmp_path / "one")
    lite = url_for("sqlite", request, tmp_path, "lite")
    await restore(tmp_path / "one", lite, settings=settings)
    await backup(lite, tmp_path / "two")
    back = url_for("postgres", request, tmp_path, "back")
    await restore(tmp_path / "two", back, settings=settings)
    first, last = await dump(pg), await dump(back)
    assert first["chunk_embeddings"] == last["chunk_embeddings"]  # the same base64 bytes: exact floats
    assert first["memory_embeddings"] == last["memory_embeddings"]
    assert first == last


@pytest.mark.parametrize(("source", "target"), PAIRS)
async def test_new_rows_after_a_restore_get_ids_never_used_by_the_source(
    source: str, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = url_for(source, request, tmp_path, "source")
    dst = url_for(target, request, tmp_path, "target")
    settings = await filled(src, tmp_path)
    async with Memory.open(settings) as mem:  # the newest memory is deleted: its id stays used
        last = await mem.remember("soon forgotten", workspace="g1", user="u2")
        await mem.memories.delete("g1", "u2", last.memory.id)
    rows = await dump(src)
    await backup(src, tmp_path / "backup")
    manifest = read_manifest(tmp_path / "backup")
    highest = manifest.source.sequences["memories"]
    assert highest == int(last.memory.id) > max(r["id"] for r in rows["memories"])
    await restore(tmp_path / "backup", dst, settings=settings)
    async with Memory.open(make_settings(dst, tmp_path)) as mem:
        fresh = await mem.remember("a brand new fact about tea", workspace="g1", user="u5")
        key = mem.session_key(platform="discord", workspace="g1", channel="c2", user="u5")
        await mem.append(key, Message.user("hello", author_id="u5"))
        hits = await mem.recall("coffee コーヒー", workspace="g1", user="u1")
    assert int(fresh.memory.id) > highest
    assert hits, "restored memories are searchable"
    after = await dump(dst)
    assert max(r["id"] for r in after["sessions"]) > max(r["id"] for r in rows["sessions"])
    assert max(r["id"] for r in after["session_messages"]) > manifest.source.sequences["session_messages"]


@pytest.mark.parametrize("target", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_restore_refuses_a_database_that_has_data(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = url_for("sqlite", request, tmp_path, "source")
    dst = url_for(target, request, tmp_path, "target")
    settings = await filled(src, tmp_path)
    await backup(src, tmp_path / "backup")
    async with Memory.open(make_settings(dst, tmp_path)) as mem:
        await mem.remember("already here", workspace="g7", user="u7")
    before = await dump(dst)
    with pytest.raises(ConflictError, match="not empty") as caught:
        await restore(tmp_path / "backup", dst, settings=settings)
    assert "memories" in caught.value.message
    assert await dump(dst) == before


@pytest.mark.parametrize("form", ["logical", "file"])
async def test_restore_refuses_another_applications_sqlite_database(form: str, tmp_path: Path) -> None:
    """A page copy would replace the other application's tables; a logical restore would add omoide's to them."""
    src = f"sqlite:///{tmp_path / 'source.db'}"
    settings = await filled(src, tmp_path)
    path = tmp_path / ("backup" if form == "logical" else "copy.db")
    await backup(src, path)
    target = tmp_path / "theirs.db"
    with sqlite3.connect(target) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users VALUES (1, 'alice')")
    conn.close()
    before = target.read_bytes()
    with pytest.raises(ConflictError, match=r"another application.*users"):
        await restore(path, f"sqlite:///{target}", settings=settings)
    assert target.read_bytes() == before, "their database was left as it was"


@pytest.mark.parametrize("target", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("tables", [True, False])
async def test_an_sqlite_file_that_is_not_omoides_is_not_restored(
    target: str, tables: bool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as conn:
        if tables:
            conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
            conn.execute("INSERT INTO users VALUES (1, 'alice')")
        else:
            conn.execute("PRAGMA user_version = 1")  # a header, no table
    conn.close()
    dst = url_for(target, request, tmp_path, "target")
    settings = make_settings(dst, tmp_path)
    with pytest.raises(InvalidInput, match="not an omoide backup" + (r".*users" if tables else "")):
        await restore(theirs, dst, settings=settings)
    if target == "sqlite":
        assert not (tmp_path / "target.db").exists()
    else:
        assert not any((await dump(dst)).values())


async def test_sqlite_file_backup_restores_page_for_page(tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'source.db'}"
    settings = await filled(src, tmp_path)
    report = await backup(src, tmp_path / "copy.db")
    assert report.kind == "sqlite-file" and report.bytes > 0
    dst = f"sqlite:///{tmp_path / 'restored.db'}"
    restored = await restore(tmp_path / "copy.db", dst, settings=settings)
    assert restored.source == "sqlite-file"
    assert await dump(dst) == await dump(src)
    async with Memory.open(make_settings(dst, tmp_path)) as mem:  # FTS indexes came along
        assert await mem.recall("コーヒー", workspace="g1", user="u1")


@pytest.mark.postgres
async def test_an_sqlite_file_backup_restores_into_postgres(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'source.db'}"
    settings = await filled(src, tmp_path)
    await backup(src, tmp_path / "copy.db")
    dst = url_for("postgres", request, tmp_path, "target")
    restored = await restore(tmp_path / "copy.db", dst, settings=settings)
    assert restored.source == "sqlite-file" and restored.backend == "postgresql"
    assert _comparable(await dump(dst), half=False) == _comparable(await dump(src), half=True)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_reembed_computes_the_same_vectors_again(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = url_for(backend, request, tmp_path, "source")
    settings = await filled(src, tmp_path)
    report = await backup(src, tmp_path / "small", embeddings=False)
    assert "chunk_embeddings" not in report.rows and not report.embeddings
    assert read_manifest(tmp_path / "small").source.embeddings is False
    dst = url_for(backend, request, tmp_path, "target")
    restored = await restore(tmp_path / "small", dst, settings=settings, reembed=True)
    before, after = await dump(src), await dump(dst)
    assert restored.reembedded == {"chunk_embeddings": 3, "memory_embeddings": 4}

    def vectors(rows: list[Row], key: str) -> dict[object, str]:
        return {r[key]: r["embedding"] for r in rows}

    assert vectors(after["memory_embeddings"], "memory_id") == vectors(before["memory_embeddings"], "memory_id")
    assert vectors(after["chunk_embeddings"], "chunk_id") == vectors(before["chunk_embeddings"], "chunk_id")


async def test_a_damaged_or_newer_backup_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'source.db'}"
    settings = await filled(src, tmp_path)
    await backup(src, tmp_path / "backup")
    file = tmp_path / "backup" / "memories.jsonl.gz"
    rows = gzip.decompress(file.read_bytes()).replace(b"Kyoto", b"Tokyo")
    file.write_bytes(gzip.compress(rows))
    dst = tmp_path / "target.db"
    with pytest.raises(InvalidInput, match="SHA-256"):
        await restore(tmp_path / "backup", f"sqlite:///{dst}", settings=settings)
    assert not dst.exists()

    manifest = tmp_path / "backup" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = 99
    manifest.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match="newer than this omoide"):
        await restore(tmp_path / "backup", f"sqlite:///{dst}", settings=settings)


@pytest.mark.parametrize("target", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_restore_that_fails_half_way_leaves_the_target_empty(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = f"sqlite:///{tmp_path / 'source.db'}"
    settings = await filled(src, tmp_path)
    await backup(src, tmp_path / "backup")
    # a row the target refuses (CHECK on summaries.kind), late in the restore, in a backup whose
    # checksums agree (written by someone else's tool): the sessions and messages went in first
    file = tmp_path / "backup" / "summaries.jsonl.gz"
    file.write_bytes(gzip.compress(gzip.decompress(file.read_bytes()).replace(b'"long_term"', b'"forever"')))
    manifest = tmp_path / "backup" / "manifest.json"
    data = json.loads(manifest.read_text())
    entry = next(t for t in data["tables"] if t["name"] == "summaries")
    entry["sha256"] = file_sha256(file)
    manifest.write_text(json.dumps(data))
    dst = url_for(target, request, tmp_path, "target")
    with pytest.raises(StoreError):
        await restore(tmp_path / "backup", dst, settings=settings)
    assert not any((await dump(dst)).values()), "nothing was restored"


async def test_a_database_with_a_column_omoide_does_not_know_is_not_backed_up(tmp_path: Path) -> None:
    src = tmp_path / "source.db"
    await filled(f"sqlite:///{src}", tmp_path)
    conn = sqlite3.connect(src)
    conn.execute("ALTER TABLE memories ADD COLUMN mood TEXT")
    conn.close()
    with pytest.raises(StoreError, match="mood"):
        await backup(f"sqlite:///{src}", tmp_path / "backup")
    assert not (tmp_path / "backup").exists() and not (tmp_path / "backup.partial").exists()
