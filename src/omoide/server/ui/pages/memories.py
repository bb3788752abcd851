"""Memories: a user's memories (listed or searched), one memory with its history, edit and delete.

The history (created / updated / merged / deleted, and by whom or which tool call) is
``mem.memories.history`` (issue 19). Changes made here are recorded with the actor ``ui``.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Path, Query, Request
from starlette.responses import Response

from omoide.engine import Memory
from omoide.errors import NotFoundError
from omoide.server.ui.app import redirect
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, WorkspaceViewer, check_csrf
from omoide.stores.memories import MemoryEvent

router = APIRouter(prefix="/memories")

PAGE = 50
ACTOR = "ui"
UserId = Annotated[str, Path(min_length=1, max_length=256)]
MemoryId = Annotated[int, Path(ge=1, le=2**62)]
OptionalField = Annotated[str | None, Form(max_length=512)]


async def history_of(memory: Memory, workspace: str, user: str, memory_id: int) -> list[MemoryEvent]:
    """The memory's events, oldest first (``[]``: none recorded)."""
    try:
        return await memory.memories.history(workspace, user, memory_id)
    except NotFoundError:
        return []


async def known_users(memory: Memory, workspace: str) -> list[str]:
    """Users with a session in the workspace (most recently active first), for quick links."""
    found = await memory.sessions.list_sessions(workspace=workspace, limit=1000)
    return list(dict.fromkeys(s.user_id for s in found if s.user_id))


@router.get("")
async def memories(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    user: Annotated[str | None, Query(max_length=256)] = None,
    q: Annotated[str | None, Query(max_length=2000)] = None,
    offset: Annotated[int, Query(ge=0, le=10**6)] = 0,
) -> Response:
    workspace = str(viewer.workspace)
    context: dict[str, Any] = {
        "user": user or "",
        "q": q or "",
        "rows": None,
        "hits": None,
        "next_offset": None,
        "prev_offset": None,
    }
    context["users"] = await known_users(memory, workspace)
    if user:
        if q and q.strip():
            context["hits"] = await memory.recall(q, workspace=workspace, user=user, limit=20)
        else:
            found = await memory.memories.list(workspace, user, page_size=PAGE + 1, offset=offset)
            context["rows"] = found[:PAGE]
            context["next_offset"] = offset + PAGE if len(found) > PAGE else None
            context["prev_offset"] = max(0, offset - PAGE) if offset else None
    return page(request, "memories.html", context)


@router.get("/{user:path}/{memory_id}")
async def one_memory(
    request: Request, memory: MemoryDep, viewer: WorkspaceViewer, user: UserId, memory_id: MemoryId
) -> Response:
    """The memory (if it still exists), its edit form and its history."""
    workspace = str(viewer.workspace)
    history = await history_of(memory, workspace, user, memory_id)
    try:
        record = await memory.memories.get(workspace, user, memory_id)
    except NotFoundError:
        if not history:  # neither the memory nor any trace of it: not found
            raise
        record = None
    saved = request.query_params.get("saved") == "1"
    context = {"record": record, "user": user, "memory_id": memory_id, "history": history, "saved": saved}
    return page(request, "memory.html", context)


@router.post("/{user:path}/{memory_id}/edit")
async def edit_memory(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    user: UserId,
    memory_id: MemoryId,
    content: Annotated[str, Form(min_length=1, max_length=20_000)],
    category: Annotated[str, Form(min_length=1, max_length=64)] = "general",
    tags: Annotated[str, Form(max_length=2000)] = "",
    csrf: OptionalField = None,
) -> Response:
    check_csrf(viewer, csrf)
    await memory.memories.update(
        str(viewer.workspace),
        user,
        memory_id,
        content=content,
        category=category,
        tags=[t.strip() for t in tags.split(",") if t.strip()],
        actor=ACTOR,
    )
    return redirect(request, f"/memories/{quote(user, safe='')}/{memory_id}?saved=1")


@router.post("/{user:path}/{memory_id}/delete")
async def delete_memory(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    user: UserId,
    memory_id: MemoryId,
    csrf: OptionalField = None,
    confirmed: OptionalField = None,
) -> Response:
    """Delete the memory (asks first)."""
    check_csrf(viewer, csrf)
    workspace = str(viewer.workspace)
    await memory.memories.get(workspace, user, memory_id)  # not found → 404 before asking
    if confirmed != "yes":
        context = {
            "action": f"/memories/{quote(user, safe='')}/{memory_id}/delete",
            "fields": {},
            "message_key": "mem.delete_confirm",
            "back": f"/memories/{quote(user, safe='')}/{memory_id}",
        }
        return page(request, "confirm.html", context)
    await memory.memories.delete(workspace, user, memory_id, actor=ACTOR)
    return page(request, "done.html", {"message_key": "mem.deleted", "next": f"/memories?user={quote(user)}"})
