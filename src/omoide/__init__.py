"""omoide (思い出): a memory engine for chat bots and agents."""

from omoide.engine import Memory
from omoide.errors import OmoideError
from omoide.keys import parse_session_key, session_key
from omoide.models import (
    KeyPolicy,
    Message,
    Session,
    SessionKey,
    SessionStatus,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from omoide.settings import Settings, load_settings

__version__ = "0.1.0"

__all__ = [
    "KeyPolicy",
    "Memory",
    "Message",
    "OmoideError",
    "Session",
    "SessionKey",
    "SessionStatus",
    "Settings",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "__version__",
    "load_settings",
    "parse_session_key",
    "session_key",
]
