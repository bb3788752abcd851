"""Pure ranking functions: Reciprocal Rank Fusion and score normalisation. No I/O.

Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009) scores a document by
``Σ 1 / (k + rank)`` over the ranked lists it appears in (``rank`` 1-based). Only ranks
are used, so lists whose scores are not comparable (cosine similarity, BM25) fuse
without calibration.

One constant ``k`` (default 60, the paper's value) is used for **every** list. Seed 004's
SQL sketch used ``1 / (1 + rank)`` for the vector list and ``1 / (60 + rank)`` for the
lexical one, which lets the vector list's first hit (0.5) outweigh a document ranked first
lexically *and* second by vector (0.016 + 0.33): a defect, not a weighting.

Properties (tested with hypothesis in ``tests/search/test_fusion.py``):

* deterministic: ties are broken by the best single rank, then by first appearance;
* the result (before ``limit``) is exactly the union of the inputs, each key once;
* a key never ranks below one it beats in every list that holds either of them
  (absence from a list loses to presence).
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from omoide.errors import InvalidInput

K = TypeVar("K", bound=Hashable)

DEFAULT_RRF_K = 60
"""The RRF constant of the paper, used for every list."""


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    """One fused result.

    Attributes:
        key: the document (a chunk id in omoide).
        score: ``Σ 1/(k + rank)`` over the lists containing it.
        ranks: its 1-based rank in each input list, ``None`` where absent (same order as the lists).
    """

    key: K
    score: float
    ranks: tuple[int | None, ...]

    @property
    def best_rank(self) -> int:
        """Its best (smallest) rank in any list."""
        return min(r for r in self.ranks if r is not None)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], *, k: int = DEFAULT_RRF_K, limit: int | None = None
) -> list[Fused[K]]:
    """Fuse ranked lists (best first) into one, best first.

    A key repeated within one list counts once, at its first (best) position.

    Example:
        >>> [f.key for f in reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "a"]])]
        ['b', 'a', 'c']

    Args:
        rankings: the lists, each ordered best first.
        k: the RRF constant, the same for every list (must be ≥ 0).
        limit: keep only the first ``limit`` results (``None``: all).

    Raises:
        InvalidInput: a negative or non-integer ``k``, or a negative ``limit``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInput(f"the RRF constant k must be a non-negative integer, got {k!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidInput(f"limit must be a non-negative integer or None, got {limit!r}")
    # each list's 1-based positions (a repeated key keeps its first), every key's first
    # appearance, then the sums in list order (one addition per list holding the key: float
    # addition is monotonic, so beating a key in every list still means outscoring it)
    positions = [{key: i for i, key in enumerate(dict.fromkeys(ranking), start=1)} for ranking in rankings]
    order = {key: i for i, key in enumerate(dict.fromkeys(itertools.chain.from_iterable(rankings)))}
    scores = dict.fromkeys(order, 0.0)
    best = dict.fromkeys(order, sys.maxsize)
    for listed in positions:
        for key, rank in listed.items():
            scores[key] += 1.0 / (k + rank)
            if rank < best[key]:
                best[key] = rank
    # sort plain tuples (score, best rank, first appearance: never equal, so keys are never
    # compared) and build results for the kept ones only: the pipeline keeps 15 of ~400
    entries = [(-scores[key], best[key], first, key) for key, first in order.items()]
    chosen = sorted(entries) if limit is None else heapq.nsmallest(limit, entries)
    return [Fused(key, -negative, tuple(p.get(key) for p in positions)) for negative, _, _, key in chosen]


def min_max(scores: Sequence[float]) -> list[float]:
    """Scale ``scores`` linearly to ``[0, 1]`` (all equal → all 1.0; empty → empty).

    Non-finite values are rejected: they cannot be scaled meaningfully.

    Raises:
        InvalidInput: a NaN or infinite score.
    """
    values = [float(s) for s in scores]
    if any(not math.isfinite(v) for v in values):
        raise InvalidInput("cannot normalise NaN or infinite scores")
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [1.0] * len(values)
    span = high - low
    return [(v - low) / span for v in values]


def cosine_to_unit(similarity: float) -> float:
    """A cosine similarity in ``[-1, 1]`` mapped to ``[0, 1]`` (clamped)."""
    return min(1.0, max(0.0, (float(similarity) + 1.0) / 2.0))


def rrf_bounds(lists: int, *, k: int = DEFAULT_RRF_K) -> float:
    """The largest possible RRF score with ``lists`` lists: ranked first in all of them."""
    return lists / (k + 1.0) if lists > 0 else 0.0


def normalise_rrf(score: float, lists: int, *, k: int = DEFAULT_RRF_K) -> float:
    """An RRF score as a fraction of :func:`rrf_bounds` (``1.0`` = first in every list)."""
    top = rrf_bounds(lists, k=k)
    return 0.0 if top == 0.0 else min(1.0, max(0.0, score / top))


__all__ = [
    "DEFAULT_RRF_K",
    "Fused",
    "cosine_to_unit",
    "min_max",
    "normalise_rrf",
    "reciprocal_rank_fusion",
    "rrf_bounds",
]
