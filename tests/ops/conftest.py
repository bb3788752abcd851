"""Fixtures of the backup / restore / export tests: a database with a bit of everything in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omoide import Memory
from omoide.models import Message
from omoide.ops._codec import Row
from omoide.ops.backup import open_source
from omoide.ops.tables import TABLES
from omoide.settings import Settings
from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope


def make_settings(url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=url, embedder="hashing", transcripts_dir=tmp_path / "transcripts", db_pool_max=5)


async def populate(mem: Memory) -> None:
    """Sessions, messages, knowledge with vectors, memories (edited and deleted), a summary, an API key,
    an erased user: every table of a backup gets rows, in two workspaces."""
    for ws, channel, users in (("g1", "c1", ("u1", "u2", "u3")), ("g2", "c9", ("u9",))):
        for n, user in enumerate(users):
            key = mem.session_key(platform="discord", workspace=ws, channel=channel, user=user)
            await mem.append(
                key, Message.user(f"{user} の質問 {n}: 会場はどこ？ 🎉", author_id=user, author_name=user.upper())
            )
            await mem.append(key, Message.assistant(f"{user} さんへ: 渋谷です ({n})", author_id="bot", is_bot=True))
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    await mem.remember("u1 はコーヒーが好き", workspace="g1", user="u1", tags=["好み"])
    second = await mem.remember(
        "u1 lives in Osaka",
        workspace="g1",
        user="u1",
        metadata={"src": "test", "nested": {"a": [1, 2.5, None, True], "big": 2**62, "ja": '日本語\n"引用" \\ \t'}},
    )
    await mem.memories.update("g1", "u1", second.memory.id, content="u1 lives in Kyoto")
    gone = await mem.remember("u2 has a cat", workspace="g1", user="u2")
    await mem.memories.delete("g1", "u2", gone.memory.id)
    await mem.remember("u2 plays go", workspace="g1", user="u2")
    await mem.remember("u9 writes Rust", workspace="g2", user="u9")
    await mem.store.summaries.save_summary(
        SummaryDraft("g1", SummaryScope.USER, "u1", SummaryKind.LONG_TERM, "u1 はコーヒー好き", source_message_count=2),
        new_version=True,
    )
    await mem.store.summaries.save_summary(
        SummaryDraft("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM, "渋谷の会場の話"), new_version=True
    )
    await mem.api_keys.create("g1", name="bot")
    await mem.forget_user(workspace="g1", user="u3")


async def dump(url: str) -> dict[str, list[Row]]:
    """Every row of every backed-up table, in the backup's neutral form."""
    out: dict[str, list[Row]] = {}
    async with open_source(url) as source:
        have = await source.columns()
        for table in TABLES:
            if table.name not in have:
                continue
            rows: list[Row] = []
            async for batch in source.batches(table, have[table.name]):
                rows.extend(batch)
            out[table.name] = rows
    return out


@pytest.fixture
def sqlite_db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'source.db'}"


async def filled(url: str, tmp_path: Path) -> Settings:
    settings = make_settings(url, tmp_path)
    async with Memory.open(settings) as mem:
        await populate(mem)
    return settings


def vectors(rows: list[Row]) -> Any:
    return [r["embedding"] for r in rows]


def url_for(backend: str, request: pytest.FixtureRequest, tmp_path: Path, name: str) -> str:
    """A new, empty database of ``backend`` (``sqlite`` or ``postgres``)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / (name + '.db')}"
    return str(request.getfixturevalue("pg_server").new_database())
