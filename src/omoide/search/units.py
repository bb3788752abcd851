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
* ``length``: ``log(1 + tokens)`` of the line (a one-word reply is rarely the evidence);
* ``reader_unit`` / ``reader_context``: the cosine of the line reader's vector of the line
  (:mod:`omoide.providers.local.line_reader`, a second sentence encoder) with its vector of the
  query, and the mean of that over the line and its two neighbours — raw cosines, not relative
  to the best unit (the absolute level is what they add: relative, the Japanese gain fell from
  +0.03 to +0.01);
* ``reader_source_best`` / ``reader_source_gap`` / ``reader_source_top3`` / ``reader_source_rank``:
  the conversation a line belongs to (its chunk's *source*: one archived stretch of a channel)
  seen through the reader — the best reader cosine among that source's candidate lines, the
  line's own minus it, the mean of the source's three best (a message two overlapping chunks
  hold counts once), and the source's place (0, 1, 2, …) among the candidates' sources by
  that best. A question is about one conversation: its best-matching line says which, and
  the evidence is often a plain line beside it (Japanese set +0.02 cross-validated).

The model is fitted on the dev sets with cross-validation across conversations by
``benchmarks/fit_units.py`` and shipped as data (``unit_weights.json``), one per query
language (``ja`` when the query reads as Japanese, else ``default``) and search mode: linear
weights, or (the hybrid default since the third issue-16 session) 100 shallow LambdaMART
trees over the same features, evaluated with numpy by :mod:`omoide.search.trees` — they
capture interactions a weighted sum cannot ("the line's own match counts more when its chunk
ranks low in the vector list") and ranked better on both dev sets under cross-validation.
A mode only uses the features it has (a lexical search has no vectors). The reader's
features have their own model, ``hybrid+reader``: hybrid search uses it when the line reader
is on and some candidate chunk has the reader's vectors, and the ``hybrid`` model (fitted
without them) otherwise — a database not yet reindexed ranks as before.

A chunk without units (a document, or a chunk written before units existed, until
``omoide reindex --units``) competes as one ``chunk`` unit whose unit features are those of
the median candidate unit.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from omoide.search.source_features import source_features
from omoide.search.unit_models import (
    FEATURES,
    READER_FEATURES,
    READER_SUFFIX,
    UnitWeights,
    has_reader,
    query_language,
    shipped_weights,
    weights_for,
)
from omoide.stores._erasure_common import LINES_KEY, LineSpan
from omoide.stores.knowledge import ChunkId
from omoide.stores.search import ChunkHit, SearchFilters
from omoide.stores.units import ChunkLine, ChunkUnits, chunk_line
from omoide.text import is_japanese
from omoide.text.chat_lines import HEADER, speaker_of

RRF_K = 60.0
WIDE = 2  # lines on each side for the wide features
_BM25_K1 = 1.2
_BM25_B = 0.75

_ASKS_WHEN = re.compile(
    r"^\s*(?:when|how long ago|what (?:year|month|date|day|time))\b|\bwhen (?:did|does|was|were|is|will)\b"
    r"|いつ|何年|何月|何日|何曜|何時頃|どのくらい前",
    re.IGNORECASE,
)
_TIME_WORDS = frozenset(
    [
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "last",
        "next",
        "ago",
        "weekend",
        "week",
        "month",
        "year",
        "years",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "recently",
        "since",
    ]
)
_WORDS = re.compile(r"\w+")
_JA_TIME = re.compile(
    r"昨日|今日|明日|一昨日|先週|来週|今週|先月|来月|今月|去年|昨年|来年|今年|最近|この前"
    r"|[0-9０-９一二三四五六七八九十]+(?:年|月|日|週間|か月|ヶ月)"
)


def _names_time(text: str) -> bool:
    """Whether a line names a time: an English time word or a four-digit year as a whole word
    ("yesterday", "last week", "2022"), or a Japanese one (「先週」, 「去年」, 「3月」)."""
    for word in _WORDS.findall(text.casefold()):
        if word in _TIME_WORDS or (len(word) == 4 and word.isdigit()):
            return True
    return not text.isascii() and _JA_TIME.search(text) is not None


@dataclass(frozen=True, slots=True)
class ChunkCandidate:
    """A chunk of the fused chunk ranking: its place in each list (``None``: not in it)."""

    chunk: ChunkHit
    position: int  # 0-based, in the fused chunk ranking
    lexical_rank: int | None
    vector_rank: int | None


@dataclass(frozen=True, slots=True)
class ScoredUnit:
    """A unit (or a whole chunk without units) with its score and features.

    ``source`` / ``index``: the chunk's parsed units and the line's place among them
    (``None``: a whole chunk); :attr:`line` builds the line when asked (a search reads
    ~300 lines and returns a few)."""

    candidate: ChunkCandidate
    score: float
    features: Mapping[str, float]
    source: _Prepared | None = None
    index: int = -1

    @property
    def line(self) -> ChunkLine | None:
        """The message line (``None``: the whole chunk)."""
        return None if self.source is None else self.source.line(self.index)

    @property
    def message_id(self) -> Any:
        return None if self.source is None else self.source.message_id(self.index)


def _bm25(tf: npt.NDArray[np.float64], lengths: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """BM25 of each row of ``tf`` (query-term counts per document; document frequencies from
    the rows themselves) with the documents' lengths in tokens."""
    n = tf.shape[0]
    if n == 0 or tf.shape[1] == 0:
        return np.zeros(n)
    average = max(float(lengths.mean()), 1.0)
    df = (tf > 0).sum(axis=0)
    idf = np.log((n - df + 0.5) / (df + 0.5) + 1.0)
    norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * lengths / average)
    part = tf * (_BM25_K1 + 1.0) / (tf + norm[:, None])
    return np.asarray(part @ idf, dtype=np.float64)


def _window_sums(
    values: npt.NDArray[np.float64], bounds: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]], radius: int
) -> npt.NDArray[np.float64]:
    """Per row, the sum of the rows within ``radius`` in the same group (rows outside every
    group: 0). ``values`` is 1-D or 2-D (summed row-wise)."""
    first, last = bounds
    idx = np.arange(values.shape[0])
    lo = np.maximum(idx - radius, first)
    hi = np.minimum(idx + radius + 1, last)
    hi = np.maximum(hi, lo)  # rows outside every group: an empty window
    cs = np.concatenate([np.zeros((1, *values.shape[1:])), np.cumsum(values, axis=0)])
    out: npt.NDArray[np.float64] = cs[hi] - cs[lo]
    return out


