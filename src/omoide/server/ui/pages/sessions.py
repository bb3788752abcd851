"""Sessions: the list with filters, one session's window, stored messages and archive, reset / delete.

Every filter (platform, channel, user, state) is the store's, by index, paged ``PAGE`` at a time.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from starlette.responses import Response

from omoide.engine import Memory
from omoide.errors import InvalidInput, SessionNotFound
from omoide.keys import parse_session_key
from omoide.models import Session, SessionStatus
from omoide.server.ui.app import redirect
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, Viewer, WorkspaceViewer, check_csrf

router = APIRouter(prefix="/sessions")

PAGE = 50
MESSAGES_SHOWN = 200
SOURCES_SHOWN = 50

Text = Annotated[str | None, Query(max_length=256)]
KeyField = Annotated[str, Form(max_length=2048)]
OptionalField = Annotated[str | None, Form(max_length=512)]


async def session_of(memory: Memory, viewer: Viewer, key: str) -> Session:
    """The session ``key`` of the viewer's workspace.

    Raises:
        SessionNotFound: no such session there (a key of another workspace is not found too).
    """
    parsed = parse_session_key(key)
    if parsed.workspace != viewer.workspace:
        raise SessionNotFound(f"no session with key {key!r} in this workspace")
    return await memory.sessions.get(parsed)


def _status(value: str | None) -> SessionStatus | None:
    """The state filter (empty: every state).

    Raises:
        InvalidInput: not a session state.
    """
    if not value:
        return None
    try:
        return SessionStatus(value)
    except ValueError:
        states = ", ".join(s.value for s in SessionStatus)
        raise InvalidInput(f"state must be one of {states}, got {value!r}") from None


@router.get("")
async def list_sessions(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    platform: Text = None,
    channel: Text = None,
    user: Text = None,
    state: Annotated[str | None, Query(max_length=32)] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Response:
    status = _status(state)
    found = await memory.sessions.list_sessions(
        workspace=viewer.workspace,
        status=status,
        platform=platform or None,
        channel=channel or None,
        user=user or None,
        limit=PAGE + 1,
        offset=offset,
    )
    context: dict[str, Any] = {
        "rows": found[:PAGE],
        "offset": offset,
        "next_offset": offset + PAGE if len(found) > PAGE else None,
        "prev_offset": max(0, offset - PAGE) if offset else None,
        "filters": {"platform": platform or "", "channel": channel or "", "user": user or "", "state": status or ""},
        "states": [s.value for s in SessionStatus],
    }
    return page(request, "sessions.html", context)


@router.get("/view")
async def view_session(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    key: Annotated[str, Query(max_length=2048)],
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> Response:
    """A session: its window, its stored messages (archived or not; ``MESSAGES_SHOWN`` a page, after
    seq ``after``) and the chunks they went into."""
    session = await session_of(memory, viewer, key)
    window = await memory.sessions.history(session.key)
    in_window = {m.seq for m in window}
    messages = await memory.sessions.messages(session.key, after_seq=after, limit=MESSAGES_SHOWN + 1)
    more = messages[MESSAGES_SHOWN - 1].seq if len(messages) > MESSAGES_SHOWN else None
    messages = messages[:MESSAGES_SHOWN]
    sources = await memory.knowledge.sources(
        workspace=viewer.workspace, origin_session=int(session.id), limit=SOURCES_SHOWN
    )
    archived: list[dict[str, Any]] = []
    for source in sources:
        chunks = await memory.store.knowledge.chunks_of_source(source.id)
        archived.append({"source": source, "chunks": chunks})
    context = {
        "session": session,
        "window": window,
        "in_window": in_window,
        "messages": messages,
        "archived": archived,
        "after": after,
        "next_after": more,
        "key_param": quote(session.key),
    }
    return page(request, "session.html", context)


def _confirm(request: Request, action: str, key: str, message_key: str) -> Response:
    return page(
        request,
        "confirm.html",
        {
            "action": action,
            "fields": {"key": key},
            "message_key": message_key,
            "back": f"/sessions/view?key={quote(key)}",
        },
    )


@router.post("/reset")
async def reset_session(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    key: KeyField,
    csrf: OptionalField = None,
    confirmed: OptionalField = None,
) -> Response:
    """Empty the session's window (asks first)."""
    check_csrf(viewer, csrf)
    session = await session_of(memory, viewer, key)
    if confirmed != "yes":
        return _confirm(request, "/sessions/reset", session.key, "sess.reset_confirm")
    await memory.reset(session.key)
    return page(
        request, "done.html", {"message_key": "sess.reset_done", "next": f"/sessions/view?key={quote(session.key)}"}
    )


@router.post("/delete")
async def delete_session(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    key: KeyField,
    csrf: OptionalField = None,
    confirmed: OptionalField = None,
) -> Response:
    """Delete the session and its messages (asks first)."""
    check_csrf(viewer, csrf)
    session = await session_of(memory, viewer, key)
    if confirmed != "yes":
        return _confirm(request, "/sessions/delete", session.key, "sess.delete_confirm")
    await memory.sessions.delete(session.key)
    return redirect(request, "/sessions?done=deleted")
