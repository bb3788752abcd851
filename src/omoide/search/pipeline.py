"""The retrieval pipeline: candidates per list → fusion → units → rerank → top k.

Seed 004's pipeline, with every size from :class:`~omoide.settings.Settings`, and a unit
stage (issue 16) so a hit can be the one message that matched:

1. **expand** (optional, ``search_query_expansion`` > 0): the chat model proposes
   alternative phrasings; every query is searched and all lists are fused. The call is
   budgeted (:func:`~omoide.context.calls.budgeted_complete`): a prompt that does not fit
   the model's window is not sent; the original query alone is searched, with a note.
2. **embed**: each query is embedded with the configured embedder (vector and hybrid modes).
3. **search**: per query, ``search_candidates`` (200) chunks from the vector list
   (cosine similarity over the embedder's vectors) and from the lexical list (omoide's own
   tokens, BM25), every filter applied inside the database query.
4. **fuse**: RRF with one constant ``search_rrf_k`` (60) for every list: the chunk order
   that picks where to look (see :mod:`omoide.fusion`).
5. **fetch**: the ranked lists carry chunk ids and scores only; one query reads the text,
   source and location of the best ``max(search_fused, search_unit_chunks)`` fused chunks (a
   chunk deleted since it was ranked is left out), with their units — each message's tokens
   and vector — when the unit stage runs (``fetch_chunks_with_units``).
6. **units** (``search_unit_chunks`` > 0, 30): :func:`~omoide.search.units.score_units`
   scores every message of those chunks with the fitted weights (the chunk lists' ranks, the
   message's own vector and BM25 scores, its neighbours', its speaker named in the query).
   Hits become messages (``unit="turn"``) cited by their chunk; a chunk without units (a
   document, or one written before units existed) stays a ``chunk`` hit. Before any chunk
   has units, the fused chunk order is kept.
7. **rerank** (if ``OMOIDE_RERANKER`` is set): the reranker orders the first
   ``search_fused`` (15) candidates.
8. **cut**: the best ``k`` (``search_top_k``, 5) are returned.

Failures never return an empty result silently: when the embedder or the vector query
fails (no embedder installed, provider down, vectors of another size), the lexical list
alone is used and :attr:`SearchResult.notes` says so (``fallback`` is ``True``); a failed
reranker or query expansion leaves the fused order or the original query, with a note.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from omoide.context.calls import budgeted_complete
from omoide.errors import ContextOverflow, InvalidInput, OmoideError, ProviderError
from omoide.fusion import reciprocal_rank_fusion
from omoide.models import Message
from omoide.providers.base import ChatModel, Embedder, Reranker, TokenCounter
from omoide.providers.local.line_reader import read_query
from omoide.providers.tokens import get_token_counter
from omoide.search.expansion import _EXPAND_SYSTEM, EXPANSION_MAX_TOKENS, parse_expansions
from omoide.search.lexical_index import query_tokenizer
from omoide.search.results import (
    MODES,
    SearchHit,
    SearchMode,
    SearchResult,
    StageScores,
    check_mode,
    check_query,
)
from omoide.search.units import ChunkCandidate, ScoredUnit, has_reader, line_passes, score_units, weights_for
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkId
from omoide.stores.search import MAX_K, RankedChunk, SearchFilters, SearchStore, check_k
from omoide.stores.units import ChunkLine, ChunkUnits
from omoide.text.stopwords import drop_stopwords
from omoide.text.tokenize import is_synonym_token

logger = logging.getLogger(__name__)
EVIDENCE_HITS_PER_CHUNK = 4
"""Message hits asked for per chunk of evidence wanted (:meth:`SearchPipeline.search_evidence`)."""


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """The pipeline's sizes (from :class:`Settings` by :meth:`from_settings`)."""

    candidates: int = 200
    fused: int = 15
    top_k: int = 5
    rrf_k: int = 60
    mode: SearchMode = "hybrid"
    expansions: int = 0
    unit_chunks: int = 30
    line_reader: str = "auto"

    @classmethod
    def from_settings(cls, settings: Settings) -> PipelineConfig:
        return cls(
            candidates=settings.search_candidates,
            fused=settings.search_fused,
            top_k=settings.search_top_k,
            rrf_k=settings.search_rrf_k,
            mode=settings.search_mode,
            expansions=settings.search_query_expansion,
            unit_chunks=settings.search_unit_chunks,
            line_reader=settings.line_reader,
        )


