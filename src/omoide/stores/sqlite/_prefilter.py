"""A low-dimensional first pass for large SQLite vector scans.

The exact scan of a workspace's matrix reads every float of it: 80k chunks × 384 float32
is 123 MB per query, 12–17 ms on two cores, bound by memory bandwidth rather than arithmetic
(numpy's SIMD loop on one core is as fast as BLAS on two). Above
``sqlite_vector_prefilter_rows`` vectors (20,000 by default), the cache also keeps every row
projected on the matrix's first :data:`DIMS` principal components (a sixth of the bytes). A
search scores the projection, keeps the best :func:`pool_size` rows (20 × k, and at least a
sixteenth of the rows) and scores those exactly: the ranking it returns has exact cosine
scores, and the rows a search misses are those whose projection ranks them below the pool.

Measured (``docs/benchmarks.md``, "SQLite vector prefilter"): on 33,854 real
multilingual-e5-small vectors (LoCoMo and Japanese chunks and messages) recall of the exact
top 200 is 0.999 with a pool of 4,000, and 1.000 of the exact top 30; on the benchmark's
100k chunks, 1.000. Only unfiltered searches (the workspace, visibility) use it; a narrower
filter already gathers its rows and scans them exactly.

The principal components come from an evenly spaced sample of at most :data:`SAMPLE_ROWS`
rows (the covariance of 8k × 384 and its eigenvectors, then one product with every row: tens of
milliseconds at 100k rows, paid when the matrix is rebuilt).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DIMS = 64
"""Principal components kept per row."""
POOL_PER_K = 20
"""Rows scored exactly per row asked for."""
POOL_FRACTION = 16
"""…and at least this fraction (1/16) of the rows."""
SAMPLE_ROWS = 8_192
"""Rows (at most) the principal components are computed from."""


@dataclass(frozen=True, slots=True)
class Projection:
    """The rows of one matrix on its first principal components."""

    basis: npt.NDArray[np.float32]  # (dimensions, DIMS), orthonormal columns
    rows: npt.NDArray[np.float32]  # (n, DIMS)

    @property
    def nbytes(self) -> int:
        return int(self.basis.nbytes + self.rows.nbytes)


def project(vectors: npt.NDArray[np.float32], min_rows: int) -> Projection | None:
    """The projection of ``vectors`` (L2-normalised rows), or ``None`` when it has fewer than
    ``min_rows`` rows (``min_rows`` 0: never) or too few dimensions for a projection to save
    much (fewer than ``4 * DIMS``)."""
    n, dims = vectors.shape
    if min_rows <= 0 or n < min_rows or dims < 4 * DIMS:
        return None
    sample = vectors[:: max(1, -(-n // SAMPLE_ROWS))]
    centred = sample - sample.mean(axis=0)
    values, vecs = np.linalg.eigh((centred.T @ centred).astype(np.float64))
    basis = np.ascontiguousarray(vecs[:, np.argsort(values)[::-1][:DIMS]], dtype=np.float32)
    # centring would shift every row's score by the same amount per query: ranking needs none
    return Projection(basis, np.ascontiguousarray(vectors @ basis))


def pool_size(n: int, k: int) -> int:
    """Rows scored exactly for a search of ``k`` over ``n`` rows."""
    return min(n, max(POOL_PER_K * k, n // POOL_FRACTION))


def candidates(projection: Projection, query: npt.NDArray[np.float32], pool: int) -> npt.NDArray[np.intp]:
    """Positions of the ``pool`` rows whose projections score best against ``query``, ascending."""
    approx: npt.NDArray[np.float32] = np.vecdot(projection.rows, query @ projection.basis)
    n = approx.shape[0]
    if pool >= n:
        return np.arange(n)
    # the pool-th best score, then the rows at or above it, already ascending: a partition of
    # the scores alone and one pass, ~half the CPU of partitioning positions and sorting them.
    # The same rows whenever exactly ``pool`` reach it; on a tie at the boundary (or NaN) the
    # positions are partitioned as before
    threshold = np.partition(approx, n - pool)[n - pool]
    chosen: npt.NDArray[np.intp] = np.flatnonzero(approx >= threshold)
    if chosen.shape[0] == pool:
        return chosen
    return np.sort(np.argpartition(-approx, pool - 1)[:pool])


__all__ = ["DIMS", "Projection", "candidates", "pool_size", "project"]
