"""What the MCP tools return: typed structured results and their text rendering.

Every tool answers with both: a short text a model reads (jump URLs and ``[#n]``
citations included) and the same data as structured content, validated against the
tool's published output schema. A memory and a remember result are the models the HTTP
API answers too (:mod:`omoide.api_models`); the envelopes and the compact search and
answer results here are the tools' own. Nothing here decides anything: it only renders
what :class:`omoide.Memory` returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from omoide.api_models import MatchedTurnOut, MemoryOut, MessageId, RememberOut, Unit

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.context.assembly import AssembledContext
    from omoide.search.pipeline import SearchHit, SearchResult
    from omoide.stores.memories import MemoryHit, MemoryRecord, RememberResult

PREVIEW_CHARS = 600
"""Longest passage quoted in the text rendering of a search hit (the structured content has all of it)."""

QUOTE_CHARS = 300
"""Longest matched message quoted in the text rendering (of a ``turn`` hit or a citation)."""


class RecalledMemory(MemoryOut):
    """A recalled memory: the memory's fields with its rank and score."""

    rank: int = Field(description="1 = best match.")
    score: float = Field(description="Fused (vector + full text) score; higher is better.")


class RecalledMemoriesOut(BaseModel):
    memories: list[RecalledMemory] = Field(description="Best match first; empty when nothing matches.")


class MemoryPageOut(BaseModel):
    memories: list[MemoryOut] = Field(description="Newest first.")
    page: int
    page_size: int


class ForgetOut(BaseModel):
    deleted: int = Field(description="The id of the memory that was deleted.")


class ForgetMeOut(BaseModel):
    """The receipt of ``forget_me``."""

    workspace: str
    user: str
    erased: dict[str, int] = Field(
        description="How many records of each kind were erased (memories, sessions, messages, …); all 0 when none."
    )


class HitOut(BaseModel):
    """A hit in long-term memory (archived conversation or imported chat history): one message
    (``unit`` ``turn``, quoted in ``quote``) or a whole passage (``chunk``), with the passage."""

    rank: int
    score: float
    unit: Unit = Field(description="turn: one message of the passage matched (see quote); chunk: the whole passage.")
    line: int | None = Field(description="For a turn: the message's line in the passage (0-based).")
    message_ids: list[MessageId] = Field(description="The messages the hit stands for.")
    quote: str | None = Field(description="For a turn: the message that matched, as stored in the passage.")
    content: str = Field(description="The passage (for a turn: the matched message with its context).")
    source_title: str
    source_type: str
    channel_id: str | None
    thread_id: str | None
    author_ids: list[str]
    started_at: datetime | None
    ended_at: datetime | None
    jump_url: str | None = Field(description="A link to the original messages, when known.")
    chunk_id: int


class SearchOut(BaseModel):
    query: str
    mode: str
    hits: list[HitOut]
    notes: list[str] = Field(description="Fallbacks and skipped stages, for humans.")


class CitationOut(HitOut):
    number: int = Field(description="The n of [#n] in the answer.")
    matched: list[MatchedTurnOut] = Field(
        description="The messages of the cited passage that the search found, best first; empty for a whole-passage hit."
    )


class AskOut(BaseModel):
    answer: str = Field(description="The answer; it cites its evidence as [#n].")
    citations: list[CitationOut] = Field(description="The evidence the answer cites, with jump URLs.")
    evidence: int = Field(description="Passages given to the model.")
    no_data: bool = Field(description="Nothing was found, so no model was called.")
    model: str = Field(description="The chat model that answered ('' when none was called).")
    language: Literal["ja", "en"]
    notes: list[str]


class ContextMessageOut(BaseModel):
    role: str
    author_id: str | None
    author_name: str | None
    text: str
    created_at: datetime


class ContextPartOut(BaseModel):
    kind: str = Field(description="memory, knowledge, or a summary kind.")
    label: str
    text: str


class BuildContextOut(BaseModel):
    session_key: str = Field(description="The session the context was built for.")
    system: str = Field(description="The system prompt, with memories, summaries and knowledge under headings.")
    messages: list[ContextMessageOut] = Field(description="The kept conversation window, oldest first.")
    parts: list[ContextPartOut] = Field(description="What went into the system prompt, in priority order.")
    dropped: list[str] = Field(description="Labels of what did not fit the budget.")
    tokens: int
    budget: int


