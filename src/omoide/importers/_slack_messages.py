"""One record of a Slack day file as an :class:`~omoide.importers.ImportedMessage`.

:class:`MessageReader` maps a record's fields (see :mod:`omoide.importers._slack`): the
``ts`` as id and time, threads, bots, edits, ``message_changed`` / ``message_deleted``
events, system subtypes, and the text with mentions resolved plus one line per file and
legacy attachment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from omoide.importers._common import ImportRun, RecordError, join_text, optional_str
from omoide.importers._model import ImportedAttachment, ImportedMessage, MessageKind
from omoide.importers._slack_meta import Conversation, ExportMeta, json_object
from omoide.importers._slack_text import slack_text

SYSTEM_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "channel_convert_to_private",
        "channel_convert_to_public",
        "group_join",
        "group_leave",
        "group_topic",
        "group_purpose",
        "group_name",
        "group_archive",
        "group_unarchive",
        "bot_add",
        "bot_remove",
        "bot_enable",
        "bot_disable",
        "pinned_item",
        "unpinned_item",
        "reminder_add",
        "tombstone",
    }
)


def _ts_time(ts: str) -> datetime:
    seconds, _, fraction = ts.partition(".")
    return datetime.fromtimestamp(int(seconds), tz=UTC) + timedelta(microseconds=int(fraction[:6].ljust(6, "0")))


_TS = re.compile(r"[0-9]+(?:\.[0-9]*)?")
_LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59 UTC: the last second a datetime holds


def _ts(value: object, field: str) -> str:
    """A Slack timestamp (``"1712345678.000100"``), checked: ASCII digits with at most one dot,
    and a time a :class:`datetime` can hold (years 1970–9999)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            value = f"{value:.6f}"
        except OverflowError:  # an int too large for a float
            raise RecordError(f"'{field}' is a timestamp past the year 9999") from None
    if not isinstance(value, str) or _TS.fullmatch(value) is None:
        raise RecordError(f"'{field}' must be a Slack timestamp such as \"1712345678.000100\", got {value!r:.40}")
    seconds = value.partition(".")[0]
    if len(seconds) > len(str(_LAST_SECOND)) or int(seconds) > _LAST_SECOND:
        raise RecordError(f"'{field}' is a timestamp past the year 9999, got {value!r:.40}")
    return value


def ts_key(ts: str) -> tuple[int, int]:
    """A ``ts`` as a sort key: whole seconds, then microseconds."""
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction.ljust(6, "0")[:6])


def _files(message: Mapping[str, Any]) -> tuple[ImportedAttachment, ...]:
    raw = message.get("files")
    items = raw if isinstance(raw, list) else [message["file"]] if isinstance(message.get("file"), dict) else []
    out = []
    for f in items:
        if not isinstance(f, dict):
            continue
        name = optional_str(f.get("name")) or optional_str(f.get("title"))
        if name is None:
            continue  # e.g. files hidden by the plan's limits or deleted
        url = optional_str(f.get("url_private")) or optional_str(f.get("permalink"))
        size = f.get("size")
        out.append(ImportedAttachment(name, url, int(size) if isinstance(size, int | float) else None))
    return tuple(out)


def _legacy_attachments(message: Mapping[str, Any], users: Mapping[str, str], channels: Mapping[str, str]) -> list[str]:
    raw = message.get("attachments")
    if not isinstance(raw, list):
        return []
    lines = []
    for att in raw:
        if not isinstance(att, dict):
            continue
        text = optional_str(att.get("fallback"))
        if text is None:
            parts = [att.get(k) for k in ("pretext", "title", "text")]
            text = " — ".join(p for p in parts if isinstance(p, str) and p) or None
        if text:
            lines.append("[embed: " + slack_text(text, users, channels).replace("\n", " / ") + "]")
    return lines


class MessageReader:
    """Reads the records of one conversation's day files."""

    def __init__(self, meta: ExportMeta, conversation: Conversation, run: ImportRun) -> None:
        self.meta = meta
        self.conv = conversation
        self.run = run

    def parse(self, raw: object) -> tuple[str, ImportedMessage | None, str | None, bool]:
        """``(ts, message, deleted_ts, changed)`` for one record; message None for events to drop."""
        if not isinstance(raw, dict):
            raise RecordError(f"a message must be a JSON object, got {type(raw).__name__}")
        subtype = optional_str(raw.get("subtype"))
        if subtype == "message_deleted":
            return "", None, _ts(raw.get("deleted_ts"), "deleted_ts"), False
        if subtype == "message_changed":
            inner = raw.get("message")
            if not isinstance(inner, dict):
                raise RecordError("a message_changed event needs a 'message' object")
            ts, message, _, _ = self.parse(inner)
            if message is not None and message.edited_at is None:
                message = replace(message, edited_at=_ts_time(_ts(raw.get("ts"), "ts")))
            return ts, message, None, True
        ts = _ts(raw.get("ts"), "ts")
        if subtype == "message_replied":
            return ts, None, None, False
        user = optional_str(raw.get("user"))
        bot_id = optional_str(raw.get("bot_id"))
        author_id = user or bot_id or optional_str(raw.get("username"))
        if author_id is None:
            raise RecordError("no 'user', 'bot_id' or 'username': the author is unknown")
        profile = json_object(raw.get("user_profile"))
        bot_profile = json_object(raw.get("bot_profile"))
        author_name = (
            (self.meta.users.get(user) if user else None)
            or optional_str(profile.get("display_name"))
            or optional_str(profile.get("real_name"))
            or optional_str(raw.get("username"))
            or optional_str(bot_profile.get("name"))
        )
        is_bot = subtype == "bot_message" or bot_id is not None or (user is not None and user in self.meta.bots)
        text = raw.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise RecordError(f"'text' must be a string, got {type(text).__name__}")
        content = slack_text(text, self.meta.users, self.meta.channel_names).strip()
        files = _files(raw)
        extras = [f"[attachment: {f.name}]" for f in files]
        extras += _legacy_attachments(raw, self.meta.users, self.meta.channel_names)
        thread_ts = raw.get("thread_ts")
        thread_ts = _ts(thread_ts, "thread_ts") if thread_ts is not None else None
        is_reply = thread_ts is not None and thread_ts != ts
        kind: MessageKind = "system" if subtype in SYSTEM_SUBTYPES else "reply" if is_reply else "message"
        edited = raw.get("edited")
        edited_at = (
            _ts_time(_ts(edited.get("ts"), "edited.ts")) if isinstance(edited, dict) and edited.get("ts") else None
        )
        info = self.conv.info
        message = ImportedMessage(
            platform="slack",
            workspace_id=info.workspace_id,
            workspace_name=info.workspace_name,
            channel_id=info.channel_id,
            channel_name=info.channel_name,
            thread_id=thread_ts if is_reply else None,
            thread_name=None,
            message_id=ts,
            author_id=author_id,
            author_name=author_name,
            is_bot=is_bot,
            text=join_text(content, extras),
            created_at=_ts_time(ts),
            edited_at=edited_at,
            reply_to=thread_ts if is_reply else None,
            attachments=files,
            kind=kind,
            platform_kind=subtype or "message",
            content=content,
        )
        return ts, message, None, False


__all__ = ["SYSTEM_SUBTYPES", "MessageReader", "ts_key"]
