"""The neutral shape every importer produces, and the report an import fills in."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeAlias

Platform: TypeAlias = Literal["discord", "slack", "omoide"]

MessageKind: TypeAlias = Literal["message", "reply", "forward", "command", "system"]
"""What a message is, across platforms:

* ``message``: an ordinary message (Discord ``Default``, a Slack message without a
  subtype, a bot post, a file share, a transcript turn);
* ``reply``: an answer to another message (Discord ``Reply``; a Slack thread reply);
  ``reply_to`` names the message answered;
* ``forward``: a Discord forwarded message (its original content is in ``text``);
* ``command``: a bot's response to a slash command (``invoked_by`` names who ran it);
* ``system``: a platform notification (joins, pins, renames, thread creation, …),
  skipped unless ``include_system=True``.
"""

ConversationKey: TypeAlias = tuple[str, str, str, str | None]
"""``(platform, workspace_id, channel_id, thread_id)``: one channel, or one thread in it."""


@dataclass(frozen=True, slots=True)
class ImportedAttachment:
    """A file attached to a message: its name and where it was (URL or local path)."""

    name: str
    url: str | None = None
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    """One message of an imported export, in a platform-neutral shape.

    Attributes:
        platform: ``discord``, ``slack`` or ``omoide`` (a JSONL transcript).
        workspace_id / workspace_name: the Discord guild (``"0"`` = direct messages), the
            Slack workspace (team id), or the agent of a transcript.
        channel_id / channel_name: the channel. For a Discord thread this is the
            **parent** channel, and the thread is in ``thread_id`` / ``thread_name``.
        thread_id / thread_name: the thread (Discord thread channel id; Slack parent
            ``thread_ts``), or ``None`` for a message in the channel itself.
        message_id: the platform's message id (Discord snowflake, Slack ``ts``; for a
            transcript its ``message_id``, else ``"<session>:<n>"``). Unique within
            ``(workspace, thread or channel)``.
        author_id / author_name: who wrote it (display name when known).
        is_bot: written by a bot or integration (or an assistant turn).
        text: readable text for memory: the message body followed by one line per
            attachment, embed, sticker or forwarded message, e.g. ``[attachment: a.png]``.
        content: the message body alone (mentions resolved to names).
        created_at / edited_at: aware UTC datetimes (``edited_at``: last edit, if any).
        reply_to: the message this one answers (``kind == "reply"``), if known.
        attachments: the attached files.
        kind: see :data:`MessageKind`; ``platform_kind`` is the platform's own name
            (Discord ``type``, Slack ``subtype`` or ``"message"``, transcript role).
        url: a link to the message on the platform (Discord jump URL), when derivable.
        invoked_by: for a bot's slash-command response, the id of the user who ran it.
    """

    platform: Platform
    workspace_id: str
    workspace_name: str | None
    channel_id: str
    channel_name: str | None
    thread_id: str | None
    thread_name: str | None
    message_id: str
    author_id: str
    author_name: str | None
    is_bot: bool
    text: str
    created_at: datetime
    edited_at: datetime | None = None
    reply_to: str | None = None
    attachments: tuple[ImportedAttachment, ...] = ()
    kind: MessageKind = "message"
    platform_kind: str = ""
    content: str = ""
    url: str | None = None
    invoked_by: str | None = None

    @property
    def conversation(self) -> ConversationKey:
        """``(platform, workspace_id, channel_id, thread_id)``: the channel or thread it belongs to."""
        return (self.platform, self.workspace_id, self.channel_id, self.thread_id)


@dataclass(frozen=True, slots=True)
class ImportedChannel:
    """A channel or thread found in an export.

    Attributes:
        kind: the platform's channel type (Discord ``GuildTextChat``, ``GuildPublicThread``,
            …; Slack ``channel``, ``group``, ``mpim``, ``dm``; ``session`` for transcripts).
        is_direct: a direct or group-direct conversation (Discord DMs, Slack DMs / MPIMs).
        is_private: a private channel or thread (Slack ``groups.json``, Discord private threads).
            Imported knowledge of a direct or private conversation is private to its members.
        members: the member user ids the export lists (Slack ``members`` of DMs, MPIMs and
            private groups); empty when unknown (Discord exports list none): the
            participants are members anyway.
        source: the file or folder it was read from.
    """

    platform: Platform
    workspace_id: str
    workspace_name: str | None
    channel_id: str
    channel_name: str | None
    thread_id: str | None = None
    thread_name: str | None = None
    kind: str = ""
    topic: str | None = None
    is_direct: bool = False
    is_private: bool = False
    source: str = ""
    members: tuple[str, ...] = ()

    @property
    def conversation(self) -> ConversationKey:
        """``(platform, workspace_id, channel_id, thread_id)``."""
        return (self.platform, self.workspace_id, self.channel_id, self.thread_id)


@dataclass(frozen=True, slots=True)
class ImportProblem:
    """A malformed record or file that was skipped, with where it was.

    Attributes:
        path: the file (``archive.zip!member`` inside a zip).
        position: where in the file: ``messages[12]`` (a Discord message index),
            ``[3]`` (an index in a Slack day file), ``line 7`` (a JSONL line), or ``""``
            for the whole file.
        problem: what was wrong.
        message_id: the record's message id, when it could be read.
    """

    path: str
    position: str
    problem: str
    message_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}: {self.position}" if self.position else self.path
        return f"{where}: {self.problem}"


class ImportReport:
    """What an import read: channels, counts, problems. Filled in while messages stream.

    Pass the same report to several reads to de-duplicate across them: a message whose
    ``(platform, workspace, thread or channel, message id)`` was already yielded is
    counted in ``duplicates`` and not yielded again (the first copy wins).

    Attributes:
        channels: every channel or thread seen, by conversation key, in order seen.
        problems: the malformed records and files that were skipped.
        files: the files read (``archive.zip!member`` inside a zip).
        records: message records read (kept or not).
        messages: messages yielded.
        duplicates: records skipped as already yielded.
        system_skipped: platform notifications skipped (``include_system=False``).
        empty_skipped: records with no text, attachment, embed or sticker at all.
        per_conversation: messages yielded per conversation key.
    """

    __slots__ = (
        "_seen",
        "channels",
        "duplicates",
        "empty_skipped",
        "files",
        "messages",
        "per_conversation",
        "problems",
        "records",
        "system_skipped",
    )

    def __init__(self) -> None:
        self.channels: dict[ConversationKey, ImportedChannel] = {}
        self.problems: list[ImportProblem] = []
        self.files: list[str] = []
        self.records = 0
        self.messages = 0
        self.duplicates = 0
        self.system_skipped = 0
        self.empty_skipped = 0
        self.per_conversation: Counter[ConversationKey] = Counter()
        self._seen: set[tuple[str, str, str, str]] = set()

    def add_channel(self, channel: ImportedChannel) -> None:
        """Record a channel; the first description of a conversation wins."""
        self.channels.setdefault(channel.conversation, channel)

    def accept(self, message: ImportedMessage) -> bool:
        """Count ``message`` and return True, or return False if it is a duplicate."""
        key = (message.platform, message.workspace_id, message.thread_id or message.channel_id, message.message_id)
        if key in self._seen:
            self.duplicates += 1
            return False
        self._seen.add(key)
        self.messages += 1
        self.per_conversation[message.conversation] += 1
        return True

    def __repr__(self) -> str:
        return (
            f"ImportReport(files={len(self.files)}, channels={len(self.channels)}, records={self.records}, "
            f"messages={self.messages}, duplicates={self.duplicates}, system_skipped={self.system_skipped}, "
            f"empty_skipped={self.empty_skipped}, problems={len(self.problems)})"
        )


__all__ = [
    "ConversationKey",
    "ImportProblem",
    "ImportReport",
    "ImportedAttachment",
    "ImportedChannel",
    "ImportedMessage",
    "MessageKind",
    "Platform",
]
