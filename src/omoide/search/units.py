"""Unit scoring: the messages of the best chunks, ranked one by one (issue 16).

The chunk lists (lexical and vector) find *where* the evidence is; a chunk of ten messages is
too coarse to say *which* message it is, and one chunk hit would fill ten places of a turn
ranking. So the pipeline takes the best ``search_unit_chunks`` chunks of the fused chunk
ranking, reads their units (:mod:`omoide.stores.units`: each line's search tokens and
vector), and scores every unit with a small linear model over these features:

* ``chunk_lexical`` / ``chunk_vector``: the chunk's place in each chunk list
  (``60 / (60 + rank)``; 0 when it is not in the list) — the region the unit sits in;
* ``chunk_position``: ``1 / (1 + position)`` of the chunk in the fused chunk ranking;
* ``unit_vector``: the cosine of the unit's vector (the line read with its neighbours) minus
  the best unit's cosine for this query;
* ``neighbour_vector``: the mean of that over the line and its two neighbours;
* ``unit_lexical`` / ``context_lexical``: BM25 of the line's tokens, and of the line with its
  neighbours' tokens, against the query's, with the document frequencies of the candidate
  units, divided by the best candidate's;
* ``speaker``: 1 when the line's speaker is named in the query ("What did Caroline …",
  「EYさんは…」);
* ``wide_vector`` / ``wide_lexical``: the same over two lines on each side (the exchange
  the line belongs to: evidence that spans several messages lifts all of them);
* ``time_cue``: 1 when the query asks when ("When did…", 「いつ」) and the line names a
  time ("yesterday", "last week", "2022", 「先週」, 「去年」);
* ``length``: ``log(1 + tokens)`` of the line (a one-word reply is rarely the evidence).

The weights are fitted on the dev sets with cross-validation across conversations by
``benchmarks/fit_units.py`` and shipped as data (``unit_weights.json``), one set per
query language (``ja`` when the query reads as Japanese, else ``default``) and search mode;
a mode only uses the features it has (a lexical search has no vectors).

A chunk without units (a document, or a chunk written before units existed, until
``omoide reindex --units``) competes as one ``chunk`` unit whose unit features are those of
the median candidate unit.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.search.results import SearchMode
from omoide.stores.search import ChunkHit
from omoide.stores.units import ChunkLine, ChunkUnits, chunk_lines
from omoide.text import is_japanese

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
)
"""The scorer's inputs, in the order of a weight vector."""

RRF_K = 60.0
WIDE = 2  # lines on each side for the wide features

_ASKS_WHEN = re.compile(
    r"^\s*(?:when|how long ago|what (?:year|month|date|day|time))\b|\bwhen (?:did|does|was|were|is|will)\b"
    r"|いつ|何年|何月|何日|何曜|何時頃|どのくらい前",
    re.IGNORECASE,
)
_NAMES_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|ago|weekend|week|month|year|years|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|recently|since|\d{4})\b"
    r"|昨日|今日|明日|一昨日|先週|来週|今週|先月|来月|今月|去年|昨年|来年|今年|最近|この前|[0-9０-９一二三四五六七八九十]+(?:年|月|日|週間|か月|ヶ月)",
    re.IGNORECASE,
)
_BM25_K1 = 1.2
_BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class UnitWeights:
    """One fitted linear model: a weight per feature name (missing: 0) and a bias."""

    weights: Mapping[str, float]
    bias: float = 0.0

    def vector(self) -> npt.NDArray[np.float64]:
        return np.array([float(self.weights.get(name, 0.0)) for name in FEATURES])


@cache
def shipped_weights() -> dict[str, dict[str, UnitWeights]]:
    """The fitted weights in the package: ``{language: {mode: UnitWeights}}``."""
    raw = json.loads(resources.files("omoide.search").joinpath("unit_weights.json").read_text(encoding="utf-8"))
    return {
        language: {mode: UnitWeights(dict(w["weights"]), float(w.get("bias", 0.0))) for mode, w in modes.items()}
        for language, modes in raw["models"].items()
    }


