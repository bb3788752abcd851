"""Durations in command options (``--older-than 2h``, ``--since 30d``): :func:`parse_duration`."""

from __future__ import annotations

import math
import re
from datetime import timedelta

import typer

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION = timedelta(days=365_000)
"""The longest duration an option takes (about 1,000 years): "that long ago" stays a date the
calendar holds (``datetime`` ends at year 1), where ``999999d`` or ``inf`` raised ``OverflowError``."""


class NotADuration(typer.BadParameter):
    """The text is no duration at all (as opposed to a negative or too long one)."""


def parse_duration(text: str, *, option: str | None = None) -> timedelta:
    """``90`` (seconds), ``30s``, ``15m``, ``2h``, ``1d``, ``1h30m`` → a ``timedelta`` from 0 to
    :data:`MAX_DURATION`.

    Raises:
        typer.BadParameter: not a duration, negative, not finite or longer than :data:`MAX_DURATION`
            (``option`` names the option in the message).
    """
    value = text.strip().lower()
    if not value:
        raise NotADuration("empty duration; use e.g. 30s, 15m, 2h, 1d or 1h30m", param_hint=option)
    seconds: float | None = None
    try:
        seconds = float(value)
    except ValueError:
        pos, total = 0, 0.0
        for match in _DURATION.finditer(value):
            if value[pos : match.start()].strip():
                break
            total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        else:
            if pos and not value[pos:].strip():
                seconds = total
    if seconds is None or math.isnan(seconds):
        raise NotADuration(f"{text!r} is not a duration; use e.g. 30s, 15m, 2h, 1d or 1h30m", param_hint=option)
    if seconds < 0:
        raise typer.BadParameter(f"{text!r} is negative; a duration is 0 or more (e.g. 30m, 7d)", param_hint=option)
    if seconds > MAX_DURATION.total_seconds():
        raise typer.BadParameter(
            f"{text!r} is too long; a duration is at most {MAX_DURATION.days}d (about 1,000 years)", param_hint=option
        )
    return timedelta(seconds=seconds)


__all__ = ["MAX_DURATION", "NotADuration", "parse_duration"]
