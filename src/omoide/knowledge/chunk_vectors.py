"""What a chunk's vectors are computed from, and the pooled way of computing them.

* :func:`chunk_text`: a chunk's own vector reads its lines as ``speaker: text``;
* :func:`unit_texts`: each line's (unit's) vector reads the line with its neighbours, embedded
  as its own text (``unit_vectors = "texts"``, the default);
* :func:`pooled_vectors` (``unit_vectors = "pooled"``): the chunk and each of its lines from one
  pass over the chunk (:class:`~omoide.providers.base.PartsEmbedder`), about a quarter of the
  embedding work (docs/search.md, "Pooled unit vectors");
* :func:`reader_texts` / :func:`with_reader`: each line as the line reader reads it
  (:mod:`omoide.providers.local.line_reader`), its vector stored beside the unit vectors.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Awaitable, Callable, Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import numpy.typing as npt
import structlog

from omoide.errors import ProviderUnavailable
from omoide.providers.base import PartsEmbedder, Vector
from omoide.stores.knowledge import ChunkText
from omoide.stores.units import chunk_lines, line_embedding_source, unit_embedding_texts
from omoide.text.chat_lines import chunk_embedding_text

log = structlog.get_logger(__name__)

if TYPE_CHECKING:
    from omoide.providers.local.line_reader import LineReader

T = TypeVar("T")

UnitVectors = npt.NDArray[np.float32]
"""The unit vectors of one chunk: float32, ``(lines, dimensions)``."""


def chunk_text(content: str) -> str:
    """What a chunk's own vector is computed from (``speaker: text`` lines, see
    :func:`~omoide.text.chat_lines.chunk_embedding_text`; the content itself if that is empty)."""
    return chunk_embedding_text(content) or content


def unit_texts(chunk: ChunkText) -> list[str] | None:
    """What the unit vectors of a chunk are computed from, one text per line record, or ``None``
    when the chunk has no (usable) line records (an imported document, an old chunk).

    Each text is the line with its neighbours (:func:`~omoide.stores.units.unit_embedding_texts`);
    a blank one is the raw line instead, since providers refuse empty inputs."""
    lines = chunk_lines(chunk.content, chunk.location)
    if not lines:
        return None
    texts = unit_embedding_texts(lines)
    return [t if t.strip() else (line.raw.strip() or "…") for t, line in zip(texts, lines, strict=True)]


def reader_texts(chunk: ChunkText) -> list[str] | None:
    """What the line reader reads of a chunk, one text per line record (what was said, without
    the header: the ``speaker`` feature already matches names), or ``None`` without line records."""
    lines = chunk_lines(chunk.content, chunk.location)
    if not lines:
        return None
    return [line.text or line.raw.strip() for line in lines]


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """One chunk's vectors from one provider call: its own (``None`` when only the units were
    asked for), its units' (``None`` when it has no line records) and the line reader's vector of
    each unit (``None``: no units, or no reader)."""

    vector: Vector | None
    units: UnitVectors | None
    reader: UnitVectors | None = None


async def reader_vectors(reader: LineReader, chunks: Sequence[ChunkText]) -> list[UnitVectors | None]:
    """The line reader's vectors of each chunk's lines, one call in a worker thread (``None``: no
    line records; all ``None`` when the reader fails: logged, the chunks are stored without and
    ``omoide reindex --units`` gives them theirs later)."""
    texts: list[str] = []
    spans: list[tuple[int, int] | None] = []  # per chunk: (first text, lines)
    for chunk in chunks:
        lines = reader_texts(chunk)
        spans.append((len(texts), len(lines)) if lines else None)
        texts.extend(lines or ())
    if not texts:
        return [None] * len(chunks)
    try:
        matrix = await asyncio.to_thread(reader.encode, texts)
    except Exception as exc:  # a model that cannot read something must not stop the embedding
        log.warning("line_reader_failed", error=f"{type(exc).__name__}: {exc}"[:300], chunks=len(chunks))
        return [None] * len(chunks)
    return [None if span is None else matrix[span[0] : span[0] + span[1]] for span in spans]


async def with_reader(
    reader: LineReader | None, chunks: Sequence[ChunkText], embedded: Sequence[ChunkVectors]
) -> list[ChunkVectors]:
    """``embedded`` with the line reader's vectors of each chunk that has unit vectors (as many
    as its unit vectors); unchanged without a reader."""
    out = list(embedded)
    if reader is None:
        return out
    wanted = [i for i, got in enumerate(embedded) if got.units is not None]
    for i, read in zip(wanted, await reader_vectors(reader, [chunks[i] for i in wanted]), strict=True):
        units = out[i].units
        if read is not None and units is not None and len(read) == len(units):
            out[i] = dataclasses.replace(out[i], reader=read)
    return out


async def within(call: Awaitable[T], seconds: float, model: str) -> T:
    """``call``'s result, or :class:`ProviderUnavailable` naming ``model`` after ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            return await call
    except TimeoutError as exc:
        raise ProviderUnavailable(
            f"the embedder {model} did not answer within {seconds:.0f} s", provider=model
        ) from exc


def check_count(got: Sized, asked: Sized, model: str, *, what: str) -> None:
    """:class:`ProviderUnavailable` unless the provider answered once per input."""
    if len(got) != len(asked):
        raise ProviderUnavailable(
            f"the embedder {model} returned {len(got)} results for {len(asked)} {what}", provider=model
        )


async def pooled_vectors(
    embedder: PartsEmbedder,
    chunks: Sequence[ChunkText],
    embed_texts: Callable[[Sequence[str]], Awaitable[list[Vector]]],
    call_timeout: float,
) -> list[ChunkVectors] | None:
    """``unit_vectors = "pooled"``: a chunk with line records and its lines from one pass over
    the chunk (:meth:`PartsEmbedder.embed_document_parts`; its text is then its lines joined); a
    chunk without line records through ``embed_texts``. ``None`` when the model cannot pool."""
    model = str(getattr(embedder, "model_id", "the embedder"))
    documents: list[list[str]] = []
    where: list[int] = []  # per chunk: its document's index, or -1 (no line records)
    for chunk in chunks:
        lines = chunk_lines(chunk.content, chunk.location)
        parts = [line_embedding_source(x) or x.raw.strip() or "…" for x in lines or ()]
        where.append(len(documents) if parts else -1)
        if parts:
            documents.append(parts)
    plain = [chunk_text(c.content) for c, at in zip(chunks, where, strict=True) if at < 0]
    timeout = call_timeout * max(1, math.ceil(len(documents) / 64))
    pooled = await within(embedder.embed_document_parts(documents), timeout, model) if documents else []
    if pooled is None:
        return None
    check_count(pooled, documents, model, what="chunks")
    vectors = iter(await embed_texts(plain) if plain else [])
    return [
        ChunkVectors(next(vectors), None)
        if at < 0
        else ChunkVectors(pooled[at][0], np.asarray(pooled[at][1], dtype=np.float32))
        for at in where
    ]


__all__ = [
    "ChunkVectors",
    "UnitVectors",
    "check_count",
    "chunk_text",
    "pooled_vectors",
    "reader_texts",
    "reader_vectors",
    "unit_texts",
    "with_reader",
    "within",
]
