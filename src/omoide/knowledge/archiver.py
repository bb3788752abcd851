"""The session archiver: short-term memory → long-term knowledge (seed 000 §2).

A run picks sessions that have unarchived messages and are either idle (no message for
``archive_idle_seconds``, default 1 h) or hold ``archive_message_threshold`` unarchived
messages, oldest activity first, in batches of ``archive_batch_size``. Sessions run
concurrently under a semaphore of ``max(1, min(5, db_pool_max × 0.25))`` (seed 000).

For each session the archiver reads the session row, then its unarchived messages
(``seq`` in ``(archived_seq, last_seq]`` of *that* read), and builds one
:class:`~omoide.stores.knowledge.ArchivePlan`:

* a knowledge source (type per platform, title, a Discord jump URL or Slack deep link when
  the platform ids allow, metadata with the origin session, every participant, the message
  count and the first/last message time) and its chunks (:mod:`omoide.knowledge.chunking`);
  or no source at all when the messages hold no user message or fewer than
  ``min_session_chars`` characters (seed 000's filters) — the watermark still moves, so
  those messages are done and never looked at again;
* ``upto_seq = last_seq`` (the new ``archived_seq`` watermark), keeping the newest
  ``archive_overlap`` messages for context (an active session archived for its size keeps
  at least its prompt window, ``session_window``);
* ``expected_version`` = the version read.

:meth:`KnowledgeStore.archive_session <omoide.stores.knowledge.KnowledgeStore.archive_session>`
applies a plan in one transaction. A message appended after the read bumps the version,
the plan fails with :class:`~omoide.errors.VersionConflict`, and the archiver re-reads the
session and plans again (tenacity, 3 attempts, jittered exponential backoff; a session
that still conflicts is left for the next run). That is why every message reaches
long-term memory exactly once: a plan covers exactly the messages after the watermark it
read, and it only commits if the watermark (and everything else) is still as read. The
overlap kept for context lies at or below the new watermark, so it is never archived
again, and messages that arrive later are above it, so they are never skipped (seed 000
kept a list index that pointed past them: DESIGN.md, known defects 1–2).
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import structlog

from omoide.concurrency import with_optimistic_retry
from omoide.errors import (
    CapabilityNotSupported,
    InvalidInput,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from omoide.knowledge.chunking import Chunker
from omoide.models import Message, Session, SessionId, SessionStatus, utcnow
from omoide.settings import Settings
from omoide.stores.knowledge import ArchivePlan, ArchiveResult, KnowledgeStore, SourceDraft
from omoide.stores.sessions import SessionStore

log = structlog.get_logger(__name__)

ARCHIVE_ATTEMPTS = 3
"""Plans tried per session and run before a conflicting session is left for the next run."""
ARCHIVE_MAX_WAIT = 1.0
"""Longest pause (seconds) between those attempts."""

ChannelNames = Callable[[Session], str | None]
"""Looks up a session's channel name (a bot knows it; the session row does not)."""


if TYPE_CHECKING:

    class LongTermStore(SessionStore, KnowledgeStore):
        """A backend with short-term and long-term memory (both built-in backends)."""

else:  # TRANSITIONAL: the roles are ABCs now; the archiver takes them separately

    @runtime_checkable
    class LongTermStore(Protocol):
        """A backend with short-term and long-term memory (both built-in backends)."""

        async def get_session_by_id(self, session_id: SessionId) -> Session | None: ...

        async def messages(
            self, session_id: SessionId, *, after_seq: int = 0, limit: int | None = None
        ) -> list[Message]: ...


def knowledge_store(store: object) -> LongTermStore:
    """``store`` as a store with long-term memory.

    Raises:
        CapabilityNotSupported: the backend has no long-term memory.
    """
    if not isinstance(store, LongTermStore):
        raise CapabilityNotSupported(
            f"the {type(store).__name__} backend does not store long-term knowledge; use SQLite or PostgreSQL"
        )
    return store


def archive_concurrency(settings: Settings) -> int:
    """Sessions archived at once: ``max(1, min(5, db_pool_max × 0.25))`` (seed 000)."""
    return max(1, min(5, int(settings.db_pool_max * 0.25)))


# ------------------------------------------------------------------------ outcome


class Outcome(enum.StrEnum):
    ARCHIVED = "archived"  # a knowledge source was created
    FILTERED = "filtered"  # archived without knowledge (no user message / too short)
    SKIPPED = "skipped"  # nothing to do any more (done by another worker, active again, deleted)
    CONFLICT = "conflict"  # still conflicting after the retries; tried again next run
    FAILED = "failed"  # the store rejected the plan (logged)


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    session_id: SessionId
    outcome: Outcome
    reason: str = ""
    source_id: int | None = None
    chunks: int = 0
    messages: int = 0
    pruned: int = 0