# ----------------------------------------------------------------------------- the pipeline


@dataclass
class _Lists:
    names: list[str] = field(default_factory=list)
    hits: list[list[RankedChunk]] = field(default_factory=list)
    query_tokens: list[str] = field(default_factory=list)  # the query's lexical tokens (unit scoring)
    query_vector: npt.NDArray[np.float32] | None = None  # the query's vector (unit scoring)
    model: str | None = None  # the embedder whose vectors were searched
    units: dict[ChunkId, ChunkUnits] | None = None  # the fused chunks' units, read with the chunks
    reader_query: asyncio.Task[npt.NDArray[np.float32] | None] | None = None  # the line reader's query vector

    def add(self, name: str, hits: list[RankedChunk]) -> None:
        self.names.append(name)
        self.hits.append(hits)


def _list_name(kind: str, index: int) -> str:
    return kind if index == 0 else f"{kind}#{index + 1}"


class SearchPipeline:
    """Runs searches over a :class:`~omoide.stores.search.SearchStore` (see the module docstring).

    Args:
        store: the search store (``store.search``).
        config: pipeline sizes.
        embedder: builds (or returns) the query embedder; called only in vector and hybrid
            modes, so a lexical search never loads a model.
        reranker: orders the fused candidates, or ``None``.
        expander: proposes alternative queries when ``config.expansions`` > 0.
        counter: counts the expansion prompt (default: the shared tiktoken counter).
        settings: where the expander's context window is looked up (``OMOIDE_CONTEXT_WINDOWS``;
            default: the built-in table).
    """

    def __init__(
        self,
        store: SearchStore,
        config: PipelineConfig,
        *,
        embedder: Callable[[], Embedder] | None = None,
        reranker: Reranker | None = None,
        expander: ChatModel | None = None,
        counter: TokenCounter | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self._embedder = embedder
        self.reranker = reranker
        self.expander = expander
        self._counter = counter
        self.settings = settings

    @property
    def counter(self) -> TokenCounter:
        return get_token_counter() if self._counter is None else self._counter

    async def search(
        self,
        query: str,
        filters: SearchFilters,
        *,
        k: int | None = None,
        mode: SearchMode | None = None,
        explain: bool = False,
        expand: bool | None = None,
    ) -> SearchResult:
        """Search (see the module docstring).

        Args:
            query: what to look for.
            filters: where (the workspace is required).
            k: hits to return (default ``config.top_k``).
            mode: ``hybrid`` (default ``config.mode``), ``vector`` or ``lexical``.
            explain: record each hit's rank in every list.
            expand: ask the chat model for alternative queries (default: when
                ``config.expansions`` > 0 and an expander is set).

        Raises:
            InvalidInput: an empty query, a bad ``k``, mode or filters.
            StoreError: the lexical query failed (there is nothing left to fall back to).
        """
        text = check_query(query)
        chosen = check_mode(self.config.mode if mode is None else mode)
        top = check_k(self.config.top_k if k is None else k)
        if not isinstance(filters, SearchFilters):
            raise InvalidInput(f"filters must be a SearchFilters, got {type(filters).__name__}")
        fused_n = min(MAX_K, max(self.config.fused, top))
        per_list = min(MAX_K, max(self.config.candidates, fused_n))
        timings: dict[str, float] = {}
        notes: list[str] = []

        queries = [text]
        want_expand = self.config.expansions > 0 if expand is None else expand
        if want_expand:
            started = time.perf_counter()
            queries += await self._expand(text, notes)
            timings["expand"] = _ms(started)

        lists = _Lists()
        fallback = False
        lexical_needed = chosen != "vector"
        if self.config.unit_chunks and self.config.line_reader != "off" and (explain or has_reader(text, chosen)):
            # read while the lists run; the unit stage waits for it (~1 ms of CPU). Explain shows
            # the reader's features even where no model reads them (the fit collects them so)
            lists.reader_query = asyncio.create_task(asyncio.to_thread(read_query, self.config.line_reader, text))
        phase_started = time.perf_counter()
        # hybrid: the lexical lists run while the query is embedded and the vectors searched
        lexical_task = (
            asyncio.create_task(self._lexical_lists(queries, filters, per_list, notes, lists, synonyms=True))
            if chosen == "hybrid"
            else None
        )
        try:
            if chosen != "lexical":
                vector_lists = await self._vector_lists(queries, filters, per_list, timings, notes, lists)
                if vector_lists is None:
                    fallback = True
                    lexical_needed = True
                elif not any(vector_lists):
                    notes.append(
                        "no chunk in scope has a vector from the configured embedder yet; lexical results used"
                    )
                    fallback = chosen == "vector"
                    lexical_needed = True
                else:
                    for i, hits in enumerate(vector_lists):
                        lists.add(_list_name("vector", i), hits)
            if lexical_needed:
                if lexical_task is not None:
                    lexical_lists = await lexical_task
                    timings["search"] = max(0.0, _ms(phase_started) - timings.get("embed", 0.0))
                else:
                    started = time.perf_counter()
                    # a lexical-only ranking (lexical mode, or vector mode fallen back to words)
                    lexical_lists = await self._lexical_lists(queries, filters, per_list, notes, lists, synonyms=False)
                    timings["search"] = timings.get("search", 0.0) + _ms(started)
                for i, hits in enumerate(lexical_lists):
                    lists.add(_list_name("lexical", i), hits)
        except BaseException:
            if lists.reader_query is not None:
                lists.reader_query.cancel()
            raise
        finally:
            if lexical_task is not None and not lexical_task.done():
                lexical_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await lexical_task

        started = time.perf_counter()
        unit_chunks = min(MAX_K, self.config.unit_chunks)
        candidates = await self._fuse(
            lists, max(fused_n, unit_chunks), units=unit_chunks > 0, workspace=filters.workspace_id
        )
        timings["fetch"] = _ms(started)
        if unit_chunks and candidates:
            started = time.perf_counter()
            scoring_mode: SearchMode = "lexical" if fallback or lists.query_vector is None else chosen
            candidates = await self._score_units(
                text, scoring_mode, lists, candidates[:unit_chunks], max(fused_n, top), filters, explain
            )
            timings["units"] = _ms(started)
        candidates = candidates[: max(fused_n, top)]

        reranked = False
        if self.reranker is not None and candidates:
            started = time.perf_counter()
            candidates, reranked = await self._rerank(text, candidates, top, explain, notes)
            timings["rerank"] = _ms(started)

        final = tuple(
            dataclasses.replace(h, rank=i, ranks=h.ranks if explain else None, features=h.features if explain else None)
            for i, h in enumerate(candidates[:top], start=1)
        )
        return SearchResult(
            query=text,
            mode=chosen,
            hits=final,
            queries=tuple(queries),
            timings=timings,
            notes=tuple(notes),
            fallback=fallback,
            reranked=reranked,
        )

    async def search_evidence(
        self,
        query: str,
        filters: SearchFilters,
        *,
        chunks: int | None = None,
        mode: SearchMode | None = None,
    ) -> SearchResult:
        """Search for evidence to quote: the hits of the best ``chunks`` distinct chunks
        (default ``config.top_k``), however many of their messages matched.

        Answers and ``build_context`` quote whole chunks; ranking messages finds the right
        chunks, but five message hits may come from two chunks. So this asks for
        ``EVIDENCE_HITS_PER_CHUNK`` times as many hits and keeps those of the first ``chunks``
        chunks, in order (``SearchResult.hits`` stays ranked; group them with
        :func:`omoide.answers.prompt.by_chunk`).
        """
        want = check_k(self.config.top_k if chunks is None else chunks)
        found = await self.search(query, filters, k=min(MAX_K, want * EVIDENCE_HITS_PER_CHUNK), mode=mode)
        kept: list[SearchHit] = []
        seen: set[int] = set()
        for hit in found.hits:
            key = int(hit.chunk.chunk_id)
            if key not in seen:
                if len(seen) >= want:
                    continue
                seen.add(key)
            kept.append(hit)
        return dataclasses.replace(found, hits=tuple(kept))

    # ------------------------------------------------------------------ stages

    async def _expand(self, query: str, notes: list[str]) -> list[str]:
        model = self.expander
        n = self.config.expansions or 2
        if model is None:
            notes.append("query expansion skipped: no chat model")
            return []
        if model.provider == "extractive":
            notes.append("query expansion skipped: the offline extractive model cannot rephrase queries")
            return []
        prompt = f"Propose {n} alternative search queries for:\n\n{query}"
        try:
            call = await budgeted_complete(
                model,
                self.counter,
                self.settings,
                messages=[Message.user(prompt)],
                system=_EXPAND_SYSTEM,
                max_tokens=EXPANSION_MAX_TOKENS,
                temperature=0.3,
                what="the query expansion prompt",
            )
        except ContextOverflow as exc:
            logger.info("query_expansion_skipped", extra={"prompt_tokens": exc.prompt_tokens, "limit": exc.limit})
            notes.append(
                f"query expansion skipped: the prompt ({exc.prompt_tokens or 0:,} tokens) does not fit the "
                f"context window of {model.provider}:{model.model_id} (limit {exc.limit or 0:,}); "
                "searched the original query only"
            )
            return []
        except ProviderError as exc:
            logger.warning("query_expansion_failed", extra={"provider": model.provider, "code": exc.code})
            notes.append(f"query expansion failed ({exc.code}): searched the original query only")
            return []
        return parse_expansions(call.text, query, n)

    async def _vector_lists(
        self,
        queries: Sequence[str],
        filters: SearchFilters,
        per_list: int,
        timings: dict[str, float],
        notes: list[str],
        state: _Lists,
    ) -> list[list[RankedChunk]] | None:
        """One vector list per query, or ``None`` (with a note) when the vector side failed."""
        if self._embedder is None:
            notes.append("vector search unavailable (no embedder): lexical results only")
            return None
        started = time.perf_counter()
        try:
            embedder = self._embedder()
            vectors = [await embedder.embed_query(q) for q in queries]
        except OmoideError as exc:
            timings["embed"] = _ms(started)
            logger.warning("query_embedding_failed", extra={"code": exc.code, "error": exc.message})
            notes.append(
                f"vector search failed while embedding the query ({exc.code}: {exc.message}); lexical results only"
            )
            return None
        timings["embed"] = _ms(started)
        started = time.perf_counter()
        try:
            lists = list(
                await asyncio.gather(
                    *(
                        self.store.vector_ranking(model=embedder.model_id, query=v, filters=filters, k=per_list)
                        for v in vectors
                    )
                )
            )
        except OmoideError as exc:
            timings["search"] = _ms(started)
            logger.warning("vector_search_failed", extra={"code": exc.code, "error": exc.message})
            notes.append(f"vector search failed ({exc.code}: {exc.message}); lexical results only")
            return None
        timings["search"] = _ms(started)
        state.query_vector = np.asarray(vectors[0], dtype=np.float32)
        state.model = embedder.model_id
        return lists

    async def _lexical_lists(
        self,
        queries: Sequence[str],
        filters: SearchFilters,
        per_list: int,
        notes: list[str],
        state: _Lists,
        *,
        synonyms: bool,
    ) -> list[list[RankedChunk]]:
        """The lexical rankings of ``queries``. ``synonyms``: keep the query's synonym-group
        tokens (Japanese, :func:`~omoide.text.tokenize.synonym_token`). Hybrid search keeps them:
        with the vector list to confirm the region they find paraphrased evidence; a lexical-only
        ranking drops them, where they add more noise than recall (measured on the Japanese set:
        hybrid +0.014, lexical-only −0.016 Recall@10 with them; docs/search.md)."""
        tokenizer = await query_tokenizer(self.store, notes)
        token_lists = [drop_stopwords(tokenizer.tokenize(q)) for q in queries]
        if not synonyms:
            token_lists = [[t for t in tokens if not is_synonym_token(t)] for tokens in token_lists]
        state.query_tokens = token_lists[0]
        return list(
            await asyncio.gather(
                *(self.store.lexical_ranking(tokens=t, filters=filters, k=per_list) for t in token_lists)
            )
        )

    async def _fuse(self, lists: _Lists, limit: int, *, units: bool, workspace: str) -> list[SearchHit]:
        """Fuse the ranked lists (RRF) and fetch the chunks of the best ``limit`` only (read in
        ``workspace``, the lists' own: on Citus the read goes to its shard only)."""
        fused = reciprocal_rank_fusion(
            [[r.chunk_id for r in ranking] for ranking in lists.hits], k=self.config.rrf_k, limit=limit
        )
        kinds = [name.split("#", 1)[0] for name in lists.names]

        def best(kind: str, key: int, ranks: tuple[int | None, ...]) -> float | None:
            """The key's best score among the lists of one kind: its rank in each points at its
            entry (a list that repeated an id is searched instead)."""
            scores = []
            for ranking, listed_kind, rank in zip(lists.hits, kinds, ranks, strict=True):
                if rank is None or listed_kind != kind:
                    continue
                entry = ranking[rank - 1] if rank <= len(ranking) else None
                if entry is not None and entry.chunk_id == key:
                    scores.append(entry.score)
                else:
                    scores.append(max(r.score for r in ranking if r.chunk_id == key))
            return max(scores) if scores else None

        ids = [ChunkId(f.key) for f in fused]
        if units:  # the units stage reads them: one query for both
            rows, lists.units = await self.store.fetch_chunks_with_units(
                ids, model=lists.model, workspace_id=workspace, reader=lists.reader_query is not None
            )
        else:
            rows = await self.store.fetch_chunks(ids)
        chunks = {int(c.chunk_id): c for c in rows}
        out: list[SearchHit] = []
        for f in fused:
            chunk = chunks.get(f.key)
            if chunk is None:  # deleted since it was ranked
                continue
            position = len(out) + 1
            # every list's rank (the unit scorer reads them; the result shows them with explain only)
            ranks = {n: r for n, r in zip(lists.names, f.ranks, strict=True) if r is not None}
            ranks["fused"] = position
            scores = StageScores(
                vector=best("vector", f.key, f.ranks), lexical=best("lexical", f.key, f.ranks), fused=f.score
            )
            message_ids = tuple(chunk.location.get("message_ids") or ())
            out.append(SearchHit(chunk, position, f.score, scores, ranks, message_ids=message_ids))
        return out

    async def _score_units(
        self,
        query: str,
        mode: SearchMode,
        lists: _Lists,
        hits: list[SearchHit],
        limit: int,
        filters: SearchFilters,
        explain: bool,
    ) -> list[SearchHit]:
        """The units of the best fused chunks, scored one by one (:mod:`omoide.search.units`); the
        chunk hits unchanged when none of them has units yet."""
        units = lists.units or {}
        reader_query = await lists.reader_query if lists.reader_query is not None else None
        if not any(u.lexical is not None for u in units.values()):
            return hits
        candidates = [
            ChunkCandidate(h.chunk, i, _best_rank(h.ranks, "lexical"), _best_rank(h.ranks, "vector"))
            for i, h in enumerate(hits)
        ]
        if reader_query is not None and not any(u.reader is not None for u in units.values()):
            reader_query = None  # not reindexed yet: the model fitted without the reader
        weights = weights_for(query, mode, reader=reader_query is not None)
        per_line = bool(filters.author_ids) or filters.since is not None or filters.until is not None
        # each unit's line is built once here (ScoredUnit.line builds it anew on every access)
        scored: list[tuple[ScoredUnit, ChunkLine | None]] = []
        for unit in score_units(
            query,
            lists.query_tokens,
            lists.query_vector,
            candidates,
            units,
            weights,
            reader_query=reader_query,
            with_features=explain,
            limit=None if per_line else limit,  # a per-message filter may drop some: score them all
        ):
            if len(scored) >= limit:
                break
            line = unit.line
            if line is None or not per_line or line_passes(line, filters):
                scored.append((unit, line))
        out: list[SearchHit] = []
        for position, (unit, line) in enumerate(scored, start=1):
            hit = hits[unit.candidate.position]
            ranks = {**(hit.ranks or {}), "unit": position}
            scores = StageScores(vector=hit.scores.vector, lexical=hit.scores.lexical, fused=unit.score)
            if line is None:
                out.append(
                    dataclasses.replace(
                        hit,
                        rank=position,
                        score=unit.score,
                        scores=scores,
                        ranks=ranks,
                        features=unit.features or None,
                        message_ids=tuple(hit.chunk.location.get("message_ids") or ()),
                    )
                )
                continue
            out.append(
                SearchHit(
                    hit.chunk,
                    position,
                    unit.score,
                    scores,
                    ranks,
                    unit="turn",
                    line=line.position,
                    message_ids=() if line.message_id is None else (line.message_id,),
                    quote=line.raw,
                    features=unit.features or None,
                )
            )
        return out

    async def _rerank(
        self, query: str, candidates: list[SearchHit], top: int, explain: bool, notes: list[str]
    ) -> tuple[list[SearchHit], bool]:
        reranker = self.reranker
        assert reranker is not None
        try:
            results = await reranker.rerank(query, [h.quote or h.content for h in candidates], top_k=top)
        except ProviderError as exc:
            logger.warning("rerank_failed", extra={"model": reranker.model_id, "code": exc.code})
            notes.append(f"reranking failed ({exc.code}): fused order kept")
            return candidates, False
        out: list[SearchHit] = []
        seen: set[int] = set()
        for position, r in enumerate(results, start=1):
            if not 0 <= r.index < len(candidates) or r.index in seen:
                continue
            seen.add(r.index)
            h = candidates[r.index]
            ranks = {**h.ranks, "rerank": position} if h.ranks is not None else None
            scores = StageScores(h.scores.vector, h.scores.lexical, h.scores.fused, float(r.score))
            out.append(dataclasses.replace(h, rank=position, score=float(r.score), scores=scores, ranks=ranks))
        return out, True


def _best_rank(ranks: Mapping[str, int] | None, kind: str) -> int | None:
    """The chunk's best rank among the lists of one kind (``lexical``, ``lexical#2``, …)."""
    found = [r for name, r in (ranks or {}).items() if name.split("#", 1)[0] == kind]
    return min(found) if found else None


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


__all__ = [
    "MODES",
    "PipelineConfig",
    "SearchHit",
    "SearchMode",
    "SearchPipeline",
    "SearchResult",
    "StageScores",
    "check_mode",
    "check_query",
    "parse_expansions",
]
