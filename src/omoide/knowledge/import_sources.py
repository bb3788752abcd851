"""What an imported conversation is written as: its knowledge source, and which of its messages are stored.

Split out of :mod:`omoide.knowledge.importing` (which re-exports these names): the source
of a conversation's new windows (:func:`source_for`: title, metadata with the
conversation key, privacy and members) and the message ids earlier imports stored
(:func:`known_message_ids`), which make an import idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omoide.importers import ConversationKey, ImportedChannel, MessageWindow
from omoide.stores.knowledge import KnowledgeStore, SourceDraft

CONVERSATION_KEY = "conversation_key"
"""``metadata`` key of an imported source: ``platform:workspace:channel:thread-or--``."""

SOURCE_TYPES = {"discord": "discord_channel", "slack": "slack_channel", "omoide": "transcript"}


def conversation_key(conversation: ConversationKey) -> str:
    platform, workspace, channel, thread = conversation
    return f"{platform}:{workspace}:{channel}:{thread or '-'}"


def _title(window: MessageWindow) -> str:
    channel = window.channel_name or window.channel_id
    title = f"#{channel}"
    if window.thread_id is not None:
        title += f" › {window.thread_name or window.thread_id}"
    return title


def channel_info(
    channels: Mapping[ConversationKey, ImportedChannel], conversation: ConversationKey
) -> ImportedChannel | None:
    """What the export says about a conversation: its own entry, else its parent channel's (a thread)."""
    found = channels.get(conversation)
    if found is None and conversation[3] is not None:
        found = channels.get((conversation[0], conversation[1], conversation[2], None))
    return found


def source_for(
    windows: Sequence[MessageWindow],
    files: Sequence[str],
    *,
    channel: ImportedChannel | None = None,
    private: bool = False,
    members: Sequence[str] = (),
) -> SourceDraft:
    """The source of one conversation's new windows.

    It is private (visible only to its members) when ``private`` or when the export marks
    its channel private (a DM, group DM, private channel or private thread); its members
    are the channel's members from the export, ``members``, and every participant.
    """
    first = windows[0]
    participants = list(dict.fromkeys(p.author_id for w in windows for p in w.participants))
    is_private = private or (channel is not None and (channel.is_private or channel.is_direct))
    who = tuple(dict.fromkeys([*(channel.members if channel is not None else ()), *members, *participants]))
    metadata: dict[str, Any] = {
        CONVERSATION_KEY: conversation_key(first.conversation),
        "platform": first.platform,
        "workspace_id": first.workspace_id,
        "channel_id": first.channel_id,
        "channel_name": first.channel_name,
        "thread_id": first.thread_id,
        "thread_name": first.thread_name,
        "participants": participants,
        "message_count": sum(len(w.message_ids) for w in windows),
        "first_message_at": windows[0].started_at.isoformat(),
        "last_message_at": windows[-1].ended_at.isoformat(),
        "files": list(files),
    }
    if channel is not None and channel.kind:
        metadata["channel_kind"] = channel.kind
    return SourceDraft(
        workspace_id=first.workspace_id,
        type=SOURCE_TYPES.get(first.platform, "document"),
        title=_title(first),
        metadata=metadata,
        private=is_private,
        members=who if is_private else (),
    )


async def known_message_ids(store: KnowledgeStore, workspaces: Iterable[str], keys: set[str]) -> dict[str, set[str]]:
    """Message ids already stored, per conversation key, from earlier imports' chunks."""
    out: dict[str, set[str]] = {key: set() for key in keys}
    for workspace in sorted(set(workspaces)):
        offset = 0
        while True:
            page = await store.list_sources(workspace_id=workspace, limit=500, offset=offset)
            for source in page:
                key = source.metadata.get(CONVERSATION_KEY)
                if key not in out:
                    continue
                for chunk in await store.chunks_of_source(source.id):
                    ids = chunk.location.get("message_ids", [])
                    out[key].update(str(i) for i in ids)
            if len(page) < 500:
                break
            offset += 500
    return out


__all__ = ["CONVERSATION_KEY", "SOURCE_TYPES", "channel_info", "conversation_key", "known_message_ids", "source_for"]
