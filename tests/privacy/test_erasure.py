"""The erasure rule, end to end on both backends: a forgotten user's words are nowhere to be found.

A unique marker is planted in the user's DM with the bot, in a shared channel, in a memory,
in an import, in a JSONL transcript and (through the summariser) in summaries; the data is
archived, embedded and summarised; the user is forgotten. Then no search mode, no ``ask``, no
``build_context`` of another user, no text column of any table and no transcript file holds
the marker, while the other user's words are still found.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide import Memory, Message
from omoide.importers import ImportedMessage
from omoide.models import utcnow
from omoide.settings import Settings
from omoide.transcripts import TranscriptStore

MARK = "zorblaxian"
JA_MARK = "ぽんぽこ山"
WS = "g1"
ALICE, BOB = "alice", "bob"


def tuned(settings: Settings, **overrides: Any) -> Settings:
    return Settings(**{**settings.model_dump(), **overrides})


@pytest.fixture
async def mem(settings: Settings) -> AsyncIterator[Memory]:
    async with Memory.open(tuned(settings, embedder="hashing", summary_message_threshold=1)) as m:
        yield m


def imported(i: int, author: str, text: str, *, at: datetime) -> ImportedMessage:
    return ImportedMessage(
        platform="discord",
        workspace_id=WS,
        workspace_name="guild",
        channel_id="imported",
        channel_name="imported",
        thread_id=None,
        thread_name=None,
        message_id=str(5000 + i),
        author_id=author,
        author_name=author.title(),
        is_bot=False,
        text=text,
        created_at=at,
        url=None,
    )


def history() -> list[ImportedMessage]:
    t0 = utcnow() - timedelta(days=3)
    return [
        imported(0, BOB, "bobimport0 が資料を共有します。", at=t0),
        imported(1, ALICE, f"My import line says {MARK} and {JA_MARK}.", at=t0 + timedelta(minutes=1)),
        imported(2, BOB, "bobimport2 ありがとう、読みます。", at=t0 + timedelta(minutes=2)),
    ]


async def plant(mem: Memory) -> Any:
    """The marker everywhere the engine keeps text; returns Bob's key in the shared channel."""
    dm = mem.session_key(platform="discord", workspace=WS, channel="dm-alice", user=ALICE)
    await mem.append(dm, Message.user(f"My secret is {MARK}. 覚えて: {JA_MARK}", author_id=ALICE, author_name="Alice"))
    await mem.append(dm, Message.assistant(f"I will keep {MARK} safe.", author_id="bot", author_name="omoide"))
    shared = mem.session_key(platform="discord", workspace=WS, channel="general", policy="channel")
    for i in range(6):
        if i % 2:
            text = f"Alice says {MARK} number {i}: {JA_MARK}に登りました。"
            await mem.append(shared, Message.user(text, author_id=ALICE, author_name="Alice", message_id=f"m{i}"))
        else:
            text = f"bobword{i} 勉強会は金曜日です。"
            await mem.append(shared, Message.user(text, author_id=BOB, author_name="Bob", message_id=f"m{i}"))
    await mem.remember(f"Alice's hint is {MARK}", workspace=WS, user=ALICE)
    await mem.knowledge.ingest_messages(history(), workspace=WS)
    transcripts = TranscriptStore(mem.settings.transcripts_dir)
    own = await transcripts.create_session(WS, "alice-only")
    await transcripts.append_user(WS, own.id, f"transcript {MARK}", author_id=ALICE)
    mixed = await transcripts.create_session(WS, "mixed")
    await transcripts.append_user(WS, mixed.id, "bobtranscript hello", author_id=BOB)
    await transcripts.append_user(WS, mixed.id, f"alice adds {MARK}", author_id=ALICE)
    return mem.session_key(platform="discord", workspace=WS, channel="general", user=BOB)


async def digest(mem: Memory) -> None:
    """Archive, embed and summarise everything planted."""
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    await mem.summary_generator().run()


