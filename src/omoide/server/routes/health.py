"""Liveness and readiness (no API key needed)."""

from __future__ import annotations

from fastapi import APIRouter

from omoide.errors import StoreUnavailable
from omoide.server.auth import MemoryDep
from omoide.server.schemas import Health, Ready

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers")
async def healthz() -> Health:
    return Health()


@router.get(
    "/readyz",
    summary="Readiness: the store answers",
    responses={503: {"description": "The store is not reachable (problem+json)."}},
)
async def readyz(memory: MemoryDep) -> Ready:
    try:
        version = await memory.store.schema_version()
    except Exception as exc:  # any failure to reach the store means "not ready"
        raise StoreUnavailable(f"the store is not reachable: {exc}") from exc
    return Ready(backend=memory.store.backend, schema_version=version)
