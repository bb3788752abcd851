"""Column values between each backend's form and the backup's neutral form (:mod:`omoide.ops.tables`).

One converter per (backend, kind, direction), chosen once per table, so a row costs a list
of function calls and nothing else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.errors import InvalidContent, InvalidInput
from omoide.ops.tables import Kind
from omoide.stores.sqlite._units import reader_blob, units_blob
from omoide.stores.unit_codec import decode_matrix, encode_matrix, stored_width
from omoide.stores.units import READER_DIMENSIONS, encode_reader_vectors

Convert = Callable[[Any], Any]
Row = dict[str, Any]

F32 = np.dtype("<f4")
F16 = np.dtype("<f2")


def _same(value: Any) -> Any:
    return value


class NulCharacter(ValueError):
    """A text PostgreSQL cannot store: it holds the NUL character (SQLite stores it)."""


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _no_nul(value: Any) -> Any:
    if _has_nul(value):
        raise NulCharacter("it holds a NUL character (U+0000), which PostgreSQL cannot store")
    return value


def _ts_text(value: Any) -> str:
    """A backed-up timestamp as SQLite stores it, checked (the text is kept as it is)."""
    if not isinstance(value, str):
        raise TypeError(f"a timestamp must be ISO-8601 text, not {type(value).__name__}")
    datetime.fromisoformat(value)  # ValueError: not a timestamp
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def iso(value: datetime) -> str:
    """The backup form of a timestamp (the one SQLite stores): ISO-8601, UTC, microseconds."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _aware(value: datetime) -> datetime:
    """A timestamp without an offset is UTC (how omoide stores every time)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def json_text(value: Any) -> str:
    """JSON text as omoide's stores write it."""
    return json.dumps(value, ensure_ascii=False)


def _nullable(fn: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return None if value is None else fn(value)

    return convert


def _matrix_out(legacy: np.dtype[Any]) -> Convert:
    """Stored per-line vectors as backed up: float32 (the int8 form decoded; a matrix written
    before it, of ``legacy`` values, converted)."""

    def convert(data: bytes) -> str:
        width = stored_width(data)
        if width is None:
            return _b64(np.frombuffer(data, dtype=legacy).astype(F32).tobytes())
        matrix = decode_matrix(data, width, legacy=legacy)
        if matrix is None:
            raise ValueError("a stored matrix of vectors is cut short")
        return _b64(matrix.astype(F32).tobytes())

    return convert


def _matrix_in(
    width: int | None, store: Callable[[npt.NDArray[np.float32]], bytes | None]
) -> Callable[[str, Row], bytes]:
    """A backed-up float32 matrix as the backend stores it (``store``: its own encoder);
    ``width`` ``None``: the row's ``dimensions``."""

    def convert(text: str, row: Row) -> bytes:
        columns = int(row["dimensions"]) if width is None else width
        values = np.frombuffer(_unb64(text), dtype=F32)
        if not columns or values.size % columns:
            raise ValueError(f"a backed-up matrix of {values.size} values is not {columns} wide")
        data = store(values.reshape(-1, columns))
        assert data is not None
        return data

    return convert


# ------------------------------------------------------------------ SQLite

_SQLITE_OUT: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _same,  # already the backup form
    Kind.BOOL: _nullable(bool),
    Kind.JSON: _nullable(json.loads),
    Kind.VECTOR: _nullable(_b64),  # float32 little-endian BLOB
    Kind.UNITS: _nullable(_matrix_out(F32)),  # int8 (rows written before it: float32)
    Kind.HALF: _nullable(_matrix_out(F16)),  # int8 (before it: float16)
}
_SQLITE_IN: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _nullable(_ts_text),
    Kind.BOOL: _nullable(int),
    Kind.JSON: _nullable(json_text),
    Kind.VECTOR: _nullable(_unb64),
}
_SQLITE_MATRIX_IN: dict[Kind, Callable[[str, Row], bytes]] = {
    Kind.UNITS: _matrix_in(None, units_blob),  # padded for the columns' CHECKs
    Kind.HALF: _matrix_in(READER_DIMENSIONS, reader_blob),
}


# ------------------------------------------------------------------ PostgreSQL


def _halfvec_out(value: Any) -> str:
    return _b64(np.asarray(value.to_numpy(), dtype=F32).tobytes())


def _halfvec_in(text: str) -> Any:
    from pgvector import HalfVector

    return HalfVector(np.frombuffer(_unb64(text), dtype=F32))