def _window_means(
    values: npt.NDArray[np.float64], bounds: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]], radius: int
) -> npt.NDArray[np.float64]:
    """Per row, the mean of the non-NaN values within ``radius`` in the same group (NaN when
    there are none; rows outside every group: 0)."""
    present = ~np.isnan(values)
    sums = _window_sums(np.where(present, values, 0.0), bounds, radius)
    counts = _window_sums(present.astype(np.float64), bounds, radius)
    first, last = bounds
    grouped = last > first
    means = np.where(counts > 0, sums / np.maximum(counts, 1.0), np.nan)
    out: npt.NDArray[np.float64] = np.where(grouped, means, 0.0)
    return out


def _speaker_pattern(speaker: str) -> re.Pattern[str]:
    name = re.escape(speaker.casefold())
    return re.compile(rf"(?<![0-9a-z]){name}(?![0-9a-z])")


_HEADER_AT = re.compile(HEADER.pattern.removeprefix("^"))  # a header at a given position (as line_speaker)
_SPEAKERS: dict[str, str | None] = {}  # header label -> speaker (speaker_of), a few hundred authors
_SPEAKERS_MAX = 4096


def _speaker(label: str) -> str | None:
    """:func:`speaker_of`, remembered per label."""
    try:
        return _SPEAKERS[label]
    except KeyError:
        if len(_SPEAKERS) >= _SPEAKERS_MAX:
            _SPEAKERS.clear()
        found = _SPEAKERS[label] = speaker_of(label)
        return found


def _line_records(location: Mapping[str, Any], content: str) -> list[list[Any]] | None:
    """The chunk's line records as stored (``[start, end, author_id, message_id]``), checked as
    :func:`~omoide.stores._erasure_common.line_spans` checks them (``None`` where it gives
    ``None``), without building a :class:`LineSpan` per line: the scorer reads ~300 lines per
    search and returns a few."""
    raw = location.get(LINES_KEY)
    if not isinstance(raw, list) or not raw:
        return None
    last = 0
    size = len(content)
    for item in raw:
        if not isinstance(item, list) or len(item) != 4:
            return None
        start, end, author, _ = item
        if not (isinstance(start, int) and isinstance(end, int) and last <= start <= end <= size):
            return None
        if author is not None and not isinstance(author, str):
            return None
        last = end
    return raw


