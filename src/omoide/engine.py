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

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from omoide.chat import ChatRunner, SessionConversation
from omoide.context import GuardResult, prompt_budget
from omoide.context.guard import OnText
from omoide.models import KeyPolicy, Message, Session, SessionKey
from omoide.providers.base import ChatModel, TokenCounter
from omoide.sessions import KeyLike, Sessions
from omoide.settings import Settings, load_settings
from omoide.stores import open_store
from omoide.stores.base import SessionStore

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
        store: SessionStore,
        *,
        chat_model: ChatModel | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sessions = Sessions(store, settings)
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

    async def append(self, key: KeyLike, message: Message) -> Message:
        """Store one message of a conversation (idempotent on the platform message id)."""
        return await self.sessions.append(key, message)

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
        return ChatRunner(model, self.token_counter, budget, system=system or DEFAULT_SYSTEM_PROMPT)

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
        return await runner.turn(conversation, message, temperature=temperature, top_p=top_p, on_text=on_text)


__all__ = ["Memory"]