def query_language(query: str) -> str:
    """``ja`` for a Japanese query, else ``default``."""
    return "ja" if is_japanese(query) else "default"


def weights_for(query: str, mode: SearchMode) -> UnitWeights:
    models = shipped_weights()
    by_mode = models.get(query_language(query)) or models["default"]
    return by_mode.get(mode) or by_mode["hybrid"]


@dataclass(frozen=True, slots=True)
class ChunkCandidate:
    """A chunk of the fused chunk ranking: its place in each list (``None``: not in it)."""

    chunk: ChunkHit
    position: int  # 0-based, in the fused chunk ranking
    lexical_rank: int | None
    vector_rank: int | None


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """A unit (or a whole chunk without units) with its score and features."""

    candidate: ChunkCandidate
    line: ChunkLine | None  # None: the whole chunk
    score: float
    features: Mapping[str, float]

    @property
    def message_id(self) -> Any:
        return None if self.line is None else self.line.message_id


def _bm25(docs: Sequence[Sequence[str]], query: Sequence[str]) -> npt.NDArray[np.float64]:
    """BM25 of each doc against the query terms, document frequencies from ``docs``."""
    scores = np.zeros(len(docs))
    terms = set(query)
    if not docs or not terms:
        return scores
    lengths = np.array([len(d) for d in docs], dtype=np.float64)
    average = max(float(lengths.mean()), 1.0)
    counts = [Counter(t for t in d if t in terms) for d in docs]
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    n = len(docs)
    idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1.0) for t, f in df.items()}
    for i, c in enumerate(counts):
        norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * lengths[i] / average)
        scores[i] = sum(idf[t] * f * (_BM25_K1 + 1.0) / (f + norm) for t, f in c.items())
    return scores


def _speaker_pattern(speaker: str) -> re.Pattern[str]:
    name = re.escape(speaker.casefold())
    return re.compile(rf"(?<![0-9a-z]){name}(?![0-9a-z])")


