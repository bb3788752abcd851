"""Liveness and readiness (no API key needed).

``/healthz``: the process answers. ``/readyz``: the database answers, its schema is at the
version this omoide knows (no pending migration: ``omoide migrate``), and no worker process is
known to be dead or stuck (:func:`omoide.workers.health.workers_health`: a deployment whose
workers never reported — the API alone — is ready). Not ready: 503 problem+json whose
``detail`` says why and whose ``checks`` say each part.
"""

from __future__ import annotations

from typing import Any, Literal

import structlog
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from omoide.server.auth import MemoryDep
from omoide.server.problems import problem
from omoide.server.schemas import Health
from omoide.workers.health import workers_health

log = structlog.get_logger(__name__)

router = APIRouter(tags=["health"])


class ReadyChecks(BaseModel):
    database: Literal["ok", "unreachable"]
    migrations: Literal["current", "pending", "unknown"]
    workers: str = Field(description="`alive`, `none` (none reported: not part of this deployment), `stopped`, `dead`.")


class ReadyOut(BaseModel):
    status: Literal["ready"] = "ready"
    backend: str
    schema_version: int
    latest_schema_version: int
    checks: ReadyChecks


def _latest_version(backend: str) -> int:
    if backend == "sqlite":
        from omoide.stores.sqlite.migrations import LATEST_VERSION
    else:
        from omoide.stores.postgres.migrations import LATEST_VERSION
    return LATEST_VERSION


@router.get("/healthz", summary="Liveness: the process answers")
async def healthz() -> Health:
    return Health()


@router.get(
    "/readyz",
    summary="Readiness: database reachable, migrations current, workers alive",
    responses={503: {"description": "Not ready; `detail` says why, `checks` each part (problem+json)."}},
    response_model=ReadyOut,
)
async def readyz(request: Request, memory: MemoryDep) -> Any:
    backend = memory.store.backend
    latest = _latest_version(backend)
    reasons: list[str] = []
    checks: dict[str, str] = {"database": "ok", "migrations": "unknown"}
    version = 0
    try:
        version = await memory.store.schema_version()
    except Exception as exc:  # any failure to reach the store means "not ready"
        checks["database"] = "unreachable"
        reasons.append(f"the store is not reachable: {exc}")
    else:
        checks["migrations"] = "current" if version >= latest else "pending"
        if version < latest:
            reasons.append(f"the schema is at version {version}, this omoide needs {latest}: run `omoide migrate`")
    workers = await workers_health(memory.store)
    checks["workers"] = workers.state
    if not workers.ok:
        reasons.append(workers.reason)
    if reasons:
        log.error("http_error", code="NOT_READY", status=503, error="; ".join(reasons))  # like every 5xx
        response: Response = problem(
            503, "; ".join(reasons), code="NOT_READY", request=request, checks=checks, backend=backend
        )
        return response
    return ReadyOut(
        backend=backend, schema_version=version, latest_schema_version=latest, checks=ReadyChecks.model_validate(checks)
    )
