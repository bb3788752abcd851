"""Chat exports into long-term memory: parse → skip known messages → message windows → chunks.

:func:`import_export` reads DiscordChatExporter JSON, Slack exports and omoide JSONL
transcripts with :mod:`omoide.importers`, and writes one knowledge source per conversation
(channel or thread) and import, with one chunk per message window (seed 004's
``message_windows``: cut by time gap, message count and ``chunk_max_tokens``) — or several
when a window (one long message) is longer than ``chunk_max_tokens``: no imported chunk is
(:func:`window_chunks`, with the archiver's splitter). The sources are ``pending``, so the
embedding worker (or ``omoide embed``) embeds them next.

* **Idempotent.** Each source records its conversation key in ``metadata`` and each chunk
  its platform message ids in ``location``. Before writing, the message ids already stored
  for each conversation are read back and those messages are skipped, so re-importing the
  same file adds nothing and an overlapping later export adds only its new messages (an
  edit of an already imported message is not re-imported).
* **Never half a window.** A conversation's chunks are written in one transaction
  (``add_source``); a malformed record is reported with its position and skipped, or,
  with ``strict=True``, fails the import before anything is written.
* Chunk text is ``[2025-11-08 12:00] **name**: text`` lines, the archiver's format, which
  answers cite with time ranges and speakers.

:func:`ingest_messages` writes live messages (a bot's ``/sync`` of a channel's history)
through the same steps, and :func:`ingest_cursor` tells where the imports and syncs of one
channel or thread stopped, so the next sync fetches only what came after.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from omoide.errors import ErasureConflict, InvalidInput
from omoide.importers import (
    ConversationKey,
    ImportedChannel,
    ImportedMessage,
    ImportProblem,
    ImportReport,
    MessageWindow,
    UnrecognizedExport,
    ZipLimits,
    message_windows,
    read_export,
)
from omoide.knowledge.chunking import split_text
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings
from omoide.stores._erasure_common import LINES_KEY, join_lines, spans_json
from omoide.stores.knowledge import ChunkDraft, KnowledgeStore, SourceDraft
from omoide.stores.units import unit_lexical_of
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text

CONVERSATION_KEY = "conversation_key"
"""``metadata`` key of an imported source: ``platform:workspace:channel:thread-or--``."""

_ERASURE_ATTEMPTS = 3
"""How often one conversation's write is re-filtered after erasures that happened while the import ran."""

log = structlog.get_logger(__name__)

