"""API keys, for the admin key only (``OMOIDE_ADMIN_KEY``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from omoide.server.auth import AdminDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.schemas import KeyCreatedOut, KeyCreateIn, KeyOut, Page

router = APIRouter(
    prefix="/v1/admin/keys", tags=["admin"], responses={**PROBLEM_RESPONSES}, route_class=StrictJsonRoute
)


@router.post("", summary="Create an API key for a workspace", status_code=201)
async def create_key(body: KeyCreateIn, memory: MemoryDep, _: AdminDep) -> KeyCreatedOut:
    """The response holds the token, once; only its SHA-256 is stored."""
    created = await memory.api_keys.create(body.workspace, name=body.name)
    return KeyCreatedOut(**KeyOut.of(created.record).model_dump(), token=created.token)


@router.get("", summary="List API keys")
async def list_keys(
    memory: MemoryDep,
    _: AdminDep,
    workspace: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    include_revoked: bool = True,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Page[KeyOut]:
    found = await memory.api_keys.list(
        workspace=workspace, include_revoked=include_revoked, limit=limit + 1, offset=offset
    )
    return Page[KeyOut](
        items=[KeyOut.of(k) for k in found[:limit]],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(found) > limit else None,
    )


@router.delete("/{key_id}", summary="Revoke an API key")
async def revoke_key(key_id: Annotated[int, Path(ge=1, le=2**62)], memory: MemoryDep, _: AdminDep) -> KeyOut:
    """Takes effect at once; revoking again is harmless."""
    return KeyOut.of(await memory.api_keys.revoke(key_id))