@dataclass(slots=True)
class ArchiveReport:
    """What one archiver run did.

    Attributes:
        sessions: sessions looked at.
        archived / filtered / skipped / conflicts / failed: how each of them ended.
        sources / chunks: knowledge created.
        messages: messages that moved below the watermark (with or without knowledge).
        pruned: messages deleted from sessions (archived, beyond the overlap kept).
        stopped: the run ended early because a stop was requested.
    """

    sessions: int = 0
    archived: int = 0
    filtered: int = 0
    skipped: int = 0
    conflicts: int = 0
    failed: int = 0
    sources: int = 0
    chunks: int = 0
    messages: int = 0
    pruned: int = 0
    duration_s: float = 0.0
    stopped: bool = False
    outcomes: list[SessionOutcome] = field(default_factory=list, repr=False)

    def add(self, result: SessionOutcome) -> None:
        self.sessions += 1
        self.outcomes.append(result)
        if result.outcome is Outcome.ARCHIVED:
            self.archived += 1
            self.sources += 1
        elif result.outcome is Outcome.FILTERED:
            self.filtered += 1
        elif result.outcome is Outcome.SKIPPED:
            self.skipped += 1
        elif result.outcome is Outcome.CONFLICT:
            self.conflicts += 1
        else:
            self.failed += 1
        self.chunks += result.chunks
        self.messages += result.messages
        self.pruned += result.pruned

    @property
    def idle(self) -> bool:
        """No session was due."""
        return self.sessions == 0

    @property
    def retry_later(self) -> bool:
        """Never: a session that kept conflicting is simply tried again next run."""
        return False

    def as_log(self) -> dict[str, Any]:
        """The counts and the duration, for a structured log line."""
        return {
            "sessions": self.sessions,
            "archived": self.archived,
            "filtered": self.filtered,
            "skipped": self.skipped,
            "conflicts": self.conflicts,
            "failed": self.failed,
            "sources": self.sources,
            "chunks": self.chunks,
            "messages": self.messages,
            "pruned": self.pruned,
            "duration_ms": round(self.duration_s * 1000, 1),
            "stopped": self.stopped,
        }


# ------------------------------------------------------------------------ planning


def is_person(message: Message) -> bool:
    """A user turn written by a person (not a bot, not only tool results)."""
    return message.role == "user" and not message.is_bot and bool(message.text.strip())


def filter_reason(messages: Sequence[Message], *, min_chars: int, context: Sequence[Message] = ()) -> str | None:
    """Why these messages make no knowledge (seed 000's filters), or ``None`` when they do.

    The filters judge the conversation, not the increment: ``context`` (the messages kept
    below the watermark from the previous archive) counts too, so a bot's reply archived
    apart from the question it answers is not dropped as "bot-only".

    Returns:
        ``"empty"``, ``"no_user_message"`` (bot-only), ``"too_short"`` (fewer than
        ``min_chars`` characters of text in all), or ``None``.
    """
    if not messages:
        return "empty"
    conversation = [*context, *messages]
    if not any(is_person(m) for m in conversation):
        return "no_user_message"
    if sum(len(m.text) for m in conversation) < min_chars:
        return "too_short"
    return None


def source_type(platform: str) -> str:
    """``discord_session``, ``slack_session``, ``agent_session``, ``cli_session``, … by platform."""
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in platform.strip().lower()) or "unknown"
    return f"{cleaned}_session"


def source_uri(session: Session, first_message_id: str | None) -> str | None:
    """Where the conversation can be opened: a Discord jump URL, a Slack deep link, or ``None``.

    Discord: ``https://discord.com/channels/{guild}/{channel}/{message}`` (a thread is a
    channel there); the message part only when the first message's platform id is known.
    """
    channel = session.thread_id or session.channel_id
    if session.platform == "discord":
        guild = session.workspace_id
        if not (guild.isdigit() or guild == "@me") or not channel or not channel.isdigit():
            return None
        url = f"https://discord.com/channels/{guild}/{channel}"
        return f"{url}/{first_message_id}" if first_message_id and first_message_id.isdigit() else url
    if session.platform == "slack" and session.channel_id and session.workspace_id:
        return f"slack://channel?team={session.workspace_id}&id={session.channel_id}"
    return None


