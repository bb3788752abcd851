"""The shipped sample Discord export: parses cleanly, matches its generator, answers its questions."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from omoide import sample_data
from omoide.importers import ImportedExport, message_windows, read_export, snowflake_time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "sample_data"))
import generate as _generate  # type: ignore[import-not-found]


@pytest.fixture(scope="module")
def export() -> ImportedExport:
    return read_export(sample_data.discord_export_paths())


def test_files_are_one_per_channel_or_thread() -> None:
    paths = sample_data.discord_export_paths()
    assert len(paths) == 5
    assert all(p.is_file() and p.name.startswith("omoide lab - ") for p in paths)
    guild_id, guild_name = sample_data.sample_guild()
    for path in paths:
        doc = json.loads(path.read_text("utf-8"))
        assert doc["guild"] == {**doc["guild"], "id": guild_id, "name": guild_name}
        assert doc["messageCount"] == len(doc["messages"])
        assert path.name.endswith(f"[{doc['channel']['id']}].json")


def test_sample_parses_cleanly_with_the_expected_counts(export: ImportedExport) -> None:
    report = export.report
    assert export.problems == ()
    assert (report.records, report.messages, report.system_skipped, report.empty_skipped) == (339, 336, 3, 0)
    assert report.duplicates == 0
    per_channel = Counter((m.channel_name, m.thread_name) for m in export.messages)
    assert per_channel == {
        ("general", None): 86,
        ("dev", None): 84,
        ("random", None): 72,
        ("イベント", None): 66,
        ("dev", "v0.4.0 リリースチェックリスト"): 28,
    }
    authors = {m.author_name for m in export.messages}
    assert len(authors) == 9 and "mochi-bot" in authors
    assert {m.author_name for m in export.messages if m.is_bot} == {"mochi-bot"}
    days = (max(m.created_at for m in export.messages) - min(m.created_at for m in export.messages)).days
    assert days >= 35  # several weeks


def test_sample_has_the_features_the_demo_relies_on(export: ImportedExport) -> None:
    messages = export.messages
    assert sum(m.kind == "reply" and m.reply_to is not None for m in messages) >= 10
    assert sum(m.edited_at is not None for m in messages) >= 1
    assert sum(bool(m.attachments) for m in messages) >= 5
    assert any(m.content == "" and m.attachments for m in messages)  # an image with no text
    assert any(m.kind == "command" and m.invoked_by for m in messages)
    assert any(m.text.startswith("[embed: ") for m in messages)
    assert any(m.text == "[sticker: Wave]" for m in messages)
    japanese = sum(any("\u3040" <= ch <= "\u30ff" for ch in m.text) for m in messages)
    assert 0.4 < japanese / len(messages) < 0.8  # Japanese and English mixed
    with_system = read_export(sample_data.discord_export_paths(), include_system=True)
    assert Counter(m.platform_kind for m in with_system.messages if m.kind == "system") == {
        "GuildMemberJoin": 1,
        "ThreadCreated": 1,
        "ChannelPinnedMessage": 1,
    }


def test_timestamps_agree_with_snowflakes(export: ImportedExport) -> None:
    for m in export.messages:
        assert abs(snowflake_time(m.message_id) - m.created_at) < timedelta(milliseconds=1)
        assert m.created_at.utcoffset() == timedelta(0)


def test_questions_point_at_messages_that_answer_them(export: ImportedExport) -> None:
    questions = sample_data.questions()
    assert len(questions) >= 12
    assert {q.lang for q in questions} == {"ja", "en"}
    by_id = {m.message_id: m for m in export.messages}
    windows = message_windows(export.messages)
    window_of = {i: w for w in windows for i in w.message_ids}
    for q in questions:
        assert q.message_ids, q.id
        assert all(i in by_id for i in q.message_ids), q.id
        first = by_id[q.message_ids[0]]
        assert q.expect in first.text, q.id
        assert (first.thread_name or first.channel_name) == q.channel, q.id
        assert q.message_ids[0] in window_of


def test_shipped_files_match_the_generator(tmp_path: Path) -> None:
    assert _generate.main(["--check"]) == 0
    assert _generate.main(["--out", str(tmp_path)]) == 0
    shipped = Path(sample_data.__file__).parent
    for path in (tmp_path / "discord").glob("*.json"):
        assert path.read_bytes() == (shipped / "discord" / path.name).read_bytes()
    assert (tmp_path / "questions.json").read_bytes() == (shipped / "questions.json").read_bytes()
