"""A document and each of its parts embedded from one forward pass ("late chunking").

A chunk of chat needs its own vector and one per line (the retrieval units,
:mod:`omoide.stores.units`). Embedding each line again with its neighbours as separate texts
reads every token about four times; here the chunk is run through the encoder once and:

* the **document's vector** is what the engine's ``encode`` gives for the parts joined with
  newlines (the same windows, the same pooling over every token of a window, ``<s>`` and
  ``</s>`` included, the same length-weighted mean of windows) — the parts are tokenised one by
  one and concatenated, which is the joined text's tokenisation (SentencePiece turns the
  newline into a word boundary);
* **each part's vector** is the mean of the final hidden states of its own tokens, which have
  attended to the whole window (its neighbours included), L2-normalised; a part with no token
  (blank) gets the document's vector.

Measured on the dev sets (docs/bench-notes/retrieval-quality.md, "Pooled unit vectors"): about a
quarter of the tokens of separately embedded unit texts, for a Recall@10 within ~0.01.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omoide.providers.local._e5_numpy import combine_windows, split_windows

F32 = npt.NDArray[np.float32]


class _Tables(Protocol):
    bos: int
    eos: int
    MAXP: int
    H: int
    tokenizer: Any


class StatesEngine(Protocol):
    """An engine that gives each window's final hidden states (:class:`E5Numpy`, :class:`E5Onnx`)."""

    def window_states(self, windows: Sequence[list[int]]) -> list[F32]: ...


def _tables(engine: Any) -> _Tables:
    tables: _Tables = getattr(engine, "_tables", engine)  # E5Onnx keeps its tokenizer in an E5Numpy
    return tables


def part_ids(
    tokenizer: Any, parts: Sequence[str], *, prefix: str = "passage: "
) -> tuple[list[int], list[tuple[int, int]]]:
    """The document's content ids (``prefix`` included) and each part's ``[start, end)`` in them."""
    ids: list[int] = []
    spans: list[tuple[int, int]] = []
    for i, part in enumerate(parts):
        if i == 0:
            with_prefix = tokenizer.content_ids(prefix + part)
            own = len(tokenizer.content_ids(part)) if part.strip() else 0
            ids.extend(with_prefix)
            spans.append((max(0, len(ids) - own), len(ids)))
        else:
            start = len(ids)
            ids.extend(tokenizer.content_ids(part))
            spans.append((start, len(ids)))
    return ids, spans


def encode_parts(engine: StatesEngine, documents: Sequence[Sequence[str]]) -> list[tuple[F32, F32]]:
    """``(document vector [H], part vectors [parts, H])`` for each document given as its parts;
    every vector L2-normalised. A document needs at least one part."""
    t = _tables(engine)
    wmax = t.MAXP - 2
    contents: list[list[int]] = []
    all_spans: list[list[tuple[int, int]]] = []
    for parts in documents:
        if not parts:
            raise ValueError("encode_parts: a document needs at least one part")
        ids, spans = part_ids(t.tokenizer, parts)
        contents.append(ids)
        all_spans.append(spans)
    windows = split_windows(contents, t.bos, t.eos, wmax)
    states = engine.window_states([ids for _, ids in windows])
    pooled = [s.mean(axis=0) for s in states]
    doc_vectors = combine_windows(len(contents), windows, pooled, t.H)
    # each document's content-token states, in order (the windows' <s>/</s> rows dropped)
    per_doc: list[list[F32]] = [[] for _ in contents]
    for (i, _), s in zip(windows, states, strict=True):
        per_doc[i].append(s[1:-1])
    out: list[tuple[F32, F32]] = []
    for i, spans in enumerate(all_spans):
        tokens = np.concatenate(per_doc[i]) if per_doc[i] else np.empty((0, t.H), dtype=np.float32)
        parts_matrix = np.empty((len(spans), t.H), dtype=np.float32)
        for k, (a, b) in enumerate(spans):
            if b > a:
                v = tokens[a:b].mean(axis=0)
                parts_matrix[k] = v / max(float(np.linalg.norm(v)), 1e-12)
            else:
                parts_matrix[k] = doc_vectors[i]
        out.append((doc_vectors[i], parts_matrix))
    return out


__all__ = ["StatesEngine", "encode_parts", "part_ids"]