class _Prepared(NamedTuple):
    """What scoring needs of one chunk's units that does not depend on the query: each line's
    record, speaker and search tokens (the lines themselves are built only for the hits); made
    by :func:`_parse`.

    Made of tuples, strings and numpy arrays only, so the cache (:data:`_PREPARED`) can keep it as
    a plain tuple that the garbage collector stops tracking after a collection or two: a full
    collection then does not walk the thousands of chunks remembered. A class instance and a
    frozenset of its tokens were tracked for good: at ~5k chunks remembered, half the references
    a full collection of the benchmark process followed (its pauses: ~55 → ~40 ms)."""

    content: str
    records: tuple[tuple[Any, ...], ...]  # [start, end, author_id, message_id] per line
    starts: tuple[int, ...]  # where each line's text starts (after its header)
    speaker_lines: tuple[tuple[str, tuple[int, ...]], ...]  # each named speaker and its lines
    tokens: tuple[tuple[str, ...], ...]  # each line's search tokens
    vocabulary: str  # " tok1 tok2 … ": every token of the chunk (a set or dict would keep it tracked)
    lengths: npt.NDArray[np.float64]  # tokens per line
    times: npt.NDArray[np.float64]  # 1 where the line names a time; NaN until names_time() fills it

    @property
    def size(self) -> int:
        """The number of lines (``len()`` is a named tuple's field count)."""
        return len(self.records)

    def line(self, index: int) -> ChunkLine:
        return chunk_line(self.content, index, LineSpan(*self.records[index]))

    def message_id(self, index: int) -> Any:
        return self.records[index][3]

    def names_time(self) -> npt.NDArray[np.float64]:
        """1 where the line names a time (computed in place when a *when* question first needs it)."""
        times = self.times
        if times.shape[0] and np.isnan(times[0]):
            times[:] = [
                1.0 if _names_time(self.content[start : record[1]]) else 0.0
                for start, record in zip(self.starts, self.records, strict=True)
            ]
        return times


def _parse(content: str, records: list[list[Any]], lexical: Sequence[str]) -> _Prepared:
    """A chunk's :class:`_Prepared`.

    Parsing a chunk the scorer has not seen is most of the unit stage's CPU (a search parses
    ~30), so it is done in few calls: the headers with one regular-expression scan of the
    whole text (a line starting elsewhere than at a line start, or whose header would run past
    its end, is matched on its own, as :func:`~omoide.stores.units.line_speaker` does), each
    label's speaker remembered, the vocabulary split from all lines at once."""
    heads = {m.start(): m for m in HEADER.finditer(content)}
    starts: list[int] = []
    speaker_lines: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        start, end = record[0], record[1]
        head = heads.get(start)
        if head is None:
            # the scan tried every line start and matched none there: only a line that
            # starts mid-line can still have a header
            head = _HEADER_AT.match(content, start, end) if start and content[start - 1] != "\n" else None
        elif head.end() > end:
            head = _HEADER_AT.match(content, start, end)
        if head is None:
            starts.append(start)
            continue
        starts.append(head.end())
        speaker = _speaker(head.group("label"))
        if speaker:
            speaker_lines.setdefault(speaker, []).append(i)
    # tuples built from lists, not generators: ``tuple(genexpr)`` allocates the outer tuple before
    # its items, and the collector, which untracks a tuple only once its items are untracked and
    # visits objects in the order they were made, would then keep the outer one tracked
    tokens = tuple([tuple(t.split()) for t in lexical])
    return _Prepared(
        content,
        tuple([tuple(r) for r in records]),
        tuple(starts),
        tuple([(speaker, tuple(lines)) for speaker, lines in speaker_lines.items()]),
        tokens,
        f" {' '.join(' '.join(lexical).split())} ",
        np.array([len(t) for t in tokens], dtype=np.float64),
        np.full(len(records), np.nan),
    )


_PREPARED: OrderedDict[tuple[int, int, int], tuple[Any, ...] | None] = OrderedDict()
"""Parsed chunks by (chunk, content, tokens), as plain tuples of :class:`_Prepared`'s fields:
the collector untracks a plain tuple of untracked items, never a named tuple (a subclass)."""
_PREPARED_MAX = 8192  # chunks remembered (a few KB each): a bot's busy chunks are parsed once


