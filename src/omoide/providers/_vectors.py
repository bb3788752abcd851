"""Helpers shared by the SDK-backed embedders: batching, normalisation, dimension checks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from omoide.errors import BadRequest, InvalidInput, ProviderError
from omoide.providers.base import Vector


def check_texts(texts: Sequence[str], *, what: str) -> None:
    """Raise :class:`InvalidInput` unless ``texts`` is a sequence of strings (not one string)."""
    if isinstance(texts, str):
        raise InvalidInput(f"{what}: pass a list of texts, not a single string (use embed_query for one query)")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInput(f"{what}: texts[{i}] must be a string, got {type(text).__name__}")


def batches(texts: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Consecutive slices of ``texts`` with at most ``size`` items each."""
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


def to_vectors(
    rows: Sequence[Sequence[float]], *, dimensions: int, expected: int, provider: str, model: str
) -> list[Vector]:
    """Check the provider's answer and return L2-normalised float32 vectors.

    Args:
        rows: the vectors as the SDK returned them, one per input.
        dimensions: the configured dimension.
        expected: how many vectors were asked for.
        provider / model: for error messages.

    Raises:
        BadRequest: a vector's length differs from the configured dimension (names both numbers).
        ProviderError: the provider returned a different number of vectors than inputs,
            or a zero / non-finite vector.
    """
    if len(rows) != expected:
        raise ProviderError(
            f"{provider}: {model} returned {len(rows)} embeddings for {expected} inputs", provider=provider
        )
    if not rows:
        return []
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dimensions:
        got = matrix.shape[1] if matrix.ndim == 2 else "ragged"
        raise BadRequest(
            f"{provider}: {model} returned {got}-dimensional embeddings but {dimensions} are configured; "
            f"set the dimension in the spec (e.g. {provider}:{model}@{got}) to match the model and the store",
            provider=provider,
            expected_dimensions=dimensions,
            actual_dimensions=got,
        )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ProviderError(f"{provider}: {model} returned a zero or non-finite embedding", provider=provider)
    matrix /= norms
    return list(matrix)


__all__ = ["batches", "check_texts", "to_vectors"]
