"""The running embedding job's progress, readable by other processes (``omoide status``, ``GET /v1/status``).

A worker (``omoide worker``, ``mem.workers()``) or ``omoide embed`` records what it is doing
— chunks done out of how many, since when, the rate and the time left — in a small JSON
file, rewritten at most once a second (atomically: a reader never sees half a file):

* SQLite: beside the database file, ``<database>.progress.json``;
* PostgreSQL: ``$XDG_STATE_HOME/omoide/progress/<hash of the URL>.json`` (default
  ``~/.local/state``), the URL taken without its password;
* an in-memory database: in this process only.

Why a file and not a row of the store: it needs no schema change and costs the database
nothing while embedding runs. The limit is that it is per host: a status read on another
host than the worker's sees only the store's counts (chunks waiting, sources claimed).
A record is ignored once it is older than :data:`STALE_SECONDS`, or when its process, on
this host, is gone (a worker killed with SIGKILL never clears it).

Writing never fails a job: an unwritable place is logged once at DEBUG and skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import structlog

log = structlog.get_logger(__name__)

STALE_SECONDS = 120.0
"""A record not rewritten for this long is ignored (its writer is stuck or gone)."""

WRITE_EVERY_SECONDS = 1.0
"""Shortest pause between two rewrites of the file while a job runs."""

_IN_PROCESS: dict[str, JobProgress] = {}


@dataclass(frozen=True, slots=True)
class JobProgress:
    """One running job's progress.

    Attributes:
        job: ``embedder`` (the worker's embedding job) or ``embed`` (``omoide embed``).
        model: the embedding model id.
        done: chunks embedded since the job started.
        total: chunks that were waiting when it started, plus any that arrived since (``None``: not counted yet).
        started_at / updated_at: when the job started and when this record was written (UTC, ISO 8601).
        rate: chunks per second since the job started (``None`` before the first chunk).
        eta_seconds: seconds left at that rate (``None`` when unknown).
        pid / host: the writing process.
        running: ``False`` once the job finished (the record then says what it did).
    """

    job: str
    model: str
    done: int
    total: int | None
    started_at: str
    updated_at: str
    rate: float | None
    eta_seconds: float | None
    pid: int
    host: str
    running: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for people: ``embedding with M: 340/1,360 chunks, 2.1 chunks/s, about 8 min left``."""
        of = f"/{self.total:,}" if self.total is not None else ""
        text = f"{'embedding' if self.running else 'embedded'} with {self.model}: {self.done:,}{of} chunks"
        if self.rate is not None:
            text += f", {self.rate:.1f} chunks/s"
        if self.running and self.eta_seconds is not None:
            text += f", about {_duration(self.eta_seconds)} left"
        return text + f" ({self.job}, pid {self.pid} on {self.host})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def progress_path(database_url: str) -> Path | None:
    """Where the progress of jobs on ``database_url`` is recorded (``None``: in this process only)."""
    url = database_url.strip()
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1] if ":///" in url else ""
        path = path.split("?", 1)[0]
        if not path or path == ":memory:" or path.startswith("file::memory:"):
            return None
        return Path(path).expanduser().with_name(Path(path).name + ".progress.json")
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    if parts.port:
        netloc += f":{parts.port}"
    key = hashlib.sha256(urlunsplit((parts.scheme, netloc, parts.path, parts.query, "")).encode()).hexdigest()[:16]
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "omoide" / "progress" / f"{key}.json"


def _now() -> datetime:
    return datetime.now(UTC)


class ProgressRecorder:
    """Records one job's progress for ``database_url`` (see the module docstring).

    Args:
        database_url: the store's URL (names the file).
        job: the job's name (``embedder``, ``embed``).
        model: the embedding model id.
        started: when the job started (``time.monotonic()``; default: now).

    Example:
        >>> rec = ProgressRecorder("sqlite:///./omoide.db", job="embed", model="hashing:v1@256")  # doctest: +SKIP
        >>> rec.set_total(1200); rec.advance(64); rec.finish()                                    # doctest: +SKIP
    """

    def __init__(self, database_url: str, *, job: str, model: str, started: float | None = None) -> None:
        self.key = database_url
        self.path = progress_path(database_url)
        self.job = job
        self.model = model
        self.done = 0
        self.total: int | None = None
        now = time.monotonic()
        self._started = now if started is None else started  # the rate counts from the job's start
        self._started_at = (_now() - timedelta(seconds=now - self._started)).isoformat()
        self._written = 0.0
        self._warned = False

    def set_total(self, total: int | None) -> None:
        """How many chunks the job has to do (done so far included)."""
        self.total = None if total is None else max(total, self.done)
        self._write(force=True)

    def advance(self, chunks: int) -> None:
        """``chunks`` more are done (rewrites the record at once the first time, then at most once a second)."""
        first = self.done == 0
        self.done += chunks
        if self.total is not None and self.done > self.total:
            self.total = self.done
        self._write(force=first)

    def finish(self) -> None:
        """The job ended: the record says so (``running`` false) until the next job starts."""
        self._write(force=True, running=False)

    def snapshot(self, *, running: bool = True) -> JobProgress:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = self.done / elapsed if self.done else None
        eta = None
        if rate and self.total is not None:
            eta = max(0.0, (self.total - self.done) / rate)
        return JobProgress(
            job=self.job,
            model=self.model,
            done=self.done,
            total=self.total,
            started_at=self._started_at,
            updated_at=_now().isoformat(),
            rate=None if rate is None else round(rate, 3),
            eta_seconds=None if eta is None else round(eta, 1),
            pid=os.getpid(),
            host=socket.gethostname(),
            running=running,
        )

    def _write(self, *, force: bool = False, running: bool = True) -> None:
        now = time.monotonic()
        if not force and now - self._written < WRITE_EVERY_SECONDS:
            return
        self._written = now
        record = self.snapshot(running=running)
        _IN_PROCESS[self.key] = record
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".progress-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record.as_dict(), out)
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600: a status read by another user (the HTTP server) must see it
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            if not self._warned:
                self._warned = True
                log.debug("progress_not_recorded", path=str(self.path), error=str(exc))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def read_progress(database_url: str, *, max_age: float = STALE_SECONDS) -> JobProgress | None:
    """The latest job progress recorded for ``database_url``, or ``None`` (none, stale, or its process is gone).

    A finished job's record (``running`` false) is returned too while it is fresh, so a status
    read just after a run still says what it did.
    """
    candidates: list[JobProgress] = []
    if database_url in _IN_PROCESS:
        candidates.append(_IN_PROCESS[database_url])
    path = progress_path(database_url)
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            candidates.append(JobProgress(**{k: data[k] for k in JobProgress.__dataclass_fields__ if k in data}))
        except (OSError, ValueError, TypeError):
            pass
    fresh: list[JobProgress] = []
    for record in candidates:
        try:
            age = (_now() - datetime.fromisoformat(record.updated_at)).total_seconds()
        except ValueError:
            continue
        if age > max_age:
            continue
        if record.running and record.host == socket.gethostname() and not _alive(record.pid):
            record = replace(record, running=False)
        fresh.append(record)
    if not fresh:
        return None
    return max(fresh, key=lambda r: (r.running, r.updated_at))


__all__ = ["STALE_SECONDS", "JobProgress", "ProgressRecorder", "progress_path", "read_progress"]