async def plant_summaries(mem: Memory) -> None:
    """Summaries that quote her, as a model's would."""
    from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

    for scope, scope_id in (
        (SummaryScope.CHANNEL, "general"),
        (SummaryScope.USER, ALICE),
        (SummaryScope.WORKSPACE, WS),
    ):
        draft = SummaryDraft(WS, scope, scope_id, SummaryKind.LONG_TERM, f"Alice mentioned {MARK} and {JA_MARK}.")
        await mem.store.summaries.save_summary(draft, new_version=True)


# ------------------------------------------------------------------ where text can hide


async def text_columns_holding(settings: Settings, needle: str) -> list[str]:
    """``table.column`` of every text column, in every table of the database, whose value contains ``needle``."""
    url = settings.database_url
    found: list[str] = []
    if url.startswith("sqlite"):
        path = url.split("sqlite:///", 1)[1]
        conn = sqlite3.connect(path)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                for column in [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]:
                    hit = conn.execute(
                        f'SELECT 1 FROM "{table}" WHERE typeof("{column}") = \'text\' AND "{column}" LIKE ? LIMIT 1',
                        (f"%{needle}%",),
                    ).fetchone()
                    if hit:
                        found.append(f"{table}.{column}")
            # the full-text indexes answer no query for it either
            for fts in ("knowledge_chunks_fts", "memories_fts"):
                if conn.execute(
                    f"SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT 1", (f'"{needle.lower()}"',)
                ).fetchone():
                    found.append(f"{fts} (MATCH)")
        finally:
            conn.close()
        return found
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        columns = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
            "AND data_type IN ('text', 'jsonb', 'character varying', 'tsvector', 'json')"
        )
        for row in columns:
            table, column = row["table_name"], row["column_name"]
            if await conn.fetchval(
                f'SELECT 1 FROM "{table}" WHERE "{column}"::text LIKE $1 LIMIT 1', f"%{needle.lower()}%"
            ) or await conn.fetchval(f'SELECT 1 FROM "{table}" WHERE "{column}"::text LIKE $1 LIMIT 1', f"%{needle}%"):
                found.append(f"{table}.{column}")
    finally:
        await conn.close()
    return found


