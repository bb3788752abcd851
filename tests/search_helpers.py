"""A search with its chunks: a ranking of :class:`~omoide.stores.search.SearchStore` and then
``fetch_chunks``, as the search pipeline composes them.

The hits carry the ranking's score and rank 1, 2, … (a chunk deleted between the two reads
is skipped, and the ranks close up), as the stores' one-call searches returned them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from omoide.stores.search import ChunkHit, RankedChunk, SearchFilters, SearchStore


async def hits_of(search: SearchStore, ranking: Sequence[RankedChunk]) -> list[ChunkHit]:
    """The chunks of ``ranking`` in its order, with its scores and ranks 1, 2, …."""
    found = {hit.chunk_id: hit for hit in await search.fetch_chunks([r.chunk_id for r in ranking])}
    hits: list[ChunkHit] = []
    for r in ranking:
        hit = found.get(r.chunk_id)
        if hit is not None:
            hits.append(dataclasses.replace(hit, score=r.score, rank=len(hits) + 1))
    return hits


async def vector_search(
    search: SearchStore, *, model: str, query: npt.NDArray[np.float32], filters: SearchFilters, k: int
) -> list[ChunkHit]:
    """The ``k`` chunks most cosine-similar to ``query``, best first (``vector_ranking`` + ``fetch_chunks``)."""
    return await hits_of(search, await search.vector_ranking(model=model, query=query, filters=filters, k=k))


async def lexical_search(
    search: SearchStore, *, tokens: Sequence[str], filters: SearchFilters, k: int
) -> list[ChunkHit]:
    """The ``k`` best full-text matches of any of ``tokens`` (``lexical_ranking`` + ``fetch_chunks``)."""
    return await hits_of(search, await search.lexical_ranking(tokens=tokens, filters=filters, k=k))
