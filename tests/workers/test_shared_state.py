"""Issue 17 point 3: a worker in another process, on "another host" with a wrong clock, is seen by every
reader through the store — ``read_progress`` / ``workers_health`` / ``recent_worker_errors``, ``GET /v1/status``,
``/readyz``, the inspector's overview and ``omoide status`` — on both backends.

The other process is a real child process. It calls itself ``host-b`` (so the readers here cannot check its
pid and must go by the heartbeat's age) and its clock runs an hour late (so only the database's clock can say
its records are fresh).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app as cli_app
from omoide.server import create_app
from omoide.workers.health import recent_worker_errors, worker_runners, workers_health
from omoide.workers.progress import read_progress

ADMIN_KEY = "admin-" + "h" * 32
WORKSPACE = "g-shared"

CHILD = """
import asyncio, socket, sys
from datetime import UTC, datetime, timedelta

socket.gethostname = lambda: "host-b"  # another host, as far as the readers can tell

from omoide import Memory
from omoide.workers import health, progress
from omoide.workers.health import WorkerReporter
from omoide.workers.progress import ProgressRecorder

late = lambda: datetime.now(UTC) - timedelta(hours=1)  # and its clock is an hour late
progress._now = late
health._now = late


async def main() -> None:
    async with Memory.open() as mem:
        reporter = WorkerReporter(mem.store, jobs=["embedder"])
        assert await reporter.heartbeat()
        assert await reporter.error("embedder", "PROVIDER_UNAVAILABLE", "503 from host-b's embedding API")
        recorder = ProgressRecorder(mem.store, job="embedder", model=mem.embedder.model_id)
        recorder.set_total(100)
        recorder.advance(40)
        await recorder.flush()
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        recorder.advance(60)
        recorder.finish()
        await recorder.flush()
        assert await reporter.heartbeat(running=False)
        print("done", flush=True)


asyncio.run(main())
"""


async def _line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line:
        assert proc.stderr is not None
        raise AssertionError(f"the child exited: {(await proc.stderr.read()).decode()[-3000:]}")
    return line.decode().strip()


def _status_json(db_url: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli_app, ["status", "--db", db_url, "--json"], env={"OMOIDE_EMBEDDER": "hashing"})
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


async def test_another_process_on_another_host_is_seen_by_every_reader(settings: Any, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY)})
    env = {
        **os.environ,
        "OMOIDE_DATABASE_URL": s.database_url,
        "OMOIDE_EMBEDDER": "hashing",
        "OMOIDE_TRANSCRIPTS_DIR": str(tmp_path / "child-transcripts"),
    }
    async with Memory.open(s) as mem:
        key = await mem.api_keys.create(WORKSPACE, name="bot")
        assert (await workers_health(mem.store)).state == "none"
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert await _line(proc) == "ready"

            # the library readers
            job = await read_progress(mem.store)
            assert job is not None and job.host == "host-b" and job.pid == proc.pid
            assert job.running and (job.done, job.total) == (40, 100) and job.rate and job.eta_seconds is not None
            health = await workers_health(mem.store)
            assert (health.state, health.alive) == ("alive", 1)  # fresh by the database's clock
            (runner,) = await worker_runners(mem.store)
            assert (runner.host, runner.pid, runner.jobs) == ("host-b", proc.pid, ("embedder",))
            (error,) = await recent_worker_errors(mem.store)
            assert (error.host, error.code) == ("host-b", "PROVIDER_UNAVAILABLE")

            # HTTP: GET /v1/status and /readyz
            web = create_app(mem, workers=False)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://omoide.test") as c:
                got = (await c.get("/v1/status", headers={"Authorization": f"Bearer {key.token}"})).json()
                assert got["embedding_job"]["running"] is True and got["embedding_job"]["rate"] > 0
                ready = await c.get("/readyz")
                assert ready.status_code == 200 and ready.json()["checks"]["workers"] == "alive"

                # the inspector's overview, as the admin (who sees the workers' errors)
                form = await c.get("/ui/login")
                token = form.text.split('name="login_token" value="', 1)[1].split('"', 1)[0]
                await c.post("/ui/login", data={"key": ADMIN_KEY, "login_token": token})
                listing = await c.get("/ui/workspaces")
                csrf = listing.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
                await c.post("/ui/workspace", data={"workspace": WORKSPACE, "csrf": csrf})
                page = (await c.get("/ui/")).text
                assert 'data-workers="alive"' in page and "503 from host-b" in page and f"host-b:{proc.pid}" in page
                assert "<progress" in page and "40 / 100" in page

            # the CLI: omoide status
            status = await asyncio.to_thread(_status_json, s.database_url)
            assert status["embedding_job"]["host"] == "host-b" and status["embedding_job"]["done"] == 40

            # the child finishes its job and stops cleanly
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            assert await _line(proc) == "done"
            assert await asyncio.wait_for(proc.wait(), 60) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        job = await read_progress(mem.store)
        assert job is not None and not job.running and job.done == job.total == 100
        health = await workers_health(mem.store)
        assert (health.ok, health.state) == (False, "stopped") and "host-b" in health.reason
