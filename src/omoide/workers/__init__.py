"""Background workers: archiver, embedder and session expiry on intervals, with graceful shutdown.

Run them as a process with ``omoide worker`` (:func:`serve`), or inside a host's event
loop with ``async with mem.workers(): ...`` (:meth:`omoide.Memory.workers`).
"""

from omoide.workers.jobs import JOB_NAMES, ExpireReport, archive_job, build_jobs, embed_job, expire_job
from omoide.workers.runner import Job, RunReport, WorkerRunner, backoff_delay
from omoide.workers.service import check_jobs, serve

__all__ = [
    "JOB_NAMES",
    "ExpireReport",
    "Job",
    "RunReport",
    "WorkerRunner",
    "archive_job",
    "backoff_delay",
    "build_jobs",
    "check_jobs",
    "embed_job",
    "expire_job",
    "serve",
]
