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

from omoide.models import KeyPolicy, Message, Session, SessionKey
from omoide.sessions import KeyLike, Sessions
from omoide.settings import Settings, load_settings
from omoide.stores import open_store
from omoide.stores.base import SessionStore


class Memory:
    """The memory engine. Create it with :meth:`open` (an async context manager)."""

    def __init__(self, settings: Settings, store: SessionStore) -> None:
        self.settings = settings
        self.store = store
        self.sessions = Sessions(store, settings)

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings | None = None, **overrides: Any) -> AsyncIterator[Memory]:
        """Open the configured store (migrating it unless ``migrate_on_start`` is off) and yield a ``Memory``.

        Args:
            settings: explicit settings; by default read from the environment and ``omoide.toml``.
            **overrides: setting values that win over the environment, e.g. ``database_url=...``.
        """
        if settings is None:
            settings = load_settings(**overrides)
        elif overrides:
            settings = load_settings(**{**settings.model_dump(), **overrides})
        async with open_store(settings=settings) as store:
            yield cls(settings, store)

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


__all__ = ["Memory"]
