"""What the workers tell every other process and host: that they are alive, and their recent errors.

The HTTP server's ``/readyz`` asks whether the workers are alive, and the inspector's overview
shows their recent errors, while the workers run in another process (``omoide worker``), often on
another host. Both live in the store's ``worker_state`` table (:mod:`omoide.stores.worker_state`),
so whoever reaches the store sees them:

* a ``runner`` row per worker process (``host:pid``): its jobs, when it started, whether it stopped
  cleanly, rewritten every :data:`HEARTBEAT_SECONDS` while it runs. Its age is measured by the
  database's clock, so a reader on a host whose clock differs still sees a fresh heartbeat as fresh;
* an ``error`` row per failed run (the newest :data:`KEEP_ERRORS` are kept): when, which job,
  omoide's error code and message (cut to :data:`MESSAGE_CHARS`), the process.

A heartbeat is one upsert (PostgreSQL: on a pooled connection; Citus: on the coordinator only;
SQLite: one short write transaction). Runner rows not rewritten for :data:`FORGET_SECONDS` are
deleted by the next reporter that starts (and hourly after). Reporting never fails a job: a failed
write is logged once at DEBUG and skipped; a failed read says nothing is known.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog

from omoide.errors import OmoideError
from omoide.stores.worker_state import WorkerStateRow, WorkerStateStore, worker_state_of

if TYPE_CHECKING:
    from omoide.stores.base import Store

log = structlog.get_logger(__name__)

HEARTBEAT_SECONDS = 10.0
"""How often a running worker process rewrites its record."""

ALIVE_SECONDS = 60.0
"""A running record not rewritten for this long means the worker is stuck or gone."""

FORGET_SECONDS = 24 * 3600.0
"""Runner records not rewritten for this long are deleted (stopped or dead long ago)."""

PRUNE_EVERY_SECONDS = 3600.0
"""How often a running reporter deletes the forgotten runner records."""

KEEP_ERRORS = 50
MESSAGE_CHARS = 500
READ_RUNNERS = 200


@dataclass(frozen=True, slots=True)
class WorkerError:
    """One failed worker run: when (UTC, ISO 8601), which job, omoide's error code and message, where."""

    at: str
    job: str
    code: str
    message: str
    host: str
    pid: int

    @property
    def worker(self) -> str:
        """The job's name (what the inspector calls the worker)."""
        return self.job

    @property
    def error(self) -> str:
        """The error's message."""
        return self.message

    @property
    def workspace_id(self) -> None:
        """A worker run spans workspaces: its errors belong to none (the admin sees them)."""
        return None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RunnerRecord:
    """One worker process as it last reported.

    Attributes:
        host / pid: the process.
        jobs: its jobs' names.
        started_at / updated_at: when it started and last reported (UTC, ISO 8601; ``updated_at`` by the
            database's clock).
        running: ``False`` once it stopped cleanly.
        age: seconds since it last reported, by the database's clock (``None``: computed from ``updated_at``).
    """

    host: str
    pid: int
    jobs: tuple[str, ...]
    started_at: str
    updated_at: str
    running: bool
    age: float | None = None

    def age_seconds(self, now: datetime | None = None) -> float:
        """Seconds since the last report (the database's measure unless ``now`` is given)."""
        if now is None and self.age is not None:
            return self.age
        return ((now or _now()) - datetime.fromisoformat(self.updated_at)).total_seconds()

    def alive(self, now: datetime | None = None) -> bool:
        """Running, reported within :data:`ALIVE_SECONDS`, and (on this host) its process exists."""
        if not self.running or self.age_seconds(now) > ALIVE_SECONDS:
            return False
        return self.host != socket.gethostname() or _pid_alive(self.pid)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "jobs": list(self.jobs)}


