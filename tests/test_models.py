from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from omoide.errors import InvalidContent
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock, blocks_from_json, blocks_to_json


def test_blocks_round_trip_through_json():
    blocks = (
        TextBlock("こんにちは"),
        ToolUseBlock("t1", "recall", {"query": "誕生日"}),
        ToolResultBlock("t1", "3月15日"),
    )
    assert blocks_from_json(blocks_to_json(blocks)) == blocks
    assert "こんにちは" in blocks_to_json(blocks)  # not \\u-escaped


def test_tool_result_content_list_is_flattened():
    [block] = blocks_from_json(
        [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a"}]}]
    )
    assert block == ToolResultBlock("t", "a")


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"type": "text"}', "JSON list"),
        ("[1]", r"content\[0\]: a content block must be a JSON object"),
        ('[{"type": "image"}]', "unknown content block type 'image'"),
        ('[{"type": "text", "text": 3}]', "string 'text'"),
        ('[{"type": "tool_use", "id": "", "name": "x", "input": {}}]', "'id'"),
        ('[{"type": "tool_use", "id": "a", "name": "x", "input": []}]', "'input' must be a JSON object"),
        ('[{"type": "tool_result", "content": "x"}]', "'tool_use_id'"),
        ('[{"type": "tool_result", "tool_use_id": "a", "content": 5}]', "string or a list"),
        ('[{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}]', "'is_error' must be a boolean"),
    ],
)
def test_invalid_blocks_name_the_problem(raw, fragment):
    with pytest.raises(InvalidContent, match=fragment):
        blocks_from_json(raw)


def test_message_validation():
    with pytest.raises(InvalidContent, match="role"):
        Message("system", (TextBlock("x"),))  # type: ignore[arg-type]
    with pytest.raises(InvalidContent, match="at least one"):
        Message("user", ())
    with pytest.raises(InvalidContent, match="not a content block"):
        Message("user", ("plain string",))  # type: ignore[arg-type]


def test_timestamps_are_aware_utc():
    naive = Message.user("x", created_at=datetime(2026, 1, 1, 12, 0))
    assert naive.created_at.utcoffset() == timedelta(0)
    jst = Message.user("x", created_at=datetime(2026, 1, 1, 21, 0, tzinfo=timezone(timedelta(hours=9))))
    assert jst.created_at.hour == 12


def test_assistant_messages_default_to_bot():
    assert Message.assistant("hi").is_bot
    assert not Message.user("hi").is_bot
    assert Message("assistant", [TextBlock("a"), TextBlock("b")]).text == "a\nb"  # type: ignore[arg-type]
