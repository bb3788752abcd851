"""Explicit per-user memories (seed 001): what a user asked the bot to remember.

Every memory belongs to one user in one workspace; every read and write names both, and
the stores put both in their SQL, so one user can never reach another's memory.

Here: the record types, the argument checks, and :class:`MemoryStore`, the contract that
``sqlite/memories.py`` and ``postgres/memories.py`` implement.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NewType, TypeAlias

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput, NotFoundError
from omoide.stores._checks import BIGINT_MAX, HALFVEC_MAX, check_dimensions, check_int, check_model
from omoide.stores._erasure_common import ErasureAware

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


MEMORY_ACTIONS = ("created", "updated", "merged", "deleted")
"""What a memory event records: remembered anew, changed, a near-duplicate merged into it, deleted."""

DEFAULT_ACTOR = "library"
"""Who changed a memory when the caller does not say (a direct ``mem.memories`` call)."""


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change in a memory's history (``memory_events``): what happened, who did it, the content after.

    It outlives the memory (a deleted one still shows how it came and went) until the user is forgotten.

    Attributes:
        id: the event's id (increasing: the order of the changes).
        workspace_id / user_id / memory_id: whose memory.
        action: ``created``, ``updated``, ``merged`` (a near-duplicate remembered into it) or ``deleted``.
        actor: who or what made the change: ``api``, ``cli``, ``ui``, ``mcp``, ``library``,
            ``tool:remember`` (a model's tool call), ``user:<id>`` (a bot command), ``migration``.
        content: the memory's content after the change (``None`` for ``deleted``).
        created_at: when (UTC).
    """

    id: int
    workspace_id: str
    user_id: str
    memory_id: int
    action: str
    actor: str
    content: str | None
    created_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace_id": self.workspace_id,
            "user_id": self.user_id,
            "memory_id": self.memory_id,
            "action": self.action,
            "actor": self.actor,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
        }


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


# ---- argument checks (no I/O)


def check_scope(workspace_id: object, user_id: object) -> tuple[str, str]:
    """``(workspace_id, user_id)`` as non-empty strings.

    Raises:
        InvalidInput: either is missing, empty or not text.
    """
    for name, value in (("workspace_id", workspace_id), ("user_id", user_id)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{name} must be non-empty text, got {value!r}")
    return str(workspace_id), str(user_id)


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise InvalidInput(f"tags must be a list of text, got {type(tags).__name__}")
    out: list[str] = []
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"tags[{i}] must be non-empty text, got {tag!r}")
        out.append(tag)
    return tuple(out)


def check_draft(draft: object) -> MemoryDraft:
    if not isinstance(draft, MemoryDraft):
        raise InvalidInput(f"insert_memory needs a MemoryDraft, got {type(draft).__name__}")
    check_scope(draft.workspace_id, draft.user_id)
    if not isinstance(draft.content, str) or not draft.content.strip():
        raise InvalidInput("a memory's content must be non-empty text")
    if not isinstance(draft.lexical, str) or not isinstance(draft.category, str) or not draft.category:
        raise InvalidInput("a memory's lexical text and category must be text (the category non-empty)")
    check_tags(draft.tags)
    if not isinstance(draft.metadata, Mapping):
        raise InvalidInput(f"a memory's metadata must be a JSON object, got {type(draft.metadata).__name__}")
    return draft


def check_changes(changes: object) -> MemoryChanges:
    if not isinstance(changes, MemoryChanges):
        raise InvalidInput(f"update_memory needs MemoryChanges, got {type(changes).__name__}")
    if changes.content is not None and (not isinstance(changes.content, str) or not changes.content.strip()):
        raise InvalidInput("a memory's content must be non-empty text")
    if (changes.content is None) != (changes.lexical is None):
        raise InvalidInput("change a memory's content and its lexical text together")
    if changes.category is not None and (not isinstance(changes.category, str) or not changes.category):
        raise InvalidInput("a memory's category must be non-empty text")
    if changes.tags is not None:
        check_tags(changes.tags)
    if changes.metadata is not None and not isinstance(changes.metadata, Mapping):
        raise InvalidInput("a memory's metadata must be a JSON object")
    return changes


MemoryVector: TypeAlias = tuple[str, npt.NDArray[np.float32]]
"""A checked ``(model, float32 vector)`` pair."""


def check_memory_vector(model: object, vector: object) -> MemoryVector:
    """``(model, float32 vector)``: one-dimensional, finite, within the halfvec range.

    Raises:
        InvalidInput: a bad model name or vector.
    """
    name = check_model(model)
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the memory's vector is not numeric: {exc}") from exc
    if array.ndim != 1 or array.shape[0] == 0:
        raise InvalidInput(f"the memory's vector must be one-dimensional and non-empty, got shape {array.shape}")
    check_dimensions(array.shape[0])
    if not np.isfinite(array).all() or float(np.abs(array).max()) > HALFVEC_MAX:
        raise InvalidInput("the memory's vector holds NaN, an infinity or a value beyond ±65504")
    return name, array


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """A checked search over one user's memories, as the backends receive it: whose, how many,
    and the filters (``category`` exact, every one of ``tags``)."""

    workspace_id: str
    user_id: str
    k: int
    category: str | None
    tags: tuple[str, ...]


