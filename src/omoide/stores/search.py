"""The search contract: :class:`SearchStore` (rankings, then chunks by id), its filters and hit types.

Search filters: one workspace (required) plus optional channel/thread/author/type/time limits.

Every store query is scoped to exactly one workspace, so a search can never return another
guild's or agent's chunks. The other filters narrow it further and are applied *inside*
the database query (never after a top-k cut, which could return fewer than k rows):

* ``channel_ids`` / ``thread_ids`` / ``source_types``: the chunk's value is one of them;
* ``author_ids``: at least one of the chunk's authors is one of them;
* ``since`` / ``until``: the chunk's time span overlaps ``[since, until]`` (both inclusive);
  a chunk without any timestamp is excluded when either bound is given.

An empty tuple means "no limit" for that field.

Visibility (migration 7 on SQLite, 6 on PostgreSQL): a knowledge source, and each of its
chunks, is either public to its workspace or private to a list of member user ids (a DM,
a group DM, a private channel or thread).

* ``viewer=None`` and ``public_only=False`` (the default): **every** chunk of the
  workspace, private ones included. This is for trusted callers that speak for the whole
  workspace: library code, the admin CLI, workers. A host answering a *person* must pass
  that person as ``viewer``.
* ``viewer="U123"``: public chunks, plus the private chunks whose members include ``U123``.
* ``public_only=True``: public chunks only (a channel conversation with no one user, e.g.
  ``build_context`` for a channel-wide session).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidInput
from omoide.models import ensure_utc
from omoide.stores._checks import check_int, check_model
from omoide.stores.knowledge import ChunkId, SourceId
from omoide.stores.units import ChunkUnits

R = TypeVar("R")

MAX_K = 1000
"""The most rows one store search returns (pgvector's ``hnsw.ef_search`` is at most 1000)."""


def _texts(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInput(f"SearchFilters.{name} must be a tuple of strings, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item or "\x00" in item:
            raise InvalidInput(f"SearchFilters.{name} must hold non-empty strings without NUL, got {item!r}")
        if item not in out:
            out.append(item)
    return tuple(out)


def _time(name: str, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInput(f"SearchFilters.{name} must be a datetime or None, got {type(value).__name__}")
    return ensure_utc(value)


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Where to search (see the module docstring).

    Example:
        >>> SearchFilters("guild-1", channel_ids=("general",))
        SearchFilters(workspace_id='guild-1', channel_ids=('general',), thread_ids=(), author_ids=(), source_types=(), since=None, until=None, viewer=None, public_only=False)

    Raises:
        InvalidInput: an empty workspace, a non-string id, a naive-or-not datetime of the
            wrong type, ``since`` after ``until``, or both ``viewer`` and ``public_only``. Lists are accepted and stored as
            tuples (duplicates dropped); naive datetimes are taken to be UTC.
    """

    workspace_id: str
    channel_ids: tuple[str, ...] = ()
    thread_ids: tuple[str, ...] = ()
    author_ids: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    viewer: str | None = None
    public_only: bool = False

    def __post_init__(self) -> None:
        ws = self.workspace_id
        if not isinstance(ws, str) or not ws.strip() or "\x00" in ws:
            raise InvalidInput(f"SearchFilters.workspace_id must be a non-empty workspace id, got {ws!r}")
        for name in ("channel_ids", "thread_ids", "author_ids", "source_types"):
            object.__setattr__(self, name, _texts(name, getattr(self, name)))
        since = _time("since", self.since)
        until = _time("until", self.until)
        if since is not None and until is not None and since > until:
            raise InvalidInput(f"SearchFilters.since ({since.isoformat()}) is after until ({until.isoformat()})")
        object.__setattr__(self, "since", since)
        object.__setattr__(self, "until", until)
        viewer = self.viewer
        if viewer is not None and (not isinstance(viewer, str) or not viewer or "\x00" in viewer):
            raise InvalidInput(f"SearchFilters.viewer must be a non-empty user id or None, got {viewer!r}")
        if not isinstance(self.public_only, bool):
            raise InvalidInput(f"SearchFilters.public_only must be a bool, got {type(self.public_only).__name__}")
        if viewer is not None and self.public_only:
            raise InvalidInput("SearchFilters: give either viewer (public + their private) or public_only, not both")

    @property
    def narrows(self) -> bool:
        """Whether anything beyond the workspace is filtered."""
        return bool(
            self.channel_ids
            or self.thread_ids
            or self.author_ids
            or self.source_types
            or self.since is not None
            or self.until is not None
        )

    @property
    def restricts_visibility(self) -> bool:
        """Whether some private chunks may be left out (a ``viewer`` or ``public_only``)."""
        return self.viewer is not None or self.public_only


def check_members(members: object) -> list[str]:
    """Member user ids of a private source or session, without duplicates, in order.

    Raises:
        InvalidInput: a bare string, or an empty / non-string id.
    """
    return list(_texts("members", members))


def check_k(k: object) -> int:
    """``k`` as an int in ``1..MAX_K``.

    Raises:
        InvalidInput: not an integer, or out of range.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise InvalidInput(f"k must be an integer between 1 and {MAX_K}, got {type(k).__name__}")
    if not 1 <= int(k) <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    return int(k)


def check_filters(filters: object) -> SearchFilters:
    """``filters`` if it is a :class:`SearchFilters`.

    Raises:
        InvalidInput: anything else (a bare workspace id, a dict, ``None``).
    """
    if not isinstance(filters, SearchFilters):
        raise InvalidInput(
            "filters must be omoide.stores.search.SearchFilters (the workspace is required), "
            f"got {type(filters).__name__}"
        )
    return filters


def clean_tokens(tokens: object) -> list[str]:
    """Query tokens without empties and duplicates, in order (from ``tokenize_for_search``).

    Raises:
        InvalidInput: ``tokens`` is a bare string or holds a non-string.
    """
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise InvalidInput(
            "tokens must be a sequence of search tokens (use omoide.text.tokenize_for_search), "
            f"got {type(tokens).__name__}"
        )
    out: list[str] = []
    seen: set[str] = set()
    for token in tokens:
        if not isinstance(token, str):
            raise InvalidInput(f"search tokens must be strings, got {type(token).__name__}")
        token = token.replace("\x00", "").strip()
        if token and token not in seen:
            seen.add(token)
            out.append(token)
    return out


def check_query_vector(query: object) -> npt.NDArray[np.float32]:
    """A query vector as a 1-D float32 array: finite, not all zeros, at most 16,000 values.

    Raises:
        InvalidInput: anything else.
    """
    try:
        vector = np.asarray(query, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"the query vector must be a sequence of numbers: {exc}") from exc
    if vector.ndim != 1 or not 1 <= vector.shape[0] <= 16_000:
        raise InvalidInput(f"the query vector must be 1-D with 1..16000 values, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        raise InvalidInput("the query vector holds NaN or infinite values")
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise InvalidInput("the query vector is all zeros: cosine similarity is undefined")
    return vector


# ---- what a search returns
# What a store's search returns: :class:`ChunkHit`, one retrieved chunk with its source.
#
# Scores: **higher is better** in every list. Vector search scores are cosine similarity
# (``1 - cosine distance``, in ``[-1, 1]``); lexical scores are the backend's relevance
# (BM25: SQLite's ``-bm25()``, PostgreSQL's own in ``omoide.stores.postgres._bm25``), comparable only within one list, so
# lists are fused by rank (RRF), never by score.


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """One chunk found by a search (or fetched by id), with what a citation needs.

    Attributes:
        chunk_id / source_id: the chunk and its knowledge source.
        score: higher is better (see the module docstring); ``0.0`` from ``fetch_chunks``.
        rank: 1-based position in the list it came from; ``0`` from ``fetch_chunks``.
        content: the chunk text shown to a model and a user.
        location: where it came from (session/seq range or platform message ids), as stored.
        channel_id / thread_id / author_ids / started_at / ended_at: chunk metadata.
        source_type / source_title / source_uri: the source (``discord_channel``, …; its
            title; a jump URL when known).
    """

    chunk_id: ChunkId
    source_id: SourceId
    score: float
    rank: int
    content: str
    location: Mapping[str, Any]
    channel_id: str | None
    thread_id: str | None
    author_ids: tuple[str, ...]
    started_at: datetime | None
    ended_at: datetime | None
    source_type: str
    source_title: str
    source_uri: str | None


class RankedChunk(NamedTuple):
    """One entry of a ranked list: a chunk id and its score in that list (higher is better).

    What :meth:`SearchStore.vector_ranking` and :meth:`SearchStore.lexical_ranking`
    return: the pipeline fuses lists by rank and then fetches only the chunks it shows.
    """

    chunk_id: ChunkId
    score: float


# ---- the contract


def _unit_ids(chunk_ids: Sequence[ChunkId], model: str | None) -> list[int]:
    """Checked, distinct chunk ids of a units read, after checking its model name."""
    ids = list(dict.fromkeys(check_int("chunk_ids[]", i) for i in chunk_ids))
    if model is not None:
        check_model(model)
    return ids


def chunks_with_units(
    ids: Sequence[int], rows: Mapping[int, R], hit: Callable[[R], ChunkHit], units: Callable[[R], ChunkUnits]
) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
    """A backend's rows of :meth:`SearchStore.fetch_chunks_with_units` (by chunk id) as its
    result: the chunks in the order of ``ids`` (missing ones skipped) and their units."""
    found = [rows[i] for i in ids if i in rows]
    return [hit(row) for row in found], {ChunkId(i): units(rows[i]) for i in ids if i in rows}


class SearchStore(abc.ABC):
    """Retrieval over knowledge chunks: ranked ids per list (vector, lexical), then the chunks by id.

    Contract notes:

    * Every ranking is scoped to ``filters.workspace_id``: a chunk of another workspace is
      never returned. All filters (:class:`SearchFilters`) are applied inside the database
      query, so a ranking holds ``k`` chunks whenever at least ``k`` chunks match
      (PostgreSQL: HNSW iterative scan, ``hnsw.iterative_scan``).
    * Rankings come best first (ties: lower id first); **higher scores are better**: cosine
      similarity (``1 - cosine distance``) for vectors, BM25 for lexical (SQLite:
      ``-bm25()``; PostgreSQL: ``omoide.stores.postgres._bm25``). Compare ranks across
      lists, not scores (the search pipeline fuses them by rank, RRF).
    * ``k`` is between 1 and :data:`MAX_K`; anything else is an
      :class:`~omoide.errors.InvalidInput`.
    * A ranking reads no chunk row: the pipeline fuses the lists and then fetches only the
      chunks it shows (:meth:`fetch_chunks`).
    """

    async def vector_ranking(
        self, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        """The ``k`` chunks whose ``model`` vectors are most cosine-similar to ``query``: their ids
        and similarities, best first.

        SQLite scans a cached, normalised matrix per workspace and model (a large workspace
        through a projection first, the best rows of it scored exactly: ``_prefilter``);
        PostgreSQL orders by ``(embedding::halfvec(D)) <=> $q`` with the model as a literal,
        so the model's partial HNSW index (``ensure_vector_index``) is used.

        Raises:
            InvalidInput: bad ``k``/filters/model, a non-finite or all-zero query, or a
                query size that differs from the stored vectors.
        """

        check_model(model)
        vector, wanted, limit = check_query_vector(query), check_filters(filters), check_k(k)
        return await self._vector_ranking(model, vector, wanted, limit)

    async def lexical_ranking(self, *, tokens: Sequence[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        """The ``k`` best full-text matches of *any* of ``tokens`` (an OR query): their ids and
        BM25 scores, best first.

        ``tokens`` come from :func:`omoide.text.tokenize_for_search`, the function that
        wrote the index (check :meth:`lexical_tokenizer`); empty and repeated tokens are
        dropped. No tokens → ``[]``.

        Raises:
            InvalidInput: bad ``k``/filters, or ``tokens`` is not a sequence of strings.
        """
        terms, wanted, limit = clean_tokens(tokens), check_filters(filters), check_k(k)
        if not terms:
            return []
        return await self._lexical_ranking(terms, wanted, limit)

    async def fetch_chunks(self, chunk_ids: Sequence[ChunkId]) -> list[ChunkHit]:
        """Chunks by id in the order given (duplicates once, unknown ids skipped), with
        ``score=0.0`` and ``rank=0``: the chunks a fused ranking shows, for rerankers and
        answer display.

        Raises:
            InvalidInput: an id is not an integer.
        """

        ids = list(dict.fromkeys(check_int("chunk_ids[]", i) for i in chunk_ids))
        if not ids:
            return []
        return await self._fetch_chunks(ids)

    async def fetch_units(self, chunk_ids: Sequence[ChunkId], *, model: str | None) -> dict[ChunkId, ChunkUnits]:
        """The units of chunks (:mod:`omoide.stores.units`): each line's search tokens and,
        with ``model``, the unit vectors stored with that model's vector. Chunks that do not
        exist are left out; a chunk without units yet has ``None`` fields.

        Raises:
            InvalidInput: an id is not an integer, or a bad model name.
        """
        ids = _unit_ids(chunk_ids, model)
        return await self._fetch_units(ids, model) if ids else {}

    async def fetch_chunks_with_units(
        self,
        chunk_ids: Sequence[ChunkId],
        *,
        model: str | None,
        workspace_id: str | None = None,
        reader: bool = True,
    ) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
        """:meth:`fetch_chunks` and :meth:`fetch_units` of the same ids in one query: the
        search pipeline reads the fused chunks and their units together (one round trip).

        ``workspace_id``: the workspace the ids were ranked in, a routing hint — on Citus a read by
        id alone runs on every shard, with the workspace on the one shard holding it. Ids of
        another workspace may then be left out; SQLite ignores it.

        ``reader=False`` leaves the line reader's vectors unread (``ChunkUnits.reader`` ``None``):
        a search that will not use them does not read their ~10 KB a chunk.

        Raises:
            InvalidInput: an id is not an integer, or a bad model name.
        """
        ids = _unit_ids(chunk_ids, model)
        workspace = None if workspace_id is None else str(workspace_id)
        return await self._fetch_chunks_with_units(ids, model, workspace, bool(reader)) if ids else ([], {})

    async def lexical_tokenizer(self) -> str | None:
        """Name of the tokenizer that wrote the lexical index (``search_tokenizer_name()`` at
        write time), ``"mixed"`` when different ones wrote it, ``None`` before any chunk.

        Every search asks. PostgreSQL reuses the answer for a few seconds
        (``TOKENIZER_TTL``): the store's own chunk writes and
        :meth:`~omoide.stores.lexical_index.LexicalIndexStore.set_lexical_tokenizer` forget
        it at once, another process's are seen within that time.
        """
        return await self._lexical_tokenizer()

    @abc.abstractmethod
    async def _vector_ranking(
        self, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
    ) -> list[RankedChunk]:
        """Rank a checked query vector (backend)."""

    @abc.abstractmethod
    async def _lexical_ranking(self, terms: list[str], filters: SearchFilters, k: int) -> list[RankedChunk]:
        """Rank checked, non-empty ``terms`` (backend)."""

    @abc.abstractmethod
    async def _fetch_chunks(self, ids: list[int]) -> list[ChunkHit]:
        """Read checked, distinct, non-empty ``ids`` in that order (backend)."""

    @abc.abstractmethod
    async def _fetch_units(self, ids: list[int], model: str | None) -> dict[ChunkId, ChunkUnits]:
        """Read the units of checked, distinct, non-empty ``ids`` (backend)."""

    @abc.abstractmethod
    async def _fetch_chunks_with_units(
        self, ids: list[int], model: str | None, workspace_id: str | None, reader: bool
    ) -> tuple[list[ChunkHit], dict[ChunkId, ChunkUnits]]:
        """Read checked, distinct, non-empty ``ids`` in that order, and their units (backend;
        ``workspace_id`` a routing hint; ``reader``: with the line reader's vectors)."""

    @abc.abstractmethod
    async def _lexical_tokenizer(self) -> str | None:
        """Read the recorded tokenizer name (backend)."""


__all__ = [
    "MAX_K",
    "ChunkHit",
    "ChunkUnits",
    "RankedChunk",
    "SearchFilters",
    "SearchStore",
    "check_filters",
    "check_k",
    "check_members",
    "check_query_vector",
    "chunks_with_units",
    "clean_tokens",
]
