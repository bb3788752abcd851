"""Re-delivered chat events: is a platform message already in its session?

A platform may deliver one message event twice (Slack retries with ``X-Slack-Retry-Num``;
a Discord MESSAGE_CREATE can reach the bot again, e.g. while an old and a new process of it
overlap during a deploy). ``Memory.append`` stores the message
once, but ``Memory.chat`` would still call the model and post a second answer: the bots ask
:func:`already_stored` first, and keep the messages being answered right now in a set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omoide.engine import Memory
    from omoide.models import SessionKey

RECENT_MESSAGES = 100
"""How far back in a session a re-delivered message is looked for."""


async def already_stored(mem: Memory, key: SessionKey, message_id: str) -> bool:
    """Whether the message with this platform id is among the session's recent messages."""
    session = await mem.sessions.get_or_create(key)
    recent = await mem.sessions.messages(key, after_seq=max(0, session.last_seq - RECENT_MESSAGES))
    return any(m.message_id == message_id for m in recent)


__all__ = ["RECENT_MESSAGES", "already_stored"]
