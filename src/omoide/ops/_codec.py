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

from omoide.ops.tables import Kind

Convert = Callable[[Any], Any]
Row = dict[str, Any]

F32 = np.dtype("<f4")
F16 = np.dtype("<f2")


def _same(value: Any) -> Any:
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


def _units_out(data: bytes) -> str:
    """Stored float16 (PostgreSQL's unit vectors, either backend's reader vectors) as backed up: float32."""
    return _b64(np.frombuffer(data, dtype=F16).astype(F32).tobytes())


def _units_in(text: str) -> bytes:
    """A backed-up float32 matrix as stored float16."""
    return np.frombuffer(_unb64(text), dtype=F32).astype(F16).tobytes()


# ------------------------------------------------------------------ SQLite

_SQLITE_OUT: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _same,  # already the backup form
    Kind.BOOL: _nullable(bool),
    Kind.JSON: _nullable(json.loads),
    Kind.VECTOR: _nullable(_b64),  # float32 little-endian BLOB
    Kind.UNITS: _nullable(_b64),
    Kind.HALF: _nullable(_units_out),  # float16 little-endian BLOB
}
_SQLITE_IN: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _same,
    Kind.BOOL: _nullable(int),
    Kind.JSON: _nullable(json_text),
    Kind.VECTOR: _nullable(_unb64),
    Kind.UNITS: _nullable(_unb64),
    Kind.HALF: _nullable(_units_in),
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
    Kind.UNITS: _nullable(_units_out),
    Kind.HALF: _nullable(_units_out),
}
_POSTGRES_IN: dict[Kind, Convert] = {
    Kind.INT: _same,
    Kind.TEXT: _same,
    Kind.TS: _nullable(lambda text: _aware(datetime.fromisoformat(text))),
    Kind.BOOL: _same,
    Kind.JSON: _nullable(json_text),
    Kind.VECTOR: _nullable(_halfvec_in),
    Kind.UNITS: _nullable(_units_in),
    Kind.HALF: _nullable(_units_in),
}

_OUT = {"sqlite": _SQLITE_OUT, "postgresql": _POSTGRES_OUT}
_IN = {"sqlite": _SQLITE_IN, "postgresql": _POSTGRES_IN}


def decoder(backend: str, kinds: Sequence[Kind], names: Sequence[str]) -> Callable[[Sequence[Any]], Row]:
    """A function turning one row as ``backend`` returns it into a backup row (column → value)."""
    converts = [_OUT[backend][k] for k in kinds]
    pairs = list(zip(names, converts, strict=True))

    def decode(row: Sequence[Any]) -> Row:
        return {name: fn(value) for (name, fn), value in zip(pairs, row, strict=True)}

    return decode


def encoder(backend: str, kinds: Sequence[Kind], names: Sequence[str]) -> Callable[[Row], tuple[Any, ...]]:
    """A function turning one backup row into the values ``backend`` inserts (in ``names`` order)."""
    converts = [_IN[backend][k] for k in kinds]
    pairs = list(zip(names, converts, strict=True))

    def encode(row: Row) -> tuple[Any, ...]:
        return tuple(fn(row.get(name)) for name, fn in pairs)

    return encode


def vector_b64(vector: Sequence[float] | np.ndarray[Any, Any]) -> str:
    """The backup form of a vector (float32 little-endian, base64)."""
    return _b64(np.asarray(vector, dtype=F32).tobytes())


def vector_from_b64(text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A backup vector as float32."""
    return np.frombuffer(_unb64(text), dtype=F32).astype(np.float32)


__all__ = ["Row", "decoder", "encoder", "iso", "json_text", "vector_b64", "vector_from_b64"]
