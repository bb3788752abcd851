"""Long-term memory: search, ask, import (upload), status."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from omoide.errors import InvalidInput
from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.schemas import SEARCH_EXAMPLE, AskIn, SearchFiltersIn, SearchIn, StatusOut

router = APIRouter(prefix="/v1", tags=["knowledge"], responses={**PROBLEM_RESPONSES})

_SUFFIXES = {".json", ".zip", ".jsonl"}


def _filters(body: SearchFiltersIn) -> dict[str, Any]:
    return {
        "channel": body.channel,
        "thread": body.thread,
        "author": body.author,
        "source_type": body.source_type,
        "since": body.since,
        "until": body.until,
        "k": body.k,
        "mode": body.mode,
        "viewer": body.viewer,
        "public_only": body.public_only,
    }


@router.post(
    "/search",
    summary="Hybrid search over the workspace's long-term memory",
    responses={200: {"content": {"application/json": {"example": SEARCH_EXAMPLE}}}},
)
async def search(body: SearchIn, memory: MemoryDep, key: KeyDep) -> dict[str, Any]:
    """Vector + full text, fused with RRF (`mode`), with filters; hits carry jump URLs."""
    result = await memory.search(body.query, workspace=key.workspace_id, explain=body.explain, **_filters(body))
    return result.as_dict()


@router.post("/ask", summary="A cited answer from the workspace's long-term memory")
async def ask(body: AskIn, memory: MemoryDep, key: KeyDep) -> dict[str, Any]:
    """Search → prompt with numbered evidence → the chat model; the answer cites `[#n]`."""
    result = await memory.ask(
        body.question, workspace=key.workspace_id, asker=body.asker, language=body.language, **_filters(body)
    )
    return result.as_dict()


@router.post(
    "/imports",
    summary="Import a chat export (upload) into the workspace",
    status_code=201,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                "application/json": {"schema": {"type": "object"}},
                "application/zip": {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
async def import_export(
    request: Request,
    memory: MemoryDep,
    key: KeyDep,
    filename: Annotated[
        str, Query(min_length=1, max_length=200, description="The file's name; its suffix says the format.")
    ] = "export.json",
    strict: bool = False,
    include_system: bool = False,
) -> dict[str, Any]:
    """The request body is the export file itself: a DiscordChatExporter `.json`, a Slack export
    `.zip` or an omoide `.jsonl` transcript (at most `OMOIDE_HTTP_MAX_UPLOAD_BYTES`). Every message
    must belong to the key's workspace (a Discord export names its guild); re-importing is safe.
    """
    suffix = Path(filename).suffix.lower()
    if suffix not in _SUFFIXES:
        raise InvalidInput(f"filename must end in .json, .jsonl or .zip (the export's format), got {filename!r}")
    folder = Path(tempfile.mkdtemp(prefix="omoide-upload-"))
    try:
        path = folder / ("upload" + suffix)
        size = 0
        with path.open("wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                out.write(chunk)
        if size == 0:
            raise InvalidInput("the request body is empty: send the export file as the body")
        summary = await memory.import_export(
            path, workspace=key.workspace_id, strict=strict, include_system=include_system, only_workspace=True
        )
        return summary.as_dict()
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)


@router.get("/status", summary="Counts of the workspace's sessions, sources, chunks and vectors")
async def status(memory: MemoryDep, key: KeyDep) -> StatusOut:
    found = await memory.knowledge_status(workspace=key.workspace_id)
    return StatusOut(
        workspace_id=key.workspace_id,
        sessions=dict(found.sessions),
        unarchived_messages=found.unarchived_messages,
        sources=dict(found.sources),
        chunks=found.chunks,
        embedded=dict(found.embedded),
    )
