"""Session keys: which conversation a message belongs to.

A key is built from platform, workspace, channel, thread, user (or agent name) by a
:class:`~omoide.models.KeyPolicy`, and has a stable string form that is the
``session_key`` column::

    discord:123:c=456:u=789     user_channel (seed 001: one session per user per channel)
    discord:123:c=456           channel
    slack:T01:c=C02:t=1712.5    thread
    agent:default:a=my-project  agent (seed 002's named REPL sessions)

Parts are percent-encoded where they contain ``:``, ``=`` or ``%``, so any id
round-trips through :func:`parse_session_key`.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from omoide.errors import InvalidSessionKey
from omoide.models import KeyPolicy, SessionKey

MAX_PART_LENGTH = 256
_SAFE = "!$&'()*+,;@-._~/"  # everything but ':' '=' '%' and whitespace stays readable


def _part(name: str, value: object, *, required: bool) -> str | None:
    if value is None:
        if required:
            raise InvalidSessionKey(f"session key part {name!r} is required for this key policy")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidSessionKey(
            f"session key part {name!r} must be a string or an integer id, got {type(value).__name__}"
        )
    text = str(value).strip()
    if not text:
        raise InvalidSessionKey(f"session key part {name!r} must not be empty")
    if len(text) > MAX_PART_LENGTH:
        raise InvalidSessionKey(f"session key part {name!r} is longer than {MAX_PART_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InvalidSessionKey(f"session key part {name!r} contains a control character")
    return text


def _enc(value: str) -> str:
    return quote(value, safe=_SAFE)


def session_key(
    *,
    platform: str | None = None,
    workspace: str | int,
    channel: str | int | None = None,
    thread: str | int | None = None,
    user: str | int | None = None,
    agent: str | None = None,
    policy: KeyPolicy | str = KeyPolicy.USER_CHANNEL,
) -> SessionKey:
    """Build a session key.

    Args:
        platform: ``discord``, ``slack``, ``cli``, … (``agent`` for agent sessions by default).
        workspace: guild / Slack workspace / agent id.
        channel, thread, user: platform ids; which are needed depends on ``policy``.
        agent: the session name for ``policy="agent"``.
        policy: a :class:`KeyPolicy` or its value.

    Raises:
        InvalidSessionKey: a needed part is missing, empty, too long or of the wrong type,
            or the policy is unknown.

    Example:
        >>> str(session_key(platform="discord", workspace=1, channel=2, user=3))
        'discord:1:c=2:u=3'
    """
    try:
        policy = KeyPolicy(policy)
    except ValueError:
        allowed = ", ".join(p.value for p in KeyPolicy)
        raise InvalidSessionKey(f"unknown key policy {policy!r}; allowed: {allowed}") from None
    if platform is None and policy is KeyPolicy.AGENT:
        platform = "agent"
    plat = _part("platform", platform, required=True)
    ws = _part("workspace", workspace, required=True)
    assert plat is not None and ws is not None
    ch = th = us = ag = None
    if policy is KeyPolicy.AGENT:
        ag = _part("agent", agent, required=True)
        suffix = [f"a={_enc(ag or '')}"]
    else:
        ch = _part("channel", channel, required=True)
        suffix = [f"c={_enc(ch or '')}"]
        if policy is KeyPolicy.USER_CHANNEL:
            us = _part("user", user, required=True)
            suffix.append(f"u={_enc(us or '')}")
        elif policy is KeyPolicy.THREAD:
            th = _part("thread", thread, required=False)
            if th is None:
                policy = KeyPolicy.CHANNEL
            else:
                suffix.append(f"t={_enc(th)}")
    value = ":".join([_enc(plat), _enc(ws), *suffix])
    return SessionKey(policy, plat, ws, channel=ch, thread=th, user=us, agent=ag, value=value)


_LABELS = {"c": "channel", "t": "thread", "u": "user", "a": "agent"}


def parse_session_key(text: str) -> SessionKey:
    """Parse the string form of a key back into its parts.

    Raises:
        InvalidSessionKey: the text is not a key this module produces.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidSessionKey("session key must be a non-empty string such as 'discord:123:c=456:u=789'")
    pieces = text.strip().split(":")
    if len(pieces) < 3:
        raise InvalidSessionKey(f"session key {text!r} has too few parts; expected platform:workspace:c=CHANNEL[...]")
    parts: dict[str, str] = {}
    for piece in pieces[2:]:
        label, sep, value = piece.partition("=")
        if not sep or label not in _LABELS or _LABELS[label] in parts:
            raise InvalidSessionKey(f"session key {text!r}: unexpected part {piece!r}")
        parts[_LABELS[label]] = unquote(value)
    names = frozenset(parts)
    policies = {
        frozenset({"channel", "user"}): KeyPolicy.USER_CHANNEL,
        frozenset({"channel"}): KeyPolicy.CHANNEL,
        frozenset({"channel", "thread"}): KeyPolicy.THREAD,
        frozenset({"agent"}): KeyPolicy.AGENT,
    }
    if names not in policies:
        raise InvalidSessionKey(f"session key {text!r} does not match any key policy")
    key = session_key(platform=unquote(pieces[0]), workspace=unquote(pieces[1]), policy=policies[names], **parts)
    if key.value != text.strip():
        raise InvalidSessionKey(f"session key {text!r} is not in canonical form; did you mean {key.value!r}?")
    return key


__all__ = ["MAX_PART_LENGTH", "parse_session_key", "session_key"]
