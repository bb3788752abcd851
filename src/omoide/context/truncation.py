"""Stage 1 of the guard: cut oversized tool results, keeping their head and tail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omoide.models import ContentBlock, Message, ToolResultBlock

MARKER = "\n[… {omitted:,} characters of this tool result were cut to fit the context window …]\n"


def truncate_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: its head and tail around a marker saying how much went."""
    if len(text) <= limit:
        return text
    keep = max(limit, 2)
    head = keep * 2 // 3
    tail = keep - head
    omitted = len(text) - head - tail
    return text[:head] + MARKER.format(omitted=omitted) + text[len(text) - tail :]


def truncate_tool_results(messages: Sequence[Message], *, limit: int) -> tuple[list[Message], int]:
    """Cut every tool result longer than ``limit`` characters.

    Returns:
        The new message list and how many results were cut (0: nothing changed).
    """
    out: list[Message] = []
    cut = 0
    for message in messages:
        blocks: list[ContentBlock] = []
        changed = False
        for block in message.content:
            if isinstance(block, ToolResultBlock) and len(block.content) > limit:
                blocks.append(replace(block, content=truncate_text(block.content, limit)))
                changed = True
                cut += 1
            else:
                blocks.append(block)
        out.append(replace(message, content=tuple(blocks)) if changed else message)
    return out, cut


__all__ = ["MARKER", "truncate_text", "truncate_tool_results"]