def score_units(
    query: str,
    query_tokens: Sequence[str],
    query_vector: npt.NDArray[np.float32] | None,
    candidates: Sequence[ChunkCandidate],
    units: Mapping[int, ChunkUnits],
    weights: UnitWeights,
) -> list[ScoredUnit]:
    """Score the units of ``candidates`` (see the module docstring), best first; a message that
    two overlapping chunks both hold is kept once, with its better score (ties: the earlier chunk)."""
    rows: list[tuple[ChunkCandidate, ChunkLine | None]] = []
    tokens: list[list[str]] = []
    context: list[list[str]] = []
    vectors: list[npt.NDArray[np.float32] | None] = []
    groups: list[tuple[int, int]] = []  # (start, end) rows of each chunk with units
    for cand in candidates:
        found = units.get(int(cand.chunk.chunk_id))
        lines = chunk_lines(cand.chunk.content, cand.chunk.location) if found is not None else None
        lexical = found.lexical if found is not None else None
        if lines is None or lexical is None or len(lexical) != len(lines):
            rows.append((cand, None))
            tokens.append([])
            context.append([])
            vectors.append(None)
            continue
        split = [t.split() for t in lexical]
        start = len(rows)
        for i, line in enumerate(lines):
            rows.append((cand, line))
            tokens.append(split[i])
            context.append([tok for part in split[max(0, i - 1) : i + 2] for tok in part])
        groups.append((start, len(rows)))
        unit_vectors = found.vectors if found is not None else None
        if unit_vectors is not None and unit_vectors.shape[0] == len(lines):
            vectors.extend(unit_vectors[i] for i in range(len(lines)))
        else:
            vectors.extend(None for _ in lines)
    n = len(rows)
    if n == 0:
        return []
    x = np.zeros((n, len(FEATURES)))
    is_unit = np.array([line is not None for _, line in rows])
    for r, (cand, _) in enumerate(rows):
        x[r, 0] = RRF_K / (RRF_K + cand.lexical_rank) if cand.lexical_rank else 0.0
        x[r, 1] = RRF_K / (RRF_K + cand.vector_rank) if cand.vector_rank else 0.0
        x[r, 2] = 1.0 / (1.0 + cand.position)

    if query_vector is not None and any(v is not None for v in vectors):
        q = np.asarray(query_vector, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        cos = np.full(n, np.nan)
        for r, v in enumerate(vectors):
            if v is not None:
                cos[r] = float(v @ q) / (float(np.linalg.norm(v)) or 1.0)
        have = ~np.isnan(cos)
        best = float(np.max(cos[have]))
        neighbour = np.full(n, np.nan)
        for start, end in groups:
            part = cos[start:end]
            for i in range(end - start):
                window = part[max(0, i - 1) : i + 2]
                window = window[~np.isnan(window)]
                if window.size:
                    neighbour[start + i] = float(window.mean())
        x[:, 3] = np.where(have, cos - best, np.nan)
        x[:, 4] = np.where(~np.isnan(neighbour), neighbour - best, np.nan)
    if query_tokens:
        unit_bm25 = _bm25(tokens, query_tokens)
        context_bm25 = _bm25(context, query_tokens)
        x[:, 5] = unit_bm25 / (float(unit_bm25.max()) or 1.0)
        x[:, 6] = context_bm25 / (float(context_bm25.max()) or 1.0)
        x[~is_unit, 5] = np.nan
        x[~is_unit, 6] = np.nan
    folded = query.casefold()
    patterns: dict[str, bool] = {}
    for r, (_, line) in enumerate(rows):
        if line is not None and line.speaker:
            key = line.speaker
            if key not in patterns:
                patterns[key] = bool(_speaker_pattern(key).search(folded)) or (
                    is_japanese(key) and key.casefold() in folded
                )
            x[r, 7] = 1.0 if patterns[key] else 0.0
    if query_vector is not None and any(v is not None for v in vectors):
        for start, end in groups:
            part = x[start:end, 3]
            for i in range(end - start):
                window = part[max(0, i - WIDE) : i + WIDE + 1]
                window = window[~np.isnan(window)]
                x[start + i, 8] = float(window.mean()) if window.size else np.nan
    else:
        x[:, 8] = np.nan
    if query_tokens:
        wide: list[list[str]] = [[] for _ in range(n)]
        for start, end in groups:
            for i in range(end - start):
                lo, hi = max(start, start + i - WIDE), min(end, start + i + WIDE + 1)
                wide[start + i] = [tok for part in tokens[lo:hi] for tok in part]
        wide_bm25 = _bm25(wide, query_tokens)
        x[:, 9] = wide_bm25 / (float(wide_bm25.max()) or 1.0)
        x[~is_unit, 9] = np.nan
    asks_when = bool(_ASKS_WHEN.search(query))
    for r, (_, line) in enumerate(rows):
        if line is None:
            x[r, 10] = x[r, 11] = np.nan
            continue
        x[r, 10] = 1.0 if asks_when and _NAMES_TIME.search(line.text) else 0.0
        x[r, 11] = math.log1p(len(tokens[r]))
    # a whole chunk (no units) and a unit without a vector take the median unit's value
    for col in (3, 4, 5, 6, 8, 9, 10, 11):
        column = x[:, col]
        missing = np.isnan(column)
        if missing.any():
            present = column[~missing]
            column[missing] = float(np.median(present)) if present.size else 0.0
    scores = x @ weights.vector() + weights.bias
    order = np.lexsort((np.arange(n), -scores))
    out: list[ScoredUnit] = []
    seen: set[tuple[int, Any]] = set()
    for r in order:
        cand, line = rows[int(r)]
        if line is not None and line.message_id is not None:
            key = (int(cand.chunk.source_id), line.message_id)
            if key in seen:
                continue
            seen.add(key)
        out.append(ScoredUnit(cand, line, float(scores[r]), {name: float(x[r, i]) for i, name in enumerate(FEATURES)}))
    return out


__all__ = [
    "FEATURES",
    "ChunkCandidate",
    "ScoredUnit",
    "UnitWeights",
    "query_language",
    "score_units",
    "shipped_weights",
    "weights_for",
]