def _participants(messages: Sequence[Message]) -> tuple[list[str], dict[str, str]]:
    ids: list[str] = []
    names: dict[str, str] = {}
    for m in messages:
        if m.author_id is None:
            continue
        if m.author_id not in names and m.author_id not in ids:
            ids.append(m.author_id)
        if m.author_name:
            names[m.author_id] = m.author_name
    return ids, names


def _title(session: Session, messages: Sequence[Message], channel_name: str | None) -> str:
    platform = session.platform.capitalize() if session.platform else "Chat"
    if session.agent_id:
        where = f"agent session {session.agent_id}"
    elif channel_name:
        where = f"#{channel_name.lstrip('#')}"
    elif session.channel_id:
        where = f"channel {session.channel_id}"
    else:
        where = f"session {session.key}"
    if session.thread_id and not session.agent_id:
        where += f" (thread {session.thread_id})"
    people: list[str] = []
    for m in messages:
        if is_person(m):
            who = m.author_name or m.author_id
            if who and who not in people:
                people.append(who)
    with_whom = ""
    if people:
        shown = ", ".join(people[:3])
        with_whom = f" with {shown}" + (f" +{len(people) - 3}" if len(people) > 3 else "")
    first, last = messages[0].created_at, messages[-1].created_at
    end = last.strftime("%H:%M") if first.date() == last.date() else last.strftime("%Y-%m-%d %H:%M")
    return f"{platform} conversation in {where}{with_whom} · {first:%Y-%m-%d %H:%M}–{end} UTC"


# ------------------------------------------------------------------------ archiver


