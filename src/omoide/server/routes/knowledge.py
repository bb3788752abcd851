"""Long-term memory: search, ask, import (upload), status."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import unicodedata
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException

from omoide.api_models import AnswerOut, SearchOut
from omoide.errors import InvalidInput, OmoideError
from omoide.server import schemas
from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.schemas import SEARCH_EXAMPLE, AskIn, SearchFiltersIn, SearchIn
from omoide.text.tokenize import search_tokenizer_name
from omoide.workers.progress import read_progress

router = APIRouter(prefix="/v1", tags=["knowledge"], responses={**PROBLEM_RESPONSES}, route_class=StrictJsonRoute)

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
async def search(body: SearchIn, memory: MemoryDep, key: KeyDep) -> SearchOut:
    """Vector + full text, fused with RRF (`mode`), with filters; hits carry jump URLs."""
    result = await memory.search(body.query, workspace=key.workspace_id, explain=body.explain, **_filters(body))
    return SearchOut.model_validate(result.as_dict())


@router.post("/ask", summary="A cited answer from the workspace's long-term memory")
async def ask(body: AskIn, memory: MemoryDep, key: KeyDep) -> AnswerOut:
    """Search → prompt with numbered evidence → the chat model; the answer cites `[#n]`."""
    result = await memory.ask(
        body.question, workspace=key.workspace_id, asker=body.asker, language=body.language, **_filters(body)
    )
    return AnswerOut.model_validate(result.as_dict())


@router.post(
    "/imports",
    summary="Import a chat export (upload) into the workspace",
    status_code=201,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                },
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
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="The file's name; its suffix says the format (default: the uploaded file's name, "
            "else export.json).",
        ),
    ] = None,
    strict: bool = False,
    include_system: bool = False,
) -> dict[str, Any]:
    """The export file, either as a multipart form field `file` (`curl -F file=@export.json`) or
    as the request body itself: a DiscordChatExporter `.json`, a Slack export `.zip` or an omoide
    `.jsonl` transcript (at most `OMOIDE_HTTP_MAX_UPLOAD_BYTES`). Every message must belong to the
    key's workspace (a Discord export names its guild); re-importing is safe.
    """
    folder = Path(tempfile.mkdtemp(prefix="omoide-upload-"))
    try:
        multipart = request.headers.get("content-type", "").lower().startswith("multipart/form-data")
        if multipart:
            name, size = await _save_form_file(request, folder, filename)
        else:
            name = _upload_name(filename or "export.json")
            size = 0
            with (folder / name).open("wb") as out:
                async for chunk in request.stream():
                    size += len(chunk)
                    out.write(chunk)
        if size == 0:
            raise InvalidInput(
                "the upload is empty: send the export file as the form field 'file' (curl -F file=@export.json) "
                "or as the request body"
            )
        try:
            summary = await memory.knowledge.import_export(
                folder / name,
                workspace=key.workspace_id,
                strict=strict,
                include_system=include_system,
                only_workspace=True,
            )
        except OmoideError as exc:
            raise _without_folder(exc, folder) from None
        data = summary.as_dict()
        data["problems"] = [_scrub(p, folder) for p in data["problems"]]
        return data
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)


_STEM_BYTES = 200
"""The longest stem of an uploaded file's name kept, in UTF-8 bytes (file systems allow 255 per name)."""


def _upload_name(name: str) -> str:
    """The client's file name without any directories; its suffix must name a format.

    Raises:
        InvalidInput: the suffix names no format, or the name holds a control character (a NUL).
    """
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidInput(f"the file name must not hold control characters, got {name!r}")
    base = Path(name.replace("\\", "/")).name.strip()
    suffix = Path(base).suffix.lower()
    if suffix not in _SUFFIXES:
        raise InvalidInput(f"the file name must end in .json, .jsonl or .zip (the export's format), got {name!r}")
    stem = Path(base).stem.strip(". ") or "export"
    # cut on a character boundary: a name of 150 Japanese characters is 450 bytes, too long to create
    stem = stem.encode("utf-8", "surrogatepass")[:_STEM_BYTES].decode("utf-8", "ignore") or "export"
    return stem + suffix


