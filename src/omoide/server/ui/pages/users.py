"""Users: the workspace's users (from its sessions) and "forget this user" with the erasure receipt."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from omoide.server.ui.pages.memories import known_users
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, WorkspaceViewer, check_csrf

router = APIRouter(prefix="/users")

OptionalField = Annotated[str | None, Form(max_length=512)]


@router.get("")
async def users(request: Request, memory: MemoryDep, viewer: WorkspaceViewer) -> Response:
    return page(request, "users.html", {"users": await known_users(memory, str(viewer.workspace))})


@router.post("/forget")
async def forget(
    request: Request,
    memory: MemoryDep,
    viewer: WorkspaceViewer,
    user: Annotated[str, Form(min_length=1, max_length=256)],
    csrf: OptionalField = None,
    confirmed: OptionalField = None,
) -> Response:
    """Erase the user from this workspace (``Memory.forget_user``; asks first) and show the receipt."""
    check_csrf(viewer, csrf)
    user = user.strip()
    if confirmed != "yes":
        context = {
            "action": "/users/forget",
            "fields": {"user": user},
            "message_key": "users.forget_help",
            "subject": user,
            "back": "/users",
        }
        return page(request, "confirm.html", context)
    report = await memory.forget_user(workspace=str(viewer.workspace), user=user)
    return page(request, "receipt.html", {"user": user, "receipt": report.as_dict(), "total": report.total})
