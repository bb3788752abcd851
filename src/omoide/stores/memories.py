"""Explicit per-user memories (seed 001): what a user asked the bot to remember.

Every memory belongs to one user in one workspace; every read and write names both, and
the stores put both in their SQL, so one user can never reach another's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NewType

MemoryId = NewType("MemoryId", int)

DEFAULT_CATEGORY = "general"


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One stored memory.

    Attributes:
        id: its id (unique in the database, meaningful only with its workspace and user).
        workspace_id / user_id: whose it is.
        content: what to remember, as the user said it (or as updated).
        category: a short label (``general``, ``preference``, ``schedule``…).
        tags: free labels for filtering.
        metadata: anything the caller wants to keep with it (JSON object).
        created_at / updated_at: UTC.
    """

    id: MemoryId
    workspace_id: str
    user_id: str
    content: str
    category: str
    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": int(self.id),
            "workspace_id": self.workspace_id,
            "user_id": self.user_id,
            "content": self.content,
            "category": self.category,
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A memory to store (``lexical``: omoide's search tokens of ``content``, space-separated)."""

    workspace_id: str
    user_id: str
    content: str
    lexical: str
    category: str = DEFAULT_CATEGORY
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MemoryChanges:
    """Fields to change in a memory; ``None`` leaves a field as it is."""

    content: str | None = None
    lexical: str | None = None
    category: str | None = None
    tags: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A recalled memory: its fused score, rank, and its rank in each list (``vector``, ``lexical``)."""

    memory: MemoryRecord
    score: float
    rank: int
    ranks: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "ranks": dict(self.ranks), **self.memory.as_dict()}


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What :meth:`MemoryService.remember` did.

    Attributes:
        memory: the memory as stored now.
        updated: ``True`` when a near-duplicate existed and was updated instead of adding one.
        similarity: the cosine similarity to that near-duplicate (``None`` when none was close).
    """

    memory: MemoryRecord
    updated: bool
    similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"updated": self.updated, "similarity": self.similarity, **self.memory.as_dict()}


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """The receipt of erasing a user (:meth:`omoide.Memory.forget_user`): what was removed, per kind.

    Attributes:
        memories: their explicit memories.
        sessions: their own sessions (every message in them, the bot's replies included).
        messages: stored messages removed: those of their sessions and those they wrote elsewhere.
        summaries: summary versions removed: theirs, and those of the channels, threads and
            workspace that drew on their messages (the next summary run rebuilds them from
            what remains).
        chunks_rewritten: long-term knowledge chunks rewritten without their lines (re-embedded next).
        chunks_deleted: chunks dropped: only their lines, their own conversations, or chunks
            too old to say who wrote which line.
        sources_deleted: knowledge sources left with no chunk, or their own archived conversations.
        transcripts: JSONL transcript files rewritten or removed.
    """

    memories: int
    sessions: int
    messages: int
    summaries: int = 0
    chunks_rewritten: int = 0
    chunks_deleted: int = 0
    sources_deleted: int = 0
    transcripts: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "memories": self.memories,
            "sessions": self.sessions,
            "messages": self.messages,
            "summaries": self.summaries,
            "chunks_rewritten": self.chunks_rewritten,
            "chunks_deleted": self.chunks_deleted,
            "sources_deleted": self.sources_deleted,
            "transcripts": self.transcripts,
        }

    @property
    def total(self) -> int:
        return sum(self.as_dict().values())

    def describe(self) -> str:
        """``Erased 3 memories, 1 session, 12 messages and 2 summary versions.`` (other kinds when non-zero)."""
        parts = [
            _count(self.memories, "memory", "memories"),
            _count(self.sessions, "session", "sessions"),
            _count(self.messages, "message", "messages"),
            _count(self.summaries, "summary version", "summary versions"),
        ]
        extra = [
            (self.chunks_rewritten, "knowledge chunk rewritten", "knowledge chunks rewritten"),
            (self.chunks_deleted, "knowledge chunk deleted", "knowledge chunks deleted"),
            (self.sources_deleted, "knowledge source deleted", "knowledge sources deleted"),
            (self.transcripts, "transcript file", "transcript files"),
        ]
        parts += [_count(n, one, many) for n, one, many in extra if n]
        return f"Erased {', '.join(parts[:-1])} and {parts[-1]}."

    def __add__(self, other: ForgetReport) -> ForgetReport:
        mine, theirs = self.as_dict(), other.as_dict()
        return ForgetReport(**{k: mine[k] + theirs[k] for k in mine})


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


__all__ = [
    "DEFAULT_CATEGORY",
    "ForgetReport",
    "MemoryChanges",
    "MemoryDraft",
    "MemoryHit",
    "MemoryId",
    "MemoryRecord",
    "RememberResult",
]
