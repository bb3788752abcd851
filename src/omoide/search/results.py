"""What a search takes (:func:`search_filters`, the checks of its query and mode) and returns
(:class:`SearchResult` of :class:`SearchHit`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Required, TypedDict, get_args

from omoide.errors import InvalidInput
from omoide.stores._erasure_common import PLATFORM_IDS_KEY
from omoide.stores.search import ChunkHit, SearchFilters

SearchMode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[str, ...] = get_args(SearchMode)
MAX_QUERY_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class StageScores:
    """A hit's score at each stage (``None`` where the stage did not see it).

    Attributes:
        vector: cosine similarity (best over the vector lists).
        lexical: the backend's lexical relevance (best over the lexical lists).
        fused: the RRF score.
        rerank: the reranker's relevance score.
    """

    vector: float | None = None
    lexical: float | None = None
    fused: float | None = None
    rerank: float | None = None


_DISCORD_CHANNEL = re.compile(r"^(https://discord\.com/channels/[^/]+/[^/]+)(?:/\d+)?$")
"""A Discord channel's link, or one of its messages': group 1 is the channel's."""

Unit = Literal["turn", "chunk"]
"""What a hit is: one message of a chunk (``turn``) or a whole chunk (``chunk``: a chunk without
line records, e.g. a document, or one written before units existed)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the chunk (and, for a ``turn`` hit, the message in it that matched), its final
    rank and score, and the score of each stage.

    Attributes:
        chunk: the chunk with its text, source, location and time range: what an answer
            cites and quotes.
        rank: 1-based final position.
        score: the last stage's score (rerank if reranked, else the fused score).
        scores: per-stage scores.
        ranks: with ``explain=True``, the 1-based rank in each list (``vector``,
            ``lexical``, ``vector#2`` for the first expansion, …, ``unit`` for the unit
            scoring) and in the ``fused`` and ``rerank`` orders; ``None`` otherwise.
        unit: ``turn`` (one message of ``chunk``) or ``chunk``.
        line: for a ``turn`` hit, the message's line in the chunk (0-based), else ``None``.
        message_ids: the messages the hit stands for (a turn's one message; for a chunk hit,
            the chunk's ``location["message_ids"]``).
        quote: for a ``turn`` hit, the message's line as stored (``[time] **Name**: text``).
        features: with ``explain=True``, the unit scorer's inputs for this hit (name → value).
    """

    chunk: ChunkHit
    rank: int
    score: float
    scores: StageScores
    ranks: Mapping[str, int] | None = None
    unit: Unit = "chunk"
    line: int | None = None
    message_ids: tuple[Any, ...] = ()
    quote: str | None = None
    features: Mapping[str, float] | None = None

    @property
    def content(self) -> str:
        return self.chunk.content

    @property
    def jump_url(self) -> str | None:
        """A link to the original messages: the location's ``jump_url``/``url``, else the source's URI.

        A ``turn`` hit links to its own message where the link names a message by its id as the
        last path segment (a Discord link, ``…/channels/guild/channel/id``): an imported chunk's
        link (its first message's) takes the turn's id; an archived session's link (the session's
        first message, or its channel) takes the turn's platform id
        (``location["platform_message_ids"]``)."""
        for key in ("jump_url", "url"):
            value = self.chunk.location.get(key)
            if isinstance(value, str) and value:
                return self._turn_link(value)
        uri = self.chunk.source_uri
        return None if uri is None else self._turn_link(uri)

    def _turn_link(self, link: str) -> str:
        """``link`` pointed at this turn's message, when it can be (see :attr:`jump_url`)."""
        if self.unit != "turn" or len(self.message_ids) != 1:
            return link
        own = str(self.message_ids[0])
        location = self.chunk.location
        platform_ids = location.get(PLATFORM_IDS_KEY)
        if isinstance(platform_ids, dict):  # an archived session: the link is the session's
            target = str(platform_ids.get(own) or "")
            channel = _DISCORD_CHANNEL.match(link)
            return f"{channel.group(1)}/{target}" if channel and target.isdigit() else link
        first = location.get("message_ids") or ()
        if not first or not own.isdigit() or not str(first[0]).isdigit():
            return link
        stem, _, last = link.rpartition("/")
        return f"{stem}/{own}" if stem and last == str(first[0]) else link

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for ``--json`` output and the HTTP API)."""
        c = self.chunk
        return {
            "rank": self.rank,
            "score": self.score,
            "scores": {
                "vector": self.scores.vector,
                "lexical": self.scores.lexical,
                "fused": self.scores.fused,
                "rerank": self.scores.rerank,
            },
            "ranks": dict(self.ranks) if self.ranks is not None else None,
            "unit": self.unit,
            "line": self.line,
            "message_ids": list(self.message_ids),
            "quote": self.quote,
            "features": dict(self.features) if self.features is not None else None,
            "chunk_id": int(c.chunk_id),
            "source_id": int(c.source_id),
            "content": c.content,
            "channel_id": c.channel_id,
            "thread_id": c.thread_id,
            "author_ids": list(c.author_ids),
            "started_at": _iso(c.started_at),
            "ended_at": _iso(c.ended_at),
            "source_type": c.source_type,
            "source_title": c.source_title,
            "jump_url": self.jump_url,
            "location": {k: v for k, v in c.location.items() if k != "lines"},  # line offsets: internal
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What :meth:`SearchPipeline.search` found.

    Attributes:
        query: the query as asked.
        mode: the mode asked for.
        hits: best first, at most ``k``.
        queries: the queries searched (the query, then any expansions).
        timings: milliseconds per phase (``expand``, ``embed``, ``search``, ``fetch``,
            ``rerank``) for the phases that ran.
        notes: what went differently than asked (fallbacks, skipped stages), for humans.
        fallback: the vector side failed and lexical results were used instead.
        reranked: the hits were ordered by the reranker.
    """

    query: str
    mode: SearchMode
    hits: tuple[SearchHit, ...]
    queries: tuple[str, ...]
    timings: Mapping[str, float]
    notes: tuple[str, ...] = ()
    fallback: bool = False
    reranked: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "queries": list(self.queries),
            "hits": [h.as_dict() for h in self.hits],
            "timings_ms": dict(self.timings),
            "notes": list(self.notes),
            "fallback": self.fallback,
            "reranked": self.reranked,
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def check_mode(mode: object) -> SearchMode:
    """``mode`` if it is ``hybrid``, ``vector`` or ``lexical``.

    Raises:
        InvalidInput: anything else.
    """
    if mode == "hybrid":
        return "hybrid"
    if mode == "vector":
        return "vector"
    if mode == "lexical":
        return "lexical"
    raise InvalidInput(f"search mode must be one of {', '.join(MODES)}, got {mode!r}")


