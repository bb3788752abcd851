"""What an archiver run did: one :class:`SessionOutcome` per session, summed in an :class:`ArchiveReport`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from omoide.models import SessionId


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


__all__ = ["ArchiveReport", "Outcome", "SessionOutcome"]
