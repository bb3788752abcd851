"""The records of a big JSON array, decoded by Python's C scanner from a bounded buffer (issue 17).

:func:`omoide.importers._jsonstream.iter_items` streams a DiscordChatExporter file through
ijson's event stream and builds each record in Python: safe against hostile nesting, and
~70 µs a message, the largest share of an import's time. :func:`fast_items` reads the
same records with :meth:`json.JSONDecoder.raw_decode` (C) from a text buffer of about
:data:`BLOCK_CHARS` characters — ~16 µs a message, memory bounded by the buffer and the
largest record, not the file.

It takes only the well-trodden path and hands everything else to ``iter_items``, from the
record it stopped at (the records before it are read again and dropped there), so the
result, the problems reported and the errors raised are those of ``iter_items``:

* the top level is not ``{"...": ..., "<array>": [ ... ]}`` as the exporter writes it;
* a record (or a header value) does not decode: invalid JSON, ``NaN`` / ``Infinity``,
  an integer beyond 64 bits or a number beyond a double (which ``json`` accepts and yajl
  does not), a surrogate escape (``\\ud800``: yajl and
  ``json`` read a lone one differently), nesting deep enough to exhaust ``json``'s
  recursion, text that is not UTF-8;
* one record is larger than :data:`MAX_RECORD_CHARS` (the buffer would grow with it), or one
  string in it longer than a block (``json`` reports the same error after one more block).

A record nested deeper than ``max_depth`` decodes here but is yielded as
:class:`~omoide.importers._jsonstream.Rejected`, as ``iter_items`` yields it.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import IO, Any

from omoide.importers._jsonstream import MAX_DEPTH, Rejected, iter_items, open_json, too_deep_problem
from omoide.transcripts._jsonl import nesting_depth

BLOCK_CHARS = 1 << 18
"""Bytes read (and so, about, characters held) at a time: 256 KB (1 MB added ~12 MB to the peak
RSS of reading a 10k-message export for no speed; a record longer than a block grows the buffer)."""

MAX_RECORD_CHARS = 32 << 20
"""A record longer than this is left to ijson, which streams it."""

_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Fallback(Exception):
    """The fast path stops here; ``iter_items`` goes on from the same record."""


def _reject_constant(name: str) -> Any:
    raise _Fallback(f"{name} is not JSON")


_INT64 = range(-(2**63), 2**63)


def _int(text: str) -> int:
    value = int(text)
    if value not in _INT64:  # yajl refuses it (iter_items' caller then decodes the file with json)
        raise _Fallback("an integer beyond 64 bits")
    return value


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):  # yajl refuses an overflowing number
        raise _Fallback("a number beyond a double")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_int, parse_float=_float)


class _Buffer:
    """Text of a file read a block at a time; ``text[pos:]`` is what is not consumed yet."""

    __slots__ = ("_decoder", "_handle", "done", "pos", "text")

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.text = ""
        self.pos = 0
        self.done = False

    def more(self) -> bool:
        """Read the next block (dropping what was consumed); False at the end of the file."""
        if self.done:
            return False
        block = self._handle.read(BLOCK_CHARS)
        try:
            added = self._decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise _Fallback("not UTF-8") from exc
        self.done = not block
        self.text = self.text[self.pos :] + added
        self.pos = 0
        if len(self.text) > MAX_RECORD_CHARS:
            raise _Fallback("a record larger than the buffer may grow")
        return True

    def skip_space(self) -> str:
        """The next character after whitespace ('' at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def expect(self, char: str) -> None:
        if self.skip_space() != char:
            raise _Fallback(f"expected {char!r}")
        self.pos += 1

    def value(self) -> tuple[Any, int, int]:
        """The JSON value at ``pos`` and where its text starts and ends (reading more while it
        may be cut off by the buffer's end)."""
        self.skip_space()
        failed: tuple[str, int] | None = None
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                # cut off by the buffer's end, or invalid: read one more block and see whether
                # the error moved; the same error twice (or at the end of the file) is left to ijson
                error = (exc.msg, exc.pos - self.pos)
                if error != failed and self.more():
                    failed = error
                    continue
                raise _Fallback("invalid JSON") from exc
            except RecursionError as exc:
                raise _Fallback("nested too deeply for json") from exc
            if end == len(self.text) and not self.done and self.more():
                continue  # a number may go on in the next block: decode it again whole
            start, self.pos = self.pos, end
            if self.text.find("\\u", start, end) >= 0 and _SURROGATE_ESCAPE.search(self.text, start, end):
                raise _Fallback("a surrogate escape")
            return value, start, end


def _records(buf: _Buffer, array: str, max_depth: int) -> Iterator[Any]:
    """The records of the top-level object's array ``array`` (see the module docstring)."""
    buf.expect("{")
    while True:
        if buf.skip_space() != '"':
            raise _Fallback("no key")
        key, _, _ = buf.value()
        buf.expect(":")
        if key == array and buf.skip_space() == "[":
            buf.pos += 1
            break
        buf.value()  # a header value: decoded and dropped
        if buf.skip_space() != ",":
            raise _Fallback("no more keys")
        buf.pos += 1
    if buf.skip_space() == "]":
        return
    text_count = str.count
    while True:
        record, start, end = buf.value()
        text = buf.text
        if text_count(text, "{", start, end) + text_count(text, "[", start, end) > max_depth and (
            nesting_depth(record) > max_depth
        ):
            yield Rejected(too_deep_problem(max_depth))
        else:
            yield record
        after = buf.skip_space()
        if after == "]":
            return
        if after != ",":
            raise _Fallback("expected ',' or ']'")
        buf.pos += 1


def fast_items(path: Path, array: str, *, max_depth: int = MAX_DEPTH) -> Iterator[Any]:
    """The items of the top-level array ``array`` of ``path``, as :func:`iter_items` yields them.

    Raises:
        OSError / JSONError / ValueError: as :func:`iter_items` (which raises them: the fast
            path never raises on its own).
    """
    done = 0
    try:
        with open_json(path) as handle:
            for record in _records(_Buffer(handle), array, max_depth):
                yield record
                done += 1
        return
    except _Fallback:
        pass
    yield from islice(iter_items(path, array, max_depth=max_depth), done, None)


__all__ = ["BLOCK_CHARS", "MAX_RECORD_CHARS", "fast_items"]