def check_query(workspace_id: object, user_id: object, k: object, category: str | None, tags: object) -> MemoryQuery:
    ws, user = check_scope(workspace_id, user_id)
    return MemoryQuery(ws, user, check_int("k", k, minimum=1), category, check_tags(tags))


def check_actor(actor: object) -> str:
    """``actor`` as 1–200 characters of text.

    Raises:
        InvalidInput: it is empty, too long or not text.
    """
    if not isinstance(actor, str) or not actor.strip() or len(actor) > 200:
        raise InvalidInput(f"actor must be 1-200 characters of text (e.g. 'api', 'tool:remember'), got {actor!r}")
    return actor.strip()


def check_memory_id(memory_id: object) -> int:
    return check_int("memory_id", memory_id, minimum=1, maximum=BIGINT_MAX)


def memory_not_found(memory_id: int) -> NotFoundError:
    return NotFoundError(
        f"no memory with id {memory_id} for this user; list the user's memories to see their ids",
        memory_id=memory_id,
    )


# ---- the contract


class MemoryStore(ErasureAware, abc.ABC):
    """Explicit per-user memories (seed 001), and the erasure of a user.

    Contract notes:

    * Every method takes ``workspace_id`` and ``user_id`` and puts both in its SQL: a memory
      id of another user (or workspace) is "not found" — :meth:`get_memory` returns
      ``None``, :meth:`update_memory` and :meth:`delete_memory` raise
      :class:`~omoide.errors.NotFoundError` — never "forbidden", which would leak existence.
    * Vectors are stored per ``(memory_id, model)``, validated like chunk vectors.
    * ``tags`` filters match memories holding every tag given; ``category`` is exact.
    * Every public method checks its arguments here (an :class:`~omoide.errors.InvalidInput`
      when one is bad) and then calls the backend's ``_<name>`` with checked values.
    """

    async def insert_memory(
        self,
        draft: MemoryDraft,
        *,
        model: str,
        vector: npt.NDArray[np.float32] | None,
        actor: str = DEFAULT_ACTOR,
    ) -> MemoryRecord:
        """Store a memory (and its vector for ``model``, when given) and its ``created`` event; return it."""
        check_draft(draft)
        who = check_actor(actor)
        if vector is None:
            return await self._insert_memory(draft, model, None, who)
        name, array = check_memory_vector(model, vector)
        return await self._insert_memory(draft, name, array, who)

    async def get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None:
        """The user's memory with this id, or ``None`` (also when it is someone else's)."""
        ws, user = check_scope(workspace_id, user_id)
        return await self._get_memory(ws, user, check_memory_id(memory_id))

    async def update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        *,
        model: str | None = None,
        vector: npt.NDArray[np.float32] | None = None,
        actor: str = DEFAULT_ACTOR,
        action: str = "updated",
    ) -> MemoryRecord:
        """Change the user's memory (and replace its vector for ``model``); return it as stored.

        New content drops the memory's old vectors (they describe the old text). The change is
        recorded in the memory's history as ``action`` (``updated``, or ``merged`` when a
        near-duplicate was remembered into it) by ``actor``, in the same transaction.

        Raises:
            NotFoundError: the user has no memory with this id.
        """
        ws, user = check_scope(workspace_id, user_id)
        mid = check_memory_id(memory_id)
        check_changes(changes)
        who = check_actor(actor)
        if action not in ("updated", "merged"):
            raise InvalidInput(f"update_memory records 'updated' or 'merged', got {action!r}")
        if vector is None:
            return await self._update_memory(ws, user, mid, changes, None, who, action)
        return await self._update_memory(ws, user, mid, changes, check_memory_vector(model, vector), who, action)

    async def delete_memory(
        self, workspace_id: str, user_id: str, memory_id: int, *, actor: str = DEFAULT_ACTOR
    ) -> None:
        """Delete the user's memory and its vectors; its history gains a ``deleted`` event.

        Raises:
            NotFoundError: the user has no memory with this id.
        """
        ws, user = check_scope(workspace_id, user_id)
        await self._delete_memory(ws, user, check_memory_id(memory_id), check_actor(actor))

    async def memory_history(
        self, workspace_id: str, user_id: str, memory_id: int, *, limit: int = 100
    ) -> list[MemoryEvent]:
        """The user's memory's events, oldest first (at most ``limit``, the newest kept); empty when the
        user never had a memory with this id (or it was someone else's)."""
        ws, user = check_scope(workspace_id, user_id)
        return await self._memory_history(ws, user, check_memory_id(memory_id), check_int("limit", limit, minimum=1))

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
        ws, user = check_scope(workspace_id, user_id)
        lim = check_int("limit", limit, minimum=0)
        off = check_int("offset", offset, minimum=0)
        return await self._list_memories(ws, user, category, check_tags(tags), lim, off)

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
        """The user's ``k`` memories most cosine-similar to ``query`` (exact), best first, with the similarity.

        SQLite scans the user's cached, normalised vectors; PostgreSQL orders the user's rows by
        cosine distance.
        """
        wanted = check_query(workspace_id, user_id, k, category, tags)
        name, vector = check_memory_vector(model, query)
        return await self._memory_vector_search(wanted, name, vector)

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
        """The user's ``k`` best BM25 matches of any of ``tokens``, best first, with the score.

        Only the user's own memories are scored (SQLite: their cached inverted index;
        PostgreSQL: ``lexical_tsv``).
        """
        wanted = check_query(workspace_id, user_id, k, category, tags)
        return await self._memory_lexical_search(wanted, check_tags(tokens))

    async def memory_recall(
        self,
        workspace_id: str,
        user_id: str,
        *,
        model: str,
        query: npt.NDArray[np.float32],
        tokens: Sequence[str],
        k: int,
        limit: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[MemoryHit]:
        """Hybrid recall in one call: the user's ``k`` candidates by vector and by BM25, fused with
        Reciprocal Rank Fusion (k = 60), then only the ``limit`` best fused memories are read."""
        wanted = check_query(workspace_id, user_id, k, category, tags)
        name, vector = check_memory_vector(model, query)
        most = check_int("limit", limit, minimum=1)
        return await self._memory_recall(wanted, name, vector, check_tags(tokens), most)

    async def forget_user(self, workspace_id: str, user_id: str) -> ForgetReport:
        """Apply the erasure rule (``docs/privacy.md``) to the user, in one transaction; the receipt.

        Their memories and their history, their sessions (with every message), the messages they wrote in
        other sessions (whose versions are bumped and persisted compactions cleared), their lines in
        long-term knowledge (chunks rewritten and re-embedded, or dropped; their own archived
        conversations dropped whole), their id in sources' members and participants, their
        summaries and the channel / thread / workspace summaries that drew on them. The
        workspace's erasure generation is bumped and the user recorded (hashed) in
        ``erased_users``. Idempotent: a second call returns zero counts."""
        ws, user = check_scope(workspace_id, user_id)
        return await self._forget_user(ws, user)

    @abc.abstractmethod
    async def _insert_memory(
        self, draft: MemoryDraft, model: str, vector: npt.NDArray[np.float32] | None, actor: str
    ) -> MemoryRecord: ...

    @abc.abstractmethod
    async def _get_memory(self, workspace_id: str, user_id: str, memory_id: int) -> MemoryRecord | None: ...

    @abc.abstractmethod
    async def _update_memory(
        self,
        workspace_id: str,
        user_id: str,
        memory_id: int,
        changes: MemoryChanges,
        vector: MemoryVector | None,
        actor: str,
        action: str,
    ) -> MemoryRecord: ...

    @abc.abstractmethod
    async def _delete_memory(self, workspace_id: str, user_id: str, memory_id: int, actor: str) -> None: ...

    @abc.abstractmethod
    async def _memory_history(
        self, workspace_id: str, user_id: str, memory_id: int, limit: int
    ) -> list[MemoryEvent]: ...

    @abc.abstractmethod
    async def _list_memories(
        self, workspace_id: str, user_id: str, category: str | None, tags: tuple[str, ...], limit: int, offset: int
    ) -> list[MemoryRecord]: ...

    @abc.abstractmethod
    async def _memory_vector_search(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32]
    ) -> list[tuple[MemoryRecord, float]]: ...

    @abc.abstractmethod
    async def _memory_lexical_search(
        self, wanted: MemoryQuery, tokens: tuple[str, ...]
    ) -> list[tuple[MemoryRecord, float]]: ...

    @abc.abstractmethod
    async def _memory_recall(
        self, wanted: MemoryQuery, model: str, query: npt.NDArray[np.float32], tokens: tuple[str, ...], limit: int
    ) -> list[MemoryHit]: ...

    @abc.abstractmethod
    async def _forget_user(self, workspace_id: str, user_id: str) -> ForgetReport: ...


__all__ = [
    "DEFAULT_ACTOR",
    "DEFAULT_CATEGORY",
    "MEMORY_ACTIONS",
    "ForgetReport",
    "MemoryChanges",
    "MemoryDraft",
    "MemoryEvent",
    "MemoryHit",
    "MemoryId",
    "MemoryQuery",
    "MemoryRecord",
    "MemoryStore",
    "MemoryVector",
    "RememberResult",
    "memory_not_found",
]
