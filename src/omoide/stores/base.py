"""The store contract: what every storage backend must do, and how.

A backend is one :class:`Store`: it opens a database, applies migrations and holds one
object per role (``store.sessions``, ``store.api_keys``, …). Each role's contract lives in
its own module beside its record types (:mod:`omoide.stores.sessions`,
:mod:`omoide.stores.api_keys`, …); every backend creates the same tables
(see ``docs/schema.md``).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from omoide.models import Message
from omoide.stores._erasure_common import ErasureState
from omoide.stores.api_keys import ApiKeyStore
from omoide.stores.knowledge import (
    KnowledgeStore,
)
from omoide.stores.lexical_index import LexicalIndexStore
from omoide.stores.memories import ForgetReport, MemoryChanges, MemoryDraft, MemoryRecord
from omoide.stores.search import SearchStore
from omoide.stores.sessions import SessionStore
from omoide.stores.summaries import Summary, SummaryDraft, SummaryKind, SummaryScope


@runtime_checkable
class _ErasureAware(Protocol):  # TRANSITIONAL: the Protocol side of omoide.stores._erasure_common.ErasureAware
    """What a job that writes people's words reads first (see :class:`~omoide.stores._erasure_common.ErasureAware`)."""

    async def erasure_state(self, workspace_id: str) -> ErasureState:
        """The workspace's erasure generation and erased users (hashed). A summary or import reads it
        before its work, skips erased authors, and passes the generation back when it writes
        (``SummaryDraft.erasure_generation``, ``add_source(erasure_generation=...)``): a write made
        stale by an erasure in between raises :class:`~omoide.errors.ErasureConflict`."""


@runtime_checkable
# ---- memories


@runtime_checkable
class MemoryStore(_ErasureAware, Protocol):
    """Explicit per-user memories (seed 001).

    Contract notes:

    * Every method takes ``workspace_id`` and ``user_id`` and puts both in its SQL: a memory
      id of another user (or workspace) is "not found" — :meth:`get_memory` returns
      ``None``, :meth:`update_memory` and :meth:`delete_memory` raise
      :class:`~omoide.errors.NotFoundError` — never "forbidden", which would leak existence.
    * Vectors are stored per ``(memory_id, model)``, validated like chunk vectors.
    * ``tags`` filters match memories holding every tag given; ``category`` is exact.
    """

    async def insert_memory(
        self, draft: MemoryDraft, *, model: str, vector: npt.NDArray[np.float32] | None
    ) -> MemoryRecord:
        """Store a memory (and its vector for ``model``, when given); return it as stored."""

    async def get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        """The user's memory with this id, or ``None`` (also when it is someone else's)."""

    async def update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        *,
        model: str | None = None,
        vector: npt.NDArray[np.float32] | None = None,
    ) -> MemoryRecord:
        """Change the user's memory (and replace its vector for ``model``); return it as stored.

        Raises:
            NotFoundError: the user has no memory with this id.
        """

    async def delete_memory(self, workspace_id: str, user_id: str, memory_id: int) -> None:
        """Delete the user's memory and its vectors.

        Raises:
            NotFoundError: the user has no memory with this id.
        """

    async def list_memories(
        self,
        workspace_id: str,
        user_id: str,
        *,
        category: str | None = None,
        tags: Sequence[str] = (),
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """The user's memories, newest first (ties: higher id first)."""

    async def memory_vector_search(
        self,
        workspace_id: str,
        user_id: str,
        *,
        model: str,
        query: npt.NDArray[np.float32],
        k: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[MemoryRecord, float]]:
        """The user's ``k`` memories most cosine-similar to ``query`` (exact), best first, with the similarity."""

    async def memory_lexical_search(
        self,
        workspace_id: str,
        user_id: str,
        *,
        tokens: Sequence[str],
        k: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[MemoryRecord, float]]:
        """The user's ``k`` best full-text matches of any of ``tokens``, best first, with the score."""

    async def forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """Apply the erasure rule (``docs/privacy.md``) to the user, in one transaction; the receipt.

        Their memories, their sessions (with every message), the messages they wrote in other
        sessions (whose versions are bumped and persisted compactions cleared), their lines in
        long-term knowledge (chunks rewritten and re-embedded, or dropped; their own archived
        conversations dropped whole), their id in sources' members and participants, their
        summaries and the channel / thread / workspace summaries that drew on them. The
        workspace's erasure generation is bumped and the user recorded (hashed) in
        ``erased_users``. Idempotent: a second call returns zero counts."""


# ---- summaries


@runtime_checkable
class SummaryStore(_ErasureAware, Protocol):
    """Versioned summaries per (workspace, scope, scope id, kind), and the messages they summarise.

    Contract notes:

    * :meth:`save_summary` with ``new_version=True`` stores version ``latest + 1`` atomically
      (two writers never get the same number: the unique constraint plus a retry); with
      ``new_version=False`` it overwrites the latest version's content (version 1 if none).
    * :meth:`scope_messages` reads session messages by their ``created_at`` time: a channel's
      (every session whose ``channel_id`` is the scope id), a thread's, or one user's (the
      messages they wrote), always within one workspace.
    """

    async def latest_summary(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind
    ) -> Summary | None:
        """The newest version, or ``None``."""

    async def summary_history(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, kind: SummaryKind, *, limit: int = 20
    ) -> list[Summary]:
        """Versions, newest first."""

    async def latest_summaries(self, workspace_id: str, scope: SummaryScope, kind: SummaryKind) -> list[Summary]:
        """The newest version of every scope id of this scope in the workspace (by scope id)."""

    async def save_summary(self, draft: SummaryDraft, *, new_version: bool) -> Summary:
        """Store a new version, or overwrite the latest one; return it as stored."""

    async def scope_messages(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, *, since: datetime, limit: int = 2000
    ) -> list[Message]:
        """Messages of the scope created at or after ``since``, oldest first (at most the newest ``limit``)."""

    async def active_scopes(self, *, since: datetime, scope: SummaryScope) -> list[tuple[str, str]]:
        """``(workspace_id, scope_id)`` of the channels / threads / users with messages since ``since``."""


# ---- the store: one backend, one object per role

ROLES = ("sessions", "knowledge", "search", "lexical_index", "memories", "summaries", "api_keys")
"""The role attributes of every :class:`Store`, in the order a newcomer meets them."""


class Store(abc.ABC):
    """One storage backend: opening, migrating and closing it, and one object per role.

    Services take the role they need (``SearchPipeline(store.search)``,
    ``MemoryService(store.memories)``); the role objects of one store share its
    connections.
    """

    url: str
    backend: ClassVar[str]  # "sqlite" or "postgresql"
    sessions: SessionStore
    knowledge: KnowledgeStore
    search: SearchStore
    lexical_index: LexicalIndexStore
    memories: MemoryStore
    summaries: SummaryStore
    api_keys: ApiKeyStore

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (and migrate when the store was created with ``migrate=True``)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close every connection. Idempotent."""

    @abc.abstractmethod
    async def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied (empty when up to date).

        Safe to call concurrently from several processes: exactly one applies each
        version, the others wait and then see it applied.
        """

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """The newest applied migration version (0 for an empty database)."""

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Any:  # TRANSITIONAL: removed once every caller names the role
        for role in ROLES:
            obj = self.__dict__.get(role)
            if obj is not None and obj is not self and hasattr(obj, name):
                return getattr(obj, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


__all__ = [
    "ROLES",
    "Store",
    "SummaryStore",
]
