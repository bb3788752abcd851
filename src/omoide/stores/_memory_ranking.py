"""Hybrid recall's last step, shared by the service and the stores: fuse two ranked id lists
with Reciprocal Rank Fusion and read only the fused memories.

A store that can rank and fuse in one round trip implements :class:`HybridMemoryRecall`
(both built-in stores do); the service then makes one store call per recall instead of two
(on SQLite, each call is a hop to a reader thread).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from omoide.fusion import DEFAULT_RRF_K, Fused, reciprocal_rank_fusion
from omoide.stores.memories import MemoryHit, MemoryRecord

LISTS = ("vector", "lexical")


def fuse_memory_ids(by_vector: Sequence[int], by_text: Sequence[int], limit: int) -> list[Fused[int]]:
    """RRF (k = 60) of the two id lists, best first, the first ``limit`` only."""
    return reciprocal_rank_fusion([list(by_vector), list(by_text)], k=DEFAULT_RRF_K, limit=limit)


def memory_hits(fused: Sequence[Fused[int]], records: Mapping[int, MemoryRecord]) -> list[MemoryHit]:
    """``fused`` (from :func:`fuse_memory_ids`) as hits over ``records``, keyed by memory id.

    An id ``records`` lacks (deleted meanwhile) is left out; ranks stay consecutive.
    """
    hits: list[MemoryHit] = []
    for f in fused:
        record = records.get(int(f.key))
        if record is None:
            continue
        ranks = {name: r for name, r in zip(LISTS, f.ranks, strict=True) if r is not None}
        hits.append(MemoryHit(record, f.score, len(hits) + 1, ranks))
    return hits


def fuse_memory_hits(
    by_vector: Sequence[int],
    by_text: Sequence[int],
    limit: int,
    fetch: Callable[[list[int]], Mapping[int, MemoryRecord]],
) -> list[MemoryHit]:
    """RRF (k = 60) of the two id lists, best first; ``fetch`` reads only the ``limit`` fused ids.

    An id ``fetch`` does not return (deleted meanwhile) is left out; ranks stay consecutive.
    """
    fused = fuse_memory_ids(by_vector, by_text, limit)
    return memory_hits(fused, fetch([int(f.key) for f in fused]))


@runtime_checkable
class HybridMemoryRecall(Protocol):
    """A store that ranks, fuses and reads a recall's memories in one call."""

    async def memory_recall(
        self,
        workspace_id: str,
        user_id: str,
        *,
        model: str,
        query: npt.NDArray[np.float32],
        tokens: Sequence[str],
        k: int,
        limit: int,
        category: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[MemoryHit]:
        """The user's ``limit`` best memories: ``k`` candidates by vector and by BM25, fused with RRF."""
        ...


__all__ = ["HybridMemoryRecall", "fuse_memory_hits", "fuse_memory_ids", "memory_hits"]
