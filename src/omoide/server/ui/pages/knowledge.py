"""Knowledge: sources and their chunks (with the messages they hold and jump links), and the
search playground: a query with filters and mode, each hit's ``explain`` (rank in every list, the
fused score, the matched unit), and ``ask`` with its citations."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from omoide.errors import InvalidInput, NotFoundError
from omoide.server.ui.i18n import choose_language
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, WorkspaceViewer
from omoide.stores.knowledge import SourceId

router = APIRouter()

PAGE = 50
Text = Annotated[str | None, Query(max_length=256)]


def _day(name: str, value: str | None) -> date | None:
    """A form's ``YYYY-MM-DD`` (an empty field is no limit).

    Raises:
        InvalidInput: anything else.
    """
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{name} must be a day as YYYY-MM-DD, got {value!r}") from None


@router.get("/knowledge")
async def sources(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Response:
    found = await memory.knowledge.sources(workspace=viewer.workspace, limit=PAGE + 1, offset=offset)
    context = {
        "rows": found[:PAGE],
        "next_offset": offset + PAGE if len(found) > PAGE else None,
        "prev_offset": max(0, offset - PAGE) if offset else None,
    }
    return page(request, "knowledge.html", context)


@router.get("/knowledge/sources/{source_id}")
async def source(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    source_id: Annotated[int, Path(ge=1, le=2**62)],
) -> Response:
    """One source with its chunks; a source of another workspace is "not found"."""
    found = await memory.store.knowledge.get_source(SourceId(source_id))
    if found is None or found.workspace_id != viewer.workspace:
        raise NotFoundError(f"no knowledge source {source_id} in this workspace")
    chunks = await memory.store.knowledge.chunks_of_source(found.id)
    origin = found.metadata.get("origin_session_key")
    return page(request, "source.html", {"source": found, "chunks": chunks, "origin": origin})


@router.get("/search")
async def search(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    q: Annotated[str | None, Query(max_length=2000)] = None,
    mode: Literal["hybrid", "vector", "lexical"] = "hybrid",
    k: Annotated[int, Query(ge=1, le=50)] = 10,
    channel: Text = None,
    thread: Text = None,
    author: Text = None,
    source_type: Text = None,
    since: Annotated[str | None, Query(max_length=10)] = None,
    until: Annotated[str | None, Query(max_length=10)] = None,
    action: Literal["search", "ask"] = "search",
) -> Response:
    """The playground: the form, and the search's hits with ``explain`` or an answer with citations.

    ``since`` / ``until`` are whole UTC days (``until`` includes its day)."""
    first, last = _day("since", since), _day("until", until)
    start = None if first is None else datetime.combine(first, time.min, tzinfo=UTC)
    # until its last day: no end at all for the calendar's last day (there is no day after it)
    end = None if last is None or last == date.max else datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC)
    context: dict[str, Any] = {
        "form": {
            "q": q or "",
            "mode": mode,
            "k": k,
            "channel": channel or "",
            "thread": thread or "",
            "author": author or "",
            "source_type": source_type or "",
            "since": "" if first is None else first.isoformat(),
            "until": "" if last is None else last.isoformat(),
        },
        "modes": ("hybrid", "vector", "lexical"),
        "result": None,
        "answer": None,
    }
    if q and q.strip():
        if action == "ask":
            context["answer"] = await memory.ask(
                q,
                workspace=str(viewer.workspace),
                k=k,
                mode=mode,
                language=choose_language(request),
                channel=channel or None,
                thread=thread or None,
                author=author or None,
                source_type=source_type or None,
                since=start,
                until=end,
            )
        else:
            context["result"] = await memory.search(
                q,
                workspace=str(viewer.workspace),
                k=k,
                mode=mode,
                explain=True,
                channel=channel or None,
                thread=thread or None,
                author=author or None,
                source_type=source_type or None,
                since=start,
                until=end,
            )
    return page(request, "search.html", context)
