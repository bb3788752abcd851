"""Search: filters and hit types shared by the stores and the retrieval pipeline."""

from omoide.search.filters import MAX_K, SearchFilters
from omoide.search.types import ChunkHit

__all__ = ["MAX_K", "ChunkHit", "SearchFilters"]
