"""The conversation a candidate message belongs to, seen through the line reader (issue 16).

A question is usually about one conversation: its best-matching line says which, and the evidence is
often a plain line beside it. The unit scorer (:mod:`omoide.search.units`) gives each candidate message
four features from the reader's cosines it already has, grouped by the message's *source* (its chunk's
``source_id``: one archived stretch of a channel): ``reader_source_best``, ``reader_source_gap``,
``reader_source_top3`` and ``reader_source_rank`` (see :func:`source_features`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt


def source_features(
    cos: npt.NDArray[np.float64], sources: npt.NDArray[np.int64], message_of: Callable[[int], Any]
) -> npt.NDArray[np.float64]:
    """The four ``reader_source_*`` columns for rows whose reader cosine is ``cos`` (NaN: none) and
    whose source is ``sources[row]``: the best cosine among the source's rows, the row's own minus
    it, the mean of the source's three best, and the source's place (0, 1, …) among the sources by
    their best (ties: the lower source id first). NaN where the row's source has no row with a
    cosine (the gap: where the row itself has none).

    A message two overlapping chunks of its source both hold counts once (its later row):
    ``message_of(row)`` gives a row's message id (``None``: the row counts on its own), asked only
    for the rows of sources with more than one row. The work is per column, not per row."""
    out = np.full((cos.shape[0], 4), np.nan)
    counted = ~np.isnan(cos)
    if not counted.any():
        return out
    shared, rows_of = np.unique(sources[counted], return_counts=True)
    for source in shared[rows_of > 1].tolist():
        seen: dict[Any, int] = {}
        for row in np.flatnonzero(counted & (sources == source)).tolist():
            message = message_of(row)
            if message is None:
                continue
            if message in seen:
                counted[seen[message]] = False  # the later row speaks for the message
            seen[message] = row
    rows = np.flatnonzero(counted)
    found, group = np.unique(sources[rows], return_inverse=True)
    order = np.lexsort((cos[rows], group))  # by source, then cosine ascending
    values, groups = cos[rows][order], group[order]
    ends = np.flatnonzero(np.r_[groups[1:] != groups[:-1], True]) + 1
    begins = np.r_[0, ends[:-1]]
    best = values[ends - 1]
    top3 = np.zeros(found.shape[0])
    for back in (3, 2, 1):  # the three best, summed smallest first (as ``sum`` of a sorted list)
        pick = ends - back
        top3 += np.where(pick >= begins, values[np.maximum(pick, 0)], 0.0)
    top3 /= np.minimum(ends - begins, 3)
    place = np.empty(found.shape[0])
    place[np.lexsort((found, -best))] = np.arange(found.shape[0])
    index = np.minimum(np.searchsorted(found, sources), found.shape[0] - 1)
    has = found[index] == sources
    out[has, 0] = best[index[has]]
    out[has, 1] = cos[has] - best[index[has]]
    out[has, 2] = top3[index[has]]
    out[has, 3] = place[index[has]]
    return out


__all__ = ["source_features"]
