"""Knowledge visibility on every backend: public vs private-to-members, filtered inside the SQL.

The matrix: viewer (none / member / other member / non-member / public only) × public /
private knowledge × vector / lexical / hybrid search, through ``Memory.search`` and the
stores' rankings (with and without other filters: SQLite masks hidden ids or lists the
matching ones; PostgreSQL filters inside the HNSW iterative scan, which must still return
``k`` rows when most chunks are hidden). Then the writers: a Slack export's DM and private
group, ``ingest_messages(private=True)``, an archived private session and ``build_context``;
and an upgrade from the previous schema version keeping existing rows public (and
backfilling the ones whose stored ids already say DM).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from importers.test_slack import export_files, msg, write_dir
from omoide import Memory
from omoide.errors import InvalidInput
from omoide.importers import ImportedMessage
from omoide.models import Message
from omoide.settings import Settings
from omoide.stores.knowledge import SourceDraft
from omoide.stores.search import SearchFilters

from .helpers import T0, chunk_for

ALICE, BOB, CAROL, EVE = "uA", "uB", "uC", "uE"
MODES = ("vector", "lexical", "hybrid")

# channel -> (private, members); every chunk mentions bluebird
KNOWLEDGE: dict[str, tuple[bool, tuple[str, ...]]] = {
    "pub": (False, ()),
    "dm-alice": (True, (ALICE,)),
    "grp-ab": (True, (ALICE, BOB)),
}
SEES: dict[str | None, set[str]] = {
    None: {"pub", "dm-alice", "grp-ab"},  # no viewer: the whole workspace (trusted callers)
    ALICE: {"pub", "dm-alice", "grp-ab"},
    BOB: {"pub", "grp-ab"},
    EVE: {"pub"},
}


async def _seed(mem: Memory) -> None:
    for n, (channel, (private, members)) in enumerate(KNOWLEDGE.items()):
        chunks = [
            chunk_for(10 * n + i, channel, members[0] if members else CAROL, "x", f"bluebird note {i} in {channel}", i)
            for i in range(2)
        ]
        draft = SourceDraft("g1", "slack_channel", f"#{channel}", private=private, members=members)
        await mem.store.knowledge.add_source(draft, chunks)  # type: ignore[attr-defined]
    await mem.store.knowledge.add_source(  # type: ignore[attr-defined]
        SourceDraft("g2", "slack_channel", "#other", private=True, members=(ALICE,)),
        [chunk_for(99, "other", ALICE, "x", "bluebird elsewhere", 0)],
    )
    await mem.knowledge.embed()


async def _channels(mem: Memory, mode: str, **kwargs: Any) -> set[str]:
    result = await mem.search("bluebird note", workspace="g1", k=20, mode=mode, **kwargs)  # type: ignore[arg-type]
    return {h.chunk.channel_id or "" for h in result.hits}


@pytest.mark.parametrize("mode", MODES)
async def test_viewer_matrix_through_memory_search(mem: Memory, mode: str):
    await _seed(mem)
    for viewer, expected in SEES.items():
        assert await _channels(mem, mode, viewer=viewer) == expected, (viewer, mode)
    assert await _channels(mem, mode, public_only=True) == {"pub"}
    # with another filter too (SQLite: the matching-ids path instead of the hidden-ids mask)
    assert await _channels(mem, mode, viewer=BOB, channel=["dm-alice", "grp-ab"]) == {"grp-ab"}
    assert await _channels(mem, mode, viewer=EVE, channel=["dm-alice", "grp-ab"]) == set()
    assert await _channels(mem, mode, viewer=ALICE, channel=["dm-alice"]) == {"dm-alice"}


async def test_store_rankings_filter_inside_the_query(mem: Memory):
    await _seed(mem)
    store: Any = mem.store
    model = mem.embedder.model_id
    query = await mem.embedder.embed_query("bluebird note")
    tokens = ["bluebird", "note"]
    by_id = {h.chunk_id: h.channel_id for h in await store.search.fetch_chunks(list(range(1, 20)))}
    for viewer, expected in SEES.items():
        filters = SearchFilters("g1", viewer=viewer)
        vector = await store.search.vector_ranking(model=model, query=query, filters=filters, k=10)
        lexical = await store.search.lexical_ranking(tokens=tokens, filters=filters, k=10)
        assert {by_id[r.chunk_id] for r in vector} == expected
        assert {by_id[r.chunk_id] for r in lexical} == expected
        assert len(vector) == len(lexical) == 2 * len(expected)  # k was not cut before the filter
    public = SearchFilters("g1", public_only=True)
    assert {by_id[r.chunk_id] for r in await store.search.lexical_ranking(tokens=tokens, filters=public, k=10)} == {
        "pub"
    }
    with pytest.raises(InvalidInput, match="public_only, not both"):
        SearchFilters("g1", viewer=ALICE, public_only=True)
    with pytest.raises(InvalidInput, match="viewer"):
        SearchFilters("g1", viewer="")


async def test_a_mostly_private_workspace_still_returns_k_public_rows(mem: Memory):
    """PostgreSQL: the hidden chunks are skipped inside the HNSW iterative scan, not after a top-k cut."""
    private = [chunk_for(i, "dm", ALICE, "a", f"bluebird secret number {i}", i % 24) for i in range(240)]
    public = [chunk_for(1000 + i, "pub", CAROL, "c", f"bluebird public number {i}", i % 24) for i in range(20)]
    await mem.store.knowledge.add_source(
        SourceDraft("g1", "slack_channel", "#dm", private=True, members=(ALICE,)), private
    )  # type: ignore[attr-defined]
    await mem.store.knowledge.add_source(SourceDraft("g1", "slack_channel", "#pub"), public)  # type: ignore[attr-defined]
    await mem.knowledge.embed()
    for mode in MODES:
        result = await mem.search("bluebird secret number 7", workspace="g1", k=20, mode=mode, viewer=BOB)  # type: ignore[arg-type]
        assert len(result.hits) == 20 and {h.chunk.channel_id for h in result.hits} == {"pub"}, mode
        mine = await mem.search("bluebird secret number 7", workspace="g1", k=5, mode=mode, viewer=ALICE)  # type: ignore[arg-type]
        assert "secret number 7" in mine.hits[0].content, mode


def _slack_export(root: Path) -> Path:
    files = export_files()
    files["secret/2024-01-02.json"] = [msg("1704220000.000100", "bluebird plans for the secret group")]
    files["D01XYZ/2024-01-02.json"] = [msg("1704210000.000100", "bluebird psst between alice and bob", "U02BOB")]
    files["general/2024-01-04.json"] = [msg("1704300000.000100", "bluebird is the cafeteria")]
    return write_dir(root / "export", files)


async def test_an_imported_slack_dm_and_private_group_are_private_to_their_members(mem: Memory, tmp_path: Path):
    await mem.knowledge.import_export(_slack_export(tmp_path), workspace="T0TEAM")
    await mem.knowledge.embed()
    sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace="T0TEAM")}
    dm, group, general = sources["D01XYZ"], sources["G01SECRET"], sources["C01GENERAL"]
    assert dm.private and set(dm.members) == {"U01ALICE", "U02BOB"}
    assert group.private and set(group.members) == {"U01ALICE"}
    assert dm.metadata["channel_kind"] == "dm" and group.metadata["channel_kind"] == "group"
    assert not general.private and general.members == ()
    for mode in MODES:

        async def seen(viewer: str) -> set[str]:
            result = await mem.search("bluebird", workspace="T0TEAM", k=10, mode=mode, viewer=viewer)  # type: ignore[arg-type]  # noqa: B023
            return {h.chunk.channel_id or "" for h in result.hits}

        private = {"D01XYZ", "G01SECRET"}
        for viewer, expected in (("U01ALICE", private), ("U02BOB", {"D01XYZ"}), ("U03HAL", set())):
            found = await seen(viewer)
            assert "C01GENERAL" in found and found & private == expected, (mode, viewer)


async def test_ingested_private_messages_are_private(mem: Memory):
    def live(i: int, channel: str, text: str) -> ImportedMessage:
        return ImportedMessage(
            "discord", "g1", None, channel, channel, None, None, f"m{i}", ALICE, "alice", False, text, T0
        )

    await mem.knowledge.ingest_messages(
        [live(1, "dm1", "bluebird in a DM")], workspace="g1", private=True, members=[BOB]
    )
    await mem.knowledge.ingest_messages([live(2, "general", "bluebird in public")], workspace="g1")
    await mem.knowledge.embed()
    sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace="g1")}
    assert sources["dm1"].private and set(sources["dm1"].members) == {ALICE, BOB}
    assert not sources["general"].private
    assert await _channels(mem, "hybrid", viewer=EVE) == {"general"}
    assert await _channels(mem, "hybrid", viewer=BOB) == {"general", "dm1"}


async def test_an_archived_private_session_and_build_context(mem: Memory):
    dm = mem.session_key(platform="slack", workspace="g1", channel="D1", user=ALICE)
    public = mem.session_key(platform="slack", workspace="g1", channel="C1", user=ALICE)
    bobs = mem.session_key(platform="slack", workspace="g1", channel="C1", user=BOB)
    said = "My bluebird project is the Hakone merger; please keep the bluebird details between us."
    await mem.append(dm, Message.user(said, author_id=ALICE), private=True)
    await mem.append(dm, Message.assistant("Noted: the bluebird project is the Hakone merger."))
    await mem.append(public, Message.user("The bluebird cafeteria opens at noon for everyone.", author_id=ALICE))
    await mem.append(public, Message.assistant("Thanks, the bluebird cafeteria opens at noon."))
    assert (await mem.sessions.get(dm)).private and (await mem.sessions.get(dm)).members == (ALICE,)
    assert not (await mem.sessions.get(public)).private
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace="g1")}
    assert sources["D1"].private and sources["D1"].members == (ALICE,)
    assert not sources["C1"].private
    assert await _channels(mem, "hybrid", viewer=BOB) == {"C1"}
    assert await _channels(mem, "hybrid", viewer=ALICE) == {"C1", "D1"}

    def knowledge(built: Any) -> str:
        return "\n".join(p.text for p in built.parts if p.kind.value == "knowledge")

    # a private session of Alice's (another DM with the bot) may draw on her private knowledge ...
    dm2 = mem.session_key(platform="slack", workspace="g1", channel="D2", user=ALICE)
    await mem.append(dm2, Message.user("what was bluebird again?", author_id=ALICE), private=True)
    assert "Hakone" in knowledge(await mem.build_context(dm2, "bluebird project Hakone", budget_tokens=4000))
    # ... unless its replies are read by others too (a private thread or channel): public_only
    shared = await mem.build_context(dm2, "bluebird project Hakone", budget_tokens=4000, public_only=True)
    assert "Hakone" not in knowledge(shared)
    # ... a public channel conversation (hers or Bob's) never does: everyone there reads the reply
    for key in (public, bobs):
        await mem.append(key, Message.user("what is bluebird?", author_id=BOB))
        text = knowledge(await mem.build_context(key, "bluebird project Hakone", budget_tokens=4000))
        assert "Hakone" not in text
        assert key is public or "cafeteria" in text  # Alice's own public session has it in its window


async def test_sqlite_upgrade_keeps_existing_knowledge_public_and_backfills_dms(tmp_path: Path):
    from omoide.stores.sqlite import MIGRATIONS, SqliteStore

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    previous = [m for m in MIGRATIONS if m.version < 7]
    for migration in previous:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00+00:00')",
            (migration.version, migration.name),
        )
    stamp = "2026-01-01T00:00:00+00:00"
    rows = [
        ("#general", {"platform": "slack", "channel_id": "C1", "participants": [ALICE, BOB]}, "C1"),
        ("DM: alice", {"platform": "slack", "channel_id": "D1", "participants": [ALICE]}, "D1"),
    ]
    for title, meta, channel in rows:
        source = conn.execute(
            "INSERT INTO knowledge_sources (workspace_id, type, title, status, metadata, attempts, created_at, "
            "updated_at) VALUES ('T1', 'slack_channel', ?, 'pending', ?, 0, ?, ?)",
            (title, json.dumps(meta), stamp, stamp),
        ).lastrowid
        conn.execute(
            "INSERT INTO knowledge_chunks (source_id, workspace_id, channel_id, chunk_index, content, lexical, "
            "location, author_ids, token_count, created_at) VALUES (?, 'T1', ?, 0, ?, 'bluebird', '{}', '[]', 1, ?)",
            (source, channel, f"bluebird in {channel}", stamp),
        )
    conn.execute(
        "INSERT INTO sessions (session_key, policy, platform, workspace_id, channel_id, user_id, status, version, "
        "last_seq, archived_seq, window_start_seq, last_active_at, created_at) VALUES "
        "('slack:T1:c=D1:u=uA', 'user_channel', 'slack', 'T1', 'D1', 'uA', 'active', 1, 0, 0, 0, ?, ?)",
        (stamp, stamp),
    )
    conn.commit()
    conn.close()
    settings = Settings(database_url=f"sqlite:///{path}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        assert isinstance(mem.store, SqliteStore)
        assert await mem.store.schema_version() == MIGRATIONS[-1].version
        sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace="T1")}
        assert not sources["C1"].private and sources["C1"].members == ()
        assert sources["D1"].private and sources["D1"].members == (ALICE,)
        session = await mem.sessions.get("slack:T1:c=D1:u=uA")
        assert session.private and session.members == (ALICE,)
        assert await _lexical(mem, "T1", viewer=BOB) == {"C1"}
        assert await _lexical(mem, "T1", viewer=ALICE) == {"C1", "D1"}
        assert await _lexical(mem, "T1") == {"C1", "D1"}


async def _lexical(mem: Memory, workspace: str, **kwargs: Any) -> set[str]:
    result = await mem.search("bluebird", workspace=workspace, k=10, mode="lexical", **kwargs)
    return {h.chunk.channel_id or "" for h in result.hits}


@pytest.mark.postgres
async def test_postgres_upgrade_keeps_existing_knowledge_public_and_backfills_dms(pg_url: str, tmp_path: Path):
    import asyncpg

    from omoide.stores.postgres.migrations import _CREATE_TABLE, MIGRATIONS
    from omoide.stores.postgres.vector import ensure_vector_extension

    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(_CREATE_TABLE)
        for migration in (m for m in MIGRATIONS if m.version < 6):
            if migration.needs_vector:
                await ensure_vector_extension(conn, where="test")
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", migration.version, migration.name
            )
        for meta, channel in (
            ({"platform": "slack", "channel_id": "C1", "participants": [ALICE, BOB]}, "C1"),
            ({"platform": "slack", "channel_id": "D1", "participants": [ALICE]}, "D1"),
        ):
            source = await conn.fetchval(
                "INSERT INTO knowledge_sources (workspace_id, type, title, metadata) "
                "VALUES ('T1', 'slack_channel', $1, $2::jsonb) RETURNING id",
                channel,
                json.dumps(meta),
            )
            await conn.execute(
                "INSERT INTO knowledge_chunks (source_id, workspace_id, channel_id, chunk_index, content, lexical, "
                "location, author_ids, token_count) VALUES ($1, 'T1', $2, 0, $3, 'bluebird', '{}', '[]', 1)",
                source,
                channel,
                f"bluebird in {channel}",
            )
    finally:
        await conn.close()
    settings = Settings(database_url=pg_url, embedder="hashing", transcripts_dir=tmp_path, db_pool_max=4)
    async with Memory.open(settings) as mem:
        sources = {s.metadata["channel_id"]: s for s in await mem.knowledge.sources(workspace="T1")}
        assert not sources["C1"].private and sources["C1"].members == ()
        assert sources["D1"].private and sources["D1"].members == (ALICE,)
        assert await _lexical(mem, "T1", viewer=BOB) == {"C1"}
        assert await _lexical(mem, "T1", viewer=ALICE) == {"C1", "D1"}


def test_cli_search_and_ask_take_a_viewer(settings: Settings, monkeypatch: pytest.MonkeyPatch):
    import asyncio

    from typer.testing import CliRunner

    from omoide.cli import app

    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")

    async def main() -> None:
        async with Memory.open(Settings(**{**settings.model_dump(), "embedder": "hashing"})) as mem:
            await _seed(mem)

    asyncio.run(main())
    url = str(settings.database_url)
    runner = CliRunner()

    def channels(*extra: str) -> set[str]:
        args = ["search", "bluebird note", "-g", "g1", "--k", "20", "--mode", "lexical", "--json", "--db", url]
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        return {h["channel_id"] for h in json.loads(result.stdout)["hits"]}

    assert channels() == SEES[None]  # the admin's view: everything
    assert channels("--viewer", BOB) == SEES[BOB]
    assert channels("--viewer", EVE) == SEES[EVE]
    result = runner.invoke(app, ["ask", "bluebird note", "-g", "g1", "--viewer", EVE, "--json", "--db", url])
    assert result.exit_code == 0, result.output
    evidence = json.loads(result.stdout)["evidence"]
    assert evidence and {h["channel_id"] for h in evidence} == {"pub"}
