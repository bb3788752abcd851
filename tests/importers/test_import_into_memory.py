"""Slack exports (zip and folder) and omoide JSONL transcripts through ``Memory.import_export``
on both backends: searchable knowledge, threads as their own sources, and re-imports that
add only what is new."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from omoide import Memory
from omoide.transcripts import assistant_record, dump_records, user_record

from .test_slack import DEV_DAY, GENERAL_DAY1, GENERAL_DAY2, export_files, msg, write_dir, write_zip

WORKSPACE = "T0TEAM"


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as m:
        yield m


async def test_slack_zip_import_is_searchable_and_idempotent(mem: Memory, tmp_path: Path) -> None:
    first = await mem.knowledge.import_export(write_zip(tmp_path / "export.zip", export_files()), workspace=WORKSPACE)
    assert first.sources >= 2 and first.chunks >= 2 and first.new_messages > 0
    assert first.known_messages == 0

    await mem.knowledge.embed()
    hits = await mem.search("thread answer", workspace=WORKSPACE, mode="hybrid")
    assert hits.hits and "thread answer" in hits.hits[0].content
    edited = await mem.search("typo fixed", workspace=WORKSPACE, mode="lexical")
    assert any("typo fixed" in h.content for h in edited.hits)  # the edit replaced the original text
    deleted = await mem.search("to be deleted", workspace=WORKSPACE, mode="lexical")
    assert not any("to be deleted" in h.content for h in deleted.hits)  # the deletion was honoured

    sources_before = await mem.knowledge.sources(workspace=WORKSPACE)
    again = await mem.knowledge.import_export(write_zip(tmp_path / "again.zip", export_files()), workspace=WORKSPACE)
    assert (again.sources, again.chunks, again.new_messages) == (0, 0, 0)
    assert again.known_messages == first.new_messages
    assert len(await mem.knowledge.sources(workspace=WORKSPACE)) == len(sources_before)


async def test_a_later_overlapping_slack_export_adds_only_the_new_messages(mem: Memory, tmp_path: Path) -> None:
    early = export_files()
    del early["general/2024-01-03.json"]
    first = await mem.knowledge.import_export(write_dir(tmp_path / "early", early), workspace=WORKSPACE)

    later = export_files()
    later["general/2024-01-04.json"] = [msg("1704250000.000100", "a brand new announcement about the offsite")]
    second = await mem.knowledge.import_export(write_dir(tmp_path / "later", later), workspace=WORKSPACE)
    assert second.known_messages == first.new_messages
    new_day2 = {m["ts"] for m in GENERAL_DAY2 if m.get("subtype") not in {"message_changed", "message_deleted"}}
    assert 1 <= second.new_messages <= len(new_day2) + 1
    hits = await mem.search("offsite announcement", workspace=WORKSPACE, mode="lexical")
    assert any("offsite" in h.content for h in hits.hits)
    # nothing of the first export was written twice
    total = sum(s.chunk_count for s in await mem.knowledge.sources(workspace=WORKSPACE))
    assert total == first.chunks + second.chunks
    assert len(GENERAL_DAY1) + len(DEV_DAY) > 0


async def test_jsonl_transcripts_import_and_reimport(mem: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "helper" / "sessions"
    folder.mkdir(parents=True)
    records = [
        user_record(
            "The staging database moves to Osaka on Friday.", ts=1_736_000_000, author_id="u1", message_id="m1"
        ),
        assistant_record("Noted: staging moves to Osaka on Friday.", ts=1_736_000_060),
        user_record("明日のデプロイは午後3時からです。", ts=1_736_000_120, author_id="u1", message_id="m3"),
    ]
    (folder / "s1.jsonl").write_text(dump_records(records), encoding="utf-8")

    first = await mem.knowledge.import_export(tmp_path / "agents", workspace="helper")
    assert first.sources == 1 and first.new_messages == 3
    await mem.knowledge.embed()
    hits = await mem.search("デプロイ", workspace="helper")
    assert hits.hits and "午後3時" in hits.hits[0].content
    english = await mem.search("where does staging move", workspace="helper", mode="lexical")
    assert any("Osaka" in h.content for h in english.hits)

    again = await mem.knowledge.import_export(tmp_path / "agents", workspace="helper")
    assert (again.sources, again.new_messages, again.known_messages) == (0, 0, 3)

    (folder / "s1.jsonl").write_text(
        dump_records([*records, user_record("Rollback plan is in the wiki.", ts=1_736_000_180, message_id="m4")]),
        encoding="utf-8",
    )
    more = await mem.knowledge.import_export(tmp_path / "agents", workspace="helper")
    assert (more.new_messages, more.known_messages) == (1, 3)
