"""Turn normalisation: what every chat API accepts.

Stored histories are not always valid prompts: in a channel several users speak in a
row, a window may start with an assistant turn or with a tool result whose tool call
fell outside the window. :func:`normalise_turns` fixes that without inventing content:

* consecutive messages of the same role are merged into one turn (blocks concatenated);
* leading assistant turns are dropped (a prompt starts with the user);
* a tool result stays only in the user turn right after the assistant turn that made the
  call (first in that turn, as the APIs require); a tool call stays only if the next turn
  answers it (a pending call in the last turn is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from omoide.models import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock


def _merge(messages: Sequence[Message]) -> list[Message]:
    """Merge same-role neighbours, drop empty and leading assistant turns; tool results first in user turns."""
    out: list[Message] = []
    for message in messages:
        if not message.content or (not out and message.role != "user"):
            continue
        if out and out[-1].role == message.role:
            # a merged turn carries the seq of its newest stored message
            seq = message.seq if message.seq is not None else out[-1].seq
            out[-1] = replace(out[-1], content=(*out[-1].content, *message.content), seq=seq)
        else:
            out.append(message)
    return [_tool_results_first(m) if m.role == "user" and len(m.content) > 1 else m for m in out]


def _tool_results_first(message: Message) -> Message:
    ordered = tuple(sorted(message.content, key=lambda b: not isinstance(b, ToolResultBlock)))
    return message if ordered == message.content else replace(message, content=ordered)


def _pair_tools(turns: list[Message]) -> tuple[list[Message], bool]:
    """Keep a tool_use only if the next turn answers it, a tool_result only if the previous turn asked."""
    changed = False
    out: list[Message] = []
    for i, turn in enumerate(turns):
        prev_uses = {b.id for b in turns[i - 1].content if isinstance(b, ToolUseBlock)} if i > 0 else set[str]()
        next_results = (
            {b.tool_use_id for b in turns[i + 1].content if isinstance(b, ToolResultBlock)}
            if i + 1 < len(turns)
            else None  # the last turn may hold a pending tool call
        )
        kept: list[ContentBlock] = []
        for block in turn.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id not in prev_uses:
                changed = True
                continue
            if isinstance(block, ToolUseBlock) and next_results is not None and block.id not in next_results:
                changed = True
                continue
            kept.append(block)
        if kept:
            out.append(replace(turn, content=tuple(kept)) if len(kept) != len(turn.content) else turn)
    return out, changed


def normalise_turns(messages: Sequence[Message]) -> list[Message]:
    """Return ``messages`` as strictly alternating user/assistant turns starting with the user,
    with every tool_result in the turn right after the one holding its tool_use."""
    turns = _merge(messages)
    for _ in range(len(turns) + 1):
        turns, changed = _pair_tools(turns)
        turns = _merge(turns)
        if not changed:
            break
    return turns


def message_text_for_summary(message: Message) -> str:
    """One message as plain text for a summariser prompt."""
    who = message.author_name or message.author_id or message.role
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts.append(f"[called tool {block.name} with {dict(block.input)}]")
        else:
            parts.append(f"[tool result: {block.content}]")
    return f"{message.role} ({who}): " + "\n".join(parts)


__all__ = ["message_text_for_summary", "normalise_turns"]