def _prepare(chunk: ChunkHit, lexical: tuple[str, ...]) -> _Prepared | None:
    """The chunk's line records, speakers and per-line tokens (``None``: they do not line up),
    remembered per (chunk, content, tokens): an erasure or a lexical reindex changes the key."""
    key = (int(chunk.chunk_id), hash(chunk.content), hash(lexical))
    if key in _PREPARED:
        _PREPARED.move_to_end(key)
        found = _PREPARED[key]
        return None if found is None else _Prepared._make(found)
    records = _line_records(chunk.location, chunk.content)
    prepared: _Prepared | None = None
    if records is not None and len(records) == len(lexical):
        prepared = _parse(chunk.content, records, lexical)
    _PREPARED[key] = None if prepared is None else tuple(prepared)
    while len(_PREPARED) > _PREPARED_MAX:
        _PREPARED.popitem(last=False)
    return prepared


def score_units(
    query: str,
    query_tokens: Sequence[str],
    query_vector: npt.NDArray[np.float32] | None,
    candidates: Sequence[ChunkCandidate],
    units: Mapping[ChunkId, ChunkUnits],
    weights: UnitWeights,
    *,
    reader_query: npt.NDArray[np.float32] | None = None,
    with_features: bool = True,
    limit: int | None = None,
) -> list[ScoredUnit]:
    """Score the units of ``candidates`` (see the module docstring), best first; a message that
    two overlapping chunks both hold is kept once, with its better score (ties: the earlier chunk).

    ``reader_query``: the line reader's vector of the query (``None``: the reader features are
    missing, as for a unit without the reader's vectors: the median, or 0 when no unit has them);
    ``with_features=False`` leaves :attr:`ScoredUnit.features` empty (a search without explain);
    ``limit`` stops after that many units (all by default).

    Rows are the candidates' units in order (a chunk without units: one row); the work is per
    chunk and per column, not per row (a search scores ~300 units)."""
    if not candidates:
        return []
    preps: list[_Prepared | None] = []
    blocks: list[tuple[int, npt.NDArray[np.float32]]] = []  # (first row, unit vectors of a chunk)
    read: list[tuple[int, npt.NDArray[np.float32]]] = []  # (first row, the line reader's vectors of a chunk)
    sizes: list[int] = []
    n = 0
    for cand in candidates:
        found = units.get(cand.chunk.chunk_id)
        prepared = _prepare(cand.chunk, found.lexical) if found is not None and found.lexical is not None else None
        preps.append(prepared)
        size = 1 if prepared is None else prepared.size
        if prepared is not None and found is not None:
            vectors = found.vectors
            if (
                vectors is not None
                and vectors.shape[0] == size
                and (query_vector is None or vectors.shape[1] == np.shape(query_vector)[0])
            ):
                blocks.append((n, vectors))
            if reader_query is not None and found.reader is not None and found.reader.shape[0] == size:
                read.append((n, found.reader))
        sizes.append(size)
        n += size
    counts = np.array(sizes)
    owner = np.repeat(np.arange(len(candidates)), counts)  # each row's candidate
    firsts = np.cumsum(counts) - counts
    grouped = np.array([p is not None for p in preps])
    is_unit = grouped[owner]
    rows_at = np.arange(n)
    bounds = (np.where(is_unit, firsts[owner], rows_at), np.where(is_unit, (firsts + counts)[owner], rows_at))
    x = np.zeros((n, len(FEATURES)))
    x[:, 0] = np.array([RRF_K / (RRF_K + c.lexical_rank) if c.lexical_rank else 0.0 for c in candidates])[owner]
    x[:, 1] = np.array([RRF_K / (RRF_K + c.vector_rank) if c.vector_rank else 0.0 for c in candidates])[owner]
    x[:, 2] = np.array([1.0 / (1.0 + c.position) for c in candidates])[owner]
    parts = [(int(firsts[i]), p) for i, p in enumerate(preps) if p is not None]

    if query_vector is not None and blocks:
        q = np.asarray(query_vector, dtype=np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)
        cos = np.full(n, np.nan)
        matrix = np.concatenate([m for _, m in blocks])  # one product for every unit
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0.0] = 1.0
        sims = (matrix @ q) / norms
        at = 0
        for start, block in blocks:
            cos[start : start + block.shape[0]] = sims[at : at + block.shape[0]]
            at += block.shape[0]
        best = float(np.nanmax(cos))
        x[:, 3] = cos - best
        neighbour = _window_means(cos, bounds, 1)
        x[:, 4] = np.where(is_unit, neighbour - best, np.nan)
        x[:, 8] = _window_means(x[:, 3], bounds, WIDE)
    else:
        x[:, 8] = np.nan
    x[:, 12] = np.nan
    if reader_query is not None and read:
        rq = np.asarray(reader_query, dtype=np.float32)
        rq = rq / (float(np.linalg.norm(rq)) or 1.0)
        stacked = np.concatenate([m for _, m in read])
        norms = np.linalg.norm(stacked, axis=1)
        norms[norms == 0.0] = 1.0
        sims = (stacked @ rq) / norms  # stored as float16: normalised again
        at = 0
        for start, block in read:
            x[start : start + block.shape[0], 12] = sims[at : at + block.shape[0]]
            at += block.shape[0]
    x[:, 13] = np.where(is_unit, _window_means(x[:, 12], bounds, 1), np.nan)
    source_of = np.array([int(c.chunk.source_id) for c in candidates], dtype=np.int64)

    def message_of(row: int) -> Any:
        at = int(owner[row])
        prepared = preps[at]
        return None if prepared is None else prepared.message_id(row - int(firsts[at]))

    x[:, 14:18] = source_features(x[:, 12], source_of[owner], message_of)
    lengths = np.concatenate([np.zeros(1) if p is None else p.lengths for p in preps])
    if query_tokens:
        terms = list(dict.fromkeys(query_tokens))
        padded = [f" {term} " for term in terms]  # a term of the chunk's vocabulary: " term " in it
        tf = np.zeros((n, len(terms)))
        for start, prepared in parts:
            for j, term in enumerate(terms):
                if padded[j] in prepared.vocabulary:  # only a filter: the lines' tokens decide
                    for i, toks in enumerate(prepared.tokens):
                        if term in toks:
                            tf[start + i, j] = toks.count(term)
        for col, radius in ((5, 0), (6, 1), (9, WIDE)):
            if radius:
                bm = _bm25(_window_sums(tf, bounds, radius), _window_sums(lengths, bounds, radius))
            else:
                bm = _bm25(tf, lengths)
            x[:, col] = np.where(is_unit, bm / (float(bm.max()) or 1.0), np.nan)
    folded = query.casefold()
    asks_when = bool(_ASKS_WHEN.search(query))
    named: dict[str, bool] = {}
    x[:, 10] = np.nan
    x[:, 11] = np.where(is_unit, np.log1p(lengths), np.nan)
    for start, prepared in parts:
        x[start : start + prepared.size, 10] = prepared.names_time() if asks_when else 0.0
        for speaker, lines in prepared.speaker_lines:
            if speaker not in named:
                named[speaker] = bool(_speaker_pattern(speaker).search(folded)) or (
                    is_japanese(speaker) and speaker.casefold() in folded
                )
            if named[speaker]:
                x[[start + i for i in lines], 7] = 1.0
    # a whole chunk (no units) and a unit without a vector take the median unit's value
    for col in np.flatnonzero(np.isnan(x).any(axis=0)).tolist():
        column = x[:, col]
        missing = np.isnan(column)
        present = column[~missing]
        column[missing] = float(np.median(present)) if present.size else 0.0
    scores = weights.score(x)
    order = np.lexsort((rows_at, -scores))
    out: list[ScoredUnit] = []
    seen: set[tuple[int, Any]] = set()
    for r in order.tolist():
        cand = candidates[int(owner[r])]
        source = preps[int(owner[r])]
        index = r - int(firsts[owner[r]]) if source is not None else -1
        message_id = None if source is None else source.message_id(index)
        if message_id is not None:
            held = (int(cand.chunk.source_id), message_id)
            if held in seen:
                continue
            seen.add(held)
        features = dict(zip(FEATURES, x[r].tolist(), strict=True)) if with_features else {}
        out.append(ScoredUnit(cand, float(scores[r]), features, source, index))
        if limit is not None and len(out) >= limit:
            break
    return out


_MINUTE = timedelta(minutes=1)


def line_passes(line: ChunkLine, filters: SearchFilters) -> bool:
    """Whether one message of a chunk that passed the filters passes them itself: a chunk
    matches an author or time filter when *any* of its messages does, a turn hit only when
    its own message does (its header time has minute precision: the minute counts)."""
    if filters.author_ids and line.author_id not in filters.author_ids:
        return False
    if line.at is not None:
        if filters.since is not None and line.at + _MINUTE <= filters.since:
            return False
        if filters.until is not None and line.at > filters.until:
            return False
    return True


__all__ = [
    "FEATURES",
    "READER_FEATURES",
    "READER_SUFFIX",
    "ChunkCandidate",
    "ScoredUnit",
    "UnitWeights",
    "has_reader",
    "line_passes",
    "query_language",
    "score_units",
    "shipped_weights",
    "weights_for",
]
