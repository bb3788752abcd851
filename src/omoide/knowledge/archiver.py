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
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import structlog

from omoide.concurrency import with_optimistic_retry
from omoide.errors import (
    InvalidInput,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from omoide.knowledge.archive_plan import filter_reason, is_person, plan_archive, source_type, source_uri
from omoide.knowledge.archive_report import ArchiveReport, Outcome, SessionOutcome
from omoide.knowledge.chunking import Chunker
from omoide.models import Message, Session, SessionId, SessionStatus, utcnow
from omoide.settings import Settings
from omoide.stores.knowledge import ArchivePlan, ArchiveResult, KnowledgeStore
from omoide.stores.sessions import SessionStore

log = structlog.get_logger(__name__)

ARCHIVE_ATTEMPTS = 3
"""Plans tried per session and run before a conflicting session is left for the next run."""
ARCHIVE_MAX_WAIT = 1.0
"""Longest pause (seconds) between those attempts."""

ChannelNames = Callable[[Session], str | None]
"""Looks up a session's channel name (a bot knows it; the session row does not)."""


def archive_concurrency(settings: Settings) -> int:
    """Sessions archived at once: ``max(1, min(5, db_pool_max × 0.25))`` (seed 000)."""
    return max(1, min(5, int(settings.db_pool_max * 0.25)))


# ------------------------------------------------------------------------ archiver


class SessionArchiver:
    """Moves idle (or large) sessions into long-term memory. See the module docstring.

    Args:
        sessions: the session store it reads sessions and messages from.
        knowledge: the knowledge store it finds due sessions in and applies plans to.
        settings: the ``archive_*``, ``chunk_*``, ``min_session_chars``, ``session_window``
            and ``db_pool_max`` settings are used.
        chunker: how to cut messages into chunks (default: from ``settings``).
        channel_names: looks up a session's channel name for the title and metadata.

    Example:
        >>> archiver = SessionArchiver(store.sessions, store.knowledge, settings)  # doctest: +SKIP
        >>> report = await archiver.run()                    # doctest: +SKIP
        >>> report.archived, report.chunks                   # doctest: +SKIP
    """

    def __init__(
        self,
        sessions: SessionStore,
        knowledge: KnowledgeStore,
        settings: Settings,
        *,
        chunker: Chunker | None = None,
        channel_names: ChannelNames | None = None,
    ) -> None:
        self.sessions = sessions
        self.knowledge = knowledge
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
        """The archive plan for ``session`` as read, and the filter reason (see :func:`plan_archive`)."""
        return plan_archive(
            session,
            messages,
            settings=self.settings,
            chunker=self.chunker,
            idle=idle,
            channel_name=channel_name,
            context=context,
        )

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
            session = await self.sessions.get_session_by_id(session_id)
            if session is None:
                return SessionOutcome(session_id, Outcome.SKIPPED, "deleted")
            skipped = self._not_due(session, idle_before=idle_before, limit=limit)
            if skipped is not None:
                return skipped
            kept = max(self.settings.archive_overlap, self.settings.session_window)
            stored = await self.sessions.messages(session.id, after_seq=max(0, session.archived_seq - kept))
            messages = [m for m in stored if m.seq is not None and m.seq <= session.last_seq]
            plan, reason = await asyncio.to_thread(self._plan_due, session, messages, idle_before)
            return self._outcome(session, plan, reason, await self.knowledge.archive_session(plan))

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

            done = await self.knowledge.archive_session_locked(session_id, planner)
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
            batch = await self.knowledge.sessions_to_archive(
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
    "Outcome",
    "SessionArchiver",
    "SessionOutcome",
    "archive_concurrency",
    "filter_reason",
    "is_person",
    "source_type",
    "source_uri",
]
