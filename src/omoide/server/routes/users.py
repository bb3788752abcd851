"""A user as a whole: erase everything omoide keeps about them (``Memory.forget_user``)."""

from __future__ import annotations

from fastapi import APIRouter

from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.routes.memories import UserId
from omoide.server.schemas import ErasureOut

router = APIRouter(prefix="/v1/users", tags=["memories"], responses={**PROBLEM_RESPONSES}, route_class=StrictJsonRoute)


@router.delete("/{user_id}", summary="Erase everything stored about a user")
async def erase_user(user_id: UserId, memory: MemoryDep, key: KeyDep) -> ErasureOut:
    """Erase the user's data in the key's workspace: their memories, their sessions and the
    messages they wrote, their lines in long-term knowledge, the summaries drawn from them
    and their transcripts. Cannot be undone.

    Answers the receipt: how many records of each kind were erased. Idempotent: erasing
    again (or a user omoide never saw) answers 200 with zero counts.
    """
    report = await memory.forget_user(workspace=key.workspace_id, user=user_id)
    return ErasureOut(workspace_id=key.workspace_id, user_id=user_id, erased=report.as_dict())