async def _save_form_file(request: Request, folder: Path, filename: str | None) -> tuple[str, int]:
    """Write the form's file field (``file``, else the only file) to ``folder``; ``(name, bytes)``."""
    try:
        form = await request.form(max_files=1, max_fields=20)
    except HTTPException as exc:  # Starlette's 400 for a form it cannot read (no boundary, cut short, two files)
        if exc.status_code != 400:
            raise
        raise InvalidInput(
            f"the multipart form could not be read ({exc.detail.rstrip('.')}): send one file, as the field 'file' "
            "(curl -F file=@export.json)"
        ) from exc
    try:
        uploads = [v for _, v in form.multi_items() if isinstance(v, UploadFile)]
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            upload = uploads[0] if len(uploads) == 1 else None
        if upload is None:
            raise InvalidInput(
                "the multipart form holds no file: send the export as the field 'file' (curl -F file=@export.json)"
            )
        name = _upload_name(filename or upload.filename or "export.json")
        size = 0
        with (folder / name).open("wb") as out:
            while chunk := await upload.read(1024 * 1024):
                size += len(chunk)
                out.write(chunk)
        return name, size
    finally:
        await form.close()


def _scrub(text: str, folder: Path) -> str:
    """``text`` without the server's temporary folder (problems name the file as the client sent it)."""
    return text.replace(f"{folder}{os.sep}", "").replace(str(folder), "")


def _without_folder(exc: OmoideError, folder: Path) -> OmoideError:
    """``exc`` with the server's temporary folder taken out of its message and details."""
    exc.message = _scrub(exc.message, folder)
    exc.args = (exc.message,)
    exc.details = {
        k: _scrub(v, folder)
        if isinstance(v, str)
        else [_scrub(i, folder) if isinstance(i, str) else i for i in v]
        if isinstance(v, list)
        else v
        for k, v in exc.details.items()
    }
    return exc


class EmbeddingJobOut(BaseModel):
    """The embedding job (``omoide worker`` or ``omoide embed``, any host), as it last recorded itself in the store."""

    running: bool = Field(description="False once the job has finished (it then says what it did).")
    model: str
    rate: float | None = Field(description="Chunks embedded per second since the job started (all workspaces).")
    workspace_eta_seconds: float | None = Field(
        description="This workspace's chunks_to_embed at that rate: the least time until they are all embedded "
        "(chunks of other workspaces queued before them come first)."
    )
    started_at: str
    updated_at: str


class StatusOut(schemas.StatusOut):
    embedder: str | None = Field(
        description="The configured embedding model; chunks_to_embed counts chunks without its vector "
        "(null: it cannot be built here, e.g. no API key)."
    )
    chunks_to_embed: int | None = Field(
        description="Chunks without a vector of the configured model yet: searchable by words already, "
        "by meaning once the worker has embedded them."
    )
    search_tokenizer: str = Field(description="The Japanese-aware search tokenizer in use, e.g. sudachi-core:v3.")
    lexical_index_tokenizer: str | None = Field(
        description="The tokenizer that wrote the full-text index (queries use it until `omoide reindex --lexical`)."
    )
    embedding_job: EmbeddingJobOut | None = Field(
        description="The running (or just finished) embedding job's progress, as recorded in the database by any host."
    )


@router.get(
    "/status", summary="Counts of the workspace's sessions, sources, chunks and vectors, and embedding progress"
)
async def status(memory: MemoryDep, key: KeyDep) -> StatusOut:
    """What the workspace holds, what still waits for vectors, and how fast the embedding job goes."""
    found = await memory.knowledge.status(workspace=key.workspace_id)
    try:
        model: str | None = memory.embedder.model_id
    except OmoideError:  # a misconfigured embedder must not take the counts down with it
        model = None
    waiting = None if model is None else max(0, found.chunks - found.embedded.get(model, 0))
    job = await read_progress(memory.store)
    return StatusOut(
        workspace_id=key.workspace_id,
        sessions=dict(found.sessions),
        unarchived_messages=found.unarchived_messages,
        sources=dict(found.sources),
        chunks=found.chunks,
        embedded=dict(found.embedded),
        units_missing=found.units_missing,
        unit_vectors_missing=dict(found.unit_vectors_missing),
        reader_vectors_missing=dict(found.reader_vectors_missing),
        embedder=model,
        chunks_to_embed=waiting,
        search_tokenizer=search_tokenizer_name(),
        lexical_index_tokenizer=await memory.store.search.lexical_tokenizer(),
        embedding_job=None
        if job is None
        else EmbeddingJobOut(
            running=job.running,
            model=job.model,
            rate=job.rate,
            workspace_eta_seconds=round(waiting / job.rate, 1)
            if job.rate and job.running and waiting is not None
            else None,
            started_at=job.started_at,
            updated_at=job.updated_at,
        ),
    )
