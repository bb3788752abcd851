"""A transcript session as its agent's index lists it, and the checks on ids and names.

Agent and session ids become file names, so :func:`check_component` accepts only a safe
single path component; a session's optional name (its label) is one line of text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omoide.errors import InvalidInput

MAX_ID_LENGTH = 128
MAX_LABEL_LENGTH = 200


@dataclass(frozen=True, slots=True)
class TranscriptSession:
    """One JSONL session of an agent, as listed in the index.

    Attributes:
        agent_id: the agent the session belongs to.
        id: the session id (12 hex digits for sessions this store creates).
        label: the optional human name given at creation (``/new my-project``).
        created_at / last_active_at: aware UTC datetimes.
        message_count: conversation records appended (compaction records not counted).
        path: the JSONL file.
    """

    agent_id: str
    id: str
    label: str | None
    created_at: datetime
    last_active_at: datetime
    message_count: int
    path: Path

    @property
    def display_name(self) -> str:
        """The id, with the name in parentheses when the session has one."""
        return f"{self.id} ({self.label})" if self.label else self.id


def check_component(kind: str, value: object) -> str:
    """Return ``value`` if it is a safe single path component, else raise ``InvalidInput``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{kind} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidInput(f"{kind} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{kind} must be at most {MAX_ID_LENGTH} characters, got {len(value)}")
    if "/" in value or "\\" in value or "\x00" in value or ".." in value or value.startswith("."):
        raise InvalidInput(f"{kind} {value!r} is not a safe file name: no '/', '\\', '..', NUL or leading '.'")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InvalidInput(f"{kind} {value!r} contains a control character")
    return value


def check_label(label: object) -> str:
    """A session name, stripped; ``InvalidInput`` when empty, too long or holding a control character."""
    if not isinstance(label, str):
        raise InvalidInput(f"session name must be a string, got {type(label).__name__}")
    text = label.strip()
    if not text:
        raise InvalidInput("session name must not be empty")
    if len(text) > MAX_LABEL_LENGTH:
        raise InvalidInput(f"session name must be at most {MAX_LABEL_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise InvalidInput(f"session name {text!r} contains a control character")
    return text


__all__ = ["MAX_ID_LENGTH", "MAX_LABEL_LENGTH", "TranscriptSession", "check_component", "check_label"]
