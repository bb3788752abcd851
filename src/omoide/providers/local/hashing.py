"""A deterministic, dependency-free embedder: feature hashing of lexical tokens.

Used by tests and as the last-resort offline fallback. It knows no meaning, only
surface overlap: texts sharing words (or Japanese character bigrams) get close
vectors, texts sharing nothing are near-orthogonal.

Features of a text (weights in brackets):

* word tokens from the dependency-free n-gram tokenizer
  (:class:`omoide.text.NgramTokenizer`: lower-case, S-stemmed words and Japanese
  character bigrams) [1.0], English stopwords [0.1], all-hiragana bigrams (mostly
  grammar: です, ます, した) [0.3];
* character trigrams of each word of four or more letters, with boundary marks
  (``<wo``, ``wor``, ``ord``, ``rd>``) [0.25 each], so inflections and typos still overlap;
* each kanji/katakana character [0.25], so a one-character query still matches.

Term frequencies are damped (``1 + ln tf``). Each feature is hashed with BLAKE2b into
one of ``dimensions`` buckets with a ±1 sign (the sign keeps collisions unbiased), and
the vector is L2-normalised. The tokenizer is always the n-gram one, never Sudachi,
so vectors are identical on every machine whatever is installed. ``model_id`` is
``hashing:v1@<dimensions>``; bump the version if the features ever change.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from omoide.errors import ConfigError
from omoide.providers.base import Vector
from omoide.providers.local._util import check_texts, rows
from omoide.text import NgramTokenizer
from omoide.text._normalize import HIRAGANA_ONLY, JA_RUN, normalize

WORD_WEIGHT = 1.0
STOPWORD_WEIGHT = 0.1
HIRAGANA_WEIGHT = 0.3
CHAR_NGRAM_WEIGHT = 0.25
CHAR_WEIGHT = 0.25

MIN_DIMENSIONS = 16
MAX_DIMENSIONS = 65_536
_INLINE_BATCH = 32  # smaller batches are embedded on the event loop (≈ 0.1 ms per text)

ENGLISH_STOPWORDS = frozenset(
    {
        "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
        "before", "being", "but", "by", "can", "could", "did", "do", "doe", "does", "doing", "don't", "for",
        "from", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "i'm", "if", "in",
        "into", "is", "it", "it's", "its", "just", "me", "more", "most", "my", "no", "not", "now", "of", "on",
        "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some", "such",
        "than", "that", "the", "their", "them", "then", "there", "these", "they", "thi", "this", "those",
        "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
        "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    }
)  # fmt: skip
"""Common English function words (in the S-stemmed form the tokenizer gives, e.g. ``thi``, ``doe``)."""

_KANJI_OR_KATAKANA = re.compile("[\u3005\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_EMPTY_FEATURE = "\x00empty"


@functools.lru_cache(maxsize=1 << 17)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if (value >> 63) & 1 else -1.0)


def _word_weight(token: str) -> float:
    if token in ENGLISH_STOPWORDS:
        return STOPWORD_WEIGHT
    if HIRAGANA_ONLY.fullmatch(token):
        return HIRAGANA_WEIGHT
    return WORD_WEIGHT


def text_features(text: str) -> dict[str, float]:
    """The weighted features of ``text`` before hashing (exposed for tests and debugging)."""
    counts: Counter[str] = Counter()
    unit: dict[str, float] = {}
    for token in NgramTokenizer().tokenize(text):
        feature = "w:" + token
        counts[feature] += 1
        unit[feature] = _word_weight(token)
        if len(token) >= 4 and token.isalpha() and not JA_RUN.search(token):
            marked = f"<{token}>"
            for i in range(len(marked) - 2):
                feature = "c:" + marked[i : i + 3]
                counts[feature] += 1
                unit[feature] = CHAR_NGRAM_WEIGHT
    for ch in _KANJI_OR_KATAKANA.findall(normalize(text)):
        counts["k:" + ch] += 1
        unit["k:" + ch] = CHAR_WEIGHT
    # damped term frequency: a feature seen tf times weighs unit * (1 + ln tf)
    return {f: unit[f] * (1.0 + math.log(tf)) for f, tf in counts.items()}


class HashingEmbedder:
    """Deterministic feature-hashing embeddings (see the module docstring).

    Args:
        dimensions: vector length, 16–65,536 (default 384, the size of e5-small and MiniLM).

    Raises:
        ConfigError: ``dimensions`` is out of range.
    """

    max_batch = 1024

    def __init__(self, dimensions: int = 384) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int):
            raise ConfigError(f"hashing embedder dimensions must be an integer, got {dimensions!r}")
        if not MIN_DIMENSIONS <= dimensions <= MAX_DIMENSIONS:
            raise ConfigError(
                f"hashing embedder dimensions must be between {MIN_DIMENSIONS} and {MAX_DIMENSIONS}, got {dimensions}"
            )
        self.dimensions = dimensions
        self.model_id = f"hashing:v1@{dimensions}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions})"

    def embed_sync(self, text: str) -> Vector:
        """Embed one text without the event loop (queries and documents embed alike)."""
        vec: npt.NDArray[np.float32] = np.zeros(self.dimensions, dtype=np.float32)
        features = text_features(text) or {_EMPTY_FEATURE: 1.0}
        buckets = [_bucket(f, self.dimensions) for f in features]
        np.add.at(
            vec,
            np.fromiter((b[0] for b in buckets), dtype=np.intp, count=len(buckets)),
            np.fromiter((b[1] * w for b, w in zip(buckets, features.values(), strict=True)), dtype=np.float32),
        )
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # every feature cancelled out in a collision: fall back to the empty text
            index, sign = _bucket(_EMPTY_FEATURE, self.dimensions)
            vec[index] = sign
            norm = 1.0
        vec /= norm
        return vec

    def _embed_many(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        return rows(np.stack([self.embed_sync(t) for t in texts]))

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages; batches larger than 32 texts run in a worker thread."""
        check_texts(texts, what="HashingEmbedder.embed_documents")
        if len(texts) <= _INLINE_BATCH:
            return self._embed_many(texts)
        return await asyncio.to_thread(self._embed_many, list(texts))

    async def embed_query(self, text: str) -> Vector:
        """Embed a query (the hashing embedder is symmetric: same as a document)."""
        check_texts([text], what="HashingEmbedder.embed_query")
        return self.embed_sync(text)


__all__ = ["ENGLISH_STOPWORDS", "HashingEmbedder", "text_features"]
