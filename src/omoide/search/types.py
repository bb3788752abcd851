"""What a store's search returns: :class:`ChunkHit`, one retrieved chunk with its source.

Scores: **higher is better** in every list. Vector search scores are cosine similarity
(``1 - cosine distance``, in ``[-1, 1]``); lexical scores are the backend's relevance
(BM25: SQLite's ``-bm25()``, PostgreSQL's own in ``omoide.stores.postgres._bm25``), comparable only within one list, so
lists are fused by rank (RRF), never by score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from omoide.knowledge.models import ChunkId, SourceId


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

    What :meth:`~omoide.stores.base.SearchStore.vector_ranking` and ``lexical_ranking``
    return: the pipeline fuses lists by rank and then fetches only the chunks it shows.
    """

    chunk_id: ChunkId
    score: float


__all__ = ["ChunkHit", "RankedChunk"]
