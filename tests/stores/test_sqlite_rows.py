"""The fast row-to-Message path gives exactly what the validating constructors give."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omoide.errors import InvalidContent
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.stores.sqlite import _rows
from omoide.stores.sqlite._conn import format_ts


def _row(
    message: Message, *, id_: int = 7, session_id: int = 3, seq: int = 2, tokens: int | None = None
) -> tuple[object, ...]:
    return (
        id_,
        session_id,
        seq,
        message.role,
        message.content_json(),
        message.author_id,
        message.author_name,
        int(message.is_bot),
        message.message_id,
        format_ts(message.created_at),
        tokens,
    )


def test_fast_path_is_active() -> None:
    assert _rows.FAST_MESSAGES, "Message changed shape: update _rows._MESSAGE_FIELDS"


@pytest.mark.parametrize(
    "message",
    [
        Message.user("hello", author_id="u1", author_name="Andy", message_id="m1"),
        Message.assistant("reply"),
        Message("user", (TextBlock("a"), TextBlock("b"))),
        Message("assistant", (TextBlock("let me look"), ToolUseBlock("t1", "search", {"q": "天気", "n": [1, 2]}))),
        Message("user", (ToolResultBlock("t1", "晴れ", is_error=True),)),
        Message.user("x" * 5000),
    ],
)
def test_fast_conversion_equals_validated_conversion(message: Message) -> None:
    row = _row(message)
    fast = _rows.message_from_row(row)
    assert fast == _rows.validated_message_from_row(row)
    assert fast.content == message.content
    assert _rows.message_from_row(row) == fast  # conversion is deterministic


@given(
    texts=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), min_size=1, max_size=3),
    role=st.sampled_from(["user", "assistant"]),
    is_bot=st.booleans(),
)
def test_any_text_converts_identically(texts: list[str], role: str, is_bot: bool) -> None:
    message = Message(role, tuple(TextBlock(t) for t in texts), is_bot=is_bot)  # type: ignore[arg-type]
    row = _row(message)
    assert _rows.message_from_row(row) == _rows.validated_message_from_row(row)


def test_corrupt_content_raises_invalid_content() -> None:
    row = list(_row(Message.user("x")))
    for bad in ("[{]", '[{"type":"text","text":"a"}] trailing', '[{"type":"image"}]'):
        row[4] = bad
        with pytest.raises(InvalidContent):
            _rows.message_from_row(tuple(row))


@pytest.mark.parametrize(
    ("message", "carries"),
    [
        (Message.user("こんにちは、今日はいい天気ですね"), True),
        (Message("user", (TextBlock("a"), TextBlock("b"))), False),
        (Message("user", (ToolResultBlock("t1", "晴れ"),)), False),
    ],
)
def test_stored_token_count_rides_on_the_only_text_block(message: Message, carries: bool) -> None:
    row = _row(message, tokens=11)
    fast, validated = _rows.message_from_row(row), _rows.validated_message_from_row(row)
    assert fast == validated
    assert fast.content == message.content  # the count takes no part in equality
    for converted in (fast, validated):
        counts = [getattr(b, "tokens", None) for b in converted.content]
        assert counts == ([11] if carries else [None] * len(message.content))
