"""``Memory``: the one facade a host (bot, CLI, HTTP API, MCP server) uses.

It opens a store from :class:`~omoide.settings.Settings`, builds the providers it needs
when first used, and gives every service one shape:

* a property per service — ``mem.sessions`` (:class:`~omoide.sessions.Sessions`),
  ``mem.knowledge`` (:class:`~omoide.knowledge.service.KnowledgeService`: archive, embed,
  reindex, import, sync, status), ``mem.memories``
  (:class:`~omoide.memories.service.MemoryService`), ``mem.summaries``
  (:class:`~omoide.summaries.service.SummaryGenerator`), ``mem.api_keys``
  (:class:`~omoide.apikeys.service.ApiKeyService`) — each over the store role it uses
  (``store.sessions``, ``store.knowledge``, …);
* the verbs a bot calls every message: :meth:`Memory.append`, :meth:`~Memory.history`,
  :meth:`~Memory.chat`, :meth:`~Memory.search`, :meth:`~Memory.ask`,
  :meth:`~Memory.remember`, :meth:`~Memory.recall`, :meth:`~Memory.build_context`,
  :meth:`~Memory.forget_user`.

Everything else goes through a service: ``await mem.knowledge.import_export(paths, workspace=…)``,
``await mem.knowledge.archive()``, ``await mem.summaries.run()``.

Example:
    >>> async with Memory.open() as mem:                          # doctest: +SKIP
    ...     key = mem.session_key(platform="discord", workspace=1, channel=2, user=3)
    ...     await mem.append(key, Message.user("こんにちは"))
    ...     window = await mem.history(key)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, Unpack

from omoide.answers import Answerer, AnswerResult, GenerationConfig, Language
from omoide.answers.messages import check_language
from omoide.apikeys.service import ApiKeyService
from omoide.chat import DEFAULT_SYSTEM_PROMPT, ChatRunner, SessionConversation
from omoide.context import GuardResult, prompt_budget
from omoide.context.assembly import AssembledContext, ContextSources
from omoide.context.assembly import build_context as assemble_context
from omoide.context.guard import OnText
from omoide.errors import InvalidInput
from omoide.keys import parse_session_key
from omoide.knowledge.archiver import ChannelNames
from omoide.knowledge.service import KnowledgeService
from omoide.memories.service import MemoryService
from omoide.memories.tools import MEMORY_TOOLS, MemoryToolExecutor
from omoide.models import Message, Session, SessionKey, utcnow
from omoide.observability.operations import operation
from omoide.observability.providers import instrument_provider
from omoide.providers.base import ChatModel, Embedder, Reranker, TokenCounter
from omoide.providers.registry import build_chat_model, build_embedder, build_reranker
from omoide.providers.tokens import get_token_counter
from omoide.search.pipeline import PipelineConfig, SearchMode, SearchPipeline, SearchResult
from omoide.search.results import FilterArgs
from omoide.search.results import search_filters as _search_filters
from omoide.sessions import KeyLike, KeyParts, Sessions
from omoide.settings import Settings, load_settings
from omoide.stores import open_store
from omoide.stores.base import Store
from omoide.stores.memories import ForgetReport, MemoryHit, RememberResult
from omoide.stores.summaries import Summary
from omoide.summaries.service import SummaryGenerator
from omoide.transcripts import TranscriptStore
from omoide.workers.jobs import worker_runner
from omoide.workers.runner import WorkerRunner

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Memory"]


def _workspace_of(key: KeyLike) -> str | None:
    """The workspace of a session key, for a span; ``None`` when the text is no key (append then says why)."""
    if isinstance(key, SessionKey):
        return key.workspace
    try:
        return parse_session_key(key).workspace
    except InvalidInput:  # a malformed key: the append that follows raises it
        return None


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
        """Short-term memory: keys, messages, windows, visibility, expiry."""
        self._chat_model = chat_model
        self._token_counter = token_counter
        self._embedder: Embedder | None = None
        self._reranker: Reranker | None = None
        self._reranker_built = False

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

    # ---------------------------------------------------------------- providers

    @property
    def chat_model(self) -> ChatModel:
        """The configured chat model (``OMOIDE_LLM``; offline: the extractive model)."""
        if self._chat_model is None:
            self._chat_model = instrument_provider(build_chat_model(self.settings), "llm")
        return self._chat_model

    @property
    def token_counter(self) -> TokenCounter:
        if self._token_counter is None:
            self._token_counter = get_token_counter()
        return self._token_counter

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (``OMOIDE_EMBEDDER``; unset: the offline default), built once."""
        if self._embedder is None:
            self._embedder = instrument_provider(build_embedder(self.settings), "embedder")
        return self._embedder

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker (``OMOIDE_RERANKER``), or ``None``; built once."""
        if not self._reranker_built:
            self._reranker = instrument_provider(build_reranker(self.settings), "reranker")
            self._reranker_built = True
        return self._reranker

    # ---------------------------------------------------------------- services

    @cached_property
    def knowledge(self) -> KnowledgeService:
        """Long-term knowledge: archive, embed, reindex, import, sync, status and sources."""
        return KnowledgeService(self.store, self.settings, lambda: self.embedder)

    @cached_property
    def memories(self) -> MemoryService:
        """Explicit per-user memories (seed 001): remember, recall, list, get, update, delete, forget."""
        return MemoryService(self.store.memories, self.settings, lambda: self.embedder)

    @cached_property
    def summaries(self) -> SummaryGenerator:
        """Rolling summaries (seed 003): ``run`` a summariser pass, read the ``latest`` or the ``history``."""
        return self.summary_generator()

    @cached_property
    def api_keys(self) -> ApiKeyService:
        """API keys of the HTTP API and MCP server (one workspace each): create, verify, list, revoke.

        ``verify(token)`` returns the active key's record (``.workspace_id``) or ``None``.
        """
        return ApiKeyService(self.store.api_keys, cache_seconds=self.settings.api_key_cache_seconds)

    def search_pipeline(self) -> SearchPipeline:
        """A :class:`~omoide.search.pipeline.SearchPipeline` on this store, embedder, reranker and chat model."""
        return SearchPipeline(
            self.store.search,
            PipelineConfig.from_settings(self.settings),
            embedder=lambda: self.embedder,
            reranker=self.reranker,
            expander=self.chat_model if self.settings.search_query_expansion > 0 else None,
            counter=self.token_counter,
            settings=self.settings,
        )

    def summary_generator(self, *, clock: Callable[[], datetime] | None = None) -> SummaryGenerator:
        """A new :class:`~omoide.summaries.service.SummaryGenerator` (``clock``: the current time, for tests)."""
        return SummaryGenerator(
            self.store.summaries,
            lambda: self.chat_model,
            self.settings,
            clock=clock or utcnow,
            counter=self.token_counter,
        )

    def chat_runner(self, *, system: str | None = None, max_tokens: int | None = None) -> ChatRunner:
        """A :class:`~omoide.chat.ChatRunner` for the configured model and its context window."""
        return ChatRunner.from_settings(
            self.settings, self.chat_model, self.token_counter, system=system, max_tokens=max_tokens
        )

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
        runner = worker_runner(
            self, archive=archive, embed=embed, expire=expire, summarise=summarise, channel_names=channel_names
        )
        async with runner.in_background():
            yield runner

    # ---------------------------------------------------------------- sessions

    def session_key(self, **parts: Unpack[KeyParts]) -> SessionKey:
        """Build a session key (``platform``, ``workspace``, ``channel``, ``thread``, ``user``, ``agent``)
        with the configured policy unless ``policy`` is given (see :mod:`omoide.keys`)."""
        return self.sessions.key(**parts)

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
        with operation("append", workspace=_workspace_of(key)):
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
        session = await self.sessions.get_or_create(key)
        return await runner.turn(
            conversation,
            message,
            tools=MEMORY_TOOLS,
            execute_tool=MemoryToolExecutor.for_message(self.memories, session, message),
            max_tool_rounds=self.settings.memory_tool_rounds,
            temperature=temperature,
            top_p=top_p,
            on_text=on_text,
        )

    # ---------------------------------------------------------------- search and answers

    search_filters = staticmethod(_search_filters)

    async def search(
        self,
        query: str,
        *,
        k: int | None = None,
        mode: SearchMode | None = None,
        explain: bool = False,
        expand: bool | None = None,
        **filters: Unpack[FilterArgs],
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
        """
        chosen = _search_filters(**filters)
        with operation("search", workspace=chosen.workspace_id):
            return await self.search_pipeline().search(query, chosen, k=k, mode=mode, explain=explain, expand=expand)

    async def ask(
        self,
        question: str,
        *,
        asker: str | int | None = None,
        k: int | None = None,
        mode: SearchMode | None = None,
        language: Language | None = None,
        **filters: Unpack[FilterArgs],
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
            With nothing to search, the localised "no synced messages" text (no model call); when
            the workspace has knowledge but a search by words alone found nothing, "no messages
            contain the question's words".

        Raises:
            InvalidInput: an empty question, bad filters, ``k``, mode or language.
            AnswerFailed: the chat model failed (code ``CHAT_FAILED``).
        """
        answerer = Answerer(
            self.search_pipeline(),
            lambda: self.chat_model,
            GenerationConfig.from_settings(self.settings),
            counter=self.token_counter,
            settings=self.settings,
            has_knowledge=self._has_knowledge,
        )
        who = None if asker is None else str(asker)
        chosen = _search_filters(**filters)
        with operation("ask", workspace=chosen.workspace_id):
            return await answerer.ask(question, chosen, asker=who, k=k, mode=mode, language=language)

    async def _has_knowledge(self, workspace: str) -> bool:
        """Whether ``workspace`` holds any knowledge source (one row read)."""
        return bool(await self.knowledge.sources(workspace=workspace, limit=1))

    # ---------------------------------------------------------------- memories

    async def remember(
        self,
        content: str,
        *,
        workspace: str | int,
        user: str | int,
        category: str = "general",
        tags: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        actor: str = "library",
    ) -> RememberResult:
        """Remember ``content`` for ``user`` (a near-duplicate of theirs is updated instead; see ``memories``).

        ``actor`` is recorded in the memory's history (``mem.memories.history``): who or what made
        the change, e.g. ``"api"``, ``"cli"``, ``"tool:remember"``, ``"user:<id>"``.
        """
        return await self.memories.remember(
            workspace, user, content, category=category, tags=tags, metadata=metadata, actor=actor
        )

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
        report = await self.memories.forget_user(workspace, user)
        files = await TranscriptStore(self.settings.transcripts_dir).erase_author(str(user))
        return report + ForgetReport(0, 0, 0, transcripts=files)

    # ---------------------------------------------------------------- context assembly

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
        public_only: bool = False,
    ) -> AssembledContext:
        """What a bot should send for the next turn of session ``key``, within ``budget_tokens``.

        Gathers the recent window, summaries, the user's recalled memories and knowledge for
        ``query`` and fits them by priority (:func:`omoide.context.assembly.build_context`): the
        system prompt and the latest exchange first, then memories, summaries, knowledge, then
        older turns.

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

        Private knowledge: only a private session with a user (``append(..., private=True)``,
        e.g. a DM with the bot) draws on that user's private knowledge besides public knowledge,
        and not with ``public_only``: pass it for a private session whose replies others read
        too (a private thread or channel), where one member's private knowledge would leak.

        Raises:
            InvalidInput: a bad query, budget or language.
            ContextOverflow: the system prompt and the latest exchange alone exceed the budget.
        """
        if query is not None and not isinstance(query, str):
            raise InvalidInput(f"the query must be text or None, got {type(query).__name__}")
        heading_language = check_language(language or self.settings.answer_language)
        session = await self.sessions.get_or_create(key)
        window = await self.history(key)
        budget = (
            budget_tokens
            if budget_tokens is not None
            else prompt_budget(self.chat_model.model_id, self.settings).prompt_limit
        )
        sources = ContextSources(
            recall=lambda workspace, owner, text: self.memories.recall(workspace, owner, text),
            search=lambda text, filters: self.search_pipeline().search_evidence(text, filters),
            latest_summary=self.summaries.latest,
        )
        return await assemble_context(
            session,
            window,
            sources,
            query=query,
            user=None if user is None else str(user),
            channels=channels,
            system=system or DEFAULT_SYSTEM_PROMPT,
            budget=budget,
            counter=self.token_counter,
            language=heading_language,
            public_only=public_only,
        )

    # ---------------------------------------------------------------- reading a summary

    async def summary(
        self,
        *,
        workspace: str | int,
        scope: str = "channel",
        scope_id: str | int | None = None,
        kind: str = "long_term",
    ) -> Summary | None:
        """The latest summary of a channel, thread, user or the workspace (``scope_id`` defaults to it)."""
        ws = str(workspace)
        return await self.summaries.latest(ws, scope, ws if scope_id is None else str(scope_id), kind)
