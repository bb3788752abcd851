"""The archiver's rules: which conversations make knowledge, and the source (title, link,
metadata, visibility) and chunks an archived session becomes (:func:`plan_archive`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omoide.knowledge.chunking import Chunker
from omoide.models import Message, Session, SessionStatus
from omoide.settings import Settings
from omoide.stores.knowledge import ArchivePlan, SourceDraft


def is_person(message: Message) -> bool:
    """A user turn written by a person (not a bot, not only tool results)."""
    return message.role == "user" and not message.is_bot and bool(message.text.strip())


def filter_reason(messages: Sequence[Message], *, min_chars: int, context: Sequence[Message] = ()) -> str | None:
    """Why these messages make no knowledge (seed 000's filters), or ``None`` when they do.

    The filters judge the conversation, not the increment: ``context`` (the messages kept
    below the watermark from the previous archive) counts too, so a bot's reply archived
    apart from the question it answers is not dropped as "bot-only".

    Returns:
        ``"empty"``, ``"no_user_message"`` (bot-only), ``"too_short"`` (fewer than
        ``min_chars`` characters of text in all), or ``None``.
    """
    if not messages:
        return "empty"
    conversation = [*context, *messages]
    if not any(is_person(m) for m in conversation):
        return "no_user_message"
    if sum(len(m.text) for m in conversation) < min_chars:
        return "too_short"
    return None


def source_type(platform: str) -> str:
    """``discord_session``, ``slack_session``, ``agent_session``, ``cli_session``, … by platform."""
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in platform.strip().lower()) or "unknown"
    return f"{cleaned}_session"


def source_uri(session: Session, first_message_id: str | None) -> str | None:
    """Where the conversation can be opened: a Discord jump URL, a Slack deep link, or ``None``.

    Discord: ``https://discord.com/channels/{guild}/{channel}/{message}`` (a thread is a
    channel there); the message part only when the first message's platform id is known.
    """
    channel = session.thread_id or session.channel_id
    if session.platform == "discord":
        guild = session.workspace_id
        if not (guild.isdigit() or guild == "@me") or not channel or not channel.isdigit():
            return None
        url = f"https://discord.com/channels/{guild}/{channel}"
        return f"{url}/{first_message_id}" if first_message_id and first_message_id.isdigit() else url
    if session.platform == "slack" and session.channel_id and session.workspace_id:
        return f"slack://channel?team={session.workspace_id}&id={session.channel_id}"
    return None


def _participants(messages: Sequence[Message]) -> tuple[list[str], dict[str, str]]:
    ids: list[str] = []
    names: dict[str, str] = {}
    for m in messages:
        if m.author_id is None:
            continue
        if m.author_id not in names and m.author_id not in ids:
            ids.append(m.author_id)
        if m.author_name:
            names[m.author_id] = m.author_name
    return ids, names


def _title(session: Session, messages: Sequence[Message], channel_name: str | None) -> str:
    platform = session.platform.capitalize() if session.platform else "Chat"
    if session.agent_id:
        where = f"agent session {session.agent_id}"
    elif channel_name:
        where = f"#{channel_name.lstrip('#')}"
    elif session.channel_id:
        where = f"channel {session.channel_id}"
    else:
        where = f"session {session.key}"
    if session.thread_id and not session.agent_id:
        where += f" (thread {session.thread_id})"
    people: list[str] = []
    for m in messages:
        if is_person(m):
            who = m.author_name or m.author_id
            if who and who not in people:
                people.append(who)
    with_whom = ""
    if people:
        shown = ", ".join(people[:3])
        with_whom = f" with {shown}" + (f" +{len(people) - 3}" if len(people) > 3 else "")
    first, last = messages[0].created_at, messages[-1].created_at
    end = last.strftime("%H:%M") if first.date() == last.date() else last.strftime("%Y-%m-%d %H:%M")
    return f"{platform} conversation in {where}{with_whom} · {first:%Y-%m-%d %H:%M}–{end} UTC"


def plan_archive(
    session: Session,
    messages: Sequence[Message],
    *,
    settings: Settings,
    chunker: Chunker,
    idle: bool,
    channel_name: str | None = None,
    context: Sequence[Message] = (),
) -> tuple[ArchivePlan, str | None]:
    """The archive plan for ``session`` as read, and the filter reason (``None``: knowledge made).

    Pure computation (no I/O); the archiver runs it in a worker thread.

    Args:
        session: the session as just read.
        settings: its ``archive_overlap``, ``session_window`` and ``min_session_chars`` are used.
        chunker: cuts the messages into chunks.
        messages: its messages with ``archived_seq < seq <= last_seq``, oldest first.
        idle: archive as idle (status ``archived``, keep ``archive_overlap`` messages) or
            as an active session over the size threshold (stays ``active``, keeps at
            least its prompt window).
        channel_name: the channel's name, when known.
        context: the session's messages still stored at or below ``archived_seq``
            (the overlap kept last time), for the filters only.
    """
    keep = settings.archive_overlap if idle else max(settings.archive_overlap, settings.session_window)
    status = SessionStatus.ARCHIVED if idle else SessionStatus.ACTIVE
    reason = filter_reason(messages, min_chars=settings.min_session_chars, context=context)
    if reason is not None:
        plan = ArchivePlan(session.id, session.version, session.last_seq, None, (), keep, status)
        return plan, reason
    chunks = chunker.chunk(
        messages,
        total=session.last_seq,
        session_id=int(session.id),
        channel_id=session.channel_id,
        thread_id=session.thread_id,
    )
    participants, names = _participants(messages)
    metadata: dict[str, Any] = {
        "origin_session_key": session.key,
        "origin_session_id": int(session.id),
        "platform": session.platform,
        "workspace_id": session.workspace_id,
        "channel_id": session.channel_id,
        "thread_id": session.thread_id,
        "participants": participants,
        "participant_names": names,
        "message_count": len(messages),
        "seq_from": session.archived_seq + 1,
        "seq_to": session.last_seq,
        "first_message_at": messages[0].created_at.isoformat(),
        "last_message_at": messages[-1].created_at.isoformat(),
        "first_message_id": messages[0].message_id,
        "last_message_id": messages[-1].message_id,
        "chunk_strategy": chunker.options.strategy,
    }
    if channel_name:
        metadata["channel_name"] = channel_name
    if session.user_id is not None:
        metadata["user_id"] = session.user_id
    if session.agent_id is not None:
        metadata["agent_id"] = session.agent_id
    members: tuple[str, ...] = ()
    if session.private:  # a private conversation: its members, its user and everyone who spoke
        named = [session.user_id] if session.user_id else []
        members = tuple(dict.fromkeys([*session.members, *named, *participants]))
    source = SourceDraft(
        workspace_id=session.workspace_id,
        type=source_type(session.platform),
        title=_title(session, messages, channel_name),
        uri=source_uri(session, messages[0].message_id),
        metadata=metadata,
        private=session.private,
        members=members,
    )
    return ArchivePlan(session.id, session.version, session.last_seq, source, tuple(chunks), keep, status), None


__all__ = ["filter_reason", "is_person", "plan_archive", "source_type", "source_uri"]
