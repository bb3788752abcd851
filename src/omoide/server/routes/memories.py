"""Per-user explicit memories: remember, recall, list, get, update, delete (``Memory.memories``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, Field

from omoide.api_models import MemoryHitOut, MemoryOut, RecallOut, RememberOut
from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.schemas import MemoryUpdateIn, Page, RecallIn, RememberIn
from omoide.stores.memories import MemoryEvent

router = APIRouter(
    prefix="/v1/users/{user_id}/memories",
    tags=["memories"],
    responses={**PROBLEM_RESPONSES},
    route_class=StrictJsonRoute,
)

UserId = Annotated[str, Path(min_length=1, max_length=256, description="The platform user id.", examples=["7"])]
MemoryId = Annotated[int, Path(ge=1, le=2**62, description="The memory's id.")]
API_ACTOR = "api"
"""Who the memory history names for changes made over HTTP."""


class MemoryEventOut(BaseModel):
    """One change of a memory."""

    id: int = Field(description="The event's id; increasing in the order of the changes.")
    memory_id: int
    action: Literal["created", "updated", "merged", "deleted"] = Field(
        description="`merged`: a near-duplicate was remembered into this memory."
    )
    actor: str = Field(description="Who made the change: `api`, `cli`, `ui`, `mcp`, `tool:remember`, `user:<id>`…")
    content: str | None = Field(description="The memory's content after the change; null for `deleted`.")
    created_at: datetime

    @classmethod
    def of(cls, e: MemoryEvent) -> MemoryEventOut:
        return cls(
            id=e.id,
            memory_id=e.memory_id,
            action=e.action,  # type: ignore[arg-type]  # the table's CHECK allows only these
            actor=e.actor,
            content=e.content,
            created_at=e.created_at,
        )


class MemoryHistoryOut(BaseModel):
    """A memory's history, oldest first."""

    items: list[MemoryEventOut]


@router.post("", summary="Remember something for a user", status_code=201)
async def remember(user_id: UserId, body: RememberIn, memory: MemoryDep, key: KeyDep) -> RememberOut:
    """A near-duplicate of one of the user's memories is updated instead (`updated: true`)."""
    result = await memory.memories.remember(
        key.workspace_id,
        user_id,
        body.content,
        category=body.category,
        tags=body.tags,
        metadata=body.metadata,
        actor=API_ACTOR,
    )
    return RememberOut.of(result)


@router.post("/recall", summary="Recall a user's memories that match a query")
async def recall(user_id: UserId, body: RecallIn, memory: MemoryDep, key: KeyDep) -> RecallOut:
    """Hybrid: vector + full text, fused with RRF; only this user's memories."""
    hits = await memory.recall(
        body.query, workspace=key.workspace_id, user=user_id, limit=body.limit, category=body.category, tags=body.tags
    )
    return RecallOut(items=[MemoryHitOut.of(h) for h in hits])


@router.get("", summary="List a user's memories")
async def list_memories(
    user_id: UserId,
    memory: MemoryDep,
    key: KeyDep,
    category: Annotated[str | None, Query(max_length=64)] = None,
    tag: Annotated[list[str] | None, Query(max_length=64, description="Repeat to require several tags.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Page[MemoryOut]:
    """Newest first; `next_offset` is null on the last page."""
    found = await memory.memories.list(
        key.workspace_id, user_id, category=category, tags=tag, page_size=limit, offset=offset
    )
    more = len(found) == limit and bool(
        await memory.memories.list(
            key.workspace_id, user_id, category=category, tags=tag, page_size=1, offset=offset + limit
        )
    )
    return Page[MemoryOut](
        items=[MemoryOut.of(m) for m in found],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if more else None,
    )


@router.get("/{memory_id}", summary="Get one memory")
async def get_memory(user_id: UserId, memory_id: MemoryId, memory: MemoryDep, key: KeyDep) -> MemoryOut:
    return MemoryOut.of(await memory.memories.get(key.workspace_id, user_id, memory_id))


@router.patch("/{memory_id}", summary="Change a memory")
async def update_memory(
    user_id: UserId, memory_id: MemoryId, body: MemoryUpdateIn, memory: MemoryDep, key: KeyDep
) -> MemoryOut:
    """Fields left out stay as they are; new content is embedded again."""
    updated = await memory.memories.update(
        key.workspace_id,
        user_id,
        memory_id,
        content=body.content,
        category=body.category,
        tags=body.tags,
        metadata=body.metadata,
        actor=API_ACTOR,
    )
    return MemoryOut.of(updated)


@router.delete("/{memory_id}", summary="Delete a memory", status_code=204)
async def delete_memory(user_id: UserId, memory_id: MemoryId, memory: MemoryDep, key: KeyDep) -> Response:
    await memory.memories.delete(key.workspace_id, user_id, memory_id, actor=API_ACTOR)
    return Response(status_code=204)


@router.get("/{memory_id}/history", summary="A memory's history")
async def memory_history(
    user_id: UserId,
    memory_id: MemoryId,
    memory: MemoryDep,
    key: KeyDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> MemoryHistoryOut:
    """Each change, oldest first: `created`, `updated`, `merged` (a near-duplicate remembered into it)
    or `deleted`, by whom (`api`, `cli`, `tool:remember`, …) and the content after. A deleted memory
    keeps its history until the user is forgotten."""
    events = await memory.memories.history(key.workspace_id, user_id, memory_id, limit=limit)
    return MemoryHistoryOut(items=[MemoryEventOut.of(e) for e in events])
