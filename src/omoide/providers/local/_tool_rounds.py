"""How the extractive model reads a conversation's tool rounds.

Memory tool rounds (``remember``, ``recall``, ``list_memories``, ``delete_memory``) are
bookkeeping, not conversation: :func:`without_tool_rounds` leaves them out of what is
answered or summarised, and :func:`tool_results` reads the rounds of the current turn.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Any

from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.local._requests import read_request


def text_of(message: Message) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()


def last_text_turn(messages: Sequence[Message]) -> int | None:
    """Index of the last user message with text (tool results after it are this turn's rounds)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and text_of(m):
            return i
        if m.role == "user" and not any(isinstance(b, ToolResultBlock) for b in m.content):
            return None
    return None


MEMORY_TOOL_NAMES = frozenset({"remember", "recall", "list_memories", "delete_memory"})


def without_tool_rounds(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the extractive model reads it: memory tool rounds are bookkeeping.

    When the turn ends in memory tool results, it is read as of the user's question (the
    results were already used, or did not answer it); tool calls and results before the
    last message are left out. Other tool results in the last message stay (evidence).
    """
    asked_at = last_text_turn(messages)
    if asked_at is not None and asked_at < len(messages) - 1:
        rounds = tool_results(messages[asked_at + 1 :])
        if rounds and all(name in MEMORY_TOOL_NAMES for name, *_ in rounds):
            messages = messages[: asked_at + 1]
    kept: list[Message] = []
    for i, m in enumerate(messages):
        if i < len(messages) - 1 and any(isinstance(b, (ToolUseBlock, ToolResultBlock)) for b in m.content):
            text = tuple(b for b in m.content if isinstance(b, TextBlock) and b.text.strip())
            if not text:
                continue
            m = dataclasses.replace(m, content=text)
        kept.append(m)
    return kept


def tool_results(messages: Sequence[Message]) -> list[tuple[str, dict[str, Any], Any, bool]]:
    """``(tool name, arguments, parsed result, is_error)`` of the tool rounds in ``messages``, in order."""
    calls: dict[str, ToolUseBlock] = {}
    out: list[tuple[str, dict[str, Any], Any, bool]] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                calls[b.id] = b
            elif isinstance(b, ToolResultBlock) and b.tool_use_id in calls:
                call = calls[b.tool_use_id]
                try:
                    parsed: Any = json.loads(b.content)
                except ValueError:
                    parsed = b.content
                out.append((call.name, dict(call.input), parsed, b.is_error))
    return out


def payload_message(result: Any) -> str:
    if isinstance(result, dict):
        return str(result.get("message") or result.get("error") or result)
    return str(result)


def tool_call(name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(f"toolu_extractive_{uuid.uuid4().hex[:16]}", name, arguments)


def is_forget_request(text: str) -> bool:
    found = read_request(text)
    return found is not None and found.kind == "forget"


__all__ = [
    "MEMORY_TOOL_NAMES",
    "is_forget_request",
    "last_text_turn",
    "payload_message",
    "text_of",
    "tool_call",
    "tool_results",
    "without_tool_rounds",
]
