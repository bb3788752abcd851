"""Chat exports into long-term memory: parse → skip known messages → message windows → chunks.

:func:`import_export` reads DiscordChatExporter JSON, Slack exports and omoide JSONL
transcripts with :mod:`omoide.importers`, and writes knowledge sources per conversation
(channel or thread) and import — one, or one per :data:`SOURCE_WINDOWS` windows of a long
conversation — with one chunk per message window (seed 004's ``message_windows``), or
several when a window is longer than ``chunk_max_tokens`` (:func:`window_chunks`). The
sources are ``pending`` and searchable lexically at once; the embedding worker (or
``omoide embed``) gives them vectors next.

* **Idempotent.** Each source records its conversation key in ``metadata`` and each chunk
  its platform message ids in ``location``; messages already stored for a conversation are
  skipped, so re-importing adds nothing and an overlapping export only its new messages.
* **Never half a window.** A source's chunks are written in one transaction
  (``add_source``); a malformed record is reported with its position and skipped, or, with
  ``strict=True``, fails the import before anything is written.
* Chunk text is ``[2025-11-08 12:00] **name**: text`` lines, the archiver's format, which
  answers cite with time ranges and speakers.

:func:`ingest_messages` writes live messages (a bot's ``/sync`` of a channel's history)
through the same steps (``KnowledgeService.ingest_cursor`` reads back where they stopped).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from omoide.importers._stream import StreamPlan, stream_plan, stream_windows
from omoide.knowledge.import_chunks import chunk_line, drafts_of, window_chunk, window_chunks
from omoide.knowledge.import_sources import (
    CONVERSATION_KEY,
    SOURCE_TYPES,
    channel_info,
    conversation_key,
    known_message_ids,
    source_for,
)
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings
from omoide.stores._erasure_common import ErasureState
from omoide.stores.knowledge import ChunkDraft, KnowledgeStore

_ERASURE_ATTEMPTS = 3
"""How often one conversation's write is re-filtered after erasures that happened while the import ran."""