SOURCE_TYPES = {"discord": "discord_channel", "slack": "slack_channel", "omoide": "transcript"}


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What :func:`import_export` did.

    Attributes:
        sources / chunks: knowledge sources and chunks written.
        messages: messages read from the export(s).
        new_messages: messages written (the rest were already stored).
        known_messages: messages skipped because an earlier import stored them.
        conversations: conversations (channels and threads) with new messages.
        problems: malformed records and files skipped, with their positions.
        report: the importer's counts (duplicates, system messages skipped, …).
    """

    sources: int
    chunks: int
    messages: int
    new_messages: int
    known_messages: int
    conversations: int
    problems: tuple[ImportProblem, ...]
    report: ImportReport

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "chunks": self.chunks,
            "messages": self.messages,
            "new_messages": self.new_messages,
            "known_messages": self.known_messages,
            "conversations": self.conversations,
            "problems": [str(p) for p in self.problems],
            "duplicates": self.report.duplicates,
            "system_skipped": self.report.system_skipped,
            "empty_skipped": self.report.empty_skipped,
        }


def conversation_key(conversation: ConversationKey) -> str:
    platform, workspace, channel, thread = conversation
    return f"{platform}:{workspace}:{channel}:{thread or '-'}"


def chunk_line(message: ImportedMessage) -> str:
    """``[2025-11-08 12:00] **name**: text`` (continuation lines indented)."""
    name = (message.author_name or message.author_id).replace("*", "")
    text = message.text.replace("\r\n", "\n").replace("\n", "\n  ")
    return f"[{message.created_at:%Y-%m-%d %H:%M}] **{name}**: {text}"


def window_chunk(window: MessageWindow) -> ChunkDraft:
    """One chunk for one message window."""
    return _piece_chunk(window, [(m, chunk_line(m), 0) for m in window.messages], window.token_count)


def _header(message: ImportedMessage, part: int, parts: int) -> str:
    name = (message.author_name or message.author_id).replace("*", "")
    return f"[{message.created_at:%Y-%m-%d %H:%M}] **{name}** ({part}/{parts}): "


def _piece_chunk(window: MessageWindow, lines: Sequence[tuple[ImportedMessage, str, int]], tokens: int) -> ChunkDraft:
    messages = list({id(m): m for m, _, _ in lines}.values())
    content, spans = join_lines([(line, m.author_id, m.message_id) for m, line, _ in lines], "\n")
    url = next((m.url for m in messages if m.url), None)
    location: dict[str, Any] = {
        "message_ids": [m.message_id for m in messages],
        "key": window.key,
        LINES_KEY: spans_json(spans),
    }
    if url:
        location["jump_url"] = url
    head = _PART.match(lines[0][1]) if len(lines) == 1 else None
    if head is not None:
        location["part"], location["parts"] = int(head.group(1)), int(head.group(2))
    times = [m.created_at for m in messages]
    return ChunkDraft(
        content=content,
        lexical=lexical_text(tokenize_for_search(chunk_lexical_text(content))),
        token_count=tokens,
        location=location,
        channel_id=window.channel_id,
        thread_id=window.thread_id,
        author_ids=tuple(dict.fromkeys(m.author_id for m in messages)),
        started_at=min(times),
        ended_at=max(times),
        unit_lexical=unit_lexical_of(content, location),
    )


_PART = re.compile(r"^\[[^\]]*\] \*\*.*?\*\* \((\d+)/(\d+)\): ")


def window_chunks(window: MessageWindow, *, max_tokens: int) -> list[ChunkDraft]:
    """The chunks of one message window, none longer than ``max_tokens`` (``chunk_max_tokens``).

    A window that fits is one chunk (:func:`window_chunk`). Otherwise its lines are packed,
    in order, into as few chunks as fit, and a message too long for a chunk on its own is
    cut at token boundaries by the archiver's splitter
    (:func:`omoide.knowledge.chunking.split_text`) into parts headed
    ``[time] **name** (2/5):``, each recording ``part`` / ``parts`` in its ``location``.
    """
    counter = get_token_counter()
    lines = [chunk_line(m) for m in window.messages]
    whole = "\n".join(lines)
    tokens = counter.count(whole)
    if tokens <= max_tokens:
        return [window_chunk(window)]
    units: list[tuple[ImportedMessage, str, int]] = []
    for message, line in zip(window.messages, lines, strict=True):
        cost = counter.count(line)
        if cost <= max_tokens:
            units.append((message, line, cost))
            continue
        body = message.text.replace("\r\n", "\n").replace("\n", "\n  ")
        pieces = split_text(body, budget=max_tokens - counter.count(_header(message, 99, 99)))
        for part, piece in enumerate(pieces, start=1):
            text = _header(message, part, len(pieces)) + piece
            units.append((message, text, counter.count(text)))
    drafts: list[ChunkDraft] = []
    group: list[tuple[ImportedMessage, str, int]] = []
    used = 0
    for unit in units:
        cost = unit[2] + (1 if group else 0)
        if group and used + cost > max_tokens:
            drafts.extend(_fitting(window, group, max_tokens))
            group, used, cost = [], 0, unit[2]
        group.append(unit)
        used += cost
    if group:
        drafts.extend(_fitting(window, group, max_tokens))
    return drafts


def _fitting(window: MessageWindow, group: list[tuple[ImportedMessage, str, int]], max_tokens: int) -> list[ChunkDraft]:
    """``group`` as one chunk, or halved until each part fits (joined lines can count a token more)."""
    tokens = group[0][2] if len(group) == 1 else get_token_counter().count("\n".join(line for _, line, _ in group))
    if tokens <= max_tokens or len(group) == 1:
        return [_piece_chunk(window, group, tokens)]
    half = len(group) // 2
    return _fitting(window, group[:half], max_tokens) + _fitting(window, group[half:], max_tokens)


def _chunks(windows: Sequence[MessageWindow], max_tokens: int) -> list[ChunkDraft]:
    return [draft for w in windows for draft in window_chunks(w, max_tokens=max_tokens)]


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


async def import_export(
    store: KnowledgeStore,
    settings: Settings,
    paths: Path | str | Iterable[Path | str],
    *,
    workspace: str | None = None,
    strict: bool = False,
    include_system: bool = False,
    on_source: Callable[[int, int], None] | None = None,
    only_workspace: bool = False,
) -> ImportSummary:
    """Import exports into long-term memory (see the module docstring).

    Args:
        store: the knowledge store written to.
        settings: ``chunk_max_tokens`` caps a window's tokens.
        paths: export files or folders (Discord JSON, Slack zip/folder, JSONL transcripts).
        workspace: the workspace for Slack exports and transcripts (Discord names its guild).
        strict: fail on the first malformed record or file (nothing is written).
        include_system: keep platform notifications.
        on_source: progress: called with ``(conversations done, conversations total)``.
        only_workspace: refuse an export holding messages of any workspace but ``workspace``
            (a Discord export names its own guild): the HTTP API imports for one workspace only.

    Raises:
        UnrecognizedExport: a path is missing or not an export.
        MalformedExport: ``strict`` and a malformed record or file.
        UnrecognizedExport: not one record could be read (every file is unreadable or not an
            export); the message names the first file and its problem. Nothing is written.
        ExportTooLarge: a Slack zip inflates beyond ``import_max_uncompressed_bytes`` or
            ``import_max_compression_ratio``. Nothing is written.
        InvalidInput: ``only_workspace`` and the export holds another workspace (nothing is written).
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if only_workspace and not workspace:
        raise InvalidInput("only_workspace needs the workspace to import into")
    limits = ZipLimits(settings.import_max_uncompressed_bytes, settings.import_max_compression_ratio)
    export = await asyncio.to_thread(
        read_export, items, strict=strict, include_system=include_system, workspace_id=workspace, limits=limits
    )
    if not export.report.records and export.problems:
        raise _nothing_readable(export.problems)
    if only_workspace:
        others = sorted({m.workspace_id for m in export.messages} - {workspace})
        if others:
            raise InvalidInput(
                f"the export holds messages of workspace(s) {', '.join(map(repr, others[:3]))}, "
                f"but this import may only write to workspace {workspace!r}; nothing was imported",
                workspaces=others[:3],
            )
    sources, chunks, fresh, total = await _write_messages(
        store,
        settings,
        export.messages,
        files=list(export.report.files),
        on_source=on_source,
        channels=export.report.channels,
    )
    return ImportSummary(
        sources=sources,
        chunks=chunks,
        messages=len(export.messages),
        new_messages=fresh,
        known_messages=len(export.messages) - fresh,
        conversations=total,
        problems=export.problems,
        report=export.report,
    )


