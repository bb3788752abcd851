"""omoide JSONL transcripts (seed 002), read with :mod:`omoide.transcripts`.

A transcript is one session: workspace = the agent (``…/agents/<agent>/sessions/<id>.jsonl``,
else ``workspace_id`` or ``"local"``), channel = the session id (the file's stem). Every
original message is imported (compaction records are ignored: nothing is lost). The
message id is the record's ``message_id`` when it has one, else ``"<session>:<n>"``
with ``n`` counting the file's messages from 1, which stays stable because transcripts
only ever grow at the end. Tool calls and results are left out unless
``include_tools=True``; a turn with nothing else is then skipped.

Files are read by the strict transcript reader. If it rejects a file, strict mode raises;
otherwise the file is read again line by line: lines that are not valid records are
reported (``line N``) and dropped, and so is any record that then breaks the sequence
rules (a tool_result whose tool_use was dropped, …), so the rest still imports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from omoide.errors import CorruptTranscript, InvalidContent, TranscriptError
from omoide.importers._common import ImportRun, expand_files
from omoide.importers._errors import MalformedExport, UnrecognizedExport
from omoide.importers._jsonstream import MAX_DEPTH, too_deep_problem
from omoide.importers._model import ImportedChannel, ImportedMessage, ImportReport
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.transcripts import messages_from_records, read_records, validate_record
from omoide.transcripts._jsonl import nesting_depth

DEFAULT_WORKSPACE = "local"


def _salvage(path: Path, run: ImportRun) -> list[Message]:
    """Read what can be read of a transcript the strict reader rejected."""
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        run.problem(source, "", f"cannot read the file: {exc.strerror or exc}")
        return []
    kept: list[tuple[int, Any]] = []
    dropped: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            decoded = json.loads(raw.decode("utf-8"))
            if nesting_depth(decoded) > MAX_DEPTH:
                dropped.append((number, too_deep_problem()))
                continue
            kept.append((number, validate_record(decoded)))
        except UnicodeDecodeError as exc:
            dropped.append((number, f"invalid UTF-8 at byte {exc.start}"))
        except ValueError as exc:
            dropped.append((number, f"invalid JSON ({exc})"))
        except RecursionError:
            dropped.append((number, too_deep_problem()))
        except InvalidContent as exc:
            dropped.append((number, exc.message))
    messages: list[Message] = []
    while kept:
        try:
            messages = messages_from_records([record for _, record in kept])
            break
        except InvalidContent as exc:
            index = exc.details.get("index")
            if not isinstance(index, int) or not 0 <= index < len(kept):
                dropped.append((0, f"cannot replay the transcript: {exc.message}"))
                break
            number, _ = kept.pop(index)
            dropped.append((number, str(exc.details.get("problem", exc.message))))
    for number, problem in sorted(dropped):
        run.problem(source, f"line {number}" if number else "", problem)
    return messages


def _load(path: Path, run: ImportRun) -> list[Message]:
    try:
        return messages_from_records(read_records(path, max_depth=MAX_DEPTH))
    except CorruptTranscript as exc:
        if run.strict:
            line = exc.details.get("line")
            problem = str(exc.details.get("problem", exc.message))
            raise MalformedExport(
                f"malformed export: {path}: line {line}: {problem}",
                path=str(path),
                position=f"line {line}",
                problem=problem,
            ) from exc
        return _salvage(path, run)
    except TranscriptError as exc:  # the file cannot be read
        run.problem(str(path), "", exc.message)
        return []


def _text(message: Message, include_tools: bool) -> str:
    parts = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                parts.append(block.text.strip())
        elif include_tools and isinstance(block, ToolUseBlock):
            payload = json.dumps(dict(block.input), ensure_ascii=False, sort_keys=True)
            parts.append(f"[tool call: {block.name} {payload}]")
        elif include_tools and isinstance(block, ToolResultBlock):
            parts.append(f"[tool result{' (error)' if block.is_error else ''}: {block.content.strip()}]")
    return "\n".join(parts)


def _agent(path: Path) -> str | None:
    parts = path.resolve().parts
    if len(parts) >= 4 and parts[-2] == "sessions" and parts[-4] == "agents":
        return parts[-3]
    return None


def iter_transcripts(
    paths: Path | str | Iterable[Path | str],
    *,
    report: ImportReport | None = None,
    strict: bool = False,
    workspace_id: str | None = None,
    include_tools: bool = False,
) -> Iterator[ImportedMessage]:
    """Stream the messages of omoide JSONL transcripts.

    Args:
        paths: ``.jsonl`` files, or directories searched recursively for them.
        report: filled in while reading; pass the same report to several calls to
            de-duplicate across them.
        strict: raise on the first malformed line instead of skipping it.
        workspace_id: the workspace to record (default: the agent id from the file's
            place in a transcript store, else ``"local"``).
        include_tools: render tool calls and results into the text (left out by default).

    Raises:
        UnrecognizedExport: a path does not exist.
        MalformedExport: in strict mode, the first malformed line (``details``: ``path``,
            ``position`` = ``line N``, ``problem``).
    """
    run = ImportRun(report, strict=strict, include_system=False)
    files = expand_files(paths, ".jsonl")
    for path in files:
        if not path.exists():
            raise UnrecognizedExport(f"no such transcript: {path}", path=str(path))
    for path in files:
        messages = _load(path, run)
        source = str(path)
        run.report.files.append(source)
        workspace = workspace_id or _agent(path) or DEFAULT_WORKSPACE
        session = path.stem
        channel = ImportedChannel("omoide", workspace, workspace, session, session, kind="session", source=source)
        run.report.add_channel(channel)
        for number, message in enumerate(messages, start=1):
            run.report.records += 1
            text = _text(message, include_tools)
            if not text:
                run.report.empty_skipped += 1
                continue
            imported = ImportedMessage(
                platform="omoide",
                workspace_id=workspace,
                workspace_name=workspace,
                channel_id=session,
                channel_name=session,
                thread_id=None,
                thread_name=None,
                message_id=message.message_id or f"{session}:{number}",
                author_id=message.author_id or message.role,
                author_name=message.author_name or message.role,
                is_bot=message.is_bot,
                text=text,
                created_at=message.created_at,
                kind="message",
                platform_kind=message.role,
                content=text,
            )
            if run.report.accept(imported):
                yield imported


__all__ = ["DEFAULT_WORKSPACE", "iter_transcripts"]