log = structlog.get_logger(__name__)


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
    on_messages: OnMessages | None = None,
    on_read: Callable[[], None] | None = None,
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
        on_messages: progress: ``(messages done, new messages in all)`` every
            :data:`BUILD_WINDOWS` windows (per item, for a bar with a rate and an ETA).
        on_read: called once the export is read (before anything is written).
        only_workspace: refuse an export holding messages of any workspace but ``workspace``
            (a Discord export names its own guild): the HTTP API imports for one workspace only.

    Raises:
        UnrecognizedExport: a path is missing or not an export, or not one record could be read
            (the message names the first file and its problem). Nothing is written.
        MalformedExport: ``strict`` and a malformed record or file.
        ExportTooLarge: a Slack zip inflates beyond the ``import_max_*`` limits. Nothing is written.
        InvalidInput: ``only_workspace`` and the export holds another workspace (nothing is written).
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if only_workspace and not workspace:
        raise InvalidInput("only_workspace needs the workspace to import into")
    plan = None if strict else await asyncio.to_thread(stream_plan, items)
    if plan is not None:
        others = sorted(plan.workspaces - {workspace}) if only_workspace else []
        if others:
            raise _other_workspaces(others, workspace)
        report = ImportReport()
        if on_read is not None:
            on_read()
        sources, chunks, fresh = await _stream_import(
            store, settings, plan, report, include_system=include_system, on_messages=on_messages, on_source=on_source
        )
        if not report.records and report.problems:
            raise _nothing_readable(report.problems)
        return ImportSummary(
            sources,
            chunks,
            report.messages,
            fresh,
            report.messages - fresh,
            len(plan.files),
            tuple(report.problems),
            report,
        )
    limits = ZipLimits(settings.import_max_uncompressed_bytes, settings.import_max_compression_ratio)
    export = await asyncio.to_thread(
        read_export, items, strict=strict, include_system=include_system, workspace_id=workspace, limits=limits
    )
    if on_read is not None:
        on_read()
    if not export.report.records and export.problems:
        raise _nothing_readable(export.problems)
    if only_workspace:
        others = sorted({m.workspace_id for m in export.messages} - {workspace})
        if others:
            raise _other_workspaces(others, workspace)
    sources, chunks, fresh, total = await _write_messages(
        store,
        settings,
        export.messages,
        files=list(export.report.files),
        on_source=on_source,
        channels=export.report.channels,
        on_messages=on_messages,
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


def _other_workspaces(others: Sequence[str], workspace: str | None) -> InvalidInput:
    return InvalidInput(
        f"the export holds messages of workspace(s) {', '.join(map(repr, others[:3]))}, "
        f"but this import may only write to workspace {workspace!r}; nothing was imported",
        workspaces=list(others[:3]),
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


SOURCE_WINDOWS = 1000
"""Most message windows in one source (one transaction): a longer conversation is written as
several sources, in time order, bounding the drafts in memory and a transaction's length."""

BUILD_WINDOWS = 64
"""Windows read and turned into chunks per step (on a thread, going on while the source before
is written: :func:`_write_steps`); progress is reported after each step."""

OnMessages = Callable[[int, int], None]
"""Import progress: ``(messages done, messages in all)``, after each step of :data:`BUILD_WINDOWS` windows."""


@dataclass(slots=True)
class _Writing:
    """One import's writing: where, what so far (sources, chunks, messages, conversations, erased)."""

    store: KnowledgeStore
    settings: Settings
    erasures: dict[str, ErasureState]
    files: Sequence[str]
    channels: Mapping[ConversationKey, ImportedChannel]
    private: bool = False
    members: Sequence[str] = ()
    sources: int = 0
    chunks: int = 0
    done: int = 0
    conversations: int = 0
    erased: int = 0


async def _write_steps(
    steps: Iterator[list[MessageWindow]], w: _Writing, progress: Callable[[int], None], ended: Callable[[], None]
) -> None:
    """Build each step's chunks on a thread and write each conversation's windows as sources of
    at most :data:`SOURCE_WINDOWS` windows, the building overlapping the writing.

    A source is written by its own task while the next one is built (issue 17: waiting for
    PostgreSQL's ~75 µs of inserts per message, or SQLite's writer thread, left the builder idle
    for a third of an import). Writes stay one at a time and in order, each one transaction, so
    what a crash or a failed write leaves behind is unchanged: whole sources, skipped on the next
    import. Memory holds at most the source being written and the one being built.
    """
    max_tokens = w.settings.chunk_max_tokens

    def step() -> tuple[list[MessageWindow], list[ChunkDraft]] | None:
        windows = next(steps, None)
        return None if windows is None else (windows, drafts_of(windows, max_tokens))

    async def write(part: list[MessageWindow], drafts: list[ChunkDraft], last: bool) -> None:
        await _write_part(part, drafts, w)
        if last:
            ended()

    writing: asyncio.Future[None] | None = None

    async def hand_over(part: list[MessageWindow], drafts: list[ChunkDraft], *, last: bool) -> None:
        nonlocal writing
        if writing is not None:
            await writing  # one write at a time, in order; a failed write stops the import here
        writing = asyncio.ensure_future(write(part, drafts, last))

    part: list[MessageWindow] = []
    drafts: list[ChunkDraft] = []
    ahead = asyncio.ensure_future(asyncio.to_thread(step))
    try:
        while (got := await ahead) is not None:
            if writing is not None and writing.done():
                writing.result()  # a write failed: stop building
            ahead = asyncio.ensure_future(asyncio.to_thread(step))
            windows, built = got
            if part and windows[0].conversation != part[0].conversation:
                await hand_over(part, drafts, last=True)
                part, drafts = [], []
            part.extend(windows)
            drafts.extend(built)
            progress(sum(len(x.messages) for x in windows))
            if len(part) >= SOURCE_WINDOWS:
                await hand_over(part, drafts, last=False)
                part, drafts = [], []
        if part:
            await hand_over(part, drafts, last=True)
        if writing is not None:
            await writing
    except asyncio.CancelledError:
        if writing is not None:
            writing.cancel()  # as before: a cancelled import cancels the write in flight (its transaction rolls back)
        raise
    except BaseException:
        if writing is not None:
            if not writing.done():
                await asyncio.wait([writing])  # as before: a write in flight finishes (or fails) before the error
            if not writing.cancelled():
                writing.exception()  # seen: the error raised is the first one
        raise
    finally:
        ahead.cancel()


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
    on_messages: OnMessages | None = None,
) -> tuple[int, int, int, int]:
    """Skip known messages, cut the rest into windows, write them (:func:`_write_steps`).

    Returns ``(sources, chunks, new messages, conversations)``.
    """
    workspaces = sorted({m.workspace_id for m in messages})
    erasures = {ws: await store.erasure_state(ws) for ws in workspaces}
    w = _Writing(store, settings, erasures, files, channels or {}, private, members)
    groups: dict[str, list[ImportedMessage]] = {}
    for message in messages:
        if erasures[message.workspace_id].erased_before(message.workspace_id, message.author_id, message.created_at):
            w.erased += 1  # a forgotten user's words, from before they were forgotten: never again
            continue
        groups.setdefault(conversation_key(message.conversation), []).append(message)
    known = await known_message_ids(store, workspaces, set(groups))
    fresh = [m for key, msgs in groups.items() for m in msgs if m.message_id not in known[key]]
    counter = get_token_counter()
    windows = await asyncio.to_thread(
        message_windows, fresh, max_tokens=settings.chunk_max_tokens, counter=counter, render_chunks=True
    )
    by_conversation: dict[str, list[MessageWindow]] = {}
    for window in windows:
        by_conversation.setdefault(conversation_key(window.conversation), []).append(window)
    total = len(by_conversation)
    steps = (c[i : i + BUILD_WINDOWS] for c in by_conversation.values() for i in range(0, len(c), BUILD_WINDOWS))

    def progress(n: int) -> None:
        w.done += n
        if on_messages is not None:
            on_messages(w.done, len(fresh))

    def ended() -> None:
        w.conversations += 1
        if on_source is not None:
            on_source(w.conversations, total)

    await _write_steps(steps, w, progress, ended)
    if w.erased:
        log.info("import_skipped_erased_users", messages=w.erased)
    return w.sources, w.chunks, len(fresh), total


async def _stream_import(
    store: KnowledgeStore,
    settings: Settings,
    plan: StreamPlan,
    report: ImportReport,
    *,
    include_system: bool,
    on_messages: OnMessages | None,
    on_source: Callable[[int, int], None] | None,
) -> tuple[int, int, int]:
    """Import DiscordChatExporter files window batch by window batch (:func:`stream_windows`):
    memory bounded by a source's windows, not the export. Returns ``(sources, chunks, new messages)``."""
    workspaces = sorted(plan.workspaces)
    erasures = {ws: await store.erasure_state(ws) for ws in workspaces}
    known = await known_message_ids(store, workspaces, {conversation_key(c) for c in plan.conversations})
    w = _Writing(store, settings, erasures, report.files, report.channels)
    fresh = [0]

    def keep(m: ImportedMessage) -> bool:
        if erasures[m.workspace_id].erased_before(m.workspace_id, m.author_id, m.created_at):
            w.erased += 1
            return False
        if m.message_id in known.get(conversation_key(m.conversation), ()):
            return False
        fresh[0] += 1
        return True

    steps = stream_windows(
        plan,
        report=report,
        keep=keep,
        max_tokens=settings.chunk_max_tokens,
        counter=get_token_counter(),
        batch=BUILD_WINDOWS,
        include_system=include_system,
        render_chunks=True,
    )

    def progress(_: int) -> None:
        if on_messages is not None:
            on_messages(report.records, max(report.records, plan.messages or 0))

    def ended() -> None:
        w.conversations += 1
        if on_source is not None:
            on_source(w.conversations, len(plan.files))

    await _write_steps(steps, w, progress, ended)
    progress(0)
    if w.erased:
        log.info("import_skipped_erased_users", messages=w.erased)
    return w.sources, w.chunks, fresh[0]


async def _write_part(part: list[MessageWindow], drafts: list[ChunkDraft], w: _Writing) -> None:
    """Some windows of one conversation as one source (one transaction); re-filtered if a user was erased meanwhile."""
    workspace = part[0].workspace_id
    for attempt in range(_ERASURE_ATTEMPTS):
        try:
            info = channel_info(w.channels, part[0].conversation)
            source = source_for(part, list(w.files), channel=info, private=w.private, members=w.members)
            await w.store.add_source(source, drafts, erasure_generation=w.erasures[workspace].generation)
        except ErasureConflict:
            # someone was erased while this import ran: skip their messages and write the rest
            if attempt == _ERASURE_ATTEMPTS - 1:
                raise
            state = w.erasures[workspace] = await w.store.erasure_state(workspace)
            kept = [
                m for x in part for m in x.messages if not state.erased_before(workspace, m.author_id, m.created_at)
            ]
            w.erased += sum(len(x.messages) for x in part) - len(kept)
            max_tokens = w.settings.chunk_max_tokens
            part = await asyncio.to_thread(
                message_windows, kept, max_tokens=max_tokens, counter=get_token_counter(), render_chunks=True
            )
            if not part:
                return
            drafts = await asyncio.to_thread(drafts_of, part, max_tokens)
            continue
        w.sources += 1
        w.chunks += len(drafts)
        return


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


__all__ = [
    "CONVERSATION_KEY",
    "SOURCE_TYPES",
    "ImportSummary",
    "chunk_line",
    "conversation_key",
    "import_export",
    "ingest_messages",
    "window_chunk",
    "window_chunks",
]
