"""One entry point for every format: detect it, read it, sort it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from omoide.importers._common import natural_key
from omoide.importers._discord import iter_discord
from omoide.importers._errors import UnrecognizedExport
from omoide.importers._model import ImportedChannel, ImportedMessage, ImportProblem, ImportReport
from omoide.importers._slack import ZipLimits, iter_slack
from omoide.importers._transcripts import iter_transcripts

ExportFormat: TypeAlias = Literal["discord", "slack", "omoide"]
_SLACK_MARKERS = ("channels.json", "users.json", "org_users.json")


def detect_format(path: Path | str) -> ExportFormat:
    """Which importer reads ``path``.

    * a ``.zip``, or a directory with ``channels.json`` / ``users.json`` (at its top or one
      folder down) → ``slack``;
    * a ``.jsonl`` file, or a directory holding ``.jsonl`` files and no ``.json`` → ``omoide``;
    * a ``.json`` file, or a directory of ``.json`` files → ``discord`` (DiscordChatExporter).

    Raises:
        UnrecognizedExport: the path does not exist or matches none of these.
    """
    path = Path(path)
    if not path.exists():
        raise UnrecognizedExport(f"no such file or directory: {path}", path=str(path))
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".zip":
            return "slack"
        if suffix == ".jsonl":
            return "omoide"
        if suffix == ".json":
            return "discord"
        raise UnrecognizedExport(
            f"cannot tell the format of {path}: expected a DiscordChatExporter .json file, a Slack export "
            ".zip or an omoide .jsonl transcript",
            path=str(path),
        )
    for marker in _SLACK_MARKERS:
        if (path / marker).is_file() or any(path.glob(f"*/{marker}")):
            return "slack"
    has_json = any(p.is_file() for p in path.rglob("*.json"))
    if any(p.is_file() for p in path.rglob("*.jsonl")) and not has_json:
        return "omoide"
    if has_json:
        return "discord"
    raise UnrecognizedExport(f"no export found in {path}: it holds no .json or .jsonl files", path=str(path))


def iter_export(
    paths: Path | str | Iterable[Path | str],
    *,
    report: ImportReport | None = None,
    format: ExportFormat | None = None,
    strict: bool = False,
    include_system: bool = False,
    workspace_id: str | None = None,
    limits: ZipLimits | None = None,
) -> Iterator[ImportedMessage]:
    """Stream the messages of one or more exports, detecting each one's format.

    Args:
        paths: export files or directories (see :func:`detect_format`).
        report: filled in while reading; shared by every path, so overlapping exports
            are de-duplicated.
        format: skip detection and read every path with this importer.
        strict: raise on the first malformed file or record instead of skipping it.
        include_system: keep platform notifications (Discord and Slack).
        workspace_id: the workspace to record for Slack exports and transcripts (Discord
            exports name their guild themselves).
        limits: how far a Slack zip may inflate (default :class:`ZipLimits`).

    Raises:
        UnrecognizedExport: a path does not exist or has no recognisable format.
        MalformedExport: in strict mode, the first malformed file or record.
        ExportTooLarge: a Slack zip inflates beyond ``limits``.
    """
    report = report if report is not None else ImportReport()
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    kinds = [(Path(p), format or detect_format(p)) for p in items]
    for path, kind in kinds:
        if kind == "discord":
            yield from iter_discord(path, report=report, strict=strict, include_system=include_system)
        elif kind == "slack":
            yield from iter_slack(
                path,
                report=report,
                strict=strict,
                include_system=include_system,
                workspace_id=workspace_id,
                limits=limits,
            )
        else:
            yield from iter_transcripts(path, report=report, strict=strict, workspace_id=workspace_id)


@dataclass(frozen=True, slots=True)
class ImportedExport:
    """Everything read from one or more exports.

    Attributes:
        messages: the messages, grouped by conversation (in order of first appearance),
            each conversation in time order (ties by message id, in natural order).
        channels: the channels and threads found.
        problems: malformed records and files that were skipped.
        report: the counts (records read, duplicates, system messages skipped, …).
    """

    messages: tuple[ImportedMessage, ...]
    channels: tuple[ImportedChannel, ...]
    problems: tuple[ImportProblem, ...]
    report: ImportReport


def read_export(
    paths: Path | str | Iterable[Path | str],
    *,
    format: ExportFormat | None = None,
    strict: bool = False,
    include_system: bool = False,
    workspace_id: str | None = None,
    limits: ZipLimits | None = None,
) -> ImportedExport:
    """Read whole exports into memory, sorted by conversation and time.

    Blocking (file I/O and parsing); async callers wrap it in ``asyncio.to_thread``.
    Arguments are those of :func:`iter_export`.

    Raises:
        UnrecognizedExport: a path does not exist or has no recognisable format.
        MalformedExport: in strict mode, the first malformed file or record.
        ExportTooLarge: a Slack zip inflates beyond ``limits``.
    """
    report = ImportReport()
    groups: dict[tuple[str, str, str, str | None], list[ImportedMessage]] = {}
    for message in iter_export(
        paths,
        report=report,
        format=format,
        strict=strict,
        include_system=include_system,
        workspace_id=workspace_id,
        limits=limits,
    ):
        groups.setdefault(message.conversation, []).append(message)
    ordered: list[ImportedMessage] = []
    for group in groups.values():
        group.sort(key=lambda m: (m.created_at, natural_key(m.message_id)))
        ordered.extend(group)
    return ImportedExport(tuple(ordered), tuple(report.channels.values()), tuple(report.problems), report)


__all__ = ["ExportFormat", "ImportedExport", "detect_format", "iter_export", "read_export"]