def _nothing_readable(problems: Sequence[ImportProblem]) -> UnrecognizedExport:
    """Not one record could be read: say which file, why, and what omoide reads."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return UnrecognizedExport(
        f"Nothing was imported: {first.path} is not a chat export omoide can read ({first.problem}){more}; "
        "pass a DiscordChatExporter .json file, a Slack export .zip or an omoide .jsonl transcript.",
        path=first.path,
        problems=[str(p) for p in problems[:10]],
    )


async def _write_messages(
    store: KnowledgeStore,
    settings: Settings,
    messages: Sequence[ImportedMessage],
    *,
    files: Sequence[str],
    on_source: Callable[[int, int], None] | None,
    channels: Mapping[ConversationKey, ImportedChannel] | None = None,
    private: bool = False,
    members: Sequence[str] = (),
) -> tuple[int, int, int, int]:
    """Skip known messages, cut the rest into windows, write one source per conversation.

    Returns ``(sources, chunks, new messages, conversations)``.
    """
    workspaces = sorted({m.workspace_id for m in messages})
    erasures = {ws: await store.erasure_state(ws) for ws in workspaces}
    erased = 0
    groups: dict[str, list[ImportedMessage]] = {}
    for message in messages:
        if erasures[message.workspace_id].erased_before(message.workspace_id, message.author_id, message.created_at):
            erased += 1  # a forgotten user's words, from before they were forgotten: never again
            continue
        groups.setdefault(conversation_key(message.conversation), []).append(message)
    known = await known_message_ids(store, workspaces, set(groups))
    fresh = [m for key, msgs in groups.items() for m in msgs if m.message_id not in known[key]]
    counter = get_token_counter()
    windows = await asyncio.to_thread(message_windows, fresh, max_tokens=settings.chunk_max_tokens, counter=counter)
    by_conversation: dict[str, list[MessageWindow]] = {}
    for window in windows:
        by_conversation.setdefault(conversation_key(window.conversation), []).append(window)
    sources = chunks = 0
    total = len(by_conversation)
    for done, conversation in enumerate(by_conversation.values(), start=1):
        workspace = conversation[0].workspace_id
        for attempt in range(_ERASURE_ATTEMPTS):
            state = erasures[workspace]
            info = channel_info(channels or {}, conversation[0].conversation)
            drafts = await asyncio.to_thread(_chunks, conversation, settings.chunk_max_tokens)
            try:
                await store.add_source(
                    source_for(conversation, files, channel=info, private=private, members=members),
                    drafts,
                    erasure_generation=state.generation,
                )
                break
            except ErasureConflict:
                # someone was erased while this import ran: skip their messages and write the rest
                if attempt == _ERASURE_ATTEMPTS - 1:
                    raise
                erasures[workspace] = await store.erasure_state(workspace)
                kept = [
                    m
                    for w in conversation
                    for m in w.messages
                    if not erasures[workspace].erased_before(workspace, m.author_id, m.created_at)
                ]
                erased += sum(len(w.messages) for w in conversation) - len(kept)
                conversation = await asyncio.to_thread(
                    message_windows, kept, max_tokens=settings.chunk_max_tokens, counter=counter
                )
                if not conversation:
                    break
        if not conversation:
            continue
        sources += 1
        chunks += len(drafts)
        if on_source is not None:
            on_source(done, total)
    if erased:
        log.info("import_skipped_erased_users", messages=erased)
    return sources, chunks, len(fresh), total


async def ingest_messages(
    store: KnowledgeStore,
    settings: Settings,
    messages: Iterable[ImportedMessage],
    *,
    include_system: bool = False,
    origin: str = "live",
    on_source: Callable[[int, int], None] | None = None,
    private: bool = False,
    members: Sequence[str] = (),
    channels: Mapping[ConversationKey, ImportedChannel] | None = None,
) -> ImportSummary:
    """Write live messages (a bot's channel history fetch) into long-term memory, as an import would.

    The same machinery as :func:`import_export`: messages already stored (by platform
    message id, per conversation) are skipped, the rest are cut into message windows and
    each conversation's windows are written as one source in one transaction. Messages
    repeated within ``messages`` count once (``report.duplicates``); platform
    notifications (``kind == "system"``) are skipped unless ``include_system``, and so are
    messages with no text.

    Args:
        store: the knowledge store written to.
        settings: ``chunk_max_tokens`` caps a window's tokens.
        messages: platform-neutral messages of any conversations, in any order.
        include_system: keep platform notifications.
        origin: recorded in each new source's ``metadata["files"]`` (e.g. ``discord:sync``).
        on_source: progress: called with ``(conversations done, conversations total)``.
        private / members: the new sources are private to ``members`` plus every participant
            (a DM, group DM or private channel being synced); default public.
        channels: per conversation, what the platform says about it (``is_private``,
            ``is_direct``, ``members``), as an export's channel list does.
    """
    report = ImportReport()
    kept: list[ImportedMessage] = []
    for message in messages:
        report.records += 1
        if message.kind == "system" and not include_system:
            report.system_skipped += 1
        elif not message.text.strip():
            report.empty_skipped += 1
        elif report.accept(message):
            kept.append(message)
    sources, chunks, fresh, total = await _write_messages(
        store,
        settings,
        kept,
        files=[origin],
        on_source=on_source,
        channels=channels,
        private=private,
        members=[str(m) for m in members],
    )
    return ImportSummary(
        sources=sources,
        chunks=chunks,
        messages=len(kept),
        new_messages=fresh,
        known_messages=len(kept) - fresh,
        conversations=total,
        problems=(),
        report=report,
    )


@dataclass(frozen=True, slots=True)
class IngestCursor:
    """The newest message of a conversation that long-term memory holds from imports and syncs.

    Attributes:
        message_id: its platform message id (fetch history *after* it to continue).
        created_at: its time (UTC).
        messages: how many messages of the conversation are stored.
    """

    message_id: str
    created_at: datetime
    messages: int


async def ingest_cursor(store: KnowledgeStore, conversation: ConversationKey) -> IngestCursor | None:
    """Where the imports and syncs of one conversation (channel or thread) stopped, or ``None``.

    Reads the sources written by :func:`import_export` and :func:`ingest_messages` for
    ``conversation`` (``(platform, workspace, channel, thread)``); a source is written in
    one transaction, so the cursor never points past a message that is not stored.
    """
    key = conversation_key(conversation)
    newest: tuple[datetime, int, str] | None = None
    count = 0
    offset = 0
    while True:
        page = await store.list_sources(workspace_id=conversation[1], limit=500, offset=offset)
        for source in page:
            if source.metadata.get(CONVERSATION_KEY) != key:
                continue
            for chunk in await store.chunks_of_source(source.id):
                ids = [str(i) for i in chunk.location.get("message_ids", [])]
                count += len(ids)
                if ids and chunk.ended_at is not None:
                    candidate = (chunk.ended_at, len(ids[-1]), ids[-1])  # equal-length numeric ids sort as numbers
                    if newest is None or candidate > newest:
                        newest = candidate
        if len(page) < 500:
            break
        offset += 500
    if newest is None:
        return None
    return IngestCursor(message_id=newest[2], created_at=newest[0], messages=count)


__all__ = [
    "CONVERSATION_KEY",
    "ImportSummary",
    "IngestCursor",
    "chunk_line",
    "conversation_key",
    "import_export",
    "ingest_cursor",
    "ingest_messages",
    "window_chunk",
    "window_chunks",
]
