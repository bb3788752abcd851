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

The export's files are read by :mod:`~omoide.importers._slack_archive`, its users and
conversation lists by :mod:`~omoide.importers._slack_meta` and each record by
:mod:`~omoide.importers._slack_messages`; :func:`iter_slack` puts them together.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from omoide.importers._common import ImportRun, RecordError, logger, natural_key, optional_str
from omoide.importers._errors import UnrecognizedExport
from omoide.importers._jsonstream import NotAnArray, Rejected
from omoide.importers._model import ImportedChannel, ImportedMessage, ImportReport
from omoide.importers._slack_archive import (
    DEFAULT_MAX_COMPRESSION_RATIO,
    DEFAULT_MAX_UNCOMPRESSED_BYTES,
    RATIO_GRACE_BYTES,
    READ_ERRORS,
    ExportTree,
    ZipLimits,
    one_line,
)
from omoide.importers._slack_messages import SYSTEM_SUBTYPES, MessageReader, ts_key
from omoide.importers._slack_meta import Conversation, ExportMeta


def _thread_name(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"


def _read_conversation(
    tree: ExportTree, folder: str, days: list[str], meta: ExportMeta, conversation: Conversation, run: ImportRun
) -> Iterator[ImportedMessage]:
    reader = MessageReader(meta, conversation, run)
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
        except READ_ERRORS as exc:
            run.problem(label, "", f"cannot read the day file: {one_line(exc)}")
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
    for ts in sorted(by_ts, key=ts_key):
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
    tree = ExportTree(path, limits or ZipLimits())
    try:
        meta = ExportMeta(tree, run, workspace_id, workspace_name)
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
                conversation = Conversation(
                    ImportedChannel("slack", team, meta.workspace_name, folder, folder, source=f"{path}/{folder}")
                )
            run.report.add_channel(conversation.info)
            days = sorted(days_by_folder[folder], key=natural_key)
            yield from _read_conversation(tree, folder, days, meta, conversation, run)
    finally:
        tree.close()


def _first_team(tree: ExportTree, days_by_folder: Mapping[str, list[str]]) -> str | None:
    for folder in sorted(days_by_folder):
        for day in sorted(days_by_folder[folder])[:1]:
            try:
                records = tree.read_array(day)
            except READ_ERRORS:
                continue
            for raw in records:
                if isinstance(raw, dict) and optional_str(raw.get("team")):
                    return str(raw["team"])
    return None


__all__ = [
    "DEFAULT_MAX_COMPRESSION_RATIO",
    "DEFAULT_MAX_UNCOMPRESSED_BYTES",
    "RATIO_GRACE_BYTES",
    "SYSTEM_SUBTYPES",
    "ZipLimits",
    "iter_slack",
]
