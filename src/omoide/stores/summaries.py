"""Rolling summaries (seed 003): short-term and long-term, per thread, channel, user and workspace.

Here: the record types, the argument checks, and :class:`SummaryStore`, the contract that
``sqlite/summaries.py`` and ``postgres/summaries.py`` implement.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omoide.errors import InvalidInput, VersionConflict
from omoide.models import Message
from omoide.stores._checks import check_int
from omoide.stores._erasure_common import ErasureAware


class SummaryScope(enum.StrEnum):
    THREAD = "thread"
    CHANNEL = "channel"
    WORKSPACE = "workspace"
    USER = "user"


class SummaryKind(enum.StrEnum):
    SHORT_TERM = "short_term"
    LONG_TERM = "long_term"


@dataclass(frozen=True, slots=True)
class ShortTermHistoryConfig:
    """Seed 003's ``ShortTermHistoryConfig``.

    Attributes:
        enabled: keep every short-term summary as a new version (history); off: overwrite.
        conversation_idle_seconds: a conversation idle this long is over (trigger 1).
        message_threshold: this many new messages since the last summary (trigger 2).
    """

    enabled: bool = True
    conversation_idle_seconds: int = 7200
    message_threshold: int = 50


@dataclass(frozen=True, slots=True)
class SummaryDraft:
    """A summary to store (its version is decided by the store).

    ``erasure_generation``: the workspace's erasure generation read before the messages were;
    the store refuses the write (:class:`~omoide.errors.ErasureConflict`) if a user was erased
    since, so a summary of their words is never written back. ``None``: not checked.

    ``expected_version``: the version of the latest summary of this key that the writer read
    before summarising (0: there was none); the store refuses the write
    (:class:`~omoide.errors.VersionConflict`) if another writer saved a version since, so two
    workers summarising the same scope at once store it once. ``None``: not checked.
    """

    workspace_id: str
    scope: SummaryScope
    scope_id: str
    kind: SummaryKind
    content: str
    source_message_count: int = 0
    source_latest_message_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    erasure_generation: int | None = None
    expected_version: int | None = None


def check_expected_version(draft: SummaryDraft, latest: int | None) -> None:
    """Raise :class:`~omoide.errors.VersionConflict` when ``draft.expected_version`` is set and the
    latest stored version of its key (``None``: none) is another one."""
    if draft.expected_version is None or draft.expected_version == (latest or 0):
        return
    raise VersionConflict(
        f"the {draft.kind.value} summary of {draft.scope.value} {draft.scope_id} is at version {latest or 0}, "
        f"not {draft.expected_version}: another writer saved it meanwhile"
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """A stored summary version."""

    id: int
    workspace_id: str
    scope: SummaryScope
    scope_id: str
    kind: SummaryKind
    version: int
    content: str
    source_message_count: int
    source_latest_message_at: datetime | None
    metadata: Mapping[str, Any]
    created_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace_id": self.workspace_id,
            "scope": self.scope.value,
            "scope_id": self.scope_id,
            "kind": self.kind.value,
            "version": self.version,
            "content": self.content,
            "source_message_count": self.source_message_count,
            "source_latest_message_at": None
            if self.source_latest_message_at is None
            else self.source_latest_message_at.isoformat(),
            "metadata": dict(self.metadata),
            "created_at": self.created_at.isoformat(),
        }


MESSAGE_SCOPES = (SummaryScope.CHANNEL, SummaryScope.THREAD, SummaryScope.USER)
"""The scopes whose messages are read directly (a workspace summary is built from its channels')."""


# ---- argument checks (no I/O)


def check_scope_key(workspace_id: object, scope: object, scope_id: object, kind: object | None = None) -> None:
    if not isinstance(workspace_id, str) or not workspace_id:
        raise InvalidInput(f"workspace_id must be non-empty text, got {workspace_id!r}")
    try:
        SummaryScope(str(scope))
    except ValueError:
        allowed = ", ".join(s.value for s in SummaryScope)
        raise InvalidInput(f"unknown summary scope {scope!r}; allowed: {allowed}") from None
    if not isinstance(scope_id, str) or not scope_id:
        raise InvalidInput(f"scope_id must be non-empty text, got {scope_id!r}")
    if kind is not None:
        try:
            SummaryKind(str(kind))
        except ValueError:
            raise InvalidInput(f"unknown summary kind {kind!r}; allowed: short_term, long_term") from None


def check_summary_draft(draft: object) -> SummaryDraft:
    if not isinstance(draft, SummaryDraft):
        raise InvalidInput(f"save_summary needs a SummaryDraft, got {type(draft).__name__}")
    check_scope_key(draft.workspace_id, draft.scope, draft.scope_id, draft.kind)
    if not isinstance(draft.content, str) or not draft.content.strip():
        raise InvalidInput("a summary's content must be non-empty text")
    if isinstance(draft.source_message_count, bool) or not isinstance(draft.source_message_count, int):
        raise InvalidInput("source_message_count must be an integer")
    if draft.source_message_count < 0:
        raise InvalidInput("source_message_count must not be negative")
    if draft.source_latest_message_at is not None and not isinstance(draft.source_latest_message_at, datetime):
        raise InvalidInput("source_latest_message_at must be a datetime or None")
    if not isinstance(draft.metadata, Mapping):
        raise InvalidInput("a summary's metadata must be a JSON object")
    if draft.expected_version is not None:
        check_int("expected_version", draft.expected_version, minimum=0)
    return draft


def check_message_scope(scope: object) -> SummaryScope:
    chosen = SummaryScope(scope) if isinstance(scope, str) else scope
    if chosen not in MESSAGE_SCOPES:
        raise InvalidInput(f"messages are read per channel, thread or user, not per {scope!r}")
    assert isinstance(chosen, SummaryScope)
    return chosen


def check_since(since: object) -> datetime:
    if not isinstance(since, datetime):
        raise InvalidInput(f"since must be a datetime, got {type(since).__name__}")
    return since


# ---- the contract


class SummaryStore(ErasureAware, abc.ABC):
    """Versioned summaries per (workspace, scope, scope id, kind), and the messages they summarise.

    Contract notes:

    * :meth:`save_summary` with ``new_version=True`` stores version ``latest + 1`` atomically
      (two writers never get the same number: the unique constraint plus a retry on PostgreSQL,
      ``BEGIN IMMEDIATE`` on SQLite); with ``new_version=False`` it overwrites the latest
      version's content (version 1 if none).
    * :meth:`scope_messages` reads session messages by their ``created_at`` time: a channel's
      (every session whose ``channel_id`` is the scope id), a thread's, or one user's (the
      messages they wrote), always within one workspace.
    * Every public method checks its arguments here (an :class:`~omoide.errors.InvalidInput`
      when one is bad) and then calls the backend's ``_<name>`` with checked values (scopes
      and kinds as their string values).
    """

    async def latest_summary(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind
    ) -> Summary | None:
        """The newest version, or ``None``."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        return await self._latest_summary(workspace_id, SummaryScope(scope).value, scope_id, SummaryKind(kind).value)

    async def summary_history(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind, *, limit: int = 20
    ) -> list[Summary]:
        """Versions, newest first, at most ``limit``."""
        check_scope_key(workspace_id, scope, scope_id, kind)
        lim = check_int("limit", limit, minimum=0)
        return await self._summary_history(
            workspace_id, SummaryScope(scope).value, scope_id, SummaryKind(kind).value, lim
        )

    async def latest_summaries(
        self,
        workspace_id: str,
        scope: SummaryScope,
        kind: SummaryKind,
        *,
        after: str | None = None,
        limit: int | None = None,
    ) -> list[Summary]:
        """The newest version of every scope id of this scope in the workspace (by scope id); with
        ``after`` only scope ids after it, with ``limit`` at most that many (a page: keyset on the id)."""
        check_scope_key(workspace_id, scope, "-", kind)
        if after is not None and not isinstance(after, str):
            raise InvalidInput(f"after must be a scope id, got {type(after).__name__}")
        lim = None if limit is None else check_int("limit", limit, minimum=1)
        return await self._latest_summaries(
            workspace_id, SummaryScope(scope).value, SummaryKind(kind).value, after or None, lim
        )

    async def save_summary(self, draft: SummaryDraft, *, new_version: bool) -> Summary:
        """Store a new version, or overwrite the latest one; return it as stored.

        Raises:
            ErasureConflict: ``draft.erasure_generation`` is given and a user of the workspace
                was erased since.
            VersionConflict: ``draft.expected_version`` is given and the latest version is another.
        """
        return await self._save_summary(check_summary_draft(draft), bool(new_version))

    async def scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, *, since: datetime, limit: int = 2000
    ) -> list[Message]:
        """Messages of the scope (a channel, thread or user) created at or after ``since``, oldest
        first (at most the newest ``limit``)."""
        check_scope_key(workspace_id, scope, scope_id)
        chosen = check_message_scope(scope)
        after = check_since(since)
        lim = check_int("limit", limit, minimum=0)
        return await self._scope_messages(workspace_id, chosen, scope_id, after, lim)

    async def active_scopes(self, *, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        """``(workspace_id, scope_id)`` of the channels / threads / users with messages since ``since``."""
        chosen = check_message_scope(scope)
        return await self._active_scopes(check_since(since), chosen)

    @abc.abstractmethod
    async def _latest_summary(self, workspace_id: str, scope: str, scope_id: str, kind: str) -> Summary | None: ...

    @abc.abstractmethod
    async def _summary_history(
        self, workspace_id: str, scope: str, scope_id: str, kind: str, limit: int
    ) -> list[Summary]: ...

    @abc.abstractmethod
    async def _latest_summaries(
        self, workspace_id: str, scope: str, kind: str, after: str | None, limit: int | None
    ) -> list[Summary]: ...

    @abc.abstractmethod
    async def _save_summary(self, draft: SummaryDraft, new_version: bool) -> Summary: ...

    @abc.abstractmethod
    async def _scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, since: datetime, limit: int
    ) -> list[Message]: ...

    @abc.abstractmethod
    async def _active_scopes(self, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]: ...


__all__ = [
    "MESSAGE_SCOPES",
    "ShortTermHistoryConfig",
    "Summary",
    "SummaryDraft",
    "SummaryKind",
    "SummaryScope",
    "SummaryStore",
    "check_expected_version",
]
