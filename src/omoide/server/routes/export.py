"""Export over HTTP: a workspace's data, or one user's, as streamed JSONL (``omoide.ops.export``).

The key's workspace is the only one a request can export. The body streams from one database
snapshot, row by row, so a large workspace does not sit in the server's memory.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import suppress
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from omoide.ops.export import ExportScope, export_rows, line
from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.routes.memories import UserId

router = APIRouter(prefix="/v1", tags=["export"], responses={**PROBLEM_RESPONSES}, route_class=StrictJsonRoute)

JSONL = "application/x-ndjson"
_JSONL_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {JSONL: {"schema": {"type": "string"}}}, "description": "One JSON object per line."}
}


_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


def attachment(filename: str) -> str:
    """A ``Content-Disposition`` naming ``filename``, whatever the ids in it hold: headers are Latin-1
    and end at a line break, so the plain ``filename`` keeps only ``A-Z a-z 0-9 . _ -`` (others
    become ``_``) and ``filename*`` (RFC 6266, RFC 8187) carries the whole name, UTF-8 percent-encoded."""
    plain = _UNSAFE_IN_FILENAME.sub("_", filename)
    if plain == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


async def _stream(rows: AsyncIterator[dict[str, Any]], filename: str) -> StreamingResponse:
    """Read the header row and the first data row (or the end) before answering, so that a database
    error opening the snapshot or running the queries up to that row is a problem response, not a cut-off
    body (the header alone needs no query). The rows' snapshot is closed when the body ends, however
    it ends (a client that goes away included)."""
    headers = {"Content-Disposition": attachment(filename)}
    try:
        ahead = [await anext(rows)]
        with suppress(StopAsyncIteration):  # an export of nothing: the header alone
            ahead.append(await anext(rows))
    except BaseException:
        await _close(rows)
        raise

    async def body() -> AsyncIterator[str]:
        try:
            for row in ahead:
                yield line(row)
            async for row in rows:
                yield line(row)
        finally:
            await _close(rows)

    return StreamingResponse(body(), media_type=JSONL, headers=headers)


async def _close(rows: AsyncIterator[dict[str, Any]]) -> None:
    if isinstance(rows, AsyncGenerator):
        await rows.aclose()


@router.get(
    "/export",
    summary="Export the workspace's data (JSONL)",
    response_class=StreamingResponse,
    responses=_JSONL_RESPONSE,
)
async def export_workspace(memory: MemoryDep, key: KeyDep) -> StreamingResponse:
    """Every session, message, knowledge source and chunk, memory (with its history) and summary
    of the key's workspace, one JSON object per line; the first line describes the export.
    Vectors, search tokens and API keys are left out."""
    scope = ExportScope(key.workspace_id)
    return await _stream(export_rows(memory.store.url, scope), f"omoide-{key.workspace_id}.jsonl")


@router.get(
    "/users/{user_id}/export",
    summary="Export one user's data (JSONL)",
    response_class=StreamingResponse,
    responses=_JSONL_RESPONSE,
)
async def export_user(user_id: UserId, memory: MemoryDep, key: KeyDep) -> StreamingResponse:
    """What omoide keeps about a user in the key's workspace (a data-subject access request):
    their sessions and messages, their own lines of archived conversations, their memories with
    their history, and the summaries about them; one JSON object per line."""
    scope = ExportScope(key.workspace_id, user_id)
    return await _stream(export_rows(memory.store.url, scope), f"omoide-{key.workspace_id}-{user_id}.jsonl")
