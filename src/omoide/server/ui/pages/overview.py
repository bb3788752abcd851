"""The workspace overview: counts, what is waiting, the embedding job, models, recent worker errors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from omoide.engine import Memory
from omoide.errors import OmoideError
from omoide.models import utcnow
from omoide.server.ui.render import page
from omoide.server.ui.security import MemoryDep, Viewer, WorkspaceViewer
from omoide.stores.summaries import MESSAGE_SCOPES, SummaryKind
from omoide.text.tokenize import search_tokenizer_name
from omoide.workers.health import WorkerError, recent_worker_errors, workers_health
from omoide.workers.progress import read_progress

router = APIRouter()


def _model_id(build: Any) -> str | None:
    """A provider's model id, or ``None`` when it cannot be built here (a missing key must not break the page)."""
    try:
        provider = build()
    except OmoideError:
        return None
    return None if provider is None else str(provider.model_id)


async def worker_errors(memory: Memory, viewer: Viewer, *, limit: int = 20) -> list[WorkerError] | None:
    """The workers' recent failed runs, newest first, for the admin; ``None`` for a workspace key.

    A worker run spans every workspace (its messages may name any of them), so only the admin
    key sees them.
    """
    if not viewer.admin:
        return None
    return await recent_worker_errors(memory.store, limit=limit)


@dataclass(frozen=True, slots=True)
class SummaryBacklog:
    """Channels, threads and users of a workspace with messages in the summary window (``active``),
    and how many of them have messages newer than their latest short-term summary (``waiting``)."""

    active: int
    waiting: int
    capped: bool


async def summary_backlog(memory: Memory, workspace: str, *, cap: int = 200) -> SummaryBacklog:
    """What the summariser's next pass has to do in ``workspace`` (looks at ``cap`` scopes at most)."""
    since = utcnow() - timedelta(hours=memory.settings.summary_window_hours)
    store = memory.store.summaries
    active = waiting = 0
    for scope in MESSAGE_SCOPES:
        for owner, scope_id in await store.active_scopes(since=since, scope=scope):
            if owner != workspace:
                continue
            if active >= cap:
                return SummaryBacklog(active, waiting, capped=True)
            active += 1
            latest = await memory.summaries.latest(workspace, scope, scope_id, SummaryKind.SHORT_TERM)
            after = since
            if latest is not None and latest.source_latest_message_at is not None:
                after = max(since, latest.source_latest_message_at + timedelta(microseconds=1))
            if await store.scope_messages(workspace, scope, scope_id, since=after, limit=1):
                waiting += 1
    return SummaryBacklog(active, waiting, capped=False)


@router.get("/")
async def overview(request: Request, memory: MemoryDep, viewer: WorkspaceViewer) -> Response:
    status = await memory.knowledge.status(workspace=viewer.workspace)
    embedder = _model_id(lambda: memory.embedder)
    reranker = _model_id(lambda: memory.reranker)
    chat_model = _model_id(lambda: memory.chat_model)
    to_embed = None if embedder is None else max(0, status.chunks - status.embedded.get(embedder, 0))
    job = await read_progress(memory.store)
    context = {
        "status": status,
        "embedder": embedder,
        "chat_model": chat_model,
        "reranker": reranker,
        "to_embed": to_embed,
        "job": job,
        "tokenizer": search_tokenizer_name(),
        "backend": memory.store.backend,
        "errors": await worker_errors(memory, viewer),
        "workers": await workers_health(memory.store),
        "summaries": await summary_backlog(memory, str(viewer.workspace)),
        "summary_hours": f"{memory.settings.summary_window_hours:g}",
    }
    return page(request, "overview.html", context)
