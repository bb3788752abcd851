"""Conversion between transcript records and :class:`omoide.models.Message`.

Used to move sessions between the database and JSONL files (``omoide sessions
export/import``). :func:`records_from_messages` maps each message to exactly one
``user`` or ``assistant`` record whose content holds all its blocks, so the boundaries
between messages survive; author id and name, ``is_bot`` (only when it differs from the
role's default: ``True`` for assistant, ``False`` for user), the platform message id and
the time travel in the record's optional fields. A DB → JSONL → DB round trip is
therefore lossless (database ids and ``seq`` are reassigned by the importing store).

:func:`messages_from_records` also reads transcripts written by an agent, where tool
calls are flat ``tool_use`` / ``tool_result`` records: a tool_use joins the assistant
message right before it, and consecutive tool_results form one user message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omoide.errors import InvalidContent
from omoide.models import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    block_from_dict,
    summary_turns,
    with_text_tokens,
)
from omoide.providers.tokens import stored_text_tokens
from omoide.transcripts._records import (
    AssistantRecord,
    Record,
    UserRecord,
    assistant_record,
    datetime_from_ts,
    ts_from_datetime,
    user_record,
)
from omoide.transcripts._replay import _last_compaction, _validated, check_sequence


def _extras(message: Message) -> dict[str, Any]:
    extras: dict[str, Any] = {
        "author_id": message.author_id,
        "author_name": message.author_name,
        "message_id": message.message_id,
    }
    if message.is_bot != (message.role == "assistant"):
        extras["is_bot"] = message.is_bot
    extras["tokens"] = stored_text_tokens(message)
    return extras


def records_from_messages(messages: Iterable[Message]) -> list[Record]:
    """One record per message, keeping authors, platform ids and times.

    Raises:
        InvalidContent: a message a transcript cannot hold (a tool_use block in a user
            message or a tool_result block in an assistant message); names the message.
    """
    out: list[Record] = []
    for i, message in enumerate(messages):
        ts = ts_from_datetime(message.created_at)
        try:
            if message.role == "user":
                only = message.content[0]
                content: Any = (
                    only.text
                    if len(message.content) == 1 and isinstance(only, TextBlock)
                    else [b.to_dict() for b in message.content]
                )
                rec: UserRecord | AssistantRecord = user_record(content, ts=ts, **_extras(message))
            else:
                rec = assistant_record([b.to_dict() for b in message.content], ts=ts, **_extras(message))
        except InvalidContent as exc:
            raise InvalidContent(f"messages[{i}]: {exc.message}", index=i) from exc
        out.append(rec)
    return out


class _Group:
    __slots__ = ("blocks", "head", "last", "role")

    def __init__(self, role: str, head: Record, index: int) -> None:
        self.role = role
        self.head = head
        self.last = index  # index of the newest record in this message
        self.blocks: list[ContentBlock] = []

    def message(self, positions: bool) -> Message:
        head: Mapping[str, Any] = self.head
        blocks = _with_count(tuple(self.blocks), head.get("tokens"))
        return Message(
            "user" if self.role == "user" else "assistant",
            blocks,
            author_id=head.get("author_id"),
            author_name=head.get("author_name"),
            is_bot=head.get("is_bot", self.role == "assistant"),
            message_id=head.get("message_id"),
            created_at=datetime_from_ts(head["ts"]),
            seq=self.last + 1 if positions else None,
        )


def _with_count(blocks: tuple[ContentBlock, ...], tokens: int | None) -> tuple[ContentBlock, ...]:
    """``blocks`` with the record's stored count on its only text. A count that cannot be
    right (more tokens than UTF-8 bytes, or none for a text: a hand-edited line) is dropped,
    and the text is counted when it is used."""
    if tokens is None or len(blocks) != 1 or not isinstance(blocks[0], TextBlock):
        return blocks
    text = blocks[0].text
    if tokens > len(text.encode("utf-8", "surrogatepass")) or (tokens > 0) != bool(text):
        return blocks
    return with_text_tokens(blocks, tokens)


def _blocks(record: Record) -> list[ContentBlock]:
    if record["type"] == "user":
        content = record["content"]
        if isinstance(content, str):
            return [TextBlock(content)]
        return [block_from_dict(b) for b in content]
    if record["type"] == "assistant":
        return [block_from_dict(b) for b in record["content"]]
    if record["type"] == "tool_use":
        return [
            block_from_dict(
                {"type": "tool_use", "id": record["tool_use_id"], "name": record["name"], "input": record["input"]}
            )
        ]
    if record["type"] == "tool_result":
        return [ToolResultBlock(record["tool_use_id"], record["content"], bool(record.get("is_error", False)))]
    return []


def _group(records: Sequence[Record], start: int, positions: bool) -> list[Message]:
    groups: list[_Group] = []
    open_kind: str | None = None  # "assistant": tool_use records may join; "results": tool_results may join
    for index, record in enumerate(records[start:], start):
        kind = record["type"]
        if kind == "compaction":
            continue
        if (kind == "tool_use" and open_kind == "assistant") or (kind == "tool_result" and open_kind == "results"):
            groups[-1].blocks.extend(_blocks(record))
            groups[-1].last = index
            continue
        role = "user" if kind in ("user", "tool_result") else "assistant"
        group = _Group(role, record, index)
        group.blocks.extend(_blocks(record))
        groups.append(group)
        open_kind = "results" if kind == "tool_result" else "assistant" if role == "assistant" else None
    return [g.message(positions) for g in groups if g.blocks]


def messages_from_records(
    records: Iterable[Mapping[str, Any]], *, apply_compaction: bool = False, positions: bool = False
) -> list[Message]:
    """Turn transcript records into messages.

    Args:
        records: transcript records (validated here, sequence rules included).
        apply_compaction: by default every original message is returned and compaction
            records are ignored (nothing is lost on import); ``True`` returns the
            compacted view: the summary pair, then the messages after the last compaction.
        positions: set each message's ``seq`` to the 1-based position of the newest record
            it was built from, so compacting the messages up to ``seq`` is
            ``replaces_through = seq - 1``.

    Raises:
        InvalidContent: a malformed record; ``details['index']`` names it.
    """
    checked = _validated(records)
    check_sequence(checked)
    last = _last_compaction(checked) if apply_compaction else None
    if last is None:
        return _group(checked, 0, positions)
    compaction = checked[last]
    assert compaction["type"] == "compaction"
    when = datetime_from_ts(compaction["ts"])
    return summary_turns(compaction["summary"], created_at=when) + _group(
        checked, compaction["replaces_through"] + 1, positions
    )
