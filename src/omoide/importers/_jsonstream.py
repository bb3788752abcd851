"""Streaming JSON reads with ijson: a small header first, then array items one by one.

Why ijson: a DiscordChatExporter file can be hundreds of megabytes. Measured here on a
94 MB export of 100k messages (docs/bench-notes/importers.md): ``json.load`` took 5-6 s
and peaked at ~500 MB of RAM; ``ijson.items`` (yajl2_c backend) took 4-5 s in a
constant ~12 MB. Every file is streamed; there is no second code path for small files.
The one exception: yajl rejects integers beyond 64 bits, which are valid JSON, so a file
ijson refuses for that reason alone is decoded again with :mod:`json` (:func:`load_whole`),
when it is at most :data:`WHOLE_MAX_BYTES`, before it is reported as malformed. Any other
error is reported from where streaming stopped: decoding a truncated multi-gigabyte export
whole only to find it invalid cost its size in memory several times over.

Only ijson's **basic** event stream is used (``ijson.basic_parse``), and values are built
here with an explicit nesting limit (:data:`MAX_DEPTH`). ijson's ``parse`` / ``items``
attach a path prefix to every event, and the prefixes of deeply nested brackets cost
memory and time quadratic in the depth: 20 KB of ``[`` inside an ignored field took
315 MB, 400 KB more than 21 GB. Without prefixes the parser's memory is linear in the
depth and the builder never goes past :data:`MAX_DEPTH` levels: a record nested deeper is
skipped (its events are read and dropped) and reported as a :class:`Rejected` item, so
the reader lists it as a problem and carries on with the next record. Building values in
Python costs time (``read_export`` of a 44 MB, 100k-message export: ~17 s instead of ~12 s
with ``ijson.items`` on a loaded 2-core machine), not memory.

The header (``guild``, ``channel``, …) is read first and reading stops as soon as the
``messages`` array starts (DiscordChatExporter writes the header first), so reading it
costs almost nothing; the file is then reopened and its messages streamed. A header
written after the messages (not something the exporter does) is still found: the array
is then skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import ijson  # type: ignore[import-untyped]

from omoide.transcripts._jsonl import nesting_depth

JSONError: type[Exception] = ijson.JSONError

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays accepted in one record (the record itself is level 1).

DiscordChatExporter messages nest about 5 levels, Slack messages with rich-text blocks
about 10; a deeper record is hostile or broken and is skipped as a problem."""

_BOM = b"\xef\xbb\xbf"
_OPEN = frozenset({"start_map", "start_array"})
_CLOSE = frozenset({"end_map", "end_array"})

Events = Iterator[tuple[str, Any]]


@dataclass(frozen=True, slots=True)
class Rejected:
    """An array item that was read but not built (nested deeper than :data:`MAX_DEPTH`)."""

    problem: str


class NotAnArray(ValueError):
    """The top-level value is not the JSON array a reader expected."""


class TooDeep(ValueError):
    """A value (outside the records streamed one by one) is nested deeper than :data:`MAX_DEPTH`."""


def too_deep_problem(max_depth: int = MAX_DEPTH) -> str:
    """The problem text of a record nested too deeply."""
    return f"nested deeper than {max_depth} levels of objects and arrays; the record is skipped"


def error_line(exc: BaseException) -> str:
    """An error's message on one line, without yajl's context snippet (which quotes raw bytes).

    >>> error_line(JSONError(b"lexical error: invalid char in json text.\\n   \\x89PNG (right here) ------^\\n"))
    'lexical error: invalid char in json text'
    """
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(exc)
    lines = text.strip().splitlines()
    return " ".join(lines[0].split()).rstrip(".") if lines else type(exc).__name__


def open_json(path: Path) -> IO[bytes]:
    """Open ``path`` for ijson, skipping a UTF-8 byte-order mark (raises ``OSError``)."""
    handle = path.open("rb")
    if handle.read(3) != _BOM:
        handle.seek(0)
    return handle


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _events(handle: _Readable) -> Events:
    return iter(ijson.basic_parse(handle, use_float=True))


def _skip(events: Events, depth: int) -> None:
    """Consume events until ``depth`` open containers are closed."""
    for event, _value in events:
        if event in _OPEN:
            depth += 1
        elif event in _CLOSE:
            depth -= 1
            if depth == 0:
                return


def _build(events: Events, event: str, value: Any, max_depth: int) -> Any:
    """The value that starts with ``(event, value)``, or :class:`Rejected` when it nests too deeply.

    Memory is linear in the value's size; a value deeper than ``max_depth`` is consumed
    without being kept.
    """
    if event == "start_map":
        root: Any = {}
    elif event == "start_array":
        root = []
    else:
        return value
    stack: list[Any] = [root]
    top: Any = root
    key: str = ""
    for event, value in events:
        if event == "map_key":
            key = value
        elif event in _OPEN:
            new: Any = {} if event == "start_map" else []
            if type(top) is dict:
                top[key] = new
            else:
                top.append(new)
            stack.append(new)
            top = new
            if len(stack) > max_depth:
                _skip(events, len(stack))
                return Rejected(too_deep_problem(max_depth))
        elif event in _CLOSE:
            stack.pop()
            if not stack:
                break
            top = stack[-1]
        elif type(top) is dict:
            top[key] = value
        else:
            top.append(value)
    return root


