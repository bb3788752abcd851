"""The memory service: remember, recall, list, get, update, delete, forget a user (seed 001).

Recall is hybrid like knowledge search: the user's memories ranked by vector similarity and
by full text (omoide's own tokens: Japanese morphology or n-grams), fused with Reciprocal
Rank Fusion (one constant, 60). Remembering something the user already has — cosine
similarity at or above ``memory_dedup_threshold`` to their closest memory — updates that
memory (new wording, tags merged, metadata merged) and says so, instead of storing a
near-duplicate.

Every call names the workspace and the user; the store scopes its SQL by both, so user B
passing user A's memory id gets :class:`~omoide.errors.NotFoundError`, never A's memory.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import structlog

from omoide.errors import InvalidInput, NotFoundError
from omoide.models import MAX_JSON_DEPTH, json_depth
from omoide.observability.operations import operation
from omoide.providers.base import Embedder
from omoide.settings import Settings
from omoide.stores.memories import (
    DEFAULT_ACTOR,
    DEFAULT_CATEGORY,
    ForgetReport,
    MemoryChanges,
    MemoryDraft,
    MemoryEvent,
    MemoryHit,
    MemoryRecord,
    MemoryStore,
    RememberResult,
)
from omoide.text import tokenize_for_search

log = structlog.get_logger(__name__)

CATEGORY_PATTERN = re.compile(r"^[\w\-.:]{1,64}$")
MAX_TAGS = 32
CANDIDATES = 10
"""Memories taken from each list before fusion (at least; twice the limit when larger)."""


def _ident(name: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidInput(f"{name} must be text or an integer id, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise InvalidInput(f"{name} must not be empty")
    return text


def _category(value: object) -> str:
    if not isinstance(value, str) or not CATEGORY_PATTERN.match(value):
        raise InvalidInput(f"category must be 1–64 letters, digits or - _ . : (e.g. 'preference'), got {value!r}")
    return value


def _tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"tags must be a list of text, got {type(value).__name__}")
    out: list[str] = []
    for i, tag in enumerate(value):
        if not isinstance(tag, str) or not tag.strip() or len(tag) > 64:
            raise InvalidInput(f"tags[{i}] must be 1–64 characters of text, got {tag!r}")
        if tag.strip() not in out:
            out.append(tag.strip())
    if len(out) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags per memory, got {len(out)}")
    return tuple(out)


REMEMBER_LOCK_STRIPES = 64
"""Locks that one user's remembers take turns on (a user's is one of them)."""

MAX_METADATA_BYTES = 16 * 1024
"""The largest metadata of a memory, in UTF-8 bytes of its JSON (its content is capped by
``OMOIDE_MEMORY_MAX_CHARS``; a page of memories carries the metadata of each)."""


def _metadata(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"metadata must be a JSON object (a dict), got {type(value).__name__}")
    if (depth := json_depth(value)) > MAX_JSON_DEPTH:
        raise InvalidInput(f"metadata is nested {depth} levels deep; at most {MAX_JSON_DEPTH} are stored")
    size = len(
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    )  # the store checks the rest
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(f"metadata is {size:,} bytes of JSON; at most {MAX_METADATA_BYTES:,} are stored")
    return dict(value)


class MemoryService:
    """Per-user explicit memories over a :class:`~omoide.stores.memories.MemoryStore`.

    Args:
        store: the memory store (``store.memories``).
        settings: ``memory_*`` settings.
        embedder: returns the embedder (called when first needed).

    Example:
        >>> result = await mem.memories.remember("g1", "u1", "誕生日は3月15日")    # doctest: +SKIP
        >>> [h.memory.content for h in await mem.memories.recall("g1", "u1", "誕生日はいつ？")]  # doctest: +SKIP
        ['誕生日は3月15日']
    """

    def __init__(self, store: MemoryStore, settings: Settings, embedder: Callable[[], Embedder]) -> None:
        self.store = store
        self.settings = settings
        self._embedder = embedder
        # remember is check-then-write: one user's remembers take turns (in this process), so the same
        # memory sent twice at once is merged like one sent twice in a row. Striped: bounded memory.
        self._remember_locks = tuple(asyncio.Lock() for _ in range(REMEMBER_LOCK_STRIPES))

    def _content(self, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput("a memory's content must be non-empty text: say what to remember")
        text = value.strip()
        if len(text) > self.settings.memory_max_chars:
            raise InvalidInput(
                f"a memory may hold at most {self.settings.memory_max_chars} characters, got {len(text)}; "
                "remember a shorter note (or raise OMOIDE_MEMORY_MAX_CHARS)"
            )
        return text

    async def remember(
        self,
        workspace: str | int,
        user: str | int,
        content: str,
        *,
        category: str = DEFAULT_CATEGORY,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        actor: str = DEFAULT_ACTOR,
    ) -> RememberResult:
        """Remember ``content`` for the user; a near-duplicate of one of theirs is updated instead.

        The memory's history records ``created`` (or ``merged`` for a near-duplicate) by
        ``actor``: who asked (``api``, ``cli``, ``tool:remember``, ``user:<id>``…).

        Raises:
            InvalidInput: empty or too long content, a bad category, tags or metadata.
        """
        ws, uid = _ident("workspace", workspace), _ident("user", user)
        text = self._content(content)
        cat, tag_list, meta = _category(category), _tags(tags), _metadata(metadata)
        embedder = self._embedder()
        vector = np.asarray((await embedder.embed_documents([text]))[0], dtype=np.float32)
        async with self._remember_locks[hash((ws, uid)) % REMEMBER_LOCK_STRIPES]:
            return await self._remember(ws, uid, text, category, cat, tag_list, meta, embedder, vector, actor)

    async def _remember(
        self,
        ws: str,
        uid: str,
        text: str,
        category: str,
        cat: str,
        tag_list: tuple[str, ...],
        meta: dict[str, Any],
        embedder: Embedder,
        vector: np.ndarray,
        actor: str,
    ) -> RememberResult:
        """The check-then-write half of :meth:`remember`, under the user's lock."""
        nearest = await self.store.memory_vector_search(ws, uid, model=embedder.model_id, query=vector, k=1)
        if nearest and nearest[0][1] >= self.settings.memory_dedup_threshold:
            old, similarity = nearest[0]
            merged_tags = tuple(dict.fromkeys((*old.tags, *tag_list)))
            changes = MemoryChanges(
                content=text,
                lexical=" ".join(tokenize_for_search(text)),
                category=cat if category != DEFAULT_CATEGORY else None,
                tags=merged_tags,
                metadata={**old.metadata, **meta},
            )
            stored = await self.store.update_memory(
                ws, uid, old.id, changes, model=embedder.model_id, vector=vector, actor=actor, action="merged"
            )
            log.info("memory_updated_duplicate", memory_id=int(old.id), similarity=round(similarity, 4))
            return RememberResult(stored, updated=True, similarity=similarity)
        draft = MemoryDraft(ws, uid, text, " ".join(tokenize_for_search(text)), cat, tag_list, meta)
        stored = await self.store.insert_memory(draft, model=embedder.model_id, vector=vector, actor=actor)
        return RememberResult(stored, updated=False, similarity=nearest[0][1] if nearest else None)

    async def recall(
        self,
        workspace: str | int,
        user: str | int,
        query: str,
        *,
        limit: int | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> builtins.list[MemoryHit]:
        """The user's memories that best match ``query``: vector + full text, fused with RRF.

        Raises:
            InvalidInput: an empty query, a bad limit, category or tags.
        """
        ws, uid = _ident("workspace", workspace), _ident("user", user)
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the recall query must be non-empty text")
        top = self.settings.memory_recall_limit if limit is None else limit
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 100:
            raise InvalidInput(f"limit must be an integer from 1 to 100, got {top!r}")
        cat = None if category is None else _category(category)
        tag_list = _tags(tags)
        with operation("recall", workspace=ws) as traced:
            embedder = self._embedder()
            vector = np.asarray(await embedder.embed_query(query), dtype=np.float32)
            k = max(CANDIDATES, 2 * top)
            tokens = tokenize_for_search(query)
            hits = await self.store.memory_recall(  # both rankings, RRF and the rows in one store call
                ws,
                uid,
                model=embedder.model_id,
                query=vector,
                tokens=tokens,
                k=k,
                limit=top,
                category=cat,
                tags=tag_list,
            )
            traced.set(count=len(hits))
        return hits

    async def list(
        self,
        workspace: str | int,
        user: str | int,
        *,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        page: int = 1,
        page_size: int = 20,
        offset: int = 0,
    ) -> builtins.list[MemoryRecord]:
        """One page of the user's memories, newest first (``page`` from 1), after skipping
        ``offset`` more memories.

        Raises:
            InvalidInput: a bad page, page size, offset, category or tags.
        """
        ws, uid = _ident("workspace", workspace), _ident("user", user)
        for name, value, least, most in (
            ("page", page, 1, 1_000_000),
            ("page_size", page_size, 1, 200),
            ("offset", offset, 0, 10**9),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
                raise InvalidInput(f"{name} must be an integer from {least} to {most}, got {value!r}")
        return await self.store.list_memories(
            ws,
            uid,
            category=None if category is None else _category(category),
            tags=_tags(tags),
            limit=page_size,
            offset=(page - 1) * page_size + offset,
        )

    async def get(self, workspace: str | int, user: str | int, memory_id: int) -> MemoryRecord:
        """The user's memory with this id.

        Raises:
            NotFoundError: the user has no memory with this id (whoever else may have one).
        """
        found = await self.store.get_memory(_ident("workspace", workspace), _ident("user", user), memory_id)
        if found is None:
            raise NotFoundError(
                f"no memory with id {memory_id} for this user; list the user's memories to see their ids",
                memory_id=memory_id,
            )
        return found

    async def update(
        self,
        workspace: str | int,
        user: str | int,
        memory_id: int,
        *,
        content: str | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        actor: str = DEFAULT_ACTOR,
    ) -> MemoryRecord:
        """Change the user's memory; new content is embedded again. History: ``updated`` by ``actor``.

        Raises:
            NotFoundError: the user has no memory with this id.
            InvalidInput: nothing to change, or a bad value.
        """
        ws, uid = _ident("workspace", workspace), _ident("user", user)
        if content is None and category is None and tags is None and metadata is None:
            raise InvalidInput("nothing to update: give content, category, tags or metadata")
        text = None if content is None else self._content(content)
        changes = MemoryChanges(
            content=text,
            lexical=None if text is None else " ".join(tokenize_for_search(text)),
            category=None if category is None else _category(category),
            tags=None if tags is None else _tags(tags),
            metadata=None if metadata is None else _metadata(metadata),
        )
        if text is None:
            return await self.store.update_memory(ws, uid, memory_id, changes, actor=actor)
        embedder = self._embedder()
        vector = np.asarray((await embedder.embed_documents([text]))[0], dtype=np.float32)
        return await self.store.update_memory(
            ws, uid, memory_id, changes, model=embedder.model_id, vector=vector, actor=actor
        )

    async def delete(
        self, workspace: str | int, user: str | int, memory_id: int, *, actor: str = DEFAULT_ACTOR
    ) -> None:
        """Delete the user's memory (its history keeps a ``deleted`` event by ``actor``).

        Raises:
            NotFoundError: the user has no memory with this id.
        """
        await self.store.delete_memory(_ident("workspace", workspace), _ident("user", user), memory_id, actor=actor)

    async def history(
        self, workspace: str | int, user: str | int, memory_id: int, *, limit: int = 100
    ) -> builtins.list[MemoryEvent]:
        """How the user's memory came to be: its events (created / updated / merged / deleted, by whom,
        the content after), oldest first; the newest ``limit`` of them. A deleted memory keeps its
        history until the user is forgotten.

        Raises:
            NotFoundError: the user never had a memory with this id.
            InvalidInput: a bad limit.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be an integer from 1 to 1000, got {limit!r}")
        events = await self.store.memory_history(
            _ident("workspace", workspace), _ident("user", user), memory_id, limit=limit
        )
        if not events:
            raise NotFoundError(
                f"no memory with id {memory_id} for this user, now or before; list the user's memories to see their ids",
                memory_id=memory_id,
            )
        return events

    async def forget_user(self, workspace: str | int, user: str | int) -> ForgetReport:
        """The erasure rule (``docs/privacy.md``) in the store: everything but the JSONL transcripts,
        which :meth:`omoide.Memory.forget_user` scrubs too."""
        report = await self.store.forget_user(_ident("workspace", workspace), _ident("user", user))
        log.info("user_forgotten", **report.as_dict())
        return report


__all__ = ["MemoryService"]
