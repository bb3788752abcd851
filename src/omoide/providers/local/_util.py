"""Helpers shared by the local embedders: normalisation, batching, optional imports."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from omoide.errors import ConfigError, InvalidInput
from omoide.providers.base import Vector

T = TypeVar("T")


def l2_normalize_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Rows of ``matrix`` as float32 unit vectors (an all-zero row stays zero)."""
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[np.newaxis, :]
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: npt.NDArray[np.float32] = (arr / norms).astype(np.float32, copy=False)
    return out


def rows(matrix: npt.NDArray[np.float32]) -> list[Vector]:
    """The rows of a 2-D array as separate contiguous 1-D vectors."""
    return [np.ascontiguousarray(row) for row in matrix]


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``items`` with at most ``size`` elements each."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def check_texts(texts: Sequence[str], *, what: str) -> None:
    """Raise :class:`InvalidInput` unless ``texts`` is a sequence of strings (not one string)."""
    if isinstance(texts, str):
        raise InvalidInput(f"{what}: pass a list of texts, not a single string (use embed_query for one query)")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInput(f"{what}: texts[{i}] must be a string, got {type(text).__name__}")


def import_optional(module: str, *, install: str) -> Any:
    """Import an optional dependency, or raise :class:`ConfigError` saying how to install it."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"the Python package {module!r} is not installed: {install}")
    return importlib.import_module(module)


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    return importlib.util.find_spec(module) is not None
