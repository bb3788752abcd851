"""What one embedding run did (:class:`EmbedReport`), for logs, the CLI and the workers, and how
its progress reaches them (:class:`ChunkProgress`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from omoide.errors import ProviderError
from omoide.stores.knowledge import ChunkText, EmbeddingRow, LineVectorsRow

ERROR_CHARS = 500
"""Longest error text kept on a source and in a report."""

OnChunks = Callable[[int], None]
"""Progress callback: called with the number of chunks just embedded and stored (each chunk
once per run, per provider request rather than per batch)."""

PROGRESS_TEXTS = 64
"""Texts per provider call when progress is reported: a batch (chunk texts and their unit
texts, often ~900 texts) is sent and stored in slices of ``max(PROGRESS_TEXTS,
embedder.max_batch)`` texts, whole chunks each. The provider splits a call by ``max_batch``
anyway, so this adds no request; the caller sees each request's chunks once they are stored."""


class ChunkProgress:
    """Reports chunks to an :data:`OnChunks` callback, each chunk once (a batch retried source
    by source after a refusal does not count its chunks twice)."""

    __slots__ = ("on_chunks", "seen")

    def __init__(self, on_chunks: OnChunks | None) -> None:
        self.on_chunks = on_chunks
        self.seen: set[int] = set()

    def __call__(self, chunks: Sequence[ChunkText]) -> None:
        if self.on_chunks is None:
            return
        new = [c.id for c in chunks if c.id not in self.seen]
        if new:
            self.seen.update(new)
            self.on_chunks(len(new))


def short_error(exc: BaseException) -> str:
    """``Type: message``, cut at :data:`ERROR_CHARS` (what a failed source records)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:ERROR_CHARS]


class Transient(Exception):
    """Internal to the embedding processor: a retryable provider error ended the round."""

    def __init__(self, cause: ProviderError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def units_written(rows: Sequence[EmbeddingRow | LineVectorsRow], written: int) -> int:
    """Unit vectors in ``rows`` when the store wrote all of them; when it skipped some (chunks
    rewritten or deleted meanwhile) it does not say which, so count those of the ``written``
    rows with the fewest units (a lower bound)."""
    counts = sorted(0 if r.unit_vectors is None else len(r.unit_vectors) for r in rows)
    if written >= len(rows):
        return sum(counts)
    return sum(counts[:written])


@dataclass(slots=True)
class EmbedReport:
    """What one embedding run did.

    Attributes:
        model: the embedding model id.
        claimed / ready / failed / retried / released: sources claimed, finished, failed,
            put back to pending after a transient error, handed back unfinished on stop.
        chunks: vectors written. skipped: chunks left without a vector (backfill only:
            the provider refused them).
        units: unit vectors written (one per line of the chunks written; by
            :meth:`EmbeddingProcessor.backfill_units`, of the chunks given units).
        transient_error: set when the run stopped early on a transient provider error
            (back off before the next run).
        stopped: the run ended early because a stop was requested.
        index_created: the ANN index for the model was created in this run.
    """

    model: str
    claimed: int = 0
    ready: int = 0
    failed: int = 0
    retried: int = 0
    released: int = 0
    chunks: int = 0
    units: int = 0
    skipped: int = 0
    batches: int = 0
    duration_s: float = 0.0
    stopped: bool = False
    transient_error: str | None = None
    index_created: bool = False

    @property
    def idle(self) -> bool:
        """Nothing was claimed or embedded."""
        return self.claimed == 0 and self.chunks == 0 and self.units == 0 and self.skipped == 0

    @property
    def retry_later(self) -> bool:
        """A transient provider error ended the run: back off."""
        return self.transient_error is not None

    def as_log(self) -> dict[str, Any]:
        """The counts and the duration, for a structured log line."""
        out: dict[str, Any] = {
            "model": self.model,
            "claimed": self.claimed,
            "ready": self.ready,
            "failed": self.failed,
            "retried": self.retried,
            "released": self.released,
            "chunks": self.chunks,
            "units": self.units,
            "batches": self.batches,
            "duration_ms": round(self.duration_s * 1000, 1),
            "stopped": self.stopped,
        }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.transient_error:
            out["transient_error"] = self.transient_error
        if self.index_created:
            out["index_created"] = True
        return out


__all__ = ["PROGRESS_TEXTS", "ChunkProgress", "EmbedReport", "OnChunks", "units_written"]