def check_query(query: object) -> str:
    """A non-empty query of at most ``MAX_QUERY_CHARS`` characters, stripped.

    Raises:
        InvalidInput: not a string, blank, or too long.
    """
    if not isinstance(query, str):
        raise InvalidInput(f"the query must be a string, got {type(query).__name__}")
    text = query.replace("\x00", "").strip()
    if not text:
        raise InvalidInput("the query is empty")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the query is {len(text)} characters long; at most {MAX_QUERY_CHARS} are allowed")
    return text


class FilterArgs(TypedDict, total=False):
    """The filter keywords of ``Memory.search`` and ``Memory.ask`` (:func:`search_filters` takes them)."""

    workspace: Required[str | int]
    channel: str | int | Sequence[str | int] | None
    thread: str | int | Sequence[str | int] | None
    author: str | int | Sequence[str | int] | None
    source_type: str | Sequence[str] | None
    since: datetime | None
    until: datetime | None
    viewer: str | int | None
    public_only: bool


def search_filters(
    *,
    workspace: str | int,
    channel: str | int | Sequence[str | int] | None = None,
    thread: str | int | Sequence[str | int] | None = None,
    author: str | int | Sequence[str | int] | None = None,
    source_type: str | Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    viewer: str | int | None = None,
    public_only: bool = False,
) -> SearchFilters:
    """Search filters from ``Memory.search``'s keyword arguments (ids may be ints or lists).

    Raises:
        InvalidInput: a bad id or time range.
    """

    def ids(value: str | int | Sequence[str | int] | None) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str | int):
            return (str(value),)
        return tuple(str(v) for v in value)

    return SearchFilters(
        workspace_id=str(workspace),
        channel_ids=ids(channel),
        thread_ids=ids(thread),
        author_ids=ids(author),
        source_types=ids(source_type),
        since=since,
        until=until,
        viewer=None if viewer is None else str(viewer),
        public_only=public_only,
    )


__all__ = [
    "MAX_QUERY_CHARS",
    "MODES",
    "FilterArgs",
    "SearchHit",
    "SearchMode",
    "SearchResult",
    "StageScores",
    "Unit",
    "check_mode",
    "check_query",
    "search_filters",
]