def result(text: str, structured: BaseModel) -> CallToolResult:
    """A tool result: ``text`` for the model to read, ``structured`` as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured.model_dump(mode="json")
    )


# ---------------------------------------------------------------- memories


def _memory_line(m: MemoryOut) -> str:
    tags = f" [{', '.join(m.tags)}]" if m.tags else ""
    return f"- (id {m.id}, {m.category}{tags}, {m.updated_at:%Y-%m-%d}) {m.content}"


def render_remember(done: RememberResult) -> CallToolResult:
    out = RememberOut.of(done)
    if done.updated:
        similarity = f", similarity {done.similarity:.3f}" if done.similarity is not None else ""
        text = f"Updated memory {out.memory.id} (a near-duplicate{similarity}): {out.memory.content}"
    else:
        text = f"Remembered as memory {out.memory.id} ({out.memory.category}): {out.memory.content}"
    return result(text, out)


def render_recall(hits: list[MemoryHit]) -> CallToolResult:
    out = RecalledMemoriesOut(
        memories=[RecalledMemory(**MemoryOut.of(h.memory).model_dump(), rank=h.rank, score=h.score) for h in hits]
    )
    if not hits:
        return result("No memory matches.", out)
    return result("\n".join(_memory_line(m) for m in out.memories), out)


def render_page(memories: list[MemoryRecord], *, page: int, page_size: int) -> CallToolResult:
    out = MemoryPageOut(memories=[MemoryOut.of(m) for m in memories], page=page, page_size=page_size)
    if not memories:
        return result(f"No memories on page {page}.", out)
    return result("\n".join(_memory_line(m) for m in out.memories), out)


def render_erasure(erased: Mapping[str, int], *, workspace: str, user: str) -> CallToolResult:
    """The receipt of an erasure: one ``kind: count`` per kind, whatever kinds there are."""
    out = ForgetMeOut(workspace=workspace, user=user, erased=dict(erased))
    if not any(out.erased.values()):
        return result(f"Nothing was stored about user {user} in this workspace: nothing to erase.", out)
    counts = ", ".join(f"{kind.replace('_', ' ')}: {n}" for kind, n in out.erased.items())
    return result(f"Erased everything stored about user {user} in this workspace ({counts}).", out)


# ---------------------------------------------------------------- knowledge


def _hit_out(hit: SearchHit) -> HitOut:
    c = hit.chunk
    return HitOut(
        rank=hit.rank,
        score=hit.score,
        unit=hit.unit,
        line=hit.line,
        message_ids=list(hit.message_ids),
        quote=hit.quote,
        content=c.content,
        source_title=c.source_title,
        source_type=c.source_type,
        channel_id=c.channel_id,
        thread_id=c.thread_id,
        author_ids=list(c.author_ids),
        started_at=c.started_at,
        ended_at=c.ended_at,
        jump_url=hit.jump_url,
        chunk_id=int(c.chunk_id),
    )


def _where(hit: HitOut) -> str:
    from omoide.answers.prompt import time_range

    return " · ".join(p for p in (hit.source_title, time_range(hit.started_at, hit.ended_at)) if p)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def render_search(found: SearchResult) -> CallToolResult:
    """Each hit: where and when, then for a ``turn`` the message that matched and the passage
    around it (``In context:``), else the passage; then its jump URL."""
    out = SearchOut(query=found.query, mode=found.mode, hits=[_hit_out(h) for h in found.hits], notes=list(found.notes))
    lines: list[str] = []
    for hit in out.hits:
        text = _cut(hit.content, PREVIEW_CHARS)
        if hit.unit == "turn" and hit.quote:
            text = f"Matched: {_cut(hit.quote, QUOTE_CHARS)}\nIn context:\n{text}"
        lines.append(f"{hit.rank}. ({_where(hit)})\n{text}" + (f"\n<{hit.jump_url}>" if hit.jump_url else ""))
    lines.extend(f"Note: {note}" for note in out.notes)
    return result("\n\n".join(lines) if lines else "No results.", out)


def render_answer(answer: AnswerResult) -> CallToolResult:
    """The answer, then its sources: ``[#n]`` where and when, the jump URL, and the messages of
    the passage that matched (``> quote``), each passage once."""
    from omoide.answers.answerer import matched_turns

    out = AskOut(
        answer=answer.text,
        citations=[
            CitationOut(
                **_hit_out(c.hit).model_dump(),
                number=c.number,
                matched=[MatchedTurnOut.model_validate(m) for m in matched_turns(c.turns)],
            )
            for c in answer.citations
        ],
        evidence=len(answer.hits),
        no_data=answer.no_data,
        model=answer.model,
        language=answer.language,
        notes=list(answer.notes),
    )
    text = out.answer
    if out.citations:
        heading = "根拠" if out.language == "ja" else "Sources"
        sources = [
            f"[#{c.number}] {_where(c)}"
            + (f" <{c.jump_url}>" if c.jump_url else "")
            + "".join(f"\n  > {_cut(m.quote, QUOTE_CHARS)}" for m in c.matched if m.quote)
            for c in out.citations
        ]
        text += f"\n\n{heading}:\n" + "\n".join(sources)
    return result(text, out)


# ---------------------------------------------------------------- context


def render_context(built: AssembledContext, *, session_key: str) -> CallToolResult:
    out = BuildContextOut(
        session_key=session_key,
        system=built.system,
        messages=[
            ContextMessageOut(
                role=m.role, author_id=m.author_id, author_name=m.author_name, text=m.text, created_at=m.created_at
            )
            for m in built.messages
        ],
        parts=[ContextPartOut(kind=p.kind.value, label=p.label, text=p.text) for p in built.parts],
        dropped=list(built.dropped),
        tokens=built.tokens,
        budget=built.budget,
    )
    window = "\n".join(f"{m.author_name or m.author_id or m.role} ({m.role}): {m.text}" for m in out.messages)
    text = f"System prompt:\n{out.system}\n\nConversation window ({len(out.messages)} messages):\n{window or '(empty)'}"
    text += f"\n\n{out.tokens} / {out.budget} tokens" + (f"; left out: {', '.join(out.dropped)}" if out.dropped else "")
    return result(text, out)


__all__ = [
    "AskOut",
    "BuildContextOut",
    "CitationOut",
    "ContextMessageOut",
    "ContextPartOut",
    "ForgetMeOut",
    "ForgetOut",
    "HitOut",
    "MemoryPageOut",
    "RecalledMemoriesOut",
    "RecalledMemory",
    "SearchOut",
    "render_answer",
    "render_context",
    "render_erasure",
    "render_page",
    "render_recall",
    "render_remember",
    "render_search",
    "result",
]
