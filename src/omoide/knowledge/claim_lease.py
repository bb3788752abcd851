"""Keeping a live worker's claims: the lease of claimed sources renewed while it works.

The lease (``OMOIDE_EMBED_LEASE_SECONDS``) is how a *dead* worker's sources come back; a live one
that is slow (a large source, a slow or rate-limited provider) keeps them, so no second worker
embeds them again and counts an attempt that never failed (``attempts`` would reach
``OMOIDE_EMBED_MAX_ATTEMPTS`` and fail a source that was being embedded all along).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

import structlog

from omoide.stores.knowledge import KnowledgeStore, SourceId

log = structlog.get_logger(__name__)


@contextlib.asynccontextmanager
async def keeping_claims(
    store: KnowledgeStore, claimed: Sequence[SourceId], lease_seconds: float, model: str
) -> AsyncIterator[None]:
    """Renew the lease of ``claimed`` every third of ``lease_seconds`` while the block runs
    (:meth:`~omoide.stores.knowledge.KnowledgeStore.renew_claims`)."""
    every = lease_seconds / 3

    async def renew() -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await store.renew_claims(list(claimed))
            except Exception:  # the round itself meets a store failure; the lease may then run out
                log.warning("embed_claim_renew_failed", model=model, source_ids=list(claimed), exc_info=True)

    task = asyncio.get_running_loop().create_task(renew(), name="omoide-embed-lease")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


__all__ = ["keeping_claims"]
