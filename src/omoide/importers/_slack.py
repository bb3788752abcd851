"""Slack workspace exports: a ``.zip`` as downloaded, or the directory it unpacks to.

Field notes: ``../shared/data/formats/SLACK_EXPORT.md``. Layout: ``channels.json``
(public), ``groups.json`` (private), ``mpims.json`` (group DMs), ``dms.json``,
``users.json`` (``org_users.json`` on Enterprise Grid), and one folder per conversation
holding one JSON array per day (``YYYY-MM-DD.json``). Folders are named after the
conversation, or its id for DMs; an archive that wraps everything in one top folder is
read too.

Mapping:

* workspace = the team id (``team_id`` in ``users.json``, else a message's ``team``, else
  the export's name) unless given; channel = the conversation (id from the lists; a
  folder missing from the lists uses its folder name as id and name);
* message id = ``ts`` (kept as the exact string), time = ``ts`` as UTC;
* a reply (``thread_ts`` ≠ ``ts``; also ``thread_broadcast``) gets ``thread_id`` and
  ``reply_to`` = the parent's ``ts`` and ``kind == "reply"``; the parent itself stays in
  the channel (``thread_id`` None); ``thread_name`` is the start of the parent's text;
* bots: ``subtype == "bot_message"``, a ``bot_id``, or a user marked ``is_bot``; the
  author is ``user``, else ``bot_id``, else ``username``;
* edits: the final text is kept and ``edited.ts`` becomes ``edited_at``; a
  ``message_changed`` event replaces the text of the message it names, a
  ``message_deleted`` event removes it, ``message_replied`` events are ignored;
* system subtypes (joins, leaves, topic/purpose/name changes, pins, bot add/remove,
  archive, ``tombstone``) are skipped unless ``include_system=True``;
* text = ``text`` with ``<@U…>`` resolved to display names and links made readable,
  then one line per file (``[attachment: name]``) and per legacy attachment
  (``[embed: fallback]``), which is where many bot posts keep all their content.

Each conversation's day files are loaded together (edits and deletions can come days
later) and its messages are yielded in ``ts`` order; conversations come in folder order.
"""

from __future__ import annotations

import zipfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import IO, Any

from omoide.importers._common import ImportRun, RecordError, join_text, logger, natural_key, optional_str
from omoide.importers._errors import ExportTooLarge, UnrecognizedExport
from omoide.importers._jsonstream import JSONError, NotAnArray, Rejected, error_line, iter_array
from omoide.importers._model import ImportedAttachment, ImportedChannel, ImportedMessage, ImportReport, MessageKind
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
DEFAULT_MAX_UNCOMPRESSED_BYTES = 1024**3
"""Default cap on the JSON a Slack zip may inflate to, in total (1 GiB)."""
DEFAULT_MAX_COMPRESSION_RATIO = 100.0
"""Default cap on one zip member's compression ratio (uncompressed : compressed)."""
RATIO_GRACE_BYTES = 1024**2
"""Members inflating to at most this many bytes are exempt from the ratio cap (tiny files compress well)."""


@dataclass(frozen=True, slots=True)
class ZipLimits:
    """How far a Slack export zip may inflate (settings ``import_max_uncompressed_bytes`` and
    ``import_max_compression_ratio``). A zip beyond either limit raises
    :class:`~omoide.importers.ExportTooLarge` before anything is imported.

    Attributes:
        max_uncompressed_bytes: the JSON members together, uncompressed.
        max_ratio: one member's uncompressed size / compressed size (members of at most
            :data:`RATIO_GRACE_BYTES` are exempt), and the same for the JSON members
            together (plus that grace once).
    """

    max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED_BYTES
    max_ratio: float = DEFAULT_MAX_COMPRESSION_RATIO


_LISTS = (("channels.json", "channel"), ("groups.json", "group"), ("mpims.json", "mpim"), ("dms.json", "dm"))
_MARKERS = ("channels.json", "users.json", "org_users.json")


# ------------------------------------------------------------------------- source


