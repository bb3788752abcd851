"""HTTP search requests/s at p95 ≤ 50 ms: ``omoide serve`` against a load generator in another process.

    nice -n 10 python benchmarks/http_load.py --db postgresql://…/bench_scale --workspace w19 \\
        --processes 1 2 --concurrency 1 2 4 8 16 --seconds 15

Starts ``omoide serve --no-workers --processes N`` (``OMOIDE_EMBEDDER=hashing``: the query is
embedded by the hashing embedder, whose vectors ``benchmarks/scale.py`` loaded) on a free port,
creates an API key of ``--workspace``, then ramps a **closed-loop** load generator (a separate
Python process, ``httpx.AsyncClient``): ``C`` clients each sending ``POST /v1/search`` (hybrid,
k 5) back to back for ``--seconds``, for each ``C`` of ``--concurrency``. Per step: requests/s,
latency p50 / p95 / p99 (from each request's send to its answer), errors, and the CPU-seconds per
request of the database's processes (``--pg-pid``: a postmaster, its backends included) and of
``omoide serve`` (its uvicorn processes included). The answer is the highest requests/s whose
p95 stayed ≤ 50 ms; the ramp stops at the first step above 2 × that bound or with errors.

A closed loop measures the service rate at a given concurrency (each client waits for its answer);
requests/s grow with ``C`` until the server's processes (or the database, or — here — the two
cores every process shares) saturate, and then latency grows instead.
"""

from __future__ import annotations

import os
import sys

# benchmarks/http.py is named like the standard library's package (httpx imports it): the real one first
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import http.client  # noqa: E402, F401
import json  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(_HERE)
sys.path.append(_HERE)
from _machine import machine, percentiles, tree_cpu  # noqa: E402

P95_TARGET_MS = 50.0
WORDS = ["天気会議", "予定確認", "kariton", "準備完了", "mone", "資料共有", "時間設定", "deposa", "開発試験", "lusa"]


# --------------------------------------------------------------------------- the generator process


async def generate(base: str, token: str, seconds: float, concurrency: int) -> dict[str, Any]:
    """``concurrency`` clients, each sending searches back to back for ``seconds`` (after 1 s of warm-up
    whose requests are not counted); latencies in seconds from send to answer."""
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    warm_until = time.perf_counter() + 1.0
    stop_at = warm_until + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30.0, limits=limits
    ) as http:

        async def client(c: int) -> None:
            n = c
            while True:
                start = time.perf_counter()
                if start >= stop_at:
                    return
                body = {"query": f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3 + 1) % len(WORDS)]}", "k": 5, "mode": "hybrid"}
                n += concurrency
                try:
                    response = await http.post("/v1/search", json=body)
                    ok = response.status_code < 300
                    if not ok:
                        errors.append(f"{response.status_code} {response.text[:200]}")
                except httpx.HTTPError as exc:
                    ok = False
                    errors.append(repr(exc)[:200])
                done = time.perf_counter()
                if ok and start >= warm_until:
                    latencies.append(done - start)

        await asyncio.gather(*(client(c) for c in range(concurrency)))
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "rps": round(len(latencies) / seconds, 1),
        "latency_ms": {k: round(v, 2) for k, v in percentiles(latencies).items()} if latencies else {},
        "errors": len(errors),
        "first_errors": errors[:3],
    }


# --------------------------------------------------------------------------- CPU of process trees


# --------------------------------------------------------------------------- the server and the ramp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _omoide() -> str:
    return str(Path(sys.executable).with_name("omoide"))


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(OMOIDE_DATABASE_URL=url, OMOIDE_EMBEDDER="hashing", OMOIDE_MIGRATE_ON_START="false")
    return env


def api_key(url: str, workspace: str) -> str:
    made = subprocess.run(
        [_omoide(), "keys", "create", "--workspace", workspace, "--json"],
        env=_env(url), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return str(json.loads(made.stdout)["token"])


def _run_generator(base: str, token: str, seconds: float, concurrency: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "_gen", base, token, str(seconds), str(concurrency)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def ramp(
    url: str,
    workspace: str,
    processes: int,
    concurrency: list[int],
    seconds: float,
    *,
    db_pids: dict[str, int] | None = None,
    label: str = "",
    full: bool = False,
) -> dict[str, Any]:
    """``omoide serve --processes N`` on ``url``, the load generator at each concurrency in turn
    (``full``: every step, even past 2 × the p95 bound: the throughput curve)."""
    import httpx

    token = api_key(url, workspace)
    port = _free_port()
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115  (not a pipe: an unread one fills up and blocks the server)
    server = subprocess.Popen(
        [_omoide(), "serve", "--host", "127.0.0.1", "--port", str(port), "--no-workers", "--processes", str(processes)],
        env=_env(url), stdout=subprocess.DEVNULL, stderr=log, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"processes": processes, "workspace": workspace, "steps": []}
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise SystemExit(f"omoide serve did not start: {log.read()[-3000:]}")
            time.sleep(0.3)
        _run_generator(base, token, 3.0, max(2, processes * 2))  # warm every process's pool and caches
        pids = {**(db_pids or {}), "omoide-serve": server.pid}
        best = 0.0
        for c in concurrency:
            before = {name: tree_cpu(pid) for name, pid in pids.items()}
            load_before = os.getloadavg()[0]
            step = _run_generator(base, token, seconds, c)
            spent = {name: tree_cpu(pid) - before[name] for name, pid in pids.items()}
            served = max(step["requests"], 1)
            step["cpu_ms_per_request"] = {name: round(1000 * s / served, 2) for name, s in spent.items()}
            step["load"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            out["steps"].append(step)
            p95 = step["latency_ms"].get("p95", float("inf"))
            print(
                f"  [{label or 'http'}] serve x{processes}, {c} clients: {step['rps']} req/s, p50 "
                f"{step['latency_ms'].get('p50', 0):.1f} ms, p95 {p95:.1f} ms, errors {step['errors']}; "
                f"CPU ms/request {step['cpu_ms_per_request']}; load {step['load']}",
                flush=True,
            )
            if p95 <= P95_TARGET_MS and not step["errors"]:
                best = max(best, step["rps"])
            if step["errors"] or (p95 > 2 * P95_TARGET_MS and not full):
                break
        out["max_rps_p95_le_50ms"] = best
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_gen":
        base, token, seconds, concurrency = sys.argv[2:6]
        print(json.dumps(asyncio.run(generate(base, token, float(seconds), int(concurrency)))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="database URL (loaded by benchmarks/scale.py)")
    parser.add_argument("--workspace", default="w19")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--pg-pid", type=int, help="the database's postmaster pid (its CPU per request)")
    parser.add_argument("--full", action="store_true", help="every concurrency step (no stop above 2 × the bound)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"machine: {machine()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    pids = {"pg": args.pg_pid} if args.pg_pid else None
    results = [ramp(args.db, args.workspace, p, args.concurrency, args.seconds, db_pids=pids) for p in args.processes]
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
