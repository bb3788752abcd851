"""Several ``omoide worker`` processes draining one backlog: time to drain, and no duplicate work.

    python benchmarks/workers.py                               # PostgreSQL and SQLite, 1, 2 and 4 workers
    python benchmarks/workers.py --backend postgres --workers 1 2 --sessions 200 --messages 50

Per backend and per worker count, in one run on this machine:

1. A backlog is written through ``Memory.append``: ``--sessions`` idle sessions (a workspace per
   ten sessions) of ``--messages`` LoCoMo turns each, nothing archived or embedded yet.
2. N ``omoide worker --only archiver,embedder`` processes start together (``OMOIDE_EMBEDDER``,
   default ``hashing``: the cost measured is the workers' own — claims, chunking, writes —
   not a model's) and run until the store says everything is archived and embedded.
3. Printed: wall time to drain, the workers' CPU-seconds (their own, from the kernel, after
   their start-up) per archived session, each worker's share, and the duplicate work —
   the sessions archived and chunks embedded as the workers' JSON logs count them, minus what
   the store holds. Duplicates must be 0: claims are exclusive (``FOR UPDATE SKIP LOCKED`` on
   PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) and archiving is guarded by the session version.

This machine has 2 cores shared by the database, the workers and this script: wall-time
scaling beyond 2 workers cannot show here; CPU-seconds per operation are the figure to
project from.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine
from _pgserver import new_database, temp_server

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def _turns() -> list[tuple[str, str]]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    return [
        (t["speaker"], t["text"])
        for conv in data
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]


async def _backlog(url: str, sessions: int, messages: int, *, prefix: str = "w", settings: Any = None) -> None:
    """``sessions`` idle sessions of ``messages`` LoCoMo turns each, ten a workspace (``{prefix}{n}``)."""
    from omoide.engine import Memory
    from omoide.models import Message
    from omoide.settings import load_settings

    turns = _turns()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    async with Memory.open(settings or load_settings(database_url=url, embedder="hashing")) as mem:
        n = 0
        for s in range(sessions):
            key = mem.session_key(platform="discord", workspace=f"{prefix}{s // 10}", channel=f"c{s}", user="u1")
            for i in range(messages):
                speaker, text = turns[n % len(turns)]
                n += 1
                when = start + timedelta(minutes=s * messages + i)
                await mem.append(key, Message.user(text, author_id=speaker, author_name=speaker, created_at=when))


async def _state(url: str, model: str) -> dict[str, int]:
    from omoide.engine import Memory
    from omoide.settings import load_settings

    async with Memory.open(load_settings(database_url=url, embedder="hashing", migrate_on_start=False)) as mem:
        st = await mem.store.knowledge.knowledge_status()
    return {
        "unarchived": st.unarchived_messages,
        "sources": sum(st.sources.values()),
        "chunks": st.chunks,
        "embedded": st.embedded.get(model, 0),
        "units_waiting": st.unit_vectors_missing.get(model, 0),
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU-seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _counts(log: str) -> dict[str, int]:
    """What one worker says it did: sessions archived, chunks and unit texts embedded."""
    out = {"archived": 0, "embedded": 0, "units": 0}
    for line in log.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") != "worker_run":
            continue
        if event.get("worker") == "archiver":
            out["archived"] += int(event.get("archived", 0))
        elif event.get("worker") == "embedder":
            out["embedded"] += int(event.get("chunks", 0))
            out["units"] += int(event.get("units", 0))
    return out


def drain(url: str, workers: int, embedder: str, timeout: float) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(
        OMOIDE_DATABASE_URL=url,
        OMOIDE_EMBEDDER=embedder,
        OMOIDE_ARCHIVE_IDLE_SECONDS="0",
        OMOIDE_WORKER_ARCHIVE_INTERVAL_SECONDS="0.2",
        OMOIDE_WORKER_EMBED_INTERVAL_SECONDS="0.2",
        OMOIDE_LOG_FORMAT="json",
        OMOIDE_LOG_LEVEL="INFO",
    )
    cmd = [sys.executable, "-c", "import sys; from omoide.cli import main; sys.argv[0] = 'omoide'; main()"]
    model = asyncio.run(_model(embedder))
    before = asyncio.run(_state(url, model))
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(tempfile.TemporaryFile("w+")) for _ in range(workers)]
        return _drain(url, workers, model, timeout, cmd, env, logs, before)


def _drain(
    url: str,
    workers: int,
    model: str,
    timeout: float,
    cmd: list[str],
    env: dict[str, str],
    logs: list[Any],
    before: dict[str, int],
) -> dict[str, Any]:
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*cmd, "worker", "--only", "archiver,embedder"], env=env, stderr=log, stdout=subprocess.DEVNULL
        )
        for log in logs
    ]
    cpu = [0.0] * workers
    start_cpu = [0.0] * workers  # start-up (imports, opening the store), left out of the figures
    try:
        waiting = set(range(workers))
        while waiting:  # snapshot each worker's CPU when it says it started (polled every 20 ms)
            for i in list(waiting):
                logs[i].seek(0)
                if '"worker_started"' in logs[i].read():
                    start_cpu[i] = _cpu_seconds(procs[i].pid)
                    waiting.discard(i)
                elif procs[i].poll() is not None:
                    raise RuntimeError(f"worker {i} exited {procs[i].returncode}")
            time.sleep(0.02)
        while True:
            time.sleep(0.5)
            for i, p in enumerate(procs):
                if p.poll() is not None:
                    logs[i].seek(0)
                    raise RuntimeError(f"worker {i} exited {p.returncode}: {logs[i].read()[-2000:]}")
                cpu[i] = _cpu_seconds(p.pid) - start_cpu[i]
            state = asyncio.run(_state(url, model))
            if state["unarchived"] == 0 and state["embedded"] == state["chunks"] and state["units_waiting"] == 0:
                break
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"not drained after {timeout:.0f} s: {state}")
        wall = time.perf_counter() - started
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    said = []
    for log in logs:
        log.seek(0)
        said.append(_counts(log.read()))
    archived = state["sources"] - before["sources"]
    embedded = state["embedded"] - before["embedded"]
    return {
        "workers": workers,
        "start_cpu_s": round(sum(start_cpu) / workers, 2),
        "drain_s": round(wall, 2),
        "sessions_archived": archived,
        "chunks_embedded": embedded,
        "worker_cpu_s": round(sum(cpu), 2),
        "cpu_ms_per_session": round(1000 * sum(cpu) / max(archived, 1), 1),
        "shares": [{"archived": s["archived"], "embedded": s["embedded"]} for s in said],
        "duplicate_archives": sum(s["archived"] for s in said) - archived,
        "duplicate_embeddings": sum(s["embedded"] for s in said) - embedded,
    }


async def _model(embedder: str) -> str:
    from omoide.providers.registry import build_embedder
    from omoide.settings import load_settings

    return build_embedder(load_settings(embedder=embedder)).model_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts (default 1 2 4)")
    parser.add_argument("--sessions", type=int, default=200, help="idle sessions in the backlog (default 200)")
    parser.add_argument("--messages", type=int, default=50, help="messages per session (default 50)")
    parser.add_argument("--embedder", default="hashing", help="OMOIDE_EMBEDDER of the workers (default hashing)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for a drain (default 900)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"load average before: {os.getloadavg()}")
    print(f"backlog: {args.sessions} sessions x {args.messages} messages, embedder {args.embedder}")
    results: dict[str, list[dict[str, Any]]] = {}
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    with tempfile.TemporaryDirectory() as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        pg = stack.enter_context(temp_server(tmp)) if "postgres" in backends else None
        for backend in backends:
            results[backend] = []
            for n in args.workers:
                if backend == "sqlite":
                    url = f"sqlite:///{tmp / f'workers_{n}.db'}"
                else:
                    assert pg is not None
                    url = new_database(pg, f"workers_{n}")
                t = time.perf_counter()
                asyncio.run(_backlog(url, args.sessions, args.messages))
                backlog_s = time.perf_counter() - t
                row = drain(url, n, args.embedder, args.timeout)
                row["backlog_s"] = round(backlog_s, 1)
                results[backend].append(row)
                if not args.json:
                    print(
                        f"[{backend}] {n} worker(s): drained {row['sessions_archived']} sessions / "
                        f"{row['chunks_embedded']} chunks in {row['drain_s']} s; workers' CPU "
                        f"{row['worker_cpu_s']} s ({row['cpu_ms_per_session']} ms per session; start-up "
                        f"{row['start_cpu_s']} s each, left out); shares "
                        f"{row['shares']}; duplicates: {row['duplicate_archives']} archives, "
                        f"{row['duplicate_embeddings']} embeddings",
                        flush=True,
                    )
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
