"""What one embedding run did (:class:`EmbedReport`), for logs, the CLI and the workers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


__all__ = ["EmbedReport"]
