"""Short-term memory: sessions as a bot uses them.

:class:`Sessions` sits between a caller and a :class:`~omoide.stores.sessions.SessionStore`.
It resolves keys, validates messages (size, content) before anything is written,
re-reads and retries optimistic-lock conflicts, and expires idle sessions in batches.

The FIFO window (seed 001: 20 messages) is a *view*: :meth:`Sessions.history` returns the
newest ``window`` messages, but older messages stay stored until the archiver has moved
them into long-term memory (:meth:`Sessions.unarchived` lists what it still has to do).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Required, TypedDict

import structlog

from omoide.concurrency import with_optimistic_retry
from omoide.errors import InvalidContent, InvalidInput, MessageTooLarge, SessionNotFound
from omoide.keys import parse_session_key, session_key
from omoide.models import KeyPolicy, Message, Session, SessionId, SessionKey, SessionStatus, TextBlock, utcnow
from omoide.settings import Settings
from omoide.stores.sessions import SessionStore, storable_content_json

log = structlog.get_logger(__name__)

KeyLike = SessionKey | str


class KeyParts(TypedDict, total=False):
    """The keywords of :meth:`Sessions.key` (and ``Memory.session_key``)."""

    platform: str | None
    workspace: Required[str | int]
    channel: str | int | None
    thread: str | int | None
    user: str | int | None
    agent: str | None
    policy: KeyPolicy | str | None


SESSION_ID_CACHE_SIZE = 10_000


def validate_message(message: Message, *, max_bytes: int) -> None:
    """Reject a message that must not be stored.

    Raises:
        MessageTooLarge: its JSON content is over ``max_bytes`` UTF-8 bytes.
        InvalidContent: it has no content (only empty text blocks), a text block whose text is
            not a ``str``, or content that cannot be stored (a lone surrogate such as ``'\\ud800'``,
            a NaN in a tool block's input).
    """
    if not isinstance(message, Message):
        raise InvalidContent(f"expected an omoide.Message, got {type(message).__name__}")
    texts: list[object] = [b.text for b in message.content if isinstance(b, TextBlock)]
    wrong = [type(text).__name__ for text in texts if not isinstance(text, str)]
    if wrong:
        raise InvalidContent(f"a message's text must be text (str), got {wrong[0]}")
    if all(isinstance(b, TextBlock) and not b.text.strip() for b in message.content):
        raise InvalidContent("message is empty: it needs some text or a tool block")
    size = len(storable_content_json(message).encode("utf-8"))
    if size > max_bytes:
        raise MessageTooLarge(
            f"message is {size:,} bytes; the limit is {max_bytes:,} (raise OMOIDE_MAX_MESSAGE_BYTES, "
            "or split the message / store large files as documents)",
            size=size,
            limit=max_bytes,
        )


class Sessions:
    """Session operations with validation and conflict retries. Reached as ``Memory.sessions``."""

    def __init__(self, store: SessionStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        # key -> session id: ids never change, so an append needs no lookup round trip.
        # A session deleted elsewhere shows up as SessionNotFound on append and is re-created.
        self._ids: OrderedDict[str, SessionId] = OrderedDict()
        self._visibility: dict[str, tuple[bool, tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ keys

    def key(
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
        """Build a key with the configured policy (``OMOIDE_SESSION_KEY_POLICY``) unless one is given."""
        return session_key(
            platform=platform,
            workspace=workspace,
            channel=channel,
            thread=thread,
            user=user,
            agent=agent,
            policy=policy or self.settings.session_key_policy,
        )

    @staticmethod
    def _key(key: KeyLike) -> SessionKey:
        return key if isinstance(key, SessionKey) else parse_session_key(key)

    # ------------------------------------------------------------------ reads

    async def get_or_create(self, key: KeyLike) -> Session:
        return self._remember(await self.store.get_or_create_session(self._key(key)))

    async def get(self, key: KeyLike) -> Session:
        """The stored session.

        Raises:
            SessionNotFound: no session has this key.
        """
        text = str(key) if isinstance(key, SessionKey) else self._key(key).value
        session = await self.store.get_session(text)
        if session is None:
            raise SessionNotFound(f"no session with key {text!r}; `omoide sessions list` shows the keys")
        return session

    async def history(self, key: KeyLike, *, window: int | None = None) -> list[Message]:
        """The prompt window: the newest ``window`` (default ``OMOIDE_SESSION_WINDOW``) messages, oldest first.

        An unknown key has an empty history.
        """
        size = window or self.settings.session_window
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidContent(f"window must be an integer of at least 1, got {size!r}")
        text = self._key(key).value
        session_id = self._ids.get(text)
        if session_id is None:
            session = await self.store.get_session(text)
            if session is None:
                return []
            session_id = self._remember(session).id
        return await self.store.history(session_id, window=size)

    async def messages(self, key: KeyLike, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        """Every stored message of the session (oldest first), not just the window."""
        session = await self.get(key)
        return await self.store.messages(session.id, after_seq=after_seq, limit=limit)

    async def unarchived(self, key: KeyLike) -> list[Message]:
        """Messages not yet moved to long-term memory (``seq > archived_seq``)."""
        session = await self.get(key)
        return await self.store.messages(session.id, after_seq=session.archived_seq)

    async def list_sessions(
        self,
        *,
        workspace: str | None = None,
        status: SessionStatus | None = None,
        platform: str | None = None,
        channel: str | None = None,
        user: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Session]:
        """Sessions, most recently active first, filtered by workspace, state, platform, channel and user."""
        return await self.store.list_sessions(
            workspace_id=workspace,
            status=status,
            platform=platform,
            channel_id=channel,
            user_id=user,
            limit=limit,
            offset=offset,
        )

    async def workspaces(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """The workspaces that have sessions, in id order (paged)."""
        return await self.store.list_workspaces(limit=limit, offset=offset)

    # ------------------------------------------------------------------ writes

    async def append(self, key: KeyLike, message: Message) -> Message:
        """Validate and append one message, creating the session if needed.

        Idempotent on the platform ``message_id``, which is unique per **workspace** (as on
        Discord, where ids are snowflakes, and Slack, whose bots use ``channel:ts``): if the
        workspace already stores a message with this id, the stored message is returned and
        nothing is stored — even when it was stored in *another* session of the workspace
        (then the returned message's ``session_id`` is that session's, and a
        ``message_id_in_another_session`` warning is logged). Compare ``session_id``, or use
        :meth:`append_checked`, to tell.

        Raises:
            MessageTooLarge, InvalidContent: the message was rejected; nothing was stored.
        """
        stored, _created = await self.append_checked(key, message)
        return stored

    async def append_checked(self, key: KeyLike, message: Message) -> tuple[Message, bool]:
        """Like :meth:`append`, also saying whether the message was new (``False``: a re-delivery,
        possibly of a message stored in another session — see the returned ``session_id``)."""
        validate_message(message, max_bytes=self.settings.max_message_bytes)
        parsed = self._key(key)
        session_id = self._ids.get(parsed.value)
        if session_id is None:
            session_id = (await self.get_or_create(parsed)).id
        else:
            self._ids.move_to_end(parsed.value)
        try:
            stored, created = await self.store.append_message(session_id, message)
        except SessionNotFound:  # deleted meanwhile (here or by another process): create it again, once
            self._ids.pop(parsed.value, None)
            known = self._visibility.pop(parsed.value, None)
            session_id = (await self.get_or_create(parsed)).id
            if known is not None and known[0]:  # the re-created session is private again
                await self.store.set_session_visibility(session_id, private=True, members=known[1])
                self._visibility[parsed.value] = known
            stored, created = await self.store.append_message(session_id, message)
        if not created and stored.session_id is not None and int(stored.session_id) != int(session_id):
            log.warning(
                "message_id_in_another_session",
                message_id=message.message_id,
                session=parsed.value,
                session_id=int(session_id),
                stored_session_id=int(stored.session_id),
                stored_seq=stored.seq,
            )
        return stored, created

    async def set_visibility(self, key: KeyLike, *, private: bool, members: Iterable[str | int] = ()) -> Session | None:
        """Mark the conversation private to ``members`` (or public); later archives of it inherit this.

        A private session's members always include the key's user (a DM's user); the archiver
        adds every participant. Members are replaced, not merged. The last setting per key is
        remembered in this process, so calling this before every message costs nothing
        while it does not change. Returns the session when it was read or written.
        """
        parsed = self._key(key)
        who: tuple[str, ...] = ()
        if private:
            named = [parsed.user] if parsed.user else []
            who = tuple(dict.fromkeys([*named, *(str(m) for m in members)]))
        wanted = (bool(private), who)
        if self._visibility.get(parsed.value) == wanted:
            return None
        session = await self.get_or_create(parsed)
        if (session.private, session.members) != wanted:
            session = await self.store.set_session_visibility(session.id, private=wanted[0], members=who)
        self._visibility[parsed.value] = wanted
        while len(self._visibility) > SESSION_ID_CACHE_SIZE:
            self._visibility.pop(next(iter(self._visibility)))
        return session

    def _remember(self, session: Session) -> Session:
        self._ids[session.key] = session.id
        self._ids.move_to_end(session.key)
        while len(self._ids) > SESSION_ID_CACHE_SIZE:
            self._ids.popitem(last=False)
        return session

    async def reset(self, key: KeyLike) -> Session:
        """Start a fresh conversation: the window becomes empty.

        The earlier messages stay stored until they are archived; nothing is lost.
        """
        session = await self.get(key)
        return await self.store.reset_window(session.id)

    async def save_context_summary(self, key: KeyLike, summary: str, *, through_seq: int) -> Session | None:
        """Store a compaction on the session: later prompts start from ``summary`` instead of the
        messages up to ``through_seq`` (which stay stored for the archiver). ``None`` when a
        summary covering as much was stored already."""
        session = await self.get(key)
        return await self.store.save_context_summary(session.id, summary=summary, through_seq=through_seq)

    async def set_status(self, key: KeyLike, status: SessionStatus) -> Session:
        """Change a session's status (re-reading and retrying on conflicts)."""

        async def attempt() -> Session:
            session = await self.get(key)
            return await self.store.update_session(session.id, expected_version=session.version, status=status)

        return await with_optimistic_retry(attempt, attempts=self.settings.optimistic_lock_attempts, what="set_status")

    async def delete(self, key: KeyLike) -> bool:
        """Delete a session and its messages. ``False`` when there was no such session."""
        text = self._key(key).value
        self._ids.pop(text, None)
        session = await self.store.get_session(text)
        if session is None:
            return False
        return await self.store.delete_session(session.id)

    async def expire_idle(self, *, now: datetime | None = None, idle_for: timedelta | None = None) -> int:
        """Expire every session idle longer than ``idle_for`` (default ``OMOIDE_SESSION_EXPIRE_AFTER_SECONDS``),
        in batches of ``OMOIDE_SESSION_EXPIRE_BATCH_SIZE``; return how many were expired.

        Raises:
            InvalidInput: ``idle_for`` is negative.
        """
        idle = idle_for if idle_for is not None else timedelta(seconds=self.settings.session_expire_after_seconds)
        if idle < timedelta(0):  # would expire sessions active a moment ago
            raise InvalidInput(f"idle time must not be negative, got {idle_for}")
        cutoff = (now or utcnow()) - idle
        total = 0
        while True:
            count = await self.store.expire_idle(idle_before=cutoff, batch_size=self.settings.session_expire_batch_size)
            total += count
            if count < self.settings.session_expire_batch_size:
                return total


__all__ = ["KeyLike", "KeyParts", "Sessions", "validate_message"]
