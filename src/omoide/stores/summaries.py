"""Rolling summaries (seed 003): short-term and long-term, per thread, channel, user and workspace."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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


__all__ = ["ShortTermHistoryConfig", "Summary", "SummaryDraft", "SummaryKind", "SummaryScope"]
