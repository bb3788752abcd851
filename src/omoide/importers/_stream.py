"""Message windows straight from DiscordChatExporter files, in bounded memory (issue 17).

:func:`~omoide.importers.read_export` holds every message of an export before anything is
cut into windows: a 100k-message channel is ~100k objects in memory at once. The exporter
writes one file per channel or thread, oldest message first, so its windows can be cut while
the file is read: :func:`stream_windows` yields them in batches and keeps only the window
being filled and the batch in hand.

It applies only where the result is exactly that of reading everything first
(:func:`stream_plan` says so, or returns ``None`` and the caller reads the whole export):
every path is a DiscordChatExporter export, every file's header reads, and no two files
hold the same conversation (``[part N]`` partitions, or two overlapping exports, are
sorted together by the whole read). Within a file:

* messages oldest first are streamed;
* a ``--reverse`` export (newest first: its first two messages say so) is read whole and
  sorted, as before — memory bounded by that file;
* a message older than the one before it in an oldest-first file (not something the
  exporter writes: a hand-edited file) ends the streaming of that file: the rest is read,
  sorted and cut on its own, so windows never mix the two parts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from omoide.importers._auto import detect_format
from omoide.importers._common import ImportRun, expand_files, natural_key
from omoide.importers._discord import _HEADER_KEYS, MEDIA_DIR_SUFFIX, _Channel, _read_file
from omoide.importers._jsonstream import read_header
from omoide.importers._model import ConversationKey, ImportedMessage, ImportReport
from omoide.importers._windows import MessageWindow, TextCounter, split_windows


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What a streamed read will read.

    Attributes:
        files: the export files, in reading order.
        conversations: each file's conversation ``(platform, workspace, channel, thread)``.
        messages: the records the files' headers announce (``messageCount``), or ``None``
            when a header lacks it: the total of a progress bar.
    """

    files: tuple[Path, ...]
    conversations: tuple[ConversationKey, ...]
    messages: int | None

    @property
    def workspaces(self) -> set[str]:
        return {c[1] for c in self.conversations}


def stream_plan(paths: Sequence[Path | str]) -> StreamPlan | None:
    """The plan of a streamed read of ``paths``, or ``None`` when only a whole read gives the
    right result (another format, an unreadable header, a conversation in several files)."""
    try:
        if not paths or any(detect_format(p) != "discord" for p in paths):
            return None
        files = expand_files(paths, ".json", skip_dirs_ending=MEDIA_DIR_SUFFIX)
        conversations: list[ConversationKey] = []
        total: int | None = 0
        for path in files:
            header, has_messages = read_header(path, stop_at="messages", needed=_HEADER_KEYS)
            if not has_messages:
                return None
            conversations.append(_Channel(header, str(path)).info.conversation)
            count = header.get("messageCount")
            if count is None:
                count = _tail_count(path)
            total = total + count if total is not None and isinstance(count, int) and count >= 0 else None
    except Exception:
        return None
    if not files or len(set(conversations)) != len(conversations):
        return None
    return StreamPlan(tuple(files), tuple(conversations), total)


_TAIL_BYTES = 4096
_TAIL_COUNT = re.compile(rb'\]\s*,\s*"messageCount"\s*:\s*(\d{1,15})\s*\}\s*$')


def _tail_count(path: Path) -> int | None:
    """The ``messageCount`` a DiscordChatExporter file ends with, read from its last bytes.

    The exporter writes it after the ``messages`` array, so reading it from the header
    parsed the whole file a second time (~40 µs a message, a tenth of an import's time).
    A file that does not end that way (hand-edited) is read whole for it, as before; the
    count is only a progress bar's total, never trusted for anything else.
    """
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - _TAIL_BYTES))
        found = _TAIL_COUNT.search(handle.read())
    if found is not None:
        return int(found.group(1))
    header, _ = read_header(path, stop_at="messages", needed=_HEADER_KEYS | {"messageCount"})
    count = header.get("messageCount")
    return count if isinstance(count, int) else None


def _order_key(message: ImportedMessage) -> tuple[Any, ...]:
    return (message.created_at, natural_key(message.message_id))


def _before(message: ImportedMessage, other: ImportedMessage) -> bool:
    """``_order_key(message) < _order_key(other)``, reading the ids only for equal times (once a message)."""
    if message.created_at != other.created_at:
        return message.created_at < other.created_at
    return _order_key(message) < _order_key(other)


def _runs(messages: Iterator[ImportedMessage]) -> Iterator[Iterable[ImportedMessage]]:
    """One file's messages as runs in time order: the file itself while it is oldest first,
    else the rest sorted (see the module docstring)."""
    first = next(messages, None)
    if first is None:
        return
    second = next(messages, None)
    if second is None:
        yield [first]
        return
    if _before(second, first):  # newest first (--reverse): read whole, sort
        rest = [first, second, *messages]
        rest.sort(key=_order_key)
        yield rest
        return
    tail: list[ImportedMessage] = []

    def ordered() -> Iterator[ImportedMessage]:
        last = first
        yield first
        for message in chain((second,), messages):
            if _before(message, last):
                tail.append(message)
                tail.extend(messages)
                return
            last = message
            yield message

    yield ordered()
    if tail:
        tail.sort(key=_order_key)
        yield tail


def stream_windows(
    plan: StreamPlan,
    *,
    report: ImportReport,
    keep: Callable[[ImportedMessage], bool],
    max_tokens: int,
    counter: TextCounter,
    batch: int,
    include_system: bool = False,
    render_chunks: bool = False,
) -> Iterator[list[MessageWindow]]:
    """The windows of the plan's files, ``batch`` at a time (a batch never spans two files).

    Args:
        plan: from :func:`stream_plan`.
        report: filled in while reading (counts, channels, problems; duplicates dropped).
        keep: which messages to cut into windows (the others — already stored, or by a
            forgotten user — are read and dropped, as if they were not in the file).
        max_tokens / counter: as :func:`~omoide.importers.split_windows`.
        batch: windows per yielded list.
        include_system: keep platform notifications.
        render_chunks: as :func:`~omoide.importers.split_windows` (an import's chunk lines and counts).

    Blocking (file I/O, parsing, token counts): run it on a thread.
    """
    run = ImportRun(report, strict=False, include_system=include_system)
    for path in plan.files:
        out: list[MessageWindow] = []
        for messages in _runs(m for m in _read_file(path, run) if keep(m)):
            for window in split_windows(messages, max_tokens=max_tokens, counter=counter, render_chunks=render_chunks):
                out.append(window)
                if len(out) >= batch:
                    yield out
                    out = []
        if out:
            yield out


__all__ = ["StreamPlan", "stream_plan", "stream_windows"]
