"""Short-term memory: the :class:`SessionStore` contract over sessions and their messages.

The record types (:class:`~omoide.models.Session`, :class:`~omoide.models.Message`,
:class:`~omoide.models.SessionKey`) live in :mod:`omoide.models`, beside the content blocks
they carry. Every public method checks its arguments here, once for every backend, and
then calls the backend's ``_<name>`` method with checked, normalised values.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from omoide.errors import InvalidContent, InvalidInput, InvalidSessionKey, MessageTooLarge
from omoide.models import (
    MAX_JSON_DEPTH,
    Message,
    Session,
    SessionId,
    SessionKey,
    SessionStatus,
    ToolUseBlock,
    ensure_utc,
    json_depth,
)
from omoide.providers.tokens import stored_text_tokens
from omoide.stores.search import check_members


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions :meth:`SessionStore.list_sessions` returns: every field that is not
    ``None`` must equal the session's (checked, normalised values)."""

    workspace_id: str | None = None
    status: SessionStatus | None = None
    platform: str | None = None
    channel_id: str | None = None
    user_id: str | None = None

    def conditions(self) -> list[tuple[str, str]]:
        """``(column, value)`` pairs for a backend's ``WHERE`` (column names are fixed here)."""
        pairs = (
            ("workspace_id", self.workspace_id),
            ("status", None if self.status is None else self.status.value),
            ("platform", self.platform),
            ("channel_id", self.channel_id),
            ("user_id", self.user_id),
        )
        return [(column, value) for column, value in pairs if value is not None]