def _now() -> datetime:
    return datetime.now(UTC)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class WorkerReporter:
    """Reports one worker process's liveness and errors to ``store`` (see the module docstring).

    Args:
        store: the store the worker works on.
        jobs: its jobs' names.

    Example:
        >>> reporter = WorkerReporter(mem.store, jobs=["embedder"])  # doctest: +SKIP
        >>> await reporter.heartbeat()                                # doctest: +SKIP
        >>> await reporter.error("embedder", "PROVIDER_UNAVAILABLE", "503 from the API")  # doctest: +SKIP
    """

    def __init__(self, store: Store, *, jobs: Sequence[str]) -> None:
        self.state: WorkerStateStore = worker_state_of(store)
        self.jobs = tuple(jobs)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_at = _now().isoformat()
        self._pruned_at = -float("inf")
        self._warned = False

    @property
    def key(self) -> str:
        """This process's runner row: ``host:pid``."""
        return f"{self.host}:{self.pid}"

    async def heartbeat(self, *, running: bool = True) -> bool:
        """This process is alive (``running`` false: it stopped cleanly). Returns whether it was recorded."""
        record = RunnerRecord(self.host, self.pid, self.jobs, self.started_at, _now().isoformat(), running)
        payload = record.as_dict()
        del payload["age"]
        try:
            await self.state.put("runner", self.key, payload)
            if time.monotonic() - self._pruned_at >= PRUNE_EVERY_SECONDS:
                self._pruned_at = time.monotonic()
                await self.state.prune("runner", older_than=FORGET_SECONDS)
        except Exception as exc:  # best effort: a heartbeat never fails the worker
            self._warn(exc)
            return False
        return True

    async def error(self, job: str, code: str, message: str) -> bool:
        """A run of ``job`` failed with omoide's ``code`` and ``message``. Returns whether it was recorded."""
        entry = WorkerError(_now().isoformat(), job, code, message[:MESSAGE_CHARS], self.host, self.pid)
        try:
            await self.state.put("error", f"{entry.at} {self.key} {job}", entry.as_dict())
            await self.state.prune("error", keep=KEEP_ERRORS)
        except Exception as exc:  # best effort: the run's own log line has the error anyway
            self._warn(exc)
            return False
        return True

    def _warn(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.debug("worker_state_not_recorded", error=f"{type(exc).__name__}: {exc}")


async def _rows(store: Store, kind: str, limit: int) -> list[WorkerStateRow]:
    try:
        return await worker_state_of(store).rows(kind, limit=limit)
    except (OmoideError, OSError) as exc:
        log.debug("worker_state_not_read", kind=kind, error=str(exc))
        return []


def _runner(row: WorkerStateRow) -> RunnerRecord:
    value = row.payload
    return RunnerRecord(
        host=str(value["host"]),
        pid=int(value["pid"]),
        jobs=tuple(str(j) for j in value.get("jobs", ())),
        started_at=str(value["started_at"]),
        updated_at=row.updated_at.isoformat(),
        running=bool(value["running"]),
        age=row.age_seconds,
    )


async def worker_runners(store: Store) -> list[RunnerRecord]:
    """Every worker process that reported to ``store`` (alive or not), latest report first."""
    out: list[RunnerRecord] = []
    for row in await _rows(store, "runner", READ_RUNNERS):
        try:
            out.append(_runner(row))
        except (KeyError, TypeError, ValueError):
            continue
    return out


async def recent_worker_errors(store: Store, *, limit: int = 20) -> list[WorkerError]:
    """The newest failed worker runs recorded in ``store``, newest first (for the inspector's overview)."""
    if limit < 1:
        return []
    out: list[WorkerError] = []
    for row in await _rows(store, "error", limit):
        value = row.payload
        try:
            out.append(
                WorkerError(
                    str(value["at"]),
                    str(value["job"]),
                    str(value["code"]),
                    str(value["message"]),
                    str(value["host"]),
                    int(value["pid"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return out


@dataclass(frozen=True, slots=True)
class WorkersHealth:
    """``/readyz``'s answer about the workers.

    Attributes:
        ok: no worker process is known to be dead or stuck.
        state: ``alive`` (at least one reports), ``none`` (none ever reported: the workers are
            not part of this deployment, or have not started), ``stopped`` (every one stopped
            cleanly) or ``dead`` (the latest stopped reporting without stopping).
        reason: for people, when not ``alive``.
        alive: how many worker processes report.
    """

    ok: bool
    state: str
    reason: str = ""
    alive: int = 0


async def workers_health(store: Store) -> WorkersHealth:
    """Whether the workers of ``store`` are alive (see :class:`WorkersHealth`)."""
    runners = await worker_runners(store)
    if not runners:
        return WorkersHealth(True, "none", "no worker has reported for this database")
    alive = [r for r in runners if r.alive()]
    if alive:
        return WorkersHealth(True, "alive", alive=len(alive))
    latest = runners[0]
    if not latest.running:
        return WorkersHealth(
            False, "stopped", f"the workers stopped at {latest.updated_at} (pid {latest.pid} on {latest.host})"
        )
    return WorkersHealth(
        False,
        "dead",
        f"the worker pid {latest.pid} on {latest.host} last reported {round(latest.age_seconds())} s ago "
        f"(over {ALIVE_SECONDS:.0f} s): it is stuck or gone",
    )


__all__ = [
    "ALIVE_SECONDS",
    "FORGET_SECONDS",
    "HEARTBEAT_SECONDS",
    "KEEP_ERRORS",
    "MESSAGE_CHARS",
    "RunnerRecord",
    "WorkerError",
    "WorkerReporter",
    "WorkersHealth",
    "recent_worker_errors",
    "worker_runners",
    "workers_health",
]
