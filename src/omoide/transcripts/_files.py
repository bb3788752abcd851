"""The file operations of the transcript store: locks, whole writes, tail repair, rewrites.

Every function here runs in a worker thread (the store calls them through
``asyncio.to_thread``) and works on POSIX file descriptors with ``fcntl.flock`` locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

from omoide.errors import InvalidContent, TranscriptError
from omoide.transcripts._jsonl import TornLineWarning, dump_record, parse_jsonl

logger = logging.getLogger("omoide.transcripts")

_CHUNK = 64 * 1024


@contextlib.contextmanager
def locked(path: Path, flags: int, lock: int) -> Iterator[int]:
    """``path`` opened with ``flags`` and held under the ``fcntl.flock`` ``lock`` until the block ends."""
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, lock)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def repair_tail(fd: int, path: Path) -> None:
    """Make the file end with a newline before an append (caller holds the lock)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start, pos = 0, size
    while pos > 0:
        lo = max(0, pos - _CHUNK)
        nl = os.pread(fd, pos - lo, lo).rfind(b"\n")
        if nl >= 0:
            start = lo + nl + 1
            break
        pos = lo
    tail = os.pread(fd, size - start, start)
    try:
        json.loads(tail.decode("utf-8"))
    except ValueError:
        os.ftruncate(fd, start)
        logger.warning("transcript.torn_line_removed path=%s bytes=%d", path, len(tail))
        warnings.warn(
            f"{path}: removed a torn last line ({len(tail)} bytes, probably a crash mid-write) before appending",
            TornLineWarning,
            stacklevel=2,
        )
    else:
        write_all(fd, b"\n")  # a complete record that only lacked its newline


def replace_atomically(path: Path, data: bytes, *, fsync: bool) -> None:
    """Replace ``path`` by ``data`` through a temporary file and ``os.replace`` (readers see the old or the new)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if fsync:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def erase_author_in_file(path: Path, author_id: str) -> bool:
    """Remove ``author_id``'s records from one session file (see ``TranscriptStore.erase_author``); whether it changed."""
    with locked(path, os.O_RDWR, fcntl.LOCK_EX) as fd:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
        if author_id.encode() not in data:
            return False
        records = parse_jsonl(data, source=str(path))
        if not any(r.get("author_id") == author_id for r in records):
            return False
        users = [r for r in records if r["type"] == "user"]
        kept = [r for r in records if r.get("author_id") != author_id and r["type"] != "compaction"]
        keep_file = any(r.get("author_id") != author_id for r in users)
        if keep_file:
            text = "".join(dump_record(r) for r in kept).encode("utf-8")
            try:
                parse_jsonl(text, source=str(path))
            except (InvalidContent, TranscriptError):
                keep_file = False
        if not keep_file:
            path.unlink()
            return True
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        write_all(fd, text)
        os.fsync(fd)
    return True


__all__ = ["erase_author_in_file", "locked", "repair_tail", "replace_atomically", "write_all"]
