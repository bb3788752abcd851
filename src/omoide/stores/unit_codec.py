"""How per-line vectors are stored: int8 with a scale per line (``chunk_embeddings.unit_vectors``
and ``reader_vectors`` on both backends, :mod:`omoide.stores.units`).

A chunk of ten messages carries ten unit vectors and ten line-reader vectors: as float16 that
was 18 KB a chunk on PostgreSQL (17.6 GB of a 25 GB database at 1M chunks) and, with SQLite's
float32 unit vectors, 25 KB on SQLite. Search only reads them for cosines with the query, and
an int8 copy with one float32 scale per line gives the same rankings (LoCoMo Recall@10 0.826
either way, the Japanese set 0.669 → 0.667, inside its run-to-run noise; ``docs/search.md``), at
half the bytes of float16 and a quarter of float32.

The stored form (little-endian)::

    MAGIC (4 bytes) | lines: uint32 | width: uint32 | scale: float32 × lines | int8 × lines × width | zeros

:data:`MAGIC` is the bit pattern of a float32 NaN (and a float16 NaN in its upper half), which the
older forms — plain float16 or float32 matrices of finite values, checked when written — can never
start with, so rows written before this form keep being read as they were (:func:`decode_matrix`
is given their dtype). The zeros pad the bytes to a multiple the column's ``CHECK`` constraint
asks for on SQLite (a whole number of legacy rows: ``4 × dimensions`` for unit vectors, ``2 ×
512`` for reader vectors), so no table had to be rebuilt.

A line's value ``x`` is stored as ``round(x / s)`` with ``s = max|x| / 127`` (0 for a line of
zeros) and read back as ``q × s``: each value within ``s / 2`` of what was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

MAGIC = b"\x00\x00\xc0\x7f"
"""The first four bytes of an int8 matrix (a float32 quiet NaN)."""

_HEADER = np.dtype([("magic", "V4"), ("lines", "<u4"), ("width", "<u4")])
_SCALE = np.dtype("<f4")
_LIMIT = 127.0


def encode_matrix(matrix: npt.ArrayLike | None, *, multiple: int = 1) -> bytes | None:
    """A float ``(lines, width)`` matrix as stored: int8 with a scale per line, padded with zeros
    to a multiple of ``multiple`` bytes (``None`` stays ``None``).

    >>> data = encode_matrix(np.array([[0.5, -1.0, 0.25]], dtype=np.float32))
    >>> len(data), decode_matrix(data, 3, legacy=np.dtype("<f2")).round(2).tolist()
    (19, [[0.5, -1.0, 0.25]])
    """
    if matrix is None:
        return None
    values = np.asarray(matrix, dtype=np.float32)
    if values.ndim != 2:
        raise ValueError(f"a matrix of lines is 2-D, got shape {values.shape}")
    lines, width = values.shape
    scales = np.abs(values).max(axis=1) / _LIMIT if width else np.zeros(lines, dtype=np.float32)
    safe = np.where(scales > 0, scales, 1.0)[:, None]
    quantized = np.clip(np.rint(values / safe), -_LIMIT, _LIMIT).astype(np.int8)
    header = np.array([(MAGIC, lines, width)], dtype=_HEADER).tobytes()
    body = header + scales.astype(_SCALE).tobytes() + quantized.tobytes()
    return body + bytes(-len(body) % max(1, multiple))


def decode_matrix(
    data: bytes | None, width: int | None, *, legacy: np.dtype[np.generic]
) -> npt.NDArray[np.float32] | None:
    """The float32 ``(lines, width)`` matrix of stored bytes (a writable copy): the int8 form, or a
    plain ``legacy`` matrix (rows written before it); ``None`` when absent, empty, of another
    width, or not a whole matrix (which only a hand-edited row could be)."""
    if data is None or not width or not data:
        return None
    width = int(width)
    if data[:4] == MAGIC and len(data) >= _HEADER.itemsize:
        _, lines, stored = np.frombuffer(data, dtype=_HEADER, count=1)[0].tolist()
        end = _HEADER.itemsize + lines * (_SCALE.itemsize + width)
        if stored != width or not lines or len(data) < end:
            return None
        scales = np.frombuffer(data, dtype=_SCALE, count=lines, offset=_HEADER.itemsize)
        body = np.frombuffer(data, dtype=np.int8, count=lines * width, offset=_HEADER.itemsize + 4 * lines)
        out: npt.NDArray[np.float32] = body.astype(np.float32).reshape(lines, width)
        out *= scales[:, None]
        return out
    row = width * legacy.itemsize
    if len(data) % row:
        return None
    plain: npt.NDArray[np.float32] = np.frombuffer(data, dtype=legacy).astype(np.float32).reshape(-1, width)
    return plain


def reencode(data: bytes | None, width: int, *, legacy: np.dtype[np.generic], multiple: int = 1) -> bytes | None:
    """``data`` in the int8 form when it holds a matrix in the older ``legacy`` form (``omoide
    reindex --units``); ``None`` when it is absent, already int8, or not a whole matrix."""
    if data is None or stored_width(data) is not None:
        return None
    matrix = decode_matrix(data, width, legacy=legacy)
    return None if matrix is None else encode_matrix(matrix, multiple=multiple)


def next_page(rows: Sequence[Sequence[Any]], limit: int) -> int | None:
    """The ``after_id`` of the page after ``rows`` (their first field a chunk id, in order) of a
    keyset read of at most ``limit`` rows: ``None`` when the read came back short (done); else
    the last chunk's id minus one, so rows of that chunk a full page cut off are read again
    (those rewritten no longer match) — unless the page holds that chunk alone."""
    if len(rows) < limit:
        return None
    last = int(rows[-1][0])
    return last if int(rows[0][0]) == last else last - 1


def stored_width(data: bytes) -> int | None:
    """The width an int8 matrix was written with (``None``: not the int8 form)."""
    if data[:4] != MAGIC or len(data) < _HEADER.itemsize:
        return None
    return int(np.frombuffer(data, dtype=_HEADER, count=1)[0]["width"])


__all__ = ["MAGIC", "decode_matrix", "encode_matrix", "next_page", "reencode", "stored_width"]
