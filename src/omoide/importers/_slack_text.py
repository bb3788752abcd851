"""Slack ``mrkdwn`` to readable text: mentions, channel links, links, HTML escapes."""

from __future__ import annotations

import re
from collections.abc import Mapping

_TOKEN = re.compile(r"<([^<>\n]*)>")


def slack_text(text: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    """Resolve Slack's angle-bracket tokens, then unescape ``&amp;``, ``&lt;`` and ``&gt;``.

    * ``<@U123>`` / ``<@U123|name>`` → ``@display name`` (from ``users``, else the label or id);
    * ``<#C123|general>`` → ``#general``;
    * ``<!here>`` → ``@here``; ``<!subteam^S1|@team>`` → ``@team``; ``<!date^…|label>`` → label;
    * ``<https://x|label>`` → ``label (https://x)``; ``<https://x>`` → ``https://x``;
    * ``<mailto:a@b.c|a@b.c>`` → ``a@b.c``.

    Args:
        text: the message's ``text``.
        users: user id → display name.
        channels: conversation id → name.
    """
    if "<" in text:
        text = _TOKEN.sub(lambda m: _token(m.group(1), users, channels), text)
    if "&" in text:
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text


def _token(inner: str, users: Mapping[str, str], channels: Mapping[str, str]) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        user_id = target[1:]
        return "@" + (users.get(user_id) or label.lstrip("@") or user_id)
    if target.startswith("#"):
        channel_id = target[1:]
        return "#" + (label or channels.get(channel_id) or channel_id)
    if target.startswith("!subteam^"):
        return label or "@" + target.removeprefix("!subteam^")
    if target.startswith("!date^"):
        return label or target
    if target.startswith("!"):
        return "@" + (label or target[1:])
    if target.startswith("mailto:"):
        return label or target.removeprefix("mailto:")
    if label and label != target:
        return f"{label} ({target})"
    return target


__all__ = ["slack_text"]
