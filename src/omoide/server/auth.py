"""Authentication: an API key names the one workspace a request may reach; the admin key manages keys."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from omoide.engine import Memory
from omoide.server.problems import ApiKeyRejected
from omoide.stores.api_keys import ApiKeyRecord

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key (`omk_…`, one workspace) — or, for /v1/admin, the admin key (OMOIDE_ADMIN_KEY).",
)


async def get_memory(request: Request) -> Memory:
    memory: Memory = request.app.state.memory
    return memory


MemoryDep = Annotated[Memory, Depends(get_memory)]


def _token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str:
    token = credentials.credentials if credentials is not None else request.headers.get("x-api-key")
    if not token:
        raise ApiKeyRejected(
            "missing API key: send 'Authorization: Bearer omk_…' (create one with `omoide keys create`)"
        )
    return token


async def api_key(
    request: Request,
    memory: MemoryDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> ApiKeyRecord:
    """The request's API key; its ``workspace_id`` scopes everything the request does."""
    record = await memory.api_keys.verify(_token(request, credentials))
    if record is None:
        raise ApiKeyRejected("the API key is unknown or revoked")
    request.state.api_key_id = int(record.id)
    request.state.workspace_id = record.workspace_id  # the request's span carries it
    return record


async def admin(
    request: Request,
    memory: MemoryDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """Only the admin key (``OMOIDE_ADMIN_KEY``) passes."""
    token = _token(request, credentials)
    secret = memory.settings.admin_key
    if secret is None or not hmac.compare_digest(token.encode(), secret.get_secret_value().encode()):
        raise ApiKeyRejected("this endpoint needs the admin key (OMOIDE_ADMIN_KEY)")


KeyDep = Annotated[ApiKeyRecord, Depends(api_key)]
AdminDep = Annotated[None, Depends(admin)]

__all__ = ["AdminDep", "KeyDep", "MemoryDep", "admin", "api_key", "bearer", "get_memory"]
