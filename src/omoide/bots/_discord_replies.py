"""What the Discord bot replies with: rendering and sending in pieces.

Rendering (:func:`render_answer`, :func:`render_memories`), sending a reply in pieces of at
most 2,000 characters (:func:`send_pieces`) and editing a deferred response (:func:`show`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import discord

from omoide.bots._split import DISCORD_LIMIT, split_message

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.stores.memories import MemoryRecord

logger = logging.getLogger("omoide.bots.discord")

Interaction: TypeAlias = "discord.Interaction[discord.Client]"


def render_answer(result: AnswerResult) -> str:
    """``/chat``'s reply: the answer, then one line per cited source with its jump link."""
    from omoide.answers.messages import NO_HITS
    from omoide.answers.prompt import time_range

    if result.no_data and result.text != NO_HITS[result.language]:  # nothing synced (here): /sync helps
        hint = (
            "（管理者がチャンネルで `/sync` を実行すると、その履歴から答えられるようになります。）"
            if result.language == "ja"
            else "(An admin can run `/sync` in a channel to let me answer from its history.)"
        )
        return f"{result.text}\n{hint}"
    if not result.citations:
        return result.text
    lines = [result.text, "", "**根拠**" if result.language == "ja" else "**Sources**"]
    for c in result.citations:
        chunk = c.hit.chunk
        where = " · ".join(p for p in (chunk.source_title, time_range(chunk.started_at, chunk.ended_at)) if p)
        link = f" — <{c.hit.jump_url}>" if c.hit.jump_url else ""
        lines.append(f"[#{c.number}] {where}{link}")
    return "\n".join(lines)


def render_memories(memories: Sequence[MemoryRecord]) -> str:
    """One line per memory, in the given order (a recall's is best first; its fused scores mean nothing to a reader)."""
    lines = []
    for m in memories:
        tags = f" [{', '.join(m.tags)}]" if m.tags else ""
        lines.append(f"`#{m.id}` ({m.category}{tags}) {m.content} — {m.updated_at:%Y-%m-%d}")
    return "\n".join(lines)


async def send_pieces(interaction: Interaction, text: str, *, ephemeral: bool = False) -> None:
    """Send ``text`` as the interaction's reply, split at 2,000 characters.

    After a deferral the first piece replaces the "thinking…" message and the rest are
    follow-ups; otherwise the first piece is the response itself.
    """
    pieces = split_message(text, DISCORD_LIMIT) or ["…"]
    first, rest = pieces[0], pieces[1:]
    if interaction.response.is_done():
        await interaction.edit_original_response(content=first)
    else:
        await interaction.response.send_message(first, ephemeral=ephemeral)
    for piece in rest:
        await interaction.followup.send(piece, ephemeral=ephemeral)


async def show(interaction: Interaction, text: str, *, fallback: discord.abc.Messageable | None = None) -> None:
    """Edit the deferred response (best effort: its token lasts 15 minutes); else post to ``fallback``."""
    try:
        await interaction.edit_original_response(content=text)
    except discord.HTTPException:
        logger.warning("discord_progress_edit_failed", exc_info=True)
        if fallback is not None:
            await fallback.send(text)


__all__ = [
    "Interaction",
    "logger",
    "render_answer",
    "render_memories",
    "send_pieces",
    "show",
]
