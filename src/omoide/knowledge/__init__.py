"""Long-term memory: archived conversation and imported history as searchable chunks."""

from omoide.stores.knowledge import (
    ArchivePlan,
    ArchiveResult,
    ChunkDraft,
    ChunkId,
    ChunkText,
    EmbeddingRow,
    KnowledgeSource,
    KnowledgeStatus,
    LineVectorsRow,
    SourceDraft,
    SourceId,
    SourceStatus,
)

__all__ = [
    "ArchivePlan",
    "ArchiveResult",
    "ChunkDraft",
    "ChunkId",
    "ChunkText",
    "EmbeddingRow",
    "KnowledgeSource",
    "KnowledgeStatus",
    "LineVectorsRow",
    "SourceDraft",
    "SourceId",
    "SourceStatus",
]
