"""The unit scorer's models (:mod:`omoide.search.units`): the features they read, the fitted
models shipped in ``unit_weights.json``, and which one a search uses.

One model per query language (``ja`` when the query reads as Japanese, else ``default``) and
search mode, plus ``hybrid+reader`` — the hybrid trees fitted with the line reader's features
— used when the candidates have the reader's vectors (:func:`weights_for`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.search.results import SearchMode
from omoide.search.trees import TreeEnsemble
from omoide.text import is_japanese

READER_FEATURES: tuple[str, ...] = (
    "reader_unit",
    "reader_context",
    "reader_source_best",
    "reader_source_gap",
    "reader_source_top3",
    "reader_source_rank",
)
"""The features of the line reader (the last columns): only the ``+reader`` models read them."""

FEATURES: tuple[str, ...] = (
    "chunk_lexical",
    "chunk_vector",
    "chunk_position",
    "unit_vector",
    "neighbour_vector",
    "unit_lexical",
    "context_lexical",
    "speaker",
    "wide_vector",
    "wide_lexical",
    "time_cue",
    "length",
    *READER_FEATURES,
)
"""The scorer's inputs, in the order of a weight vector."""
READER_SUFFIX = "+reader"


@dataclass(frozen=True, slots=True)
class UnitWeights:
    """One fitted model: a weight per feature name (missing: 0) and a bias, plus boosted
    trees over the same features when the fit chose them (:mod:`omoide.search.trees`);
    the score is the sum of both parts."""

    weights: Mapping[str, float]
    bias: float = 0.0
    trees: TreeEnsemble | None = None

    def vector(self) -> npt.NDArray[np.float64]:
        return np.array([float(self.weights.get(name, 0.0)) for name in FEATURES])

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The score of each row of ``x`` (rows × :data:`FEATURES`)."""
        linear: npt.NDArray[np.float64] = x @ self.vector() + self.bias
        return linear if self.trees is None else linear + self.trees.predict(x)


def _model(raw: Mapping[str, Any]) -> UnitWeights:
    trees = raw.get("trees")
    return UnitWeights(
        dict(raw.get("weights") or {}),
        float(raw.get("bias", 0.0)),
        None if trees is None else TreeEnsemble.from_json(trees, columns=len(FEATURES)),
    )


@cache
def shipped_weights() -> dict[str, dict[str, UnitWeights]]:
    """The fitted models in the package: ``{language: {mode: UnitWeights}}``."""
    raw = json.loads(resources.files("omoide.search").joinpath("unit_weights.json").read_text(encoding="utf-8"))
    return {language: {mode: _model(w) for mode, w in modes.items()} for language, modes in raw["models"].items()}


def query_language(query: str) -> str:
    """``ja`` for a Japanese query, else ``default``."""
    return "ja" if is_japanese(query) else "default"


def _by_mode(query: str) -> dict[str, UnitWeights]:
    """The shipped models of the query's language, by mode."""
    models = shipped_weights()
    return models.get(query_language(query)) or models["default"]


def weights_for(query: str, mode: SearchMode, *, reader: bool = False) -> UnitWeights:
    """The shipped model for a query's language and search mode; with ``reader`` (the candidates
    have the line reader's vectors) the mode's ``+reader`` model when there is one."""
    by_mode = _by_mode(query)
    if reader and (with_reader := by_mode.get(mode + READER_SUFFIX)) is not None:
        return with_reader
    return by_mode.get(mode) or by_mode["hybrid"]


def has_reader(query: str, mode: SearchMode) -> bool:
    """Whether a shipped ``+reader`` model exists for this query's language and mode (else the
    query's reader vector would not be used)."""
    return mode + READER_SUFFIX in _by_mode(query)


__all__ = [
    "FEATURES",
    "READER_FEATURES",
    "READER_SUFFIX",
    "UnitWeights",
    "has_reader",
    "query_language",
    "shipped_weights",
    "weights_for",
]