class _Tree:
    """The files of an export, relative to its root (where ``channels.json`` is)."""

    def __init__(self, path: Path, limits: ZipLimits) -> None:
        self.path = path
        self.limits = limits
        self.inflated = 0  # bytes read out of the zip so far
        self.compressed = 0  # compressed size of its JSON members
        self._zip: zipfile.ZipFile | None = None
        if path.is_dir():
            names = [p.relative_to(path).as_posix() for p in path.rglob("*.json") if p.is_file()]
        elif zipfile.is_zipfile(path):
            try:
                self._zip = zipfile.ZipFile(path)
                infos = [
                    i
                    for i in self._zip.infolist()
                    if i.filename.endswith(".json") and not i.filename.startswith("__MACOSX/")
                ]
                self._check_declared(infos)
            except (zipfile.BadZipFile, OSError) as exc:
                self.close()
                raise UnrecognizedExport(f"cannot read the zip archive {path}: {exc}", path=str(path)) from exc
            except ExportTooLarge:
                self.close()
                raise
            names = [i.filename for i in infos]
        else:
            raise UnrecognizedExport(
                f"not a Slack export: {path} is neither a directory nor a zip archive", path=str(path)
            )
        markers = sorted((n for n in names if PurePosixPath(n).name in _MARKERS), key=lambda n: (n.count("/"), n))
        if not markers:
            self.close()
            raise UnrecognizedExport(f"not a Slack export: {path} has no channels.json or users.json", path=str(path))
        parent = PurePosixPath(markers[0]).parent
        self.prefix = "" if str(parent) == "." else f"{parent}/"
        self.names = sorted(n[len(self.prefix) :] for n in names if n.startswith(self.prefix))

    def label(self, name: str) -> str:
        """How ``name`` is shown in problems: a path, or ``archive.zip!member``."""
        if self._zip is not None:
            return f"{self.path}!{self.prefix}{name}"
        return str(self.path / self.prefix / name)

    def _check_declared(self, infos: list[zipfile.ZipInfo]) -> None:
        """Refuse a zip whose directory already says it inflates too far (zipfile never reads
        past a member's declared size; :class:`_Member` checks the bytes actually read).

        The ratio applies to each member over :data:`RATIO_GRACE_BYTES` and to the JSON
        members together (many small, highly compressed members are a bomb too)."""
        limits = self.limits
        for info in infos:
            if info.file_size > RATIO_GRACE_BYTES and info.file_size > limits.max_ratio * max(info.compress_size, 1):
                raise self._too_compressed(info.filename, info.file_size, info.compress_size)
        total = sum(i.file_size for i in infos)
        self.compressed = sum(i.compress_size for i in infos)
        if total > self._ratio_allowance():
            raise self._too_compressed(None, total, self.compressed)
        if total > limits.max_uncompressed_bytes:
            raise self._too_large(total)

    def _ratio_allowance(self) -> float:
        """The most the JSON members together may inflate to under the ratio limit."""
        return self.limits.max_ratio * self.compressed + RATIO_GRACE_BYTES

    def _too_large(self, size: int) -> ExportTooLarge:
        limit = self.limits.max_uncompressed_bytes
        return ExportTooLarge(
            f"{self.path} inflates to more than {limit:,} bytes of JSON ({size:,} bytes or more), the limit set by "
            "OMOIDE_IMPORT_MAX_UNCOMPRESSED_BYTES; nothing was imported (split the export, or raise the limit "
            "if you trust it)",
            path=str(self.path),
            limit="import_max_uncompressed_bytes",
        )

    def _too_compressed(self, member: str | None, size: int, compressed: int) -> ExportTooLarge:
        ratio = size / max(compressed, 1)
        where = f"{self.path}!{member}" if member is not None else f"{self.path} (its JSON files together)"
        return ExportTooLarge(
            f"{where} is compressed {ratio:,.0f} to 1, more than the {self.limits.max_ratio:g} to 1 "
            "allowed by OMOIDE_IMPORT_MAX_COMPRESSION_RATIO (a zip bomb?); nothing was imported",
            path=f"{self.path}!{member}" if member is not None else str(self.path),
            limit="import_max_compression_ratio",
        )

    def read_array(self, name: str) -> list[Any]:
        """The items of one member's top-level JSON array, streamed; an item nested too deeply
        is a :class:`Rejected`.

        Raises:
            OSError, KeyError, zipfile.BadZipFile, NotImplementedError, RuntimeError: unreadable.
            JSONError: invalid JSON.
            NotAnArray: the member is not a JSON array.
            ExportTooLarge: the zip inflates beyond the limits.
        """
        if self._zip is not None:
            info = self._zip.getinfo(self.prefix + name)
            source = _Member(self._zip.open(info), self, info)
        else:
            source = _Member((self.path / self.prefix / name).open("rb"), None, None)
        with source:
            return list(iter_array(source))

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


