"""omoide JSONL transcripts through the importers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide.importers import ImportReport, MalformedExport, UnrecognizedExport, iter_transcripts, read_export
from omoide.transcripts import (
    assistant_record,
    compaction_record,
    dump_records,
    tool_result_record,
    tool_use_record,
    user_record,
)

T0 = 1_736_000_000.0


def _records() -> list:
    return [
        user_record("What is the weather in Tokyo?", ts=T0, author_id="u1", author_name="Ann", message_id="m-1"),
        assistant_record("Let me check.", ts=T0 + 1),
        tool_use_record("tu1", "weather", {"city": "Tokyo"}, ts=T0 + 2),
        tool_result_record("tu1", "sunny, 12°C", ts=T0 + 3),
        assistant_record("It is sunny and 12°C.", ts=T0 + 4),
        compaction_record("Ann asked about the weather.", 4, ts=T0 + 5),
        user_record("thanks!", ts=T0 + 6),
    ]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_transcript_messages(tmp_path: Path) -> None:
    path = _write(tmp_path / "agents" / "helper" / "sessions" / "s1.jsonl", dump_records(_records()))
    report = ImportReport()

    messages = list(iter_transcripts(path, report=report))

    assert [(m.message_id, m.author_id, m.author_name, m.is_bot, m.text) for m in messages] == [
        ("m-1", "u1", "Ann", False, "What is the weather in Tokyo?"),
        ("s1:2", "assistant", "assistant", True, "Let me check."),
        ("s1:4", "assistant", "assistant", True, "It is sunny and 12°C."),
        ("s1:5", "user", "user", False, "thanks!"),
    ]
    first = messages[0]
    assert (first.platform, first.workspace_id, first.channel_id, first.thread_id) == ("omoide", "helper", "s1", None)
    assert first.created_at == datetime.fromtimestamp(T0, UTC)
    assert report.empty_skipped == 1  # the tool-result turn
    assert report.channels[("omoide", "helper", "s1", None)].kind == "session"


def test_tools_can_be_included(tmp_path: Path) -> None:
    path = _write(tmp_path / "s2.jsonl", dump_records(_records()))
    messages = list(iter_transcripts(path, include_tools=True, workspace_id="w"))
    assert messages[1].text == 'Let me check.\n[tool call: weather {"city": "Tokyo"}]'
    assert messages[2].text == "[tool result: sunny, 12°C]"
    assert {m.workspace_id for m in messages} == {"w"}


def test_malformed_lines_are_skipped_with_their_line_number(tmp_path: Path) -> None:
    lines = dump_records(_records()).splitlines(keepends=True)
    lines.insert(1, "{not json\n")
    lines.insert(3, '{"type": "mystery", "ts": 1}\n')
    path = _write(tmp_path / "bad.jsonl", "".join(lines))
    report = ImportReport()

    messages = list(iter_transcripts(path, report=report))

    assert [m.text for m in messages] == [
        "What is the weather in Tokyo?",
        "Let me check.",
        "It is sunny and 12°C.",
        "thanks!",
    ]
    assert [(p.position, p.path) for p in report.problems] == [("line 2", str(path)), ("line 4", str(path))]
    assert "invalid JSON" in report.problems[0].problem
    assert "unknown record type" in report.problems[1].problem

    with pytest.raises(MalformedExport) as info:
        list(iter_transcripts(path, strict=True))
    assert info.value.details["position"] == "line 2"


def test_a_record_that_breaks_the_sequence_is_dropped(tmp_path: Path) -> None:
    records = _records()
    lines = dump_records(records).splitlines(keepends=True)
    lines[2] = "garbage\n"  # the tool_use: its tool_result no longer has a partner
    path = _write(tmp_path / "seq.jsonl", "".join(lines))
    report = ImportReport()
    messages = list(iter_transcripts(path, report=report))
    # the tool_use line, its orphaned tool_result, and the compaction whose index no longer fits
    assert [p.position for p in report.problems] == ["line 3", "line 4", "line 6"]
    assert [m.text for m in messages][-1] == "thanks!"


def test_directories_and_detection(tmp_path: Path) -> None:
    _write(tmp_path / "t" / "a.jsonl", dump_records(_records()[:2]))
    _write(tmp_path / "t" / "b.jsonl", dump_records(_records()[:1]))
    export = read_export(tmp_path / "t")
    assert [(m.channel_id, m.message_id) for m in export.messages] == [
        ("a", "m-1"),
        ("a", "a:2"),
        ("b", "m-1"),
    ]
    assert export.report.duplicates == 0  # same message id, different sessions
    with pytest.raises(UnrecognizedExport):
        list(iter_transcripts(tmp_path / "missing.jsonl"))