class SessionArchiver:
    """Moves idle (or large) sessions into long-term memory. See the module docstring.

    Args:
        store: a store with long-term memory (SQLite or PostgreSQL).
        settings: the ``archive_*``, ``chunk_*``, ``min_session_chars``, ``session_window``
            and ``db_pool_max`` settings are used.
        chunker: how to cut messages into chunks (default: from ``settings``).
        channel_names: looks up a session's channel name for the title and metadata.

    Example:
        >>> archiver = SessionArchiver(store, settings)     # doctest: +SKIP
        >>> report = await archiver.run()                    # doctest: +SKIP
        >>> report.archived, report.chunks                   # doctest: +SKIP
    """

    def __init__(
        self,
        store: object,
        settings: Settings,
        *,
        chunker: Chunker | None = None,
        channel_names: ChannelNames | None = None,
    ) -> None:
        self.store = knowledge_store(store)
        self.settings = settings
        self._chunker = chunker
        self.channel_names = channel_names
        self.concurrency = archive_concurrency(settings)

    @property
    def chunker(self) -> Chunker:
        if self._chunker is None:
            self._chunker = Chunker.from_settings(self.settings)
        return self._chunker

    # ---------------------------------------------------------------- planning

    def plan(
        self,
        session: Session,
        messages: Sequence[Message],
        *,
        idle: bool,
        channel_name: str | None = None,
        context: Sequence[Message] = (),
    ) -> tuple[ArchivePlan, str | None]:
        """The archive plan for ``session`` as read, and the filter reason (``None``: knowledge made).

        Pure computation (no I/O); the archiver runs it in a worker thread.

        Args:
            session: the session as just read.
            messages: its messages with ``archived_seq < seq <= last_seq``, oldest first.
            idle: archive as idle (status ``archived``, keep ``archive_overlap`` messages) or
                as an active session over the size threshold (stays ``active``, keeps at
                least its prompt window).
            channel_name: the channel's name, when known.
            context: the session's messages still stored at or below ``archived_seq``
                (the overlap kept last time), for the filters only.
        """
        settings = self.settings
        keep = settings.archive_overlap if idle else max(settings.archive_overlap, settings.session_window)
        status = SessionStatus.ARCHIVED if idle else SessionStatus.ACTIVE
        reason = filter_reason(messages, min_chars=settings.min_session_chars, context=context)
        if reason is not None:
            plan = ArchivePlan(session.id, session.version, session.last_seq, None, (), keep, status)
            return plan, reason
        chunks = self.chunker.chunk(
            messages,
            total=session.last_seq,
            session_id=int(session.id),
            channel_id=session.channel_id,
            thread_id=session.thread_id,
        )
        participants, names = _participants(messages)
        metadata: dict[str, Any] = {
            "origin_session_key": session.key,
            "origin_session_id": int(session.id),
            "platform": session.platform,
            "workspace_id": session.workspace_id,
            "channel_id": session.channel_id,
            "thread_id": session.thread_id,
            "participants": participants,
            "participant_names": names,
            "message_count": len(messages),
            "seq_from": session.archived_seq + 1,
            "seq_to": session.last_seq,
            "first_message_at": messages[0].created_at.isoformat(),
            "last_message_at": messages[-1].created_at.isoformat(),
            "first_message_id": messages[0].message_id,
            "last_message_id": messages[-1].message_id,
            "chunk_strategy": self.chunker.options.strategy,
        }
        if channel_name:
            metadata["channel_name"] = channel_name
        if session.user_id is not None:
            metadata["user_id"] = session.user_id
        if session.agent_id is not None:
            metadata["agent_id"] = session.agent_id
        members: tuple[str, ...] = ()
        if session.private:  # a private conversation: its members, its user and everyone who spoke
            named = [session.user_id] if session.user_id else []
            members = tuple(dict.fromkeys([*session.members, *named, *participants]))
        source = SourceDraft(
            workspace_id=session.workspace_id,
            type=source_type(session.platform),
            title=_title(session, messages, channel_name),
            uri=source_uri(session, messages[0].message_id),
            metadata=metadata,
            private=session.private,
            members=members,
        )
        return ArchivePlan(session.id, session.version, session.last_seq, source, tuple(chunks), keep, status), None

    # ---------------------------------------------------------------- one session

    async def archive_session(
        self, session_id: SessionId, *, idle_before: datetime, threshold: int | None = None
    ) -> SessionOutcome:
        """Archive one session if it is (still) due.

        First optimistically: read, plan outside any transaction, commit guarded by the
        version read; a conflict re-reads and plans again (``ARCHIVE_ATTEMPTS`` tries,
        jittered exponential backoff). A session whose users keep appending faster than a
        plan takes can conflict every time, so the last resort is pessimistic: the store
        reads, plans and commits under the session's write lock
        (:meth:`~omoide.stores.knowledge.KnowledgeStore.archive_session_locked`), which makes
        progress however busy the channel (appends wait a few milliseconds meanwhile).

        Args:
            session_id: the session.
            idle_before: a session last active before this is archived as idle.
            threshold: archive a non-idle session with at least this many unarchived
                messages (default ``archive_message_threshold``).

        Raises:
            VersionConflict: still conflicting after the retries, including the locked ones.
            StoreError: the store failed.
        """
        limit = self.settings.archive_message_threshold if threshold is None else threshold

        async def optimistic() -> SessionOutcome:
            session = await self.store.get_session_by_id(session_id)
            if session is None:
                return SessionOutcome(session_id, Outcome.SKIPPED, "deleted")
            skipped = self._not_due(session, idle_before=idle_before, limit=limit)
            if skipped is not None:
                return skipped
            kept = max(self.settings.archive_overlap, self.settings.session_window)
            stored = await self.store.messages(session.id, after_seq=max(0, session.archived_seq - kept))
            messages = [m for m in stored if m.seq is not None and m.seq <= session.last_seq]
            plan, reason = await asyncio.to_thread(self._plan_due, session, messages, idle_before)
            return self._outcome(session, plan, reason, await self.store.archive_session(plan))

        try:
            return await with_optimistic_retry(
                optimistic, attempts=ARCHIVE_ATTEMPTS, max_wait=ARCHIVE_MAX_WAIT, what="archive_session"
            )
        except VersionConflict:
            log.info("archive_locked_fallback", session_id=session_id, attempts=ARCHIVE_ATTEMPTS)

        async def locked() -> SessionOutcome:
            seen: dict[str, Any] = {}

            def planner(session: Session, messages: Sequence[Message]) -> ArchivePlan | None:
                seen["session"] = session
                seen["skipped"] = self._not_due(session, idle_before=idle_before, limit=limit)
                if seen["skipped"] is not None:
                    return None
                plan, seen["reason"] = self._plan_due(session, messages, idle_before)
                return plan

            done = await self.store.archive_session_locked(session_id, planner)
            if done is None:
                skipped: SessionOutcome = seen["skipped"]
                return skipped
            plan, result = done
            return self._outcome(seen["session"], plan, seen["reason"], result)

        return await with_optimistic_retry(
            locked, attempts=ARCHIVE_ATTEMPTS, max_wait=ARCHIVE_MAX_WAIT, what="archive_session_locked"
        )

    def _not_due(self, session: Session, *, idle_before: datetime, limit: int) -> SessionOutcome | None:
        """Why ``session`` needs no archiving now, or ``None`` when it is due."""
        if session.last_seq <= session.archived_seq:
            return SessionOutcome(session.id, Outcome.SKIPPED, "nothing_unarchived")
        if session.last_active_at >= idle_before and session.unarchived_count < limit:
            return SessionOutcome(session.id, Outcome.SKIPPED, "active")
        return None

    def _plan_due(
        self, session: Session, stored: Sequence[Message], idle_before: datetime
    ) -> tuple[ArchivePlan, str | None]:
        """Plan from the session's stored messages: those above the watermark, with those below as context."""
        channel_name = self.channel_names(session) if self.channel_names is not None else None
        context = [m for m in stored if m.seq is not None and m.seq <= session.archived_seq]
        messages = [m for m in stored if m.seq is not None and m.seq > session.archived_seq]
        return self.plan(
            session,
            messages,
            idle=session.last_active_at < idle_before,
            channel_name=channel_name,
            context=context,
        )

    @staticmethod
    def _outcome(session: Session, plan: ArchivePlan, reason: str | None, result: ArchiveResult) -> SessionOutcome:
        moved = plan.upto_seq - session.archived_seq
        if reason is not None:
            return SessionOutcome(session.id, Outcome.FILTERED, reason, messages=moved, pruned=result.pruned)
        return SessionOutcome(
            session.id,
            Outcome.ARCHIVED,
            "idle" if plan.status == SessionStatus.ARCHIVED else "threshold",
            source_id=int(result.source_id) if result.source_id is not None else None,
            chunks=len(result.chunk_ids),
            messages=moved,
            pruned=result.pruned,
        )

    async def _one(self, session_id: SessionId, idle_before: datetime) -> SessionOutcome:
        started = time.perf_counter()
        try:
            result = await self.archive_session(session_id, idle_before=idle_before)
        except VersionConflict:
            log.warning("archive_conflict", session_id=session_id, attempts=ARCHIVE_ATTEMPTS)
            return SessionOutcome(session_id, Outcome.CONFLICT, "version_conflict")
        except SessionNotFound:
            return SessionOutcome(session_id, Outcome.SKIPPED, "deleted")
        except StoreUnavailable:
            raise
        except (InvalidInput, StoreError) as exc:
            log.error("archive_failed", session_id=session_id, error=exc.message, code=exc.code)
            return SessionOutcome(session_id, Outcome.FAILED, exc.message)
        log.debug(
            "session_archive",
            session_id=session_id,
            outcome=result.outcome.value,
            reason=result.reason,
            source_id=result.source_id,
            chunks=result.chunks,
            messages=result.messages,
            pruned=result.pruned,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return result

    # ---------------------------------------------------------------- a run

    async def run(
        self,
        *,
        now: datetime | None = None,
        idle_for: timedelta | None = None,
        stop: asyncio.Event | None = None,
        on_session: Callable[[SessionOutcome], None] | None = None,
    ) -> ArchiveReport:
        """Archive every session that is due now; return what was done.

        Args:
            now: the current time (default: now, UTC).
            idle_for: how long a session must be idle (default ``archive_idle_seconds``;
                ``timedelta(0)`` archives every session with unarchived messages).
            stop: when set, no further session is started; sessions in flight finish.
            on_session: called after each session (progress bars).

        Raises:
            StoreUnavailable: the database cannot be reached (the run stops).
        """
        started = time.perf_counter()
        idle = idle_for if idle_for is not None else timedelta(seconds=self.settings.archive_idle_seconds)
        if idle < timedelta(0):
            raise InvalidInput(f"idle time must not be negative, got {idle}")
        idle_before = (now or utcnow()) - idle
        report = ArchiveReport()
        semaphore = asyncio.Semaphore(self.concurrency)
        attempted: set[SessionId] = set()
        batch_size = self.settings.archive_batch_size

        async def guarded(session_id: SessionId) -> None:
            async with semaphore:
                if stop is not None and stop.is_set():
                    report.stopped = True
                    return
                result = await self._one(session_id, idle_before)
            report.add(result)
            if on_session is not None:
                on_session(result)

        while not (stop is not None and stop.is_set()):
            batch = await self.store.sessions_to_archive(
                idle_before=idle_before, min_unarchived=self.settings.archive_message_threshold, limit=batch_size
            )
            fresh = [s.id for s in batch if s.id not in attempted]
            if not fresh:
                break
            attempted.update(fresh)
            async with asyncio.TaskGroup() as group:
                for session_id in fresh:
                    group.create_task(guarded(session_id))
            if len(batch) < batch_size:
                break
        if stop is not None and stop.is_set():
            report.stopped = True
        report.duration_s = time.perf_counter() - started
        return report


__all__ = [
    "ARCHIVE_ATTEMPTS",
    "ArchiveReport",
    "ChannelNames",
    "LongTermStore",
    "Outcome",
    "SessionArchiver",
    "SessionOutcome",
    "archive_concurrency",
    "filter_reason",
    "is_person",
    "knowledge_store",
    "source_type",
    "source_uri",
]