class _Member:
    """One member being read: a UTF-8 byte-order mark skipped and, inside a zip, the bytes it
    inflates to counted against the tree's limits."""

    def __init__(self, raw: IO[bytes], tree: _Tree | None, info: zipfile.ZipInfo | None) -> None:
        self._raw = raw
        self._tree = tree
        self._info = info
        self._read = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size if size >= 0 else 64 * 1024)
        first = self._read == 0
        self._read += len(data)
        tree, info = self._tree, self._info
        if tree is not None and info is not None:
            tree.inflated += len(data)
            if tree.inflated > tree.limits.max_uncompressed_bytes:
                raise tree._too_large(tree.inflated)
            if tree.inflated > tree._ratio_allowance():
                raise tree._too_compressed(None, tree.inflated, tree.compressed)
            if self._read > RATIO_GRACE_BYTES and self._read > tree.limits.max_ratio * max(info.compress_size, 1):
                raise tree._too_compressed(info.filename, self._read, info.compress_size)
        if first and data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Member:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_READ_ERRORS = (OSError, KeyError, ValueError, JSONError, zipfile.BadZipFile, NotImplementedError, RuntimeError)
"""What reading one member can raise (RuntimeError: an encrypted member); ExportTooLarge is not among them."""


def _obj(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _workspace_name(path: Path) -> str:
    name = path.stem if path.suffix.lower() == ".zip" else path.name
    head, sep, _ = name.partition(" Slack export")
    return head if sep else name


# ----------------------------------------------------------------------- metadata


class _Conversation:
    __slots__ = ("info", "name")

    def __init__(self, info: ImportedChannel) -> None:
        self.info = info
        self.name = info.channel_name


class _Meta:
    """Users and conversations of an export."""

    def __init__(self, tree: _Tree, run: ImportRun, workspace_id: str | None, workspace_name: str | None) -> None:
        self.users: dict[str, str] = {}
        self.bots: set[str] = set()
        teams: Counter[str] = Counter()
        users_file = "users.json" if "users.json" in tree.names else "org_users.json"
        for i, user in enumerate(self._list(tree, users_file, run)):
            if isinstance(user, Rejected):
                run.problem(tree.label(users_file), f"[{i}]", user.problem)
                continue
            if not isinstance(user, dict) or not isinstance(user.get("id"), str):
                run.problem(tree.label(users_file), f"[{i}]", "a user needs a string 'id'")
                continue
            profile = _obj(user.get("profile"))
            name = (
                optional_str(profile.get("display_name"))
                or optional_str(profile.get("real_name"))
                or optional_str(user.get("real_name"))
                or optional_str(user.get("name"))
            )
            if name:
                self.users[user["id"]] = name
            if user.get("is_bot") is True:
                self.bots.add(user["id"])
            if optional_str(user.get("team_id")):
                teams[user["team_id"]] += 1
        self.workspace_id = workspace_id or (teams.most_common(1)[0][0] if teams else None)
        self.workspace_name = workspace_name or _workspace_name(tree.path)
        self._raw: list[tuple[str, str, dict[str, Any]]] = []  # folder, kind, entry
        for file, kind in _LISTS:
            for i, entry in enumerate(self._list(tree, file, run)):
                if isinstance(entry, Rejected):
                    run.problem(tree.label(file), f"[{i}]", entry.problem)
                    continue
                if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                    run.problem(tree.label(file), f"[{i}]", "a conversation needs a string 'id'")
                    continue
                folder = entry["id"] if kind == "dm" else optional_str(entry.get("name")) or entry["id"]
                self._raw.append((folder, kind, entry))
        self.channel_names = {e["id"]: optional_str(e.get("name")) or e["id"] for _, _, e in self._raw}

    @staticmethod
    def _list(tree: _Tree, name: str, run: ImportRun) -> list[Any]:
        if name not in tree.names:
            return []
        try:
            return tree.read_array(name)
        except NotAnArray as exc:
            run.problem(tree.label(name), "", str(exc))
        except _READ_ERRORS as exc:
            run.problem(tree.label(name), "", f"cannot read: {_one_line(exc)}")
        return []

    def conversations(self, workspace_id: str, source: str) -> dict[str, _Conversation]:
        out: dict[str, _Conversation] = {}
        for folder, kind, entry in self._raw:
            name = optional_str(entry.get("name"))
            if kind == "dm":
                members = [self.users.get(m, m) for m in entry.get("members") or () if isinstance(m, str)]
                name = "DM: " + ", ".join(members) if members else entry["id"]
            topic = _obj(entry.get("topic"))
            purpose = _obj(entry.get("purpose"))
            info = ImportedChannel(
                "slack",
                workspace_id,
                self.workspace_name,
                entry["id"],
                name,
                kind=kind,
                topic=optional_str(topic.get("value")) or optional_str(purpose.get("value")),
                is_direct=kind in ("dm", "mpim"),
                is_private=kind != "channel" or entry.get("is_private") is True,
                source=f"{source}/{folder}",
                members=tuple(dict.fromkeys(m for m in entry.get("members") or () if isinstance(m, str) and m)),
            )
            out.setdefault(folder, _Conversation(info))
        return out


# ------------------------------------------------------------------------ messages


def _ts_time(ts: str) -> datetime:
    seconds, _, fraction = ts.partition(".")
    return datetime.fromtimestamp(int(seconds), tz=UTC) + timedelta(microseconds=int(fraction[:6].ljust(6, "0")))


def _ts(value: object, field: str) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = f"{value:.6f}"
    if not isinstance(value, str) or not value.replace(".", "", 1).isdigit():
        raise RecordError(f"'{field}' must be a Slack timestamp such as \"1712345678.000100\", got {value!r:.40}")
    return value


def _ts_key(ts: str) -> tuple[int, int]:
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


class _Reader:
    def __init__(self, meta: _Meta, conversation: _Conversation, run: ImportRun) -> None:
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
        profile = _obj(raw.get("user_profile"))
        bot_profile = _obj(raw.get("bot_profile"))
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


def _thread_name(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"


def _read_conversation(
    tree: _Tree, folder: str, days: list[str], meta: _Meta, conversation: _Conversation, run: ImportRun
) -> Iterator[ImportedMessage]:
    reader = _Reader(meta, conversation, run)
    report = run.report
    by_ts: dict[str, ImportedMessage] = {}
    changes: dict[str, ImportedMessage] = {}
    deleted: set[str] = set()
    for day in days:
        label = tree.label(day)
        try:
            records = tree.read_array(day)
        except NotAnArray as exc:
            run.problem(label, "", f"a day file {exc}")
            continue
        except _READ_ERRORS as exc:
            run.problem(label, "", f"cannot read the day file: {_one_line(exc)}")
            continue
        report.files.append(label)
        for index, raw in enumerate(records):
            report.records += 1
            if isinstance(raw, Rejected):
                run.problem(label, f"[{index}]", raw.problem)
                continue
            try:
                ts, message, deleted_ts, changed = reader.parse(raw)
            except RecordError as exc:
                ts_value = raw.get("ts") if isinstance(raw, dict) else None
                run.problem(label, f"[{index}]", str(exc), message_id=ts_value if isinstance(ts_value, str) else None)
                continue
            if deleted_ts is not None:
                deleted.add(deleted_ts)
            elif message is not None and changed:
                changes[ts] = message  # a message_changed event: the latest text wins
            elif message is not None:
                if ts in by_ts:
                    report.duplicates += 1
                else:
                    by_ts[ts] = message
    by_ts.update(changes)
    parents = {ts: m for ts, m in by_ts.items() if m.thread_id is None}
    info = conversation.info
    for ts in sorted(by_ts, key=_ts_key):
        message = by_ts[ts]
        if ts in deleted:
            continue
        if message.kind == "system" and not run.include_system:
            report.system_skipped += 1
            continue
        if not message.text:
            report.empty_skipped += 1
            continue
        if message.thread_id is not None:
            parent = parents.get(message.thread_id)
            name = _thread_name(parent.text) if parent is not None and parent.thread_id is None else None
            message = replace(message, thread_name=name)
            report.add_channel(replace(info, thread_id=message.thread_id, thread_name=name))
        if report.accept(message):
            yield message


def iter_slack(
    path: Path | str,
    *,
    report: ImportReport | None = None,
    strict: bool = False,
    include_system: bool = False,
    workspace_id: str | None = None,
    workspace_name: str | None = None,
    limits: ZipLimits | None = None,
) -> Iterator[ImportedMessage]:
    """Stream the messages of a Slack workspace export (a ``.zip`` or its directory).

    Args:
        path: the export archive or directory.
        report: filled in while reading; pass the same report to several calls to
            de-duplicate across them (by conversation and ``ts``).
        strict: raise on the first malformed file or record instead of skipping it.
        include_system: keep joins, leaves, topic changes, pins, … (skipped by default).
        workspace_id: the workspace id to record (default: the team id found in the export).
        workspace_name: its name (default: the archive or directory name, without
            Slack's `` Slack export …`` suffix).
        limits: how far a zip may inflate (default :class:`ZipLimits`: 1 GiB of JSON, 100:1).

    Yields:
        Messages, conversation by conversation, each conversation in ``ts`` order.

    Raises:
        UnrecognizedExport: ``path`` does not exist or is not a Slack export.
        MalformedExport: in strict mode, the first malformed file or record (``details``:
            ``path`` such as ``export.zip!general/2024-01-02.json``, ``position`` such as
            ``[3]``, ``problem``).
        ExportTooLarge: the zip inflates beyond ``limits`` (whatever ``strict`` says).
    """
    path = Path(path)
    if not path.exists():
        raise UnrecognizedExport(f"no such Slack export: {path}", path=str(path))
    run = ImportRun(report, strict=strict, include_system=include_system)
    tree = _Tree(path, limits or ZipLimits())
    try:
        meta = _Meta(tree, run, workspace_id, workspace_name)
        days_by_folder: dict[str, list[str]] = {}
        for name in tree.names:
            parts = name.split("/")
            if len(parts) == 2:
                days_by_folder.setdefault(parts[0], []).append(name)
        team = meta.workspace_id or _first_team(tree, days_by_folder) or meta.workspace_name
        conversations = meta.conversations(team, str(path))
        for folder in sorted(days_by_folder, key=natural_key):
            conversation = conversations.get(folder)
            if conversation is None:
                logger.warning("slack_folder_not_listed", extra={"folder": folder, "path": str(path)})
                conversation = _Conversation(
                    ImportedChannel("slack", team, meta.workspace_name, folder, folder, source=f"{path}/{folder}")
                )
            run.report.add_channel(conversation.info)
            days = sorted(days_by_folder[folder], key=natural_key)
            yield from _read_conversation(tree, folder, days, meta, conversation, run)
    finally:
        tree.close()


def _first_team(tree: _Tree, days_by_folder: Mapping[str, list[str]]) -> str | None:
    for folder in sorted(days_by_folder):
        for day in sorted(days_by_folder[folder])[:1]:
            try:
                records = tree.read_array(day)
            except _READ_ERRORS:
                continue
            for raw in records:
                if isinstance(raw, dict) and optional_str(raw.get("team")):
                    return str(raw["team"])
    return None


def _one_line(exc: BaseException) -> str:
    """An error message on one line (yajl appends a context snippet and an arrow)."""
    return error_line(exc)


__all__ = [
    "DEFAULT_MAX_COMPRESSION_RATIO",
    "DEFAULT_MAX_UNCOMPRESSED_BYTES",
    "RATIO_GRACE_BYTES",
    "SYSTEM_SUBTYPES",
    "ZipLimits",
    "iter_slack",
]
