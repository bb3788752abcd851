"""Response models shared by the HTTP API (:mod:`omoide.server`) and the MCP server (:mod:`omoide.mcp`).

One memory, a remember result, a recall hit, a search result and a cited answer, as JSON.
The HTTP API answers these models as they are (they are its OpenAPI response schemas); the
MCP tools answer the memory models inside their own envelopes, and keep compact search and
answer results of their own for a model to read. Only pydantic: importing this module needs
neither FastAPI nor the MCP SDK.

The search and answer models validate the JSON-ready dicts of
:meth:`omoide.search.pipeline.SearchResult.as_dict` and :meth:`omoide.answers.AnswerResult.as_dict`
(``SearchOut.model_validate(result.as_dict())``), so the HTTP API, ``--json`` output and the
schema cannot disagree; their times stay in ``datetime.isoformat()`` form.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, PlainSerializer, WithJsonSchema

if TYPE_CHECKING:
    from omoide.stores.memories import MemoryHit, MemoryRecord, RememberResult

IsoTime = Annotated[
    datetime,
    PlainSerializer(datetime.isoformat, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A time written as ``datetime.isoformat()`` (``2025-11-15T13:30:00+00:00``), as ``--json`` writes it."""

Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
"""A score or a duration, kept as given (an integral ``0`` stays ``0``, not ``0.0``)."""


# ---------------------------------------------------------------- memories


class MemoryOut(BaseModel):
    """One of a user's memories."""

    id: int = Field(description="The memory's id (for get, update, delete and forget_memory).")
    user_id: str = Field(description="The user whose memory it is.")
    content: str
    category: str
    tags: list[str]
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, m: MemoryRecord) -> MemoryOut:
        return cls(
            id=int(m.id),
            user_id=m.user_id,
            content=m.content,
            category=m.category,
            tags=list(m.tags),
            metadata=dict(m.metadata),
            created_at=m.created_at,
            updated_at=m.updated_at,
        )


class RememberOut(BaseModel):
    """What ``remember`` did: the memory stored, or the near-duplicate it updated instead."""

    memory: MemoryOut
    updated: bool = Field(description="True when a near-duplicate was updated instead of adding one.")
    similarity: float | None = Field(description="Cosine similarity to that near-duplicate, when one was close.")

    @classmethod
    def of(cls, done: RememberResult) -> RememberOut:
        return cls(memory=MemoryOut.of(done.memory), updated=done.updated, similarity=done.similarity)


class MemoryHitOut(BaseModel):
    """A recalled memory with its rank and fused (vector + full text) score."""

    rank: int = Field(description="1 = best match.")
    score: float = Field(description="Fused (vector + full text) score; higher is better.")
    ranks: dict[str, int]
    memory: MemoryOut

    @classmethod
    def of(cls, h: MemoryHit) -> MemoryHitOut:
        return cls(rank=h.rank, score=h.score, ranks=dict(h.ranks), memory=MemoryOut.of(h.memory))


class RecallOut(BaseModel):
    items: list[MemoryHitOut] = Field(description="Best match first; empty when nothing matches.")


# ---------------------------------------------------------------- long-term memory


class ScoresOut(BaseModel):
    """A hit's score at each stage (``null``: the stage did not run or did not find it)."""

    vector: Number | None
    lexical: Number | None
    fused: Number | None
    rerank: Number | None


MessageId = Annotated[int | str, WithJsonSchema({"type": ["integer", "string"]})]
"""A message's id: a session message's number, or a chat platform's id (a string)."""

Unit = Literal["turn", "chunk"]


class SearchHitOut(BaseModel):
    """A hit in long-term memory (archived conversation or imported chat history): one message
    (``unit`` ``turn``) or a whole passage (``chunk``), with the passage it belongs to."""

    rank: int = Field(description="1 = best.")
    score: Number
    scores: ScoresOut
    ranks: dict[str, int] | None = Field(
        description="With `explain`: the hit's rank in each list (`lexical`, `vector`, `vector#2` for an expansion, "
        "`unit` for the message scoring) and in the `fused` and `rerank` orders."
    )
    unit: Unit = Field(
        description="`turn`: one message of the passage matched (see `line`, `quote`); `chunk`: the whole passage "
        "(a document, or a passage indexed before messages were ranked on their own)."
    )
    line: int | None = Field(description="For a `turn`: the message's line in the passage (0-based).")
    message_ids: list[MessageId] = Field(
        description="The messages the hit stands for: a turn's one message, else the passage's messages (when known)."
    )
    quote: str | None = Field(
        description="For a `turn`: the message as stored in the passage (`[time] **Name**: text`)."
    )
    features: dict[str, Number] | None = Field(
        description="With `explain`: what the message scoring read for this hit (name → value)."
    )
    chunk_id: int
    source_id: int
    content: str
    channel_id: str | None
    thread_id: str | None
    author_ids: list[str]
    started_at: IsoTime | None
    ended_at: IsoTime | None
    source_type: str
    source_title: str
    jump_url: str | None = Field(description="A link to the original messages, when known.")
    location: dict[str, Any] = Field(description="Where the passage came from (session and seq range, message ids).")


class SearchOut(BaseModel):
    """Hits of a search, best first, and how the search went."""

    query: str
    mode: str
    queries: list[str] = Field(description="The queries searched: the query, then any expansions.")
    hits: list[SearchHitOut]
    timings_ms: dict[str, Number] = Field(description="Milliseconds per phase that ran.")
    notes: list[str] = Field(description="Fallbacks and skipped stages, for humans.")
    fallback: bool = Field(description="The vector side failed and lexical results were used instead.")
    reranked: bool


class MatchedTurnOut(BaseModel):
    """A message of an evidence passage that the search found on its own."""

    rank: int = Field(description="Its rank in the search.")
    line: int | None = Field(description="Its line in the passage (0-based).")
    message_ids: list[MessageId]
    quote: str | None = Field(description="The message as stored in the passage.")


class EvidenceOut(SearchHitOut):
    """A passage given to the model: each passage once, however many of its messages were found."""

    matched: list[MatchedTurnOut] = Field(
        description="The passage's messages the search found (best first); empty for a whole-passage hit."
    )


class _Numbered(BaseModel):
    number: int = Field(description="The n of [#n] in the answer.")


class CitationOut(EvidenceOut, _Numbered):
    """A passage the answer cites as ``[#number]``."""


class AnswerOut(BaseModel):
    """A cited answer and its evidence."""

    text: str = Field(description="The answer; it cites its evidence as [#n].")
    citations: list[CitationOut] = Field(description="The evidence the answer cites, in order of first citation.")
    evidence: list[EvidenceOut] = Field(description="All passages given to the model; [#n] is the n-th.")
    timings_ms: dict[str, Number] = Field(description="Milliseconds per phase that ran.")
    total_ms: Number
    notes: list[str]
    no_data: bool = Field(description="Nothing was found, so no model was called.")
    fallback: bool
    model: str = Field(description="The chat model that answered ('' when none was called).")
    language: Literal["ja", "en"]


__all__ = [
    "AnswerOut",
    "CitationOut",
    "EvidenceOut",
    "IsoTime",
    "MatchedTurnOut",
    "MemoryHitOut",
    "MemoryOut",
    "MessageId",
    "Number",
    "RecallOut",
    "RememberOut",
    "ScoresOut",
    "SearchHitOut",
    "SearchOut",
    "Unit",
]
