"""SQLite's two lexical plans (``omoide.stores.sqlite._search``) give the same ranking.

A workspace holding most chunks is ranked by the full-text index first, the filters tested on
its best matches in batches (``_ranked_first``); anything else joins every match to its chunk.
Both must return exactly what the join returns — ids, scores and order (ties by id) — for
every filter, ``k`` below and above the number of matches, and batches that run out.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from omoide.settings import Settings
from omoide.stores import open_store
from omoide.stores.knowledge import ChunkDraft, SourceDraft
from omoide.stores.search import RankedChunk, SearchFilters
from omoide.stores.sqlite import _search as sops

WORDS = [f"w{i}" for i in range(40)]


def _join(conn: sqlite3.Connection, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
    """The reference: every match joined to its chunk and source, filtered, ordered, cut."""
    where, params = sops.filter_sql(filters)
    rows = conn.execute(
        "SELECT c.id, bm25(knowledge_chunks_fts) AS rank_ FROM knowledge_chunks_fts "
        "JOIN knowledge_chunks c ON c.id = knowledge_chunks_fts.rowid JOIN knowledge_sources s ON s.id = c.source_id "
        f"WHERE knowledge_chunks_fts MATCH ? AND {where} ORDER BY rank_, c.id LIMIT ?",
        [sops.fts_query(tokens), *params, k],
    ).fetchall()
    return [RankedChunk(int(r[0]), -float(r[1])) for r in rows]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 chunks: 70 % in ``big`` (two source types, three channels, some private), 20 % in
    ``mid``, 10 % in ``small``; 8 words each from 40, so words match hundreds of chunks and
    BM25 scores tie."""
    import asyncio

    path = tmp_path_factory.mktemp("lexplans") / "s.db"
    rng = random.Random(16)

    async def load() -> None:
        settings = Settings(database_url=f"sqlite:///{path}", transcripts_dir=path.parent / "t")
        async with open_store(settings=settings) as store:
            for workspace, count in [("big", 420), ("mid", 120), ("small", 60)]:
                for part in range(3):
                    drafts = []
                    for i in range(count // 3):
                        words = " ".join(rng.choice(WORDS) for _ in range(8))
                        drafts.append(
                            ChunkDraft(
                                content=words,
                                lexical=words,
                                token_count=8,
                                channel_id=f"c{i % 3}",
                                author_ids=(f"u{i % 5}",),
                            )
                        )
                    source = SourceDraft(
                        workspace_id=workspace,
                        type="document" if part == 2 else "discord_channel",
                        title=f"{workspace}{part}",
                        private=part == 1,
                        members=("u1",) if part == 1 else (),
                    )
                    await store.knowledge.add_source(source, drafts)  # type: ignore[attr-defined]

    asyncio.run(load())
    return path


@pytest.fixture
def conn(db: Path) -> sqlite3.Connection:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    sops._SHARES.clear()
    return c


FILTERS = [
    SearchFilters("big"),
    SearchFilters("mid"),
    SearchFilters("small"),
    SearchFilters("nobody"),
    SearchFilters("big", viewer="u2"),
    SearchFilters("big", viewer="u1"),
    SearchFilters("big", public_only=True),
    SearchFilters("big", channel_ids=("c1",)),
    SearchFilters("big", source_types=("document",)),
    SearchFilters("big", author_ids=("u3",)),
]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: repr(f)[:60])
@pytest.mark.parametrize("k", [1, 7, 50, 200, 1000])
def test_ranked_first_equals_the_join(conn: sqlite3.Connection, filters: SearchFilters, k: int) -> None:
    for tokens in (["w1"], ["w2", "w3"], ["w4", "w5", "w6", "w7"], ["nothing"], list(WORDS)):
        want = _join(conn, tokens, filters, k)
        assert sops._ranked_first(conn, tokens, filters, k) == want
        assert sops.lexical_ranking(conn, tokens, filters, k) == want


def test_the_plan_follows_the_workspace_share(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """The big workspace (70 %) is ranked first; the others, and narrower filters, join."""
    used: list[str] = []
    real = sops._ranked_first

    def spy(*args: object) -> list[RankedChunk]:
        used.append("ranked_first")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sops, "_ranked_first", spy)
    sops.lexical_ranking(conn, ["w1"], SearchFilters("big"), 10)
    assert used == ["ranked_first"]
    sops.lexical_ranking(conn, ["w1"], SearchFilters("mid"), 10)
    sops.lexical_ranking(conn, ["w1"], SearchFilters("big", channel_ids=("c1",)), 10)
    assert used == ["ranked_first"]
    assert sops._workspace_share(conn, "big") == pytest.approx(0.7)
