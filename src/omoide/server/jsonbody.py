"""JSON request bodies as RFC 8259 has them, not as Python's parser takes them.

``json.loads`` accepts ``NaN``, ``Infinity`` and ``-Infinity``, decodes ``\\ud800`` (and the
UTF-8-like bytes of a surrogate) into a lone surrogate, and pydantic then passes both through as
``float`` and ``str``. Neither can be stored or sent back as JSON: a surrogate failed the request
later with a 500, and ``NaN`` inside a tool block was stored as the bare word ``NaN`` (a row that
is not JSON). :class:`StrictJsonRoute` parses every JSON body strictly, and a body holding either
fails with :class:`InvalidJsonValue`, which the problem handlers answer with 422 naming where.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_CONSTANTS = ("NaN", "Infinity")


class InvalidJsonValue(ValueError):
    """A JSON body parsed, but holds a value JSON has no place for (``loc``: where, ``msg``: what)."""

    def __init__(self, loc: tuple[str, ...], msg: str) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg


class _NonFinite:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def loads_strict(body: bytes) -> Any:
    """``body`` parsed as JSON (UTF-8, or the UTF-16/32 ``json.loads`` detects).

    Raises:
        UnicodeDecodeError: the bytes are not valid in their encoding (surrogates encoded as UTF-8
            included: ``json.loads`` would let them through).
        json.JSONDecodeError: not JSON.
        InvalidJsonValue: a ``NaN`` / ``Infinity`` / ``-Infinity``, or a string (or key) with a lone surrogate.
    """
    text = body.decode(json.detect_encoding(body))
    constants: list[str] = []

    def constant(name: str) -> _NonFinite:
        constants.append(name)
        return _NonFinite(name)

    data = json.loads(text, parse_constant=constant)
    if constants or _SURROGATE_ESCAPE.search(text):
        _check(data)
    return data


def _check(data: Any) -> None:
    """Raise :class:`InvalidJsonValue` at the first value JSON cannot hold (iteratively: the body may nest deep)."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str):
            _check_text(loc, value)
        elif isinstance(value, _NonFinite):
            raise InvalidJsonValue(loc, f"{value.name} is not a JSON number (JSON has no NaN or infinities)")
        elif isinstance(value, dict):
            for k, v in reversed(value.items()):
                _check_text((*loc, k.encode("utf-8", "backslashreplace").decode()), k)
                stack.append(((*loc, k), v))
        elif isinstance(value, list):
            stack.extend(((*loc, str(i)), v) for i, v in reversed(list(enumerate(value))))


def _check_text(loc: tuple[str, ...], text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = text[exc.start]
        raise InvalidJsonValue(
            loc,
            f"the text holds a lone surrogate ('\\u{ord(char):04x}' at position {exc.start}), which is not "
            "Unicode text: escape a character outside the BMP as a pair (\\ud83c\\udf89), or send it as UTF-8",
        ) from None


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads_strict(await self.body())
        return self._json


class StrictJsonRoute(APIRoute):
    """An API route whose JSON body is parsed by :func:`loads_strict`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict


__all__ = ["InvalidJsonValue", "StrictJsonRequest", "StrictJsonRoute", "loads_strict"]
