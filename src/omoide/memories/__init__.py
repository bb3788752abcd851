"""Explicit per-user memories (seed 001): models here; the service is
:class:`omoide.memories.service.MemoryService` (``Memory.memories``), the LLM tools are in
:mod:`omoide.memories.tools`."""

from omoide.stores.memories import (
    DEFAULT_CATEGORY,
    ForgetReport,
    MemoryChanges,
    MemoryDraft,
    MemoryHit,
    MemoryId,
    MemoryRecord,
    RememberResult,
)

__all__ = [
    "DEFAULT_CATEGORY",
    "ForgetReport",
    "MemoryChanges",
    "MemoryDraft",
    "MemoryHit",
    "MemoryId",
    "MemoryRecord",
    "RememberResult",
]
