"""What the workers tell other processes: that they are alive, and their recent errors.

The HTTP server's ``/readyz`` asks whether the workers are alive, and the inspector's overview
shows their recent errors, while the workers may run in another process (``omoide worker``)
on the same host. Like the embedding progress (:mod:`.progress`), this is a small JSON file
beside the database (SQLite: ``<database>.workers.json``; PostgreSQL:
``$XDG_STATE_HOME/omoide/workers/<hash of the URL>.json``), rewritten atomically under a
file lock, so several worker processes can share it:

* ``runners``: one record per worker process (``host:pid``): its jobs, when it started, when it
  last reported (every :data:`HEARTBEAT_SECONDS` while it runs) and whether it stopped cleanly;
* ``errors``: the newest :data:`KEEP_ERRORS` failed runs, newest first: when, which job, the
  error's code and message (cut to :data:`MESSAGE_CHARS`), the process.

A database in memory keeps both in this process only. Writing never fails a job: an unwritable
place is logged once at DEBUG and skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from omoide.workers.progress import progress_path

log = structlog.get_logger(__name__)

HEARTBEAT_SECONDS = 10.0
"""How often a running worker process rewrites its record."""

ALIVE_SECONDS = 60.0
"""A running record not rewritten for this long means the worker is stuck or gone."""

KEEP_ERRORS = 50
MESSAGE_CHARS = 500

_IN_PROCESS: dict[str, dict[str, Any]] = {}


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
    """One worker process as it last reported."""

    host: str
    pid: int
    jobs: tuple[str, ...]
    started_at: str
    updated_at: str
    running: bool

    def age_seconds(self, now: datetime | None = None) -> float:
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


def state_path(database_url: str) -> Path | None:
    """Where the workers of ``database_url`` report (``None``: a database in memory, this process only)."""
    progress = progress_path(database_url)
    if progress is None:
        return None
    if progress.name.endswith(".progress.json"):  # SQLite: beside the database
        return progress.with_name(progress.name.removesuffix(".progress.json") + ".workers.json")
    return progress.parent.parent / "workers" / progress.name


def _empty() -> dict[str, Any]:
    return {"runners": {}, "errors": []}


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _empty()
    if not isinstance(data, dict):
        return _empty()
    data.setdefault("runners", {})
    data.setdefault("errors", [])
    return data


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_file(path: Path, data: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".workers-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False)
        os.chmod(tmp, 0o644)  # the HTTP server may run as another user
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class WorkerReporter:
    """Reports one worker process's liveness and errors for ``database_url`` (see the module docstring).

    Example:
        >>> reporter = WorkerReporter("sqlite:///./omoide.db", jobs=["embedder"])  # doctest: +SKIP
        >>> reporter.heartbeat(); reporter.error("embedder", "PROVIDER_UNAVAILABLE", "503 from the API")  # doctest: +SKIP
    """

    def __init__(self, database_url: str, *, jobs: Sequence[str]) -> None:
        self.key = database_url
        self.path = state_path(database_url)
        self.jobs = tuple(jobs)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_at = _now().isoformat()
        self._warned = False

    @property
    def _me(self) -> str:
        return f"{self.host}:{self.pid}"

    def _update(self, change: Any) -> None:
        if self.path is None:
            change(_IN_PROCESS.setdefault(self.key, _empty()))
            return
        try:
            with _locked(self.path):
                data = _read_file(self.path)
                change(data)
                _write_file(self.path, data)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.debug("worker_state_not_recorded", path=str(self.path), error=str(exc))

    def heartbeat(self, *, running: bool = True) -> None:
        """This process is alive (``running`` false: it stopped cleanly)."""
        record = RunnerRecord(self.host, self.pid, self.jobs, self.started_at, _now().isoformat(), running)

        def change(data: dict[str, Any]) -> None:
            data["runners"][self._me] = record.as_dict()
            # forget processes that stopped or went silent long ago
            for key, value in list(data["runners"].items()):
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    if key != self._me and _record(value).age_seconds() > 24 * 3600:
                        del data["runners"][key]

        self._update(change)

    def error(self, job: str, code: str, message: str) -> None:
        """A run of ``job`` failed with omoide's ``code`` and ``message``."""
        entry = WorkerError(_now().isoformat(), job, code, message[:MESSAGE_CHARS], self.host, self.pid)

        def change(data: dict[str, Any]) -> None:
            data["errors"] = [entry.as_dict(), *data["errors"]][:KEEP_ERRORS]

        self._update(change)


def _record(value: dict[str, Any]) -> RunnerRecord:
    return RunnerRecord(
        host=str(value["host"]),
        pid=int(value["pid"]),
        jobs=tuple(value.get("jobs", ())),
        started_at=str(value["started_at"]),
        updated_at=str(value["updated_at"]),
        running=bool(value["running"]),
    )


def _state(database_url: str) -> dict[str, Any]:
    path = state_path(database_url)
    if path is None:
        return _IN_PROCESS.get(database_url, _empty())
    return _read_file(path)


def worker_runners(database_url: str) -> list[RunnerRecord]:
    """Every worker process that reported for ``database_url`` (alive or not), latest report first."""
    out: list[RunnerRecord] = []
    for value in _state(database_url)["runners"].values():
        with contextlib.suppress(KeyError, TypeError, ValueError):
            out.append(_record(value))
    return sorted(out, key=lambda r: r.updated_at, reverse=True)


def recent_worker_errors(database_url: str, *, limit: int = 20) -> list[WorkerError]:
    """The newest failed worker runs for ``database_url``, newest first (for the inspector's overview)."""
    out: list[WorkerError] = []
    for value in _state(database_url)["errors"][: max(limit, 0)]:
        with contextlib.suppress(KeyError, TypeError, ValueError):
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
    """

    ok: bool
    state: str
    reason: str = ""
    alive: int = 0


def workers_health(database_url: str) -> WorkersHealth:
    """Whether the workers of ``database_url`` are alive (see :class:`WorkersHealth`)."""
    runners = worker_runners(database_url)
    if not runners:
        return WorkersHealth(True, "none", "no worker has reported for this database")
    now = _now()
    alive = [r for r in runners if r.alive(now)]
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
        f"the worker pid {latest.pid} on {latest.host} last reported {round(latest.age_seconds(now))} s ago "
        f"(over {ALIVE_SECONDS:.0f} s): it is stuck or gone",
    )


__all__ = [
    "ALIVE_SECONDS",
    "HEARTBEAT_SECONDS",
    "RunnerRecord",
    "WorkerError",
    "WorkerReporter",
    "WorkersHealth",
    "recent_worker_errors",
    "state_path",
    "worker_runners",
    "workers_health",
]
