"""Search: filters and hit types shared by the stores and the retrieval pipeline."""

from omoide.stores.search import MAX_K, ChunkHit, SearchFilters

__all__ = ["MAX_K", "ChunkHit", "SearchFilters"]
