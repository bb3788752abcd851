"""Rows to domain objects, on the hot path of every window load.

Loading a 20-message window is mostly Python work: the SQL takes ~0.08 ms, turning 20
rows into :class:`~omoide.models.Message` objects took ~0.33 ms with the validating
constructors. Two things make it cheap without changing what comes out:

* content that is only text blocks (almost every chat message) is decoded with
  ``JSONDecoder.raw_decode`` and built straight from the result; anything else goes
  through :func:`~omoide.models.blocks_from_json`;
* a row read from our own database was validated when it was written, so the message
  is assembled through its slot descriptors instead of re-running ``Message.__init__``
  and its validation. This is only done when ``Message`` has exactly the fields listed
  here (checked at import), and a test checks that both paths give equal messages;
"""

from __future__ import annotations

import dataclasses
import json
import types
from collections.abc import Callable, Sequence
from typing import Any

from omoide.models import (
    ContentBlock,
    KeyPolicy,
    Message,
    MessageId,
    Session,
    SessionId,
    SessionStatus,
    TextBlock,
    blocks_from_json,
    with_text_tokens,
)
from omoide.stores.sqlite._conn import parse_ts

SESSION_COLUMNS = (
    "id, session_key, policy, platform, workspace_id, channel_id, thread_id, user_id, agent_id, "
    "status, version, last_seq, archived_seq, window_start_seq, last_active_at, created_at, "
    "context_summary, context_summary_seq, private, members"
)
MESSAGE_COLUMNS = (
    "id, session_id, seq, role, content, author_id, author_name, is_bot, platform_message_id, created_at, token_count"
)

_MESSAGE_FIELDS = (
    "role",
    "content",
    "author_id",
    "author_name",
    "is_bot",
    "message_id",
    "created_at",
    "id",
    "session_id",
    "seq",
)
_DECODER = json.JSONDecoder()


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...] | None:
    """The slot descriptors' ``__set__`` of ``cls`` for exactly ``names``, or ``None`` if its fields differ."""
    if tuple(f.name for f in dataclasses.fields(cls)) != names:
        return None
    descriptors = [cls.__dict__.get(name) for name in names]
    if not all(isinstance(d, types.MemberDescriptorType) for d in descriptors):
        return None
    return tuple(d.__set__ for d in descriptors if isinstance(d, types.MemberDescriptorType))


_MESSAGE_SETTERS = _slot_setters(Message, _MESSAGE_FIELDS)
FAST_MESSAGES = _MESSAGE_SETTERS is not None


def session_from_row(row: Sequence[Any]) -> Session:
    return Session(
        id=SessionId(row[0]),
        key=row[1],
        policy=KeyPolicy(row[2]),
        platform=row[3],
        workspace_id=row[4],
        channel_id=row[5],
        thread_id=row[6],
        user_id=row[7],
        agent_id=row[8],
        status=SessionStatus(row[9]),
        version=row[10],
        last_seq=row[11],
        archived_seq=row[12],
        window_start_seq=row[13],
        last_active_at=parse_ts(row[14]),
        created_at=parse_ts(row[15]),
        context_summary=row[16],
        context_summary_seq=row[17],
        private=bool(row[18]),
        members=tuple(json.loads(row[19])),
    )


def content_from_json(text: str, tokens: int | None = None) -> tuple[ContentBlock, ...]:
    """Content blocks from their stored JSON; plain text blocks take a short cut.

    ``tokens`` is the stored ``token_count``: the count of a message's only text block.
    """
    try:
        data, end = _DECODER.raw_decode(text)  # json.loads without its per-call overhead (~2 µs)
    except json.JSONDecodeError:
        return blocks_from_json(text)  # raises InvalidContent naming the position
    if end != len(text):  # trailing data: let the strict parser report it
        return blocks_from_json(text)
    if type(data) is list and data:
        count = tokens if len(data) == 1 else None  # the stored count belongs to an only text block
        blocks: list[ContentBlock] = []
        for item in data:
            if type(item) is dict and len(item) == 2 and item.get("type") == "text" and type(item["text"]) is str:
                blocks.append(TextBlock(item["text"], count))
            else:
                return blocks_from_json(data)
        return tuple(blocks)
    return blocks_from_json(data)


def _convert(row: Sequence[Any]) -> Message:
    if _MESSAGE_SETTERS is None:  # Message changed shape: use its validating constructor
        return validated_message_from_row(row)
    role, content, author_id, author_name, is_bot, message_id, created_at, id_, session_id, seq = _MESSAGE_SETTERS
    message: Message = object.__new__(Message)
    role(message, row[3])
    content(message, content_from_json(row[4], row[10]))
    author_id(message, row[5])
    author_name(message, row[6])
    is_bot(message, bool(row[7]))
    message_id(message, row[8])
    created_at(message, parse_ts(row[9]))
    id_(message, MessageId(row[0]))
    session_id(message, SessionId(row[1]))
    seq(message, row[2])
    return message


def message_from_row(row: tuple[Any, ...]) -> Message:
    """The :class:`Message` stored in a ``MESSAGE_COLUMNS`` row."""
    return _convert(row)


def validated_message_from_row(row: Sequence[Any]) -> Message:
    """The same as :func:`message_from_row`, through the validating constructors."""
    return Message(
        row[3],
        with_text_tokens(blocks_from_json(row[4]), row[10]),
        author_id=row[5],
        author_name=row[6],
        is_bot=bool(row[7]),
        message_id=row[8],
        created_at=parse_ts(row[9]),
        id=MessageId(row[0]),
        session_id=SessionId(row[1]),
        seq=row[2],
    )


__all__ = [
    "FAST_MESSAGES",
    "MESSAGE_COLUMNS",
    "SESSION_COLUMNS",
    "content_from_json",
    "message_from_row",
    "session_from_row",
    "validated_message_from_row",
]
