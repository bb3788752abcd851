"""Streaming JSON reads with ijson: a small header first, then array items one by one.

Why ijson: a DiscordChatExporter file can be hundreds of megabytes. Measured here on a
94 MB export of 100k messages (docs/bench-notes/importers.md): ``json.load`` took 5-6 s
and peaked at ~500 MB of RAM; ``ijson.items`` (yajl2_c backend) took 4-5 s in a
constant ~12 MB. ijson is never slower here and its memory does not grow with the file,
so every file is streamed; there is no second code path for small files. The one
exception: yajl rejects integers beyond 64 bits, which are valid JSON, so a file ijson
calls invalid is decoded again with :mod:`json` (:func:`load_whole`) before it is
reported as malformed.

The header (``guild``, ``channel``, …) is read with ijson's event parser, which stops as
soon as the ``messages`` array starts (DiscordChatExporter writes the header first), so
reading it costs almost nothing; the file is then reopened and its messages streamed
with ``ijson.items(f, "messages.item")``. A header written after the messages (not
something the exporter does) is still found: the event parser then skips the array.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import ijson  # type: ignore[import-untyped]

JSONError: type[Exception] = ijson.JSONError

_BOM = b"\xef\xbb\xbf"


def open_json(path: Path) -> IO[bytes]:
    """Open ``path`` for ijson, skipping a UTF-8 byte-order mark (raises ``OSError``)."""
    handle = path.open("rb")
    if handle.read(3) != _BOM:
        handle.seek(0)
    return handle


def _build(events: Iterator[tuple[str, str, Any]], first: tuple[str, str, Any]) -> Any:
    """Build the value that starts with event ``first`` from the event stream."""
    builder = ijson.ObjectBuilder()
    _, event, value = first
    builder.event(event, value)
    if event not in ("start_map", "start_array"):
        return builder.value
    depth = 1
    for _, event, value in events:
        builder.event(event, value)
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                break
    return builder.value


def _skip(events: Iterator[tuple[str, str, Any]], first: tuple[str, str, Any]) -> None:
    if first[1] not in ("start_map", "start_array"):
        return
    depth = 1
    for _, event, _value in events:
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                return


def read_header(path: Path, *, stop_at: str, needed: frozenset[str]) -> tuple[dict[str, Any], bool]:
    """The top-level keys of a JSON object file, except the big array ``stop_at``.

    Stops reading when ``stop_at`` begins and every key in ``needed`` has been seen.

    Returns:
        ``(header, has_array)``: the other top-level values, and whether ``stop_at`` is an
        array (a ``stop_at`` of another type is returned in ``header``).

    Raises:
        OSError: the file cannot be read.
        JSONError: invalid JSON before the header was complete.
        ValueError: the top-level value is not a JSON object.
    """
    header: dict[str, Any] = {}
    has_array = False
    if path.stat().st_size == 0:
        raise ValueError("the file is empty")
    with open_json(path) as handle:
        events: Iterator[tuple[str, str, Any]] = iter(ijson.parse(handle, use_float=True))
        first = next(events, None)
        if first is None:
            raise ValueError("the file is empty")
        if first[1] != "start_map":
            raise ValueError(f"the top-level JSON value is not an object (it starts with {first[1]})")
        for prefix, event, value in events:
            if prefix == "" and event == "end_map":
                break
            if prefix == "" and event == "map_key":
                key = str(value)
                start = next(events)
                if key == stop_at and start[1] == "start_array":
                    has_array = True
                    if needed <= header.keys():
                        return header, True
                    _skip(events, start)
                else:
                    header[key] = _build(events, start)
    return header, has_array


def load_whole(path: Path) -> Any:
    """The whole file decoded with :mod:`json`, or ``None`` if it is not valid JSON.

    The fallback when ijson's C backend rejects a file: yajl refuses integers beyond
    64 bits, which Python's decoder accepts. Costs the memory of the whole document.

    Raises:
        OSError: the file cannot be read.
    """
    try:
        return json.loads(path.read_bytes().decode("utf-8-sig"))
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        return None


def iter_items(path: Path, array: str) -> Iterator[Any]:
    """Stream the items of the top-level array ``array`` (raises ``OSError`` / :data:`JSONError`)."""
    with open_json(path) as handle:
        yield from ijson.items(handle, f"{array}.item", use_float=True)


__all__ = ["JSONError", "iter_items", "open_json", "read_header"]
