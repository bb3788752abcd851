"""Hybrid recall's last step, shared by both backends' ``memory_recall``: fuse two ranked id
lists with Reciprocal Rank Fusion and read only the fused memories, in one store call (on
SQLite, one hop to a reader thread instead of two)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

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


__all__ = ["fuse_memory_hits", "fuse_memory_ids", "memory_hits"]
