"""``omoide worker`` as a process: open the engine, run the jobs, stop cleanly on a signal.

:func:`serve` is the whole body of the command. SIGTERM or SIGINT asks the jobs to stop
(in-flight work finishes within ``worker_shutdown_timeout_seconds``); a second signal
cancels at once. It returns normally in both cases, so the process exits with status 0.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from omoide.errors import ConfigError
from omoide.settings import Settings, load_settings
from omoide.workers.jobs import JOB_NAMES, worker_runner
from omoide.workers.runner import WorkerRunner

log = structlog.get_logger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def check_jobs(names: Sequence[str]) -> list[str]:
    """The job names, checked.

    Raises:
        ConfigError: an unknown job name, or none at all.
    """
    chosen = [n.strip().lower() for n in names if n.strip()]
    unknown = [n for n in chosen if n not in JOB_NAMES]
    if unknown:
        raise ConfigError(f"unknown worker job(s) {', '.join(unknown)}; choose from {', '.join(JOB_NAMES)}")
    if not chosen:
        raise ConfigError(f"no worker job chosen; choose from {', '.join(JOB_NAMES)}")
    return list(dict.fromkeys(chosen))


async def serve(settings: Settings, *, jobs: Sequence[str] = JOB_NAMES) -> WorkerRunner:
    """Run the chosen jobs until SIGTERM / SIGINT; return the stopped runner.

    Args:
        settings: every setting (database, embedder, intervals, shutdown timeout).
        jobs: which of ``archiver``, ``embedder``, ``expiry``, ``summariser`` to run.

    Raises:
        ConfigError: bad settings or job names.
        StoreUnavailable: the database cannot be opened.
    """
    from omoide.engine import Memory  # not at module level: the engine imports omoide.workers

    chosen = check_jobs(jobs)
    loop = asyncio.get_running_loop()
    early_stop = asyncio.Event()
    current: list[WorkerRunner] = []

    def on_signal(name: str) -> None:
        log.info("worker_signal", signal=name)
        if current:
            current[0].stop()
        else:
            early_stop.set()

    installed: list[signal.Signals] = []
    try:
        for sig in SIGNALS:
            try:
                loop.add_signal_handler(sig, on_signal, sig.name)
                installed.append(sig)
            except (NotImplementedError, RuntimeError):  # not the main thread / no signals here
                pass
        async with Memory.open(settings) as mem:
            runner = worker_runner(
                mem,
                archive="archiver" in chosen,
                embed="embedder" in chosen,
                expire="expiry" in chosen,
                summarise="summariser" in chosen,
            )
            current.append(runner)
            if early_stop.is_set():
                runner.stop()
            await runner.run()
            return runner
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def configure_worker_logging(settings: Settings) -> None:
    """Configure logging for a worker process: INFO unless ``OMOIDE_LOG_LEVEL`` (or the TOML file) says otherwise."""
    from omoide.logging import configure_logging

    if "log_level" not in settings.model_fields_set:
        settings = settings.model_copy(update={"log_level": "INFO"})
    configure_logging(settings)


def main(overrides: Mapping[str, Any] | None = None, *, jobs: Sequence[str] = JOB_NAMES) -> None:
    """Process entry point (``python -m omoide.workers``; ``omoide worker`` does the same).

    Args:
        overrides: setting values that win over the environment and the TOML file.
        jobs: which jobs to run.

    Raises:
        ConfigError: bad settings or job names.
        StoreUnavailable: the database cannot be opened.
    """
    settings = load_settings(**dict(overrides or {}))
    configure_worker_logging(settings)
    asyncio.run(serve(settings, jobs=jobs))


__all__ = ["SIGNALS", "check_jobs", "configure_worker_logging", "main", "serve"]
