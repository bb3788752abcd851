"""JSONL coding of transcript records: one compact JSON object per line.

Reading is strict, except for the one failure an append-only file can suffer from a
crash: a torn last line (no newline, not valid JSON), which is skipped with a warning.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from omoide.errors import CorruptTranscript, InvalidContent, TranscriptError
from omoide.transcripts._records import Record, validate_record
from omoide.transcripts._replay import check_sequence

logger = logging.getLogger("omoide.transcripts")


class TornLineWarning(UserWarning):
    """The last line of a transcript was cut short by a crash and was skipped."""


def dump_record(record: Record | Mapping[str, Any]) -> str:
    """Encode one record as a JSONL line (compact UTF-8 JSON plus ``"\\n"``).

    Raises:
        InvalidContent: the record holds a value JSON cannot encode (NaN, a ``datetime``, …).
    """
    try:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise InvalidContent(f"record cannot be written as JSON: {exc}") from exc


def nesting_depth(value: Any) -> int:
    """Levels of objects and arrays in a decoded JSON value (0 for a scalar), without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def parse_jsonl(data: str | bytes, *, source: str = "<transcript>", max_depth: int | None = None) -> list[Record]:
    """Decode and validate the records of a JSONL transcript.

    A torn *last* line (no trailing newline and not valid JSON or UTF-8: a crash
    mid-write) is skipped with a :class:`TornLineWarning`. Sequence rules (every
    tool_result answers a tool_use of the assistant turn just before it, compaction
    indexes point back) are checked too, so a transcript that parses also replays.

    Args:
        data: the whole file, as text or as UTF-8 bytes.
        max_depth: a line nesting objects and arrays deeper than this is corrupt (the
            importers pass 64); a line too deep for Python's decoder always is.
        source: the file name used in error messages.

    Raises:
        CorruptTranscript: a malformed line; the message names ``source``, the 1-based
            line number and the problem (``details``: ``path``, ``line``, ``problem``).
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")  # lone surrogates then fail as invalid UTF-8
    lines = data.split(b"\n")
    records: list[Record] = []
    complete, tail = lines[:-1], lines[-1]  # data ending in a newline leaves an empty tail
    for number, raw in enumerate(complete, start=1):
        records.append(_parse_line(raw, source, number, max_depth))
    if tail:
        if _is_json(tail):  # a complete record that only lacks its newline
            records.append(_parse_line(tail, source, len(complete) + 1, max_depth))
        else:
            _warn_torn(source, len(complete) + 1, len(tail))
    try:
        check_sequence(records)
    except InvalidContent as exc:
        raise _corrupt(source, int(exc.details.get("index", 0)) + 1, exc.details.get("problem", exc.message)) from exc
    return records


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw.decode("utf-8"))
    except RecursionError:
        return True  # complete, but too deep: _parse_line reports it
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return False
    return True


def _parse_line(raw: bytes, source: str, number: int, max_depth: int | None = None) -> Record:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _corrupt(source, number, f"invalid UTF-8 at byte {exc.start}") from exc
    if not line.strip():
        raise _corrupt(source, number, "empty line")
    try:
        decoded = json.loads(line)
    except ValueError as exc:
        raise _corrupt(source, number, f"invalid JSON ({exc})") from exc
    except RecursionError as exc:
        limit = f"deeper than {max_depth} levels" if max_depth is not None else "too deeply to decode"
        raise _corrupt(source, number, f"nested {limit} of objects and arrays") from exc
    if max_depth is not None and nesting_depth(decoded) > max_depth:
        raise _corrupt(source, number, f"nested deeper than {max_depth} levels of objects and arrays")
    try:
        return validate_record(decoded)
    except InvalidContent as exc:
        raise _corrupt(source, number, exc.message) from exc


def _corrupt(source: str, line: int, problem: str) -> CorruptTranscript:
    return CorruptTranscript(
        f"corrupt transcript {source}, line {line}: {problem}. "
        "Fix or remove that line (the file is plain JSONL, one record per line).",
        path=source,
        line=line,
        problem=problem,
    )


def _warn_torn(source: str, line: int, size: int) -> None:
    logger.warning("transcript.torn_line path=%s line=%d bytes=%d", source, line, size)
    warnings.warn(
        f"{source}, line {line}: skipped a torn last line ({size} bytes without a newline, not valid JSON; "
        "probably a crash mid-write)",
        TornLineWarning,
        stacklevel=2,
    )


def dump_records(records: Iterable[Record | Mapping[str, Any]]) -> str:
    """Encode records as a JSONL document (what ``omoide sessions export`` prints)."""
    return "".join(dump_record(r) for r in records)


def read_records(path: Path | str, *, max_depth: int | None = None) -> list[Record]:
    """Read and validate a JSONL transcript anywhere on disk (blocking; for scripts and the CLI).

    Async code reads store sessions with :meth:`TranscriptStore.records` instead, or
    wraps this in ``asyncio.to_thread``.

    Raises:
        TranscriptError: the file cannot be read.
        CorruptTranscript: a malformed line (see :func:`parse_jsonl`).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or exc}", path=str(path)) from exc
    return parse_jsonl(data, source=str(path), max_depth=max_depth)
