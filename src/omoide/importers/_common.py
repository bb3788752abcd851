"""Helpers shared by the importers: problem reporting, time parsing, file ordering."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from omoide.importers._errors import MalformedExport
from omoide.importers._model import ImportProblem, ImportReport

logger = logging.getLogger("omoide.importers")


class RecordError(ValueError):
    """A record is malformed; the message says how. Caught and reported by the readers."""


class ImportRun:
    """One read: the report it fills, and whether a problem is fatal (``strict``)."""

    __slots__ = ("include_system", "report", "strict")

    def __init__(self, report: ImportReport | None, *, strict: bool, include_system: bool) -> None:
        self.report = report if report is not None else ImportReport()
        self.strict = strict
        self.include_system = include_system

    def problem(self, path: str, position: str, problem: str, *, message_id: str | None = None) -> None:
        """Record a skipped record or file; in strict mode raise :class:`MalformedExport` instead.

        Raises:
            MalformedExport: in strict mode.
        """
        item = ImportProblem(path, position, problem, message_id)
        if self.strict:
            raise MalformedExport(f"malformed export: {item}", path=path, position=position, problem=problem)
        self.report.problems.append(item)
        # INFO, not WARNING: the problem is in the report the caller gets (the CLI prints it once)
        logger.info("import_record_skipped", extra={"path": path, "position": position, "problem": problem})


def parse_time(value: object, field: str) -> datetime:
    """An ISO-8601 timestamp as an aware UTC datetime (a value without offset is taken as UTC).

    Raises:
        RecordError: not a string, not ISO-8601, or a time outside the years 1–9999 once in UTC
            (``9999-12-31T23:00:00-05:00``).
    """
    if not isinstance(value, str):
        raise RecordError(f"{field} must be an ISO-8601 string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise RecordError(f"{field} is not an ISO-8601 timestamp: {value!r:.60}") from exc
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise RecordError(f"{field} is outside the years 1–9999 in UTC: {value!r:.60}") from None


def optional_time(value: object, field: str) -> datetime | None:
    """Like :func:`parse_time`, but ``None`` and ``""`` give ``None``."""
    if value is None or value == "":
        return None
    return parse_time(value, field)


def require_str(record: dict[str, object], key: str, where: str = "") -> str:
    """A required, non-empty string (numbers are accepted and converted: old tools wrote ids as numbers).

    Raises:
        RecordError: missing, empty or of another type.
    """
    value = record.get(key)
    if isinstance(value, bool) or value is None:
        raise RecordError(f"missing '{where}{key}'" if value is None else f"'{where}{key}' must be a string")
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or not value:
        raise RecordError(f"'{where}{key}' must be a non-empty string")
    return value


def optional_str(value: object) -> str | None:
    """``value`` if it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


_DIGITS = re.compile(r"(\d+)")


def natural_key(path: Path | str) -> tuple[object, ...]:
    """Sort key that orders ``[part 2]`` before ``[part 10]``."""
    parts = _DIGITS.split(str(path))
    return tuple(int(p) if p.isdigit() else p for p in parts)


_PART = re.compile(r"^(.*) \[part (\d+)\]$")


def export_file_key(path: Path) -> tuple[object, ...]:
    """Natural order, with DiscordChatExporter partitions in sequence: ``X``, ``X [part 2]``, ``X [part 10]``."""
    match = _PART.match(path.stem)
    stem, part = (match.group(1), int(match.group(2))) if match else (path.stem, 1)
    return (natural_key(path.parent), natural_key(stem), part, path.suffix)


def expand_files(
    paths: Path | str | Iterable[Path | str], suffix: str, *, skip_dirs_ending: str | None = None
) -> list[Path]:
    """Files to read: each path itself, or the ``*suffix`` files inside a directory (recursively).

    Files found in a directory are ordered by :func:`export_file_key`; repeats are dropped.
    ``skip_dirs_ending`` leaves out files below sub-directories whose name ends with it.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = [
                p
                for p in path.rglob(f"*{suffix}")
                if p.is_file()
                and not (
                    skip_dirs_ending and any(part.endswith(skip_dirs_ending) for part in p.relative_to(path).parts[:-1])
                )
            ]
            out.extend(sorted(found, key=export_file_key))
        else:
            out.append(path)
    seen: set[Path] = set()
    unique = []
    for path in out:
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique


def join_text(content: str, extras: Iterable[str]) -> str:
    """The body, then one line per extra (attachments, embeds, …), without blank lines."""
    lines = [content.strip()] if content.strip() else []
    lines.extend(e for e in extras if e)
    return "\n".join(lines)


__all__ = [
    "ImportRun",
    "RecordError",
    "expand_files",
    "export_file_key",
    "join_text",
    "logger",
    "natural_key",
    "optional_str",
    "optional_time",
    "parse_time",
    "require_str",
]