def files_holding(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def retrievable(mem: Memory, needle: str, bob_key: Any) -> list[str]:
    """Every way a reader could get ``needle`` back from the engine."""
    where: list[str] = []
    for mode in ("vector", "lexical", "hybrid"):
        hits = (await mem.search(needle, workspace=WS, mode=mode, k=50)).hits
        if any(needle in h.content for h in hits):
            where.append(f"search:{mode}")
    answer = await mem.ask(f"What is {needle}?", workspace=WS)
    if needle in answer.text or any(needle in c.hit.content for c in answer.citations):
        where.append("ask")
    built = await mem.build_context(bob_key, f"{needle} のことを教えて", user=BOB)
    if needle in json.dumps(built.as_dict(), ensure_ascii=False):
        where.append("build_context")
    for hit in await mem.recall(needle, workspace=WS, user=ALICE):
        if needle in hit.memory.content:
            where.append("recall")
    return where


# ------------------------------------------------------------------ the test


async def test_a_forgotten_user_is_nowhere_to_be_found(mem: Memory, settings: Settings) -> None:
    bob_key = await plant(mem)
    await digest(mem)
    await plant_summaries(mem)
    # planted for real: found before the erasure
    assert "search:lexical" in await retrievable(mem, MARK, bob_key)
    assert {"summaries.content", "memories.content", "knowledge_chunks.content", "session_messages.content"} <= set(
        await text_columns_holding(mem.settings, MARK)
    )
    assert files_holding(mem.settings.transcripts_dir, MARK)

    report = await mem.forget_user(workspace=WS, user=ALICE)

    assert report.memories == 1 and report.sessions == 1 and report.messages >= 5
    assert report.chunks_rewritten >= 2  # the shared channel's and the import's chunks, without her lines
    assert report.sources_deleted >= 1  # her own DM conversation, whole
    assert report.transcripts == 2
    for needle in (MARK, JA_MARK):
        assert await retrievable(mem, needle, bob_key) == [], needle
        assert await text_columns_holding(mem.settings, needle) == [], needle
        assert files_holding(mem.settings.transcripts_dir, needle) == [], needle
    # not even her id or name: no author list, member list, participant list or name map keeps it
    # (memory_generations keeps a bare counter per user id: the recall caches' invalidation, no content)
    assert [c for c in await text_columns_holding(mem.settings, ALICE) if not c.startswith("memory_generations.")] == []
    # Bob's words stay, in the chunks rewritten around Alice's lines and in the transcript they shared
    for word in ("bobword0", "bobword4", "bobimport2"):
        assert any(word in h.content for h in (await mem.search(word, workspace=WS, mode="lexical")).hits), word
    assert files_holding(mem.settings.transcripts_dir, "bobtranscript")

    # the rewritten chunks are embedded again, and still hold nothing of hers
    await mem.knowledge.embed()
    status = await mem.store.knowledge.knowledge_status(workspace_id=WS)
    assert status.chunks == sum(status.embedded.values()), status
    assert await retrievable(mem, MARK, bob_key) == []

    # idempotent, and an old export brings nothing back
    again = await mem.forget_user(workspace=WS, user=ALICE)
    assert again.total == 0, again
    await mem.knowledge.ingest_messages(history(), workspace=WS)
    await digest(mem)
    assert await text_columns_holding(mem.settings, MARK) == []
    # …while what she writes after being forgotten is hers again, as a new user's
    dm = mem.session_key(platform="discord", workspace=WS, channel="dm-alice", user=ALICE)
    await mem.append(dm, Message.user("hello again, newword", author_id=ALICE))
    assert [m.text for m in await mem.history(dm)] == ["hello again, newword"]


async def test_a_conversation_that_was_only_theirs_leaves_no_source(mem: Memory) -> None:
    key = mem.session_key(platform="discord", workspace=WS, channel="c9", user=ALICE)
    await mem.append(key, Message.user(f"only me: {MARK}", author_id=ALICE))
    await mem.append(key, Message.assistant(f"you said {MARK}", author_id="bot"))
    await mem.knowledge.archive(now=True)
    assert (await mem.store.knowledge.knowledge_status(workspace_id=WS)).chunks >= 1
    report = await mem.forget_user(workspace=WS, user=ALICE)
    assert report.sources_deleted == 1 and report.chunks_deleted >= 1
    status = await mem.store.knowledge.knowledge_status(workspace_id=WS)
    assert status.chunks == 0


async def test_old_chunks_without_line_records_are_dropped_whole(mem: Memory) -> None:
    """A chunk written before line records existed cannot be cut by author: it goes whole."""
    from omoide.stores.knowledge import ChunkDraft, SourceDraft

    await mem.store.knowledge.add_source(
        SourceDraft(workspace_id=WS, type="document", title="old"),
        [
            ChunkDraft(
                content=f"**Alice**: {MARK}\n**Bob**: hi", lexical=f"{MARK} hi", token_count=5, author_ids=(ALICE, BOB)
            ),
            ChunkDraft(content="**Bob**: only bob", lexical="only bob", token_count=3, author_ids=(BOB,)),
        ],
    )
    report = await mem.forget_user(workspace=WS, user=ALICE)
    assert (report.chunks_deleted, report.chunks_rewritten, report.sources_deleted) == (1, 0, 0)
    hits = (await mem.search("bob", workspace=WS, mode="lexical")).hits
    assert [h.content for h in hits] == ["**Bob**: only bob"]


def test_receipt_reads_and_adds() -> None:
    from omoide.stores.memories import ForgetReport

    a = ForgetReport(1, 1, 4, 2, chunks_rewritten=3)
    assert (a + ForgetReport(0, 0, 0, transcripts=1)).as_dict()["transcripts"] == 1
    assert (
        a.describe() == "Erased 1 memory, 1 session, 4 messages, 2 summary versions and 3 knowledge chunks rewritten."
    )
    assert ForgetReport(0, 0, 0).total == 0


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (
            "Discord conversation in #general with Alice, Bob · 10:00–11:00 UTC",
            "Discord conversation in #general with Bob · 10:00–11:00 UTC",
        ),
        ("Discord conversation in #general with Bob, Alice · x", "Discord conversation in #general with Bob · x"),
        ("Discord conversation in #general with Alice · x", "Discord conversation in #general · x"),
        (
            "Discord conversation in #general with Bob, Alice, Carol +2 · x",
            "Discord conversation in #general with Bob, Carol +2 · x",
        ),
        (
            "Discord conversation in #general with Bob, Alicent · x",
            "Discord conversation in #general with Bob, Alicent · x",
        ),
    ],
)
def test_a_source_title_loses_their_name_only(title: str, expected: str) -> None:
    from omoide.stores._erasure_common import scrub_source

    metadata = {"participants": [ALICE, BOB], "participant_names": {ALICE: "Alice", BOB: "Bob"}}
    scrubbed = scrub_source(title, metadata, ALICE)
    assert scrubbed is not None
    assert scrubbed[0] == expected
    assert scrubbed[1] == {"participants": [BOB], "participant_names": {BOB: "Bob"}}