def _optional_text(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{name} must be a non-empty string or None, got {value!r}")
    return value


class SessionStore(abc.ABC):
    """Short-term memory: sessions and their append-only messages.

    Contract notes that every backend honours (and ``tests/conformance`` checks):

    * Ids are database-assigned integers; keys and platform ids are strings.
    * Every timestamp read back is an aware UTC ``datetime``.
    * :meth:`append_message` is atomic: it allocates the next ``seq`` of the session (1, 2,
      3, …), inserts the message, bumps ``version``, sets ``status='active'`` and moves
      ``last_active_at`` forward, all in one transaction. Concurrent appends to one session
      never lose a message or reuse a ``seq``.
    * A message whose ``message_id`` (platform id) is already stored in the same workspace
      is not stored again: the stored copy is returned with ``created=False``.
    * Read-then-write state changes (:meth:`update_session`) are guarded by the
      ``version`` read: a stale version raises :class:`~omoide.errors.VersionConflict`, and
      the caller re-reads before retrying (see :mod:`omoide.sessions`).
    * Missing ids: getters return ``None``; mutators raise
      :class:`~omoide.errors.SessionNotFound`.
    * Bad arguments raise :class:`~omoide.errors.InvalidInput` (or a subclass of it) before
      anything is read or written.

    Args:
        max_message_bytes: the largest message :meth:`append_message` accepts (UTF-8 bytes
            of its JSON content; ``OMOIDE_MAX_MESSAGE_BYTES``).
    """

    def __init__(self, *, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes

    async def get_or_create_session(self, key: SessionKey) -> Session:
        """Return the session with this key, creating it (status active) if absent.

        Concurrent calls with the same key return the same session.

        Raises:
            InvalidSessionKey: ``key`` has no string form (build it with ``omoide.session_key``).
        """
        if not isinstance(key, SessionKey) or not key.value:
            raise InvalidSessionKey("get_or_create_session needs a SessionKey built by omoide.session_key(...)")
        return await self._get_or_create_session(key)

    async def get_session(self, key: str) -> Session | None:
        """The session with this key string (or :class:`~omoide.models.SessionKey`), or ``None``.

        Raises:
            InvalidSessionKey: ``key`` is neither.
        """
        if isinstance(key, SessionKey):
            key = key.value
        if not isinstance(key, str):
            raise InvalidSessionKey(f"session key must be a string, got {type(key).__name__}")
        return await self._get_session(key)

    async def get_session_by_id(self, session_id: SessionId) -> Session | None:
        """The session with this id, or ``None``."""
        return await self._get_session_by_id(check_id(session_id))

    async def set_session_visibility(
        self, session_id: SessionId, *, private: bool, members: Sequence[str] = ()
    ) -> Session:
        """Mark the conversation private to ``members`` (or public); its later archives inherit it.

        Bumps ``version``, so an archive planned before it retries with the new visibility.

        Raises:
            SessionNotFound: no session has this id.
            InvalidInput: ``members`` is a bare string, or holds an empty / non-string id.
        """
        sid = check_id(session_id)
        return await self._set_session_visibility(sid, bool(private), check_members(members))

    async def append_message(self, session_id: SessionId, message: Message) -> tuple[Message, bool]:
        """Append one message as the session's next ``seq``; return ``(stored_message, created)``.

        See the class docstring for atomicity and idempotency. Re-activates an archived or
        expired session.

        Raises:
            SessionNotFound: no session has this id.
            InvalidContent: ``message`` is not a :class:`~omoide.models.Message`, or its
                content cannot be stored (a lone surrogate; on PostgreSQL also a NUL character).
            MessageTooLarge: its JSON content is over ``max_message_bytes`` UTF-8 bytes.
        """
        sid = check_id(session_id)
        if not isinstance(message, Message):
            raise InvalidContent(f"append_message needs an omoide.Message, got {type(message).__name__}")
        content = storable_content_json(message)
        size = len(content.encode("utf-8"))
        limit = self.max_message_bytes
        if size > limit:
            raise MessageTooLarge(
                f"message content is {size} bytes of JSON, over the limit of {limit} (OMOIDE_MAX_MESSAGE_BYTES)",
                size=size,
                limit=limit,
            )
        return await self._append_message(sid, message, content, stored_text_tokens(message))

    async def history(self, session_id: SessionId, *, window: int) -> list[Message]:
        """The newest ``window`` messages with ``seq > window_start_seq``, oldest first."""
        sid = check_id(session_id)
        return await self._history(sid, check_int("window", window, minimum=0))

    async def messages(self, session_id: SessionId, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        """Stored messages with ``seq > after_seq``, oldest first, at most ``limit``.

        ``after_seq=session.archived_seq`` gives the messages not yet in long-term memory.
        """
        sid = check_id(session_id)
        after = check_int("after_seq", after_seq, minimum=0)
        most = None if limit is None else check_int("limit", limit, minimum=0)
        return await self._messages(sid, after, most)

    async def list_sessions(
        self,
        *,
        workspace_id: str | None = None,
        status: SessionStatus | None = None,
        platform: str | None = None,
        channel_id: str | None = None,
        user_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Session]:
        """Sessions, most recently active first (ties: newest id first), optionally filtered by
        workspace, state, platform, channel and user (each an equality; indexed per workspace).

        Raises:
            InvalidInput: an unknown status, an empty filter string, or a negative ``limit`` / ``offset``.
        """
        where = SessionFilter(
            workspace_id=None if workspace_id is None else str(workspace_id),
            status=None if status is None else check_status(status),
            platform=_optional_text("platform", platform),
            channel_id=_optional_text("channel_id", channel_id),
            user_id=_optional_text("user_id", user_id),
        )
        lim = check_int("limit", limit, minimum=0)
        off = check_int("offset", offset, minimum=0)
        return await self._list_sessions(where, lim, off)

    async def list_workspaces(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """The workspaces that have sessions, in id order (paged; for an operator's list).

        Raises:
            InvalidInput: a negative ``limit`` / ``offset``.
        """
        return await self._list_workspaces(check_int("limit", limit, minimum=0), check_int("offset", offset, minimum=0))

    async def update_session(
        self,
        session_id: SessionId,
        *,
        expected_version: int,
        status: SessionStatus | None = None,
        window_start_seq: int | None = None,
    ) -> Session:
        """Change a session's state if its version is still ``expected_version``.

        Bumps ``version`` and returns the updated session.

        Raises:
            VersionConflict: the session changed since it was read.
            SessionNotFound: no session has this id.
            InvalidInput: an unknown status, or ``window_start_seq`` negative or beyond ``last_seq``.
        """
        sid = check_id(session_id)
        expected = check_int("expected_version", expected_version, minimum=0)
        new_status = None if status is None else check_status(status)
        start = None if window_start_seq is None else check_int("window_start_seq", window_start_seq, minimum=0)
        return await self._update_session(sid, expected, new_status, start)

    async def reset_window(self, session_id: SessionId) -> Session:
        """Start a fresh conversation: ``window_start_seq = last_seq``, atomically, bumping ``version``.

        A blind update (no version guard): whatever was appended before it is reset out
        of the window, whatever comes after is in it.

        Raises:
            SessionNotFound: no session has this id.
        """
        return await self._reset_window(check_id(session_id))

    async def save_context_summary(self, session_id: SessionId, *, summary: str, through_seq: int) -> Session | None:
        """Persist a prompt compaction covering messages ``seq <= through_seq``.

        A compare-and-set on ``context_summary_seq``: it is stored only when it covers
        more than the stored one, so concurrent turns never move it backwards. Returns the
        updated session, or ``None`` when a summary covering as much was already stored.

        Raises:
            SessionNotFound: no session has this id.
            InvalidInput: ``summary`` is blank, or ``through_seq`` is negative or beyond the
                newest message.
        """
        sid = check_id(session_id)
        through = check_int("through_seq", through_seq, minimum=0)
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("a context summary must be non-empty text")
        return await self._save_context_summary(sid, summary, through)

    async def expire_idle(self, *, idle_before: datetime, batch_size: int) -> int:
        """Mark at most ``batch_size`` active sessions idle since before ``idle_before``
        as expired (bumping their version); return how many were marked.

        A session that receives a message concurrently is never expired by this call.
        A naive ``idle_before`` is taken to be UTC.
        """
        if not isinstance(idle_before, datetime):
            raise InvalidInput(f"idle_before must be a datetime, got {type(idle_before).__name__}")
        batch = check_int("batch_size", batch_size, minimum=1)
        return await self._expire_idle(ensure_utc(idle_before), batch)

    async def delete_session(self, session_id: SessionId) -> bool:
        """Delete a session and all its messages; ``False`` when it did not exist."""
        return await self._delete_session(check_id(session_id))

    # ------------------------------------------------------------------ the backend

    @abc.abstractmethod
    async def _get_or_create_session(self, key: SessionKey) -> Session:
        """Get or create the session of a checked key."""

    @abc.abstractmethod
    async def _get_session(self, key: str) -> Session | None:
        """The session with this key string."""

    @abc.abstractmethod
    async def _get_session_by_id(self, session_id: int) -> Session | None:
        """The session with this id."""

    @abc.abstractmethod
    async def _set_session_visibility(self, session_id: int, private: bool, members: list[str]) -> Session:
        """Set the visibility; raise ``SessionNotFound`` for an unknown id."""

    @abc.abstractmethod
    async def _append_message(
        self, session_id: int, message: Message, content: str, tokens: int | None
    ) -> tuple[Message, bool]:
        """Store a checked message; ``content`` is its JSON, ``tokens`` its stored token count."""

    @abc.abstractmethod
    async def _history(self, session_id: int, window: int) -> list[Message]:
        """The newest ``window`` messages after the window start, oldest first."""

    @abc.abstractmethod
    async def _messages(self, session_id: int, after_seq: int, limit: int | None) -> list[Message]:
        """Messages with ``seq > after_seq``, oldest first, at most ``limit`` (``None``: all)."""

    @abc.abstractmethod
    async def _list_sessions(self, where: SessionFilter, limit: int, offset: int) -> list[Session]:
        """Sessions matching ``where``, most recently active first (ties: newest id first)."""

    @abc.abstractmethod
    async def _list_workspaces(self, limit: int, offset: int) -> list[str]:
        """Distinct workspace ids of sessions, ascending."""

    @abc.abstractmethod
    async def _update_session(
        self, session_id: int, expected_version: int, status: SessionStatus | None, window_start_seq: int | None
    ) -> Session:
        """The version-guarded update."""

    @abc.abstractmethod
    async def _reset_window(self, session_id: int) -> Session:
        """Move the window start to the newest message."""

    @abc.abstractmethod
    async def _save_context_summary(self, session_id: int, summary: str, through_seq: int) -> Session | None:
        """The compare-and-set on ``context_summary_seq``."""

    @abc.abstractmethod
    async def _expire_idle(self, idle_before: datetime, batch_size: int) -> int:
        """Expire idle active sessions (``idle_before`` is aware UTC)."""

    @abc.abstractmethod
    async def _delete_session(self, session_id: int) -> bool:
        """Delete the session and its messages."""


# ---------------------------------------------------------------------- checks


def storable_content_json(message: Message) -> str:
    """The JSON a message's content is stored as.

    Raises:
        InvalidContent: it cannot be: a lone surrogate in its text (not Unicode), or a NaN or an
            infinity in a tool block's input (not JSON), or an input nested deeper than
            :data:`~omoide.models.MAX_JSON_DEPTH`.
    """
    for i, block in enumerate(message.content):
        if isinstance(block, ToolUseBlock) and (depth := json_depth(block.input)) > MAX_JSON_DEPTH:
            raise InvalidContent(
                f"content[{i}]: the tool block's input is nested {depth} levels deep; at most {MAX_JSON_DEPTH} "
                "are stored"
            )
    try:
        content = message.content_json(allow_nan=False)
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContent(
            f"message content is not valid Unicode ({exc.reason} at position {exc.start}); "
            "lone surrogates such as '\\ud800' cannot be stored"
        ) from exc
    except ValueError as exc:  # json.dumps(allow_nan=False)
        raise InvalidContent(
            "message content is not JSON: a tool block's input holds NaN or an infinity, which JSON has no "
            "numbers for; send null or a string instead"
        ) from exc
    return content


def check_id(session_id: object) -> int:
    """A session id as an ``int``.

    Raises:
        InvalidInput: not an integer.
    """
    if isinstance(session_id, bool) or not isinstance(session_id, int):
        raise InvalidInput(f"session_id must be an integer, got {type(session_id).__name__}")
    return session_id


def check_int(name: str, value: object, *, minimum: int) -> int:
    """``value`` as an ``int`` of at least ``minimum``.

    Raises:
        InvalidInput: not an integer, or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return value


def check_status(status: str) -> SessionStatus:
    """``status`` as a :class:`~omoide.models.SessionStatus`.

    Raises:
        InvalidInput: not one of its values.
    """
    try:
        return SessionStatus(status)
    except ValueError:
        allowed = ", ".join(s.value for s in SessionStatus)
        raise InvalidInput(f"unknown session status {status!r}; allowed: {allowed}") from None


__all__ = ["SessionStore", "check_id", "check_int", "check_status", "storable_content_json"]
