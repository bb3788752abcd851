"""Record types, validation and JSONL reading (torn last line, malformed lines)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from omoide.errors import CorruptTranscript, InvalidContent, TranscriptError
from omoide.transcripts import (
    TornLineWarning,
    assistant_record,
    compaction_record,
    datetime_from_ts,
    dump_record,
    dump_records,
    parse_jsonl,
    read_records,
    tool_result_record,
    tool_use_record,
    ts_from_datetime,
    user_record,
    validate_record,
)

TS = 1_700_000_000.25


def test_user_record_shape():
    assert user_record("Hello", ts=TS) == {"type": "user", "content": "Hello", "ts": TS}


def test_user_record_with_blocks_and_extras():
    rec = user_record([{"type": "text", "text": "a"}], ts=TS, author_id="u1", author_name="さくら", message_id="m1")
    assert rec == {
        "type": "user",
        "content": [{"type": "text", "text": "a"}],
        "ts": TS,
        "author_id": "u1",
        "author_name": "さくら",
        "message_id": "m1",
    }


def test_assistant_record_string_becomes_text_block():
    assert assistant_record("Hi!", ts=TS) == {
        "type": "assistant",
        "content": [{"type": "text", "text": "Hi!"}],
        "ts": TS,
    }


def test_assistant_record_keeps_inline_tool_use():
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}
    assert assistant_record([block], ts=TS)["content"] == [block]


def test_tool_use_record_shape():
    assert tool_use_record("toolu_1", "read_file", {"path": "a.txt"}, ts=TS) == {
        "type": "tool_use",
        "tool_use_id": "toolu_1",
        "name": "read_file",
        "input": {"path": "a.txt"},
        "ts": TS,
    }


def test_tool_result_record_shape():
    assert tool_result_record("toolu_1", "file contents", ts=TS) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "file contents",
        "ts": TS,
    }
    assert tool_result_record("toolu_1", "boom", is_error=True, ts=TS)["is_error"] is True


def test_compaction_record_shape():
    assert compaction_record("we talked", 3, ts=TS) == {
        "type": "compaction",
        "summary": "we talked",
        "replaces_through": 3,
        "ts": TS,
    }


def test_builders_default_ts_is_now():
    before = datetime.now(UTC).timestamp()
    rec = user_record("x")
    assert before <= rec["ts"] <= datetime.now(UTC).timestamp()


def test_unknown_extra_field_rejected():
    with pytest.raises(InvalidContent, match="unknown record field 'channel'"):
        user_record("x", channel="c1")


def test_validate_normalises_tool_result_list_content():
    rec = validate_record(
        {
            "type": "tool_result",
            "tool_use_id": "t",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "ts": 1,
        }
    )
    assert rec["content"] == "a\nb"


def test_validate_keeps_unknown_top_level_fields():
    assert validate_record({"type": "user", "content": "x", "ts": 1, "future": [1]})["future"] == [1]


def test_validate_drops_null_extras():
    assert "author_id" not in validate_record({"type": "user", "content": "x", "ts": 1, "author_id": None})


def test_timestamps_round_trip():
    when = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert datetime_from_ts(ts_from_datetime(when)) == when
    assert datetime_from_ts(ts_from_datetime(when.replace(tzinfo=None))) == when


def test_dump_is_one_compact_line():
    line = dump_record(user_record("こんにちは\nworld", ts=TS))
    assert line.endswith("\n")
    assert line.count("\n") == 1  # the newline inside the text is escaped
    assert "こんにちは" in line  # UTF-8, not \\u escapes
    assert json.loads(line)["content"] == "こんにちは\nworld"


def test_dump_rejects_non_json_values():
    with pytest.raises(InvalidContent, match="cannot be written as JSON"):
        dump_record({"type": "tool_use", "tool_use_id": "t", "name": "f", "input": {"x": float("nan")}, "ts": 1})
    with pytest.raises(InvalidContent, match="cannot be written as JSON"):
        dump_record({"type": "tool_use", "tool_use_id": "t", "name": "f", "input": {"x": datetime.now()}, "ts": 1})


def test_parse_round_trip():
    records = [
        user_record("hi", ts=1),
        assistant_record("let me check", ts=2),
        tool_use_record("t1", "f", {"q": "天気"}, ts=3),
        tool_result_record("t1", "晴れ", ts=4),
        assistant_record("sunny", ts=5),
        compaction_record("summary", 1, ts=6),
    ]
    text = dump_records(records)
    assert parse_jsonl(text) == records
    assert parse_jsonl(text.encode()) == records


def test_parse_empty_file():
    assert parse_jsonl("") == []
    assert parse_jsonl(b"") == []


def test_last_line_without_newline_but_valid_is_kept():
    text = dump_record(user_record("a", ts=1)) + dump_record(assistant_record("b", ts=2)).rstrip("\n")
    assert [r["type"] for r in parse_jsonl(text)] == ["user", "assistant"]


@pytest.mark.parametrize(
    "tail",
    [
        b'{"type":"assistant","content":[{"type":"text","te',
        b"{",
        '{"type":"user","content":"こんに'.encode()[:-1],  # cut inside a UTF-8 character
    ],
)
def test_torn_last_line_is_skipped_with_a_warning(tail):
    head = dump_record(user_record("a", ts=1)).encode()
    with pytest.warns(TornLineWarning, match=r"t\.jsonl, line 2: skipped a torn last line"):
        records = parse_jsonl(head + tail, source="t.jsonl")
    assert records == [user_record("a", ts=1)]


def test_torn_line_only_file():
    with pytest.warns(TornLineWarning):
        assert parse_jsonl('{"type":"us', source="t.jsonl") == []


def _lines(*objs: object) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


U = {"type": "user", "content": "hi", "ts": 1}
A_TOOL = {"type": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}], "ts": 2}
R = {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "ts": 3}

MALFORMED = [
    pytest.param([U, '{"type": "user", "content": '], 2, "invalid JSON", id="bad-json-mid-file"),
    pytest.param([U, "", U], 2, "empty line", id="empty-line"),
    pytest.param([U, [1, 2]], 2, "must be a JSON object, got array", id="not-an-object"),
    pytest.param([{"content": "x", "ts": 1}], 1, "missing field 'type'", id="missing-type"),
    pytest.param([{"type": "system", "content": "x", "ts": 1}], 1, "unknown record type 'system'", id="unknown-type"),
    pytest.param([{"type": "user", "content": "x"}], 1, "missing field 'ts'", id="missing-ts"),
    pytest.param([{"type": "user", "content": "x", "ts": "now"}], 1, "'ts' must be a finite number", id="ts-string"),
    pytest.param([{"type": "user", "content": "x", "ts": True}], 1, "'ts' must be a finite number", id="ts-bool"),
    pytest.param([{"type": "user", "ts": 1}], 1, "missing field 'content'", id="user-missing-content"),
    pytest.param(
        [{"type": "user", "content": 5, "ts": 1}], 1, "must be a string or an array", id="user-content-number"
    ),
    pytest.param([{"type": "user", "content": [], "ts": 1}], 1, "must not be an empty array", id="user-empty-list"),
    pytest.param(
        [{"type": "user", "content": [A_TOOL["content"][0]], "ts": 1}], 1, "may not hold a tool_use", id="user-tool-use"
    ),
    pytest.param(
        [{"type": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}], "ts": 1}],
        1,
        "may not hold a tool_result",
        id="assistant-tool-result",
    ),
    pytest.param(
        [{"type": "assistant", "content": [{"type": "image"}], "ts": 1}],
        1,
        "unknown content block type 'image'",
        id="unknown-block",
    ),
    pytest.param(
        [{"type": "assistant", "content": [{"type": "text"}], "ts": 1}],
        1,
        "needs a string 'text'",
        id="text-block-no-text",
    ),
    pytest.param(
        [{"type": "tool_use", "tool_use_id": "t", "input": {}, "ts": 1}],
        1,
        "missing field 'name'",
        id="tool-use-no-name",
    ),
    pytest.param(
        [{"type": "tool_use", "tool_use_id": "", "name": "f", "input": {}, "ts": 1}],
        1,
        "'tool_use_id' must not be empty",
        id="tool-use-empty-id",
    ),
    pytest.param(
        [{"type": "tool_use", "tool_use_id": 7, "name": "f", "input": {}, "ts": 1}],
        1,
        "'tool_use_id' must be a string, got number",
        id="tool-use-id-number",
    ),
    pytest.param(
        [{"type": "tool_use", "tool_use_id": "t", "name": "f", "input": [], "ts": 1}],
        1,
        "'input' must be an object",
        id="tool-use-input-list",
    ),
    pytest.param(
        [{"type": "tool_use", "tool_use_id": "t", "name": "f", "ts": 1}],
        1,
        "missing field 'input'",
        id="tool-use-no-input",
    ),
    pytest.param(
        [U, A_TOOL, {"type": "tool_result", "content": "x", "ts": 1}],
        3,
        "missing field 'tool_use_id'",
        id="tool-result-no-id",
    ),
    pytest.param(
        [U, A_TOOL, {**R, "content": 3}],
        3,
        "content must be a string or a list of text blocks",
        id="tool-result-content-number",
    ),
    pytest.param(
        [U, A_TOOL, {**R, "is_error": "yes"}], 3, "'is_error' must be a boolean", id="tool-result-is-error-string"
    ),
    pytest.param(
        [U, {"type": "compaction", "replaces_through": 0, "ts": 1}],
        2,
        "missing field 'summary'",
        id="compaction-no-summary",
    ),
    pytest.param(
        [U, {"type": "compaction", "summary": "s", "ts": 1}],
        2,
        "missing field 'replaces_through'",
        id="compaction-no-through",
    ),
    pytest.param(
        [U, {"type": "compaction", "summary": "s", "replaces_through": -1, "ts": 1}],
        2,
        "record index ≥ 0",
        id="compaction-negative",
    ),
    pytest.param(
        [U, {"type": "compaction", "summary": "s", "replaces_through": True, "ts": 1}],
        2,
        "record index ≥ 0",
        id="compaction-bool",
    ),
    pytest.param(
        [U, {"type": "compaction", "summary": "s", "replaces_through": 1, "ts": 1}],
        2,
        "must point to an earlier record",
        id="compaction-forward",
    ),
    pytest.param(
        [
            U,
            U,
            {"type": "compaction", "summary": "s", "replaces_through": 1, "ts": 1},
            {"type": "compaction", "summary": "s", "replaces_through": 0, "ts": 1},
        ],
        4,
        "goes back before an earlier compaction",
        id="compaction-backwards",
    ),
    pytest.param([{**U, "author_id": 5}], 1, "'author_id' must be a string, got number", id="author-id-number"),
    pytest.param([{**U, "is_bot": "no"}], 1, "'is_bot' must be a boolean", id="is-bot-string"),
    pytest.param([U, R], 2, "tool_use_id 't1' has no earlier tool_use", id="orphan-tool-result"),
    pytest.param(
        [U, A_TOOL, R, {**R, "ts": 4}], 4, "duplicate tool_result for tool_use_id 't1'", id="duplicate-tool-result"
    ),
    pytest.param([U, A_TOOL, R, A_TOOL], 4, "duplicate tool_use id 't1'", id="duplicate-tool-use"),
    pytest.param(
        [U, A_TOOL, U, {"type": "assistant", "content": "more", "ts": 3}, U, R],
        6,
        "does not follow its tool_use",
        id="tool-result-after-later-assistant-turn",
    ),
    pytest.param(
        [U, A_TOOL, R, {"type": "compaction", "summary": "s", "replaces_through": 1, "ts": 4}],
        3,
        "separated from its tool_use by the compaction at record 3",
        id="compaction-splits-tool-pair",
    ),
]


@pytest.mark.parametrize(("objs", "line", "problem"), MALFORMED)
def test_malformed_line_names_file_line_and_problem(objs, line, problem):
    text = _lines(*objs)
    with pytest.raises(CorruptTranscript) as info:
        parse_jsonl(text, source="/data/agents/a/sessions/s.jsonl")
    err = info.value
    assert f"/data/agents/a/sessions/s.jsonl, line {line}: " in err.message
    assert problem in err.message
    assert err.details["path"] == "/data/agents/a/sessions/s.jsonl"
    assert err.details["line"] == line


def test_invalid_utf8_mid_file_is_corrupt():
    data = dump_record(user_record("a", ts=1)).encode() + b'{"type":"user","content":"\xff","ts":1}\n'
    with pytest.raises(CorruptTranscript, match="line 2: invalid UTF-8"):
        parse_jsonl(data, source="x.jsonl")


def test_torn_line_only_at_the_end():
    """A cut line followed by more lines is not a crash artefact: it is corruption."""
    text = '{"type":"user","con\n' + dump_record(user_record("a", ts=1))
    with pytest.raises(CorruptTranscript, match="line 1: invalid JSON"):
        parse_jsonl(text, source="x.jsonl")


def test_read_records(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(dump_records([user_record("a", ts=1), assistant_record("b", ts=2)]), encoding="utf-8")
    assert [r["type"] for r in read_records(path)] == ["user", "assistant"]
    with pytest.raises(TranscriptError, match="cannot read transcript"):
        read_records(tmp_path / "missing.jsonl")