async def test_a_long_imported_message_cut_into_parts_is_erased_part_by_part(mem: Memory, settings: Settings) -> None:
    t0 = utcnow() - timedelta(days=1)
    long_text = " ".join(f"{MARK}{i} 長い文章です。" for i in range(900))
    await mem.knowledge.ingest_messages(
        [
            imported(10, BOB, "bobbefore ちょっと長い話をします。", at=t0),
            imported(11, ALICE, long_text, at=t0 + timedelta(minutes=1)),
            imported(12, BOB, "bobafter 読みました。", at=t0 + timedelta(minutes=2)),
        ],
        workspace=WS,
    )
    assert (await mem.store.knowledge.knowledge_status(workspace_id=WS)).chunks >= 3  # her message was cut into parts
    await mem.forget_user(workspace=WS, user=ALICE)
    assert await text_columns_holding(mem.settings, MARK) == []
    for word in ("bobbefore", "bobafter"):
        assert (await mem.search(word, workspace=WS, mode="lexical")).hits, word


async def test_sqlite_rewrites_prepared_before_the_lock_are_used_only_if_the_chunk_is_unchanged(
    sqlite_url: str, tmp_path: Path
) -> None:
    """SQLite prepares the rewrites on a reader, then re-checks each chunk's text under the write lock."""
    from omoide.stores.sqlite._erasure import erase_user, prepare_rewrites

    async with Memory.open(Settings(database_url=sqlite_url, transcripts_dir=tmp_path, embedder="hashing")) as mem:
        await mem.knowledge.ingest_messages(history(), workspace=WS)
    conn = sqlite3.connect(sqlite_url.split("sqlite:///", 1)[1], isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        prepared = prepare_rewrites(conn, WS, ALICE)
        assert len(prepared) == 1
        [(chunk_id, (_, rewrite))] = prepared.items()
        assert rewrite is not None and MARK not in rewrite.content
        # the chunk changed after the rewrite was made: a stale rewrite that would drop it is ignored
        stale = {chunk_id: ("text the chunk held earlier", None)}
        conn.execute("BEGIN IMMEDIATE")
        report = erase_user(conn, WS, ALICE, utcnow(), stale)
        conn.execute("COMMIT")
        assert (report.chunks_rewritten, report.chunks_deleted) == (1, 0)
        (text,) = conn.execute("SELECT content FROM knowledge_chunks WHERE id = ?", (chunk_id,)).fetchone()
        assert MARK not in text and "bobimport2" in text and text == rewrite.content
    finally:
        conn.close()