def _type_name(event: str) -> str:
    names = {"start_map": "an object", "start_array": "an array", "string": "a string", "null": "null"}
    return names.get(event, "true or false" if event == "boolean" else "a number")


def read_header(
    path: Path, *, stop_at: str, needed: frozenset[str], max_depth: int = MAX_DEPTH
) -> tuple[dict[str, Any], bool]:
    """The top-level keys of a JSON object file, except the big array ``stop_at``.

    Stops reading when ``stop_at`` begins and every key in ``needed`` has been seen.

    Returns:
        ``(header, has_array)``: the other top-level values, and whether ``stop_at`` is an
        array (a ``stop_at`` of another type is returned in ``header``).

    Raises:
        OSError: the file cannot be read.
        JSONError: invalid JSON before the header was complete.
        ValueError: the top-level value is not a JSON object, or a header value nests
            deeper than ``max_depth`` (:class:`TooDeep`).
    """
    header: dict[str, Any] = {}
    has_array = False
    if path.stat().st_size == 0:
        raise ValueError("the file is empty")
    with open_json(path) as handle:
        events = _events(handle)
        first = next(events, None)
        if first is None:
            raise ValueError("the file is empty")
        if first[0] != "start_map":
            raise ValueError(f"the file holds {_type_name(first[0])}, not an object")
        for event, value in events:
            if event == "end_map":
                break
            key = str(value)  # a map_key: at this level every value is consumed whole below
            start, start_value = next(events)
            if key == stop_at and start == "start_array":
                has_array = True
                if needed <= header.keys():
                    return header, True
                _skip(events, 1)
            else:
                built = _build(events, start, start_value, max_depth)
                if isinstance(built, Rejected):
                    raise TooDeep(f"'{key}' is nested deeper than {max_depth} levels")
                header[key] = built
    return header, has_array


def checked(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """``value``, or :class:`Rejected` if it nests deeper than ``max_depth`` (for whole-file reads)."""
    return Rejected(too_deep_problem(max_depth)) if nesting_depth(value) > max_depth else value


WHOLE_MAX_BYTES = 64 * 1024 * 1024
"""The largest file (or zip member) decoded whole when the streaming parser refuses a number it
cannot hold (:func:`worth_whole`): ~10x that in memory while :mod:`json` holds the document."""


def worth_whole(exc: BaseException) -> bool:
    """Whether a streaming error is yajl refusing an integer beyond 64 bits (valid JSON that
    Python's decoder accepts), the only error a whole decode can get past."""
    return "integer overflow" in str(exc)


def load_whole(path: Path, exc: BaseException) -> Any:
    """The whole file decoded with :mod:`json` after the streaming parser failed with ``exc``,
    or ``None``: ``exc`` is not one a whole decode can get past (:func:`worth_whole`), the file
    is larger than :data:`WHOLE_MAX_BYTES`, or it is not valid JSON (or nests beyond what
    Python's decoder can handle).

    Raises:
        OSError: the file cannot be read.
    """
    if not worth_whole(exc):
        return None
    with path.open("rb") as handle:
        data = handle.read(WHOLE_MAX_BYTES + 1)
    return None if len(data) > WHOLE_MAX_BYTES else decode_whole(data)


def decode_whole(data: bytes) -> Any:
    """``data`` decoded with :mod:`json` (a byte-order mark skipped), or ``None`` if it is not
    valid JSON or nests beyond what Python's decoder can handle (see :func:`load_whole`)."""
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, too deep
        return None


def iter_array(handle: _Readable, key: str | None = None, *, max_depth: int = MAX_DEPTH) -> Iterator[Any]:
    """Stream the items of a top-level array (``key`` None) or of the top-level object's array ``key``.

    An item nested deeper than ``max_depth`` is yielded as :class:`Rejected`.

    Raises:
        JSONError: invalid JSON.
        ValueError: the top-level value is not an array (``key`` None), or ``key`` is
            missing or not an array.
    """
    events = _events(handle)
    first = next(events, None)
    if first is None:
        raise ValueError("the file is empty")
    if key is None:
        if first[0] != "start_array":
            raise NotAnArray(f"must hold a JSON array, got {_type_name(first[0])}")
    else:
        if first[0] != "start_map":
            raise ValueError(f"the file holds {_type_name(first[0])}, not an object")
        for event, value in events:
            if event == "end_map":
                raise ValueError(f"no '{key}' array")
            start, _start_value = next(events)
            if value == key and start == "start_array":
                break
            if start in _OPEN:
                _skip(events, 1)
    for event, value in events:
        if event == "end_array":
            return
        yield _build(events, event, value, max_depth)


def iter_items(path: Path, array: str, *, max_depth: int = MAX_DEPTH) -> Iterator[Any]:
    """Stream the items of the top-level array ``array`` (raises ``OSError`` / :data:`JSONError`)."""
    with open_json(path) as handle:
        yield from iter_array(handle, array, max_depth=max_depth)


__all__ = [
    "MAX_DEPTH",
    "WHOLE_MAX_BYTES",
    "JSONError",
    "NotAnArray",
    "Rejected",
    "TooDeep",
    "checked",
    "decode_whole",
    "error_line",
    "iter_array",
    "iter_items",
    "load_whole",
    "nesting_depth",
    "open_json",
    "read_header",
    "too_deep_problem",
    "worth_whole",
]
