"""Summaries: the latest summary of every channel / thread / user (or the workspace's), and one
summary's versions with what each was built from (message count, newest message, metadata)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from omoide.errors import NotFoundError
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, WorkspaceViewer
from omoide.stores.summaries import SummaryKind, SummaryScope

router = APIRouter(prefix="/summaries")

SCOPES = [s.value for s in SummaryScope]
KINDS = [k.value for k in SummaryKind]
PAGE = 50


@router.get("")
async def summaries(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    scope: SummaryScope = SummaryScope.CHANNEL,
    kind: SummaryKind = SummaryKind.LONG_TERM,
    after: Annotated[str | None, Query(max_length=256)] = None,
) -> Response:
    """The latest summary of each scope id, ``PAGE`` at a time by scope id (``after``: the page after that id)."""
    found = await memory.store.summaries.latest_summaries(
        str(viewer.workspace), scope, kind, after=after or None, limit=PAGE + 1
    )
    rows = found[:PAGE]
    context = {
        "rows": rows,
        "scope": scope.value,
        "kind": kind.value,
        "scopes": SCOPES,
        "kinds": KINDS,
        "after": after or "",
        "next_after": rows[-1].scope_id if len(found) > PAGE else None,
    }
    return page(request, "summaries.html", context)


@router.get("/{scope}/{scope_id:path}")
async def versions(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    scope: SummaryScope,
    scope_id: Annotated[str, Path(min_length=1, max_length=256)],
    kind: SummaryKind = SummaryKind.LONG_TERM,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Response:
    found = await memory.summaries.history(str(viewer.workspace), scope, scope_id, kind, limit=limit)
    if not found:
        raise NotFoundError(f"no {kind.value} summary of {scope.value} {scope_id!r} in this workspace")
    context = {"rows": found, "scope": scope.value, "scope_id": scope_id, "kind": kind.value}
    return page(request, "summary.html", context)