_POSTGRES_OUT: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _nullable(iso),
    Kind.BOOL: _same,
    Kind.JSON: _nullable(json.loads),  # asyncpg hands jsonb over as text
    Kind.VECTOR: _nullable(_halfvec_out),
    Kind.UNITS: _nullable(_matrix_out(F16)),
    Kind.HALF: _nullable(_matrix_out(F16)),
}
_POSTGRES_IN: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _nullable(_no_nul),
    Kind.TS: _nullable(lambda text: _aware(datetime.fromisoformat(text))),
    Kind.BOOL: _same,
    Kind.JSON: _nullable(lambda value: json_text(_no_nul(value))),
    Kind.VECTOR: _nullable(_halfvec_in),
}
_POSTGRES_MATRIX_IN: dict[Kind, Callable[[str, Row], bytes]] = {
    Kind.UNITS: _matrix_in(None, encode_matrix),  # what encode_unit_vectors writes (asyncpg is an extra)
    Kind.HALF: _matrix_in(READER_DIMENSIONS, encode_reader_vectors),
}

_OUT = {"sqlite": _SQLITE_OUT, "postgresql": _POSTGRES_OUT}
_IN = {"sqlite": _SQLITE_IN, "postgresql": _POSTGRES_IN}
_MATRIX_IN = {"sqlite": _SQLITE_MATRIX_IN, "postgresql": _POSTGRES_MATRIX_IN}


def decoder(backend: str, kinds: Sequence[Kind], names: Sequence[str]) -> Callable[[Sequence[Any]], Row]:
    """A function turning one row as ``backend`` returns it into a backup row (column → value)."""
    converts = [_OUT[backend][k] for k in kinds]
    pairs = list(zip(names, converts, strict=True))

    def decode(row: Sequence[Any]) -> Row:
        return {name: fn(value) for (name, fn), value in zip(pairs, row, strict=True)}

    return decode


def encoder(
    backend: str, kinds: Sequence[Kind], names: Sequence[str], *, table: str = "", key: Sequence[str] = ()
) -> Callable[[Row], tuple[Any, ...]]:
    """A function turning one backup row into the values ``backend`` inserts (in ``names`` order).

    The function raises :class:`~omoide.errors.InvalidContent` for a text ``backend`` cannot
    store (a NUL character in PostgreSQL) and :class:`~omoide.errors.InvalidInput` for a value
    that is not of its column's kind (an edited or damaged backup), naming ``table``, the row
    by its ``key`` columns and the column.
    """

    def matrix(convert: Callable[[str, Row], bytes]) -> Callable[[Any, Row], Any]:
        return lambda value, row: None if value is None else convert(value, row)

    def plain(convert: Convert) -> Callable[[Any, Row], Any]:
        return lambda value, row: convert(value)

    matrices = _MATRIX_IN[backend]
    pairs = [
        (name, matrix(matrices[kind]) if kind in matrices else plain(_IN[backend][kind]))
        for name, kind in zip(names, kinds, strict=True)
    ]

    def encode(row: Row) -> tuple[Any, ...]:
        try:
            return tuple(fn(row.get(name), row) for name, fn in pairs)
        except (ValueError, TypeError, OverflowError, AttributeError) as exc:
            raise _bad_row(backend, table, key, row, pairs, exc) from exc

    return encode


def _bad_row(
    backend: str,
    table: str,
    key: Sequence[str],
    row: Row,
    pairs: Sequence[tuple[str, Callable[[Any, Row], Any]]],
    exc: Exception,
) -> InvalidInput:
    """The error naming the row (and its first bad column) a backend cannot take."""
    column = "?"
    for name, fn in pairs:  # which column it was (only on failure: the fast path does not track it)
        try:
            fn(row.get(name), row)
        except (ValueError, TypeError, OverflowError, AttributeError):
            column = name
            break
    ident = ", ".join(f"{k} {row.get(k)!r}" for k in key) or "?"
    what = f"the {table} row with {ident}, column {column}"
    if isinstance(exc, NulCharacter):
        return InvalidContent(
            f"cannot restore {what} into PostgreSQL: {exc}. Nothing was restored (the target is left empty). "
            f"Remove the character from that row in the source database and back it up again, or restore "
            f"into SQLite",
            table=table,
            column=column,
        )
    target = "PostgreSQL" if backend == "postgresql" else "SQLite"
    return InvalidInput(
        f"cannot restore {what} into {target}: {type(exc).__name__}: {exc}. The backup was edited or is "
        "damaged; nothing was restored (the target is left empty). Restore another backup",
        table=table,
        column=column,
    )


def vector_b64(vector: Sequence[float] | np.ndarray[Any, Any]) -> str:
    """The backup form of a vector (float32 little-endian, base64)."""
    return _b64(np.asarray(vector, dtype=F32).tobytes())


def vector_from_b64(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A backup vector as float32."""
    return np.frombuffer(_unb64(text), dtype=F32).astype(np.float32)


__all__ = ["Row", "decoder", "encoder", "iso", "json_text", "vector_b64", "vector_from_b64"]
