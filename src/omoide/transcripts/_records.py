"""Transcript record types: building and validating records.

A record is a plain JSON object (a ``dict`` here, typed with :class:`TypedDict`); see
the package docstring for the format. :func:`validate_record` checks one decoded line
and returns a *normalised* copy (content blocks in their canonical form), so the rest of
the package works on records that are known to be well formed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, cast

from omoide.errors import InvalidContent
from omoide.models import SUMMARY_ACK as SUMMARY_ACK
from omoide.models import SUMMARY_PREFIX as SUMMARY_PREFIX
from omoide.models import (
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_dict,
    ensure_utc,
)

RecordType: TypeAlias = Literal["user", "assistant", "tool_use", "tool_result", "compaction"]
RECORD_TYPES: tuple[RecordType, ...] = ("user", "assistant", "tool_use", "tool_result", "compaction")


EXTRA_FIELDS: tuple[str, ...] = ("author_id", "author_name", "is_bot", "message_id", "tokens")
"""Optional fields any conversation record may carry (kept by DB ↔ JSONL round trips).

``tokens`` is the cl100k token count of a record whose content is one text, written with it
so a replayed window is not encoded again (see ``TextBlock.tokens``)."""


class UserRecord(TypedDict):
    type: Literal["user"]
    content: str | list[dict[str, Any]]
    ts: float
    author_id: NotRequired[str]
    author_name: NotRequired[str]
    is_bot: NotRequired[bool]
    message_id: NotRequired[str]
    tokens: NotRequired[int]


class AssistantRecord(TypedDict):
    type: Literal["assistant"]
    content: list[dict[str, Any]]
    ts: float
    author_id: NotRequired[str]
    author_name: NotRequired[str]
    is_bot: NotRequired[bool]
    message_id: NotRequired[str]
    tokens: NotRequired[int]


class ToolUseRecord(TypedDict):
    type: Literal["tool_use"]
    tool_use_id: str
    name: str
    input: dict[str, Any]
    ts: float
    author_id: NotRequired[str]
    author_name: NotRequired[str]
    is_bot: NotRequired[bool]
    message_id: NotRequired[str]
    tokens: NotRequired[int]


class ToolResultRecord(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    ts: float
    is_error: NotRequired[bool]
    author_id: NotRequired[str]
    author_name: NotRequired[str]
    is_bot: NotRequired[bool]
    message_id: NotRequired[str]
    tokens: NotRequired[int]


class CompactionRecord(TypedDict):
    type: Literal["compaction"]
    summary: str
    replaces_through: int
    ts: float


Record: TypeAlias = UserRecord | AssistantRecord | ToolUseRecord | ToolResultRecord | CompactionRecord


# ------------------------------------------------------------------------ builders


def now_ts() -> float:
    """The current time as a record timestamp (seconds since the epoch, UTC)."""
    return time.time()


def ts_from_datetime(value: datetime) -> float:
    """A record timestamp for ``value`` (naive values are taken to be UTC)."""
    return ensure_utc(value).timestamp()


def datetime_from_ts(ts: float) -> datetime:
    """The aware UTC datetime of a record timestamp."""
    return datetime.fromtimestamp(ts, UTC)


def _with_extras(record: dict[str, Any], extras: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extras.items():
        if key not in EXTRA_FIELDS:
            raise InvalidContent(f"unknown record field {key!r}; optional fields are {', '.join(EXTRA_FIELDS)}")
        if value is not None:
            record[key] = value
    return record


def user_record(text: str | Sequence[Mapping[str, Any]], *, ts: float | None = None, **extras: Any) -> UserRecord:
    """Build a ``user`` record (text, or a list of text / tool_result blocks)."""
    content: Any = text if isinstance(text, str) else [dict(b) for b in text]
    raw = _with_extras({"type": "user", "content": content, "ts": now_ts() if ts is None else ts}, extras)
    return cast(UserRecord, validate_record(raw))


def assistant_record(
    blocks: str | Sequence[Mapping[str, Any]], *, ts: float | None = None, **extras: Any
) -> AssistantRecord:
    """Build an ``assistant`` record; a string becomes one text block."""
    content = [TextBlock(blocks).to_dict()] if isinstance(blocks, str) else [dict(b) for b in blocks]
    raw = _with_extras({"type": "assistant", "content": content, "ts": now_ts() if ts is None else ts}, extras)
    return cast(AssistantRecord, validate_record(raw))


def tool_use_record(
    tool_use_id: str, name: str, input: Mapping[str, Any], *, ts: float | None = None, **extras: Any
) -> ToolUseRecord:
    """Build a ``tool_use`` record."""
    raw = {
        "type": "tool_use",
        "tool_use_id": tool_use_id,
        "name": name,
        "input": dict(input) if isinstance(input, Mapping) else input,
        "ts": now_ts() if ts is None else ts,
    }
    return cast(ToolUseRecord, validate_record(_with_extras(raw, extras)))


def tool_result_record(
    tool_use_id: str, content: str, *, is_error: bool = False, ts: float | None = None, **extras: Any
) -> ToolResultRecord:
    """Build a ``tool_result`` record (``is_error`` is written only when true)."""
    raw: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
        "ts": now_ts() if ts is None else ts,
    }
    if is_error:
        raw["is_error"] = True
    return cast(ToolResultRecord, validate_record(_with_extras(raw, extras)))


def compaction_record(summary: str, replaces_through: int, *, ts: float | None = None) -> CompactionRecord:
    """Build a ``compaction`` record: records ``0..replaces_through`` are replaced by ``summary``."""
    raw = {
        "type": "compaction",
        "summary": summary,
        "replaces_through": replaces_through,
        "ts": now_ts() if ts is None else ts,
    }
    return cast(CompactionRecord, validate_record(raw))


# ---------------------------------------------------------------------- validation


def _require_str(raw: Mapping[str, Any], key: str, *, non_empty: bool = True) -> str:
    if key not in raw:
        raise InvalidContent(f"missing field {key!r}")
    value = raw[key]
    if not isinstance(value, str):
        raise InvalidContent(f"field {key!r} must be a string, got {_json_type(value)}")
    if non_empty and not value:
        raise InvalidContent(f"field {key!r} must not be empty")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _blocks(value: Any, allowed: tuple[type, ...], kind: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InvalidContent(
            f"field 'content' of a {kind} record must be a string or an array, got {_json_type(value)}"
        )
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        block = block_from_dict(item, where=f"content[{i}]")
        if not isinstance(block, allowed):
            raise InvalidContent(f"content[{i}]: a {kind} record may not hold a {block.type} block")
        out.append(block.to_dict())
    return out


def validate_record(raw: Any) -> Record:
    """Check one decoded record and return its normalised copy.

    Blocks are rewritten in canonical form (unknown block keys dropped, tool_result
    content lists joined into a string); unknown top-level keys are kept.

    Raises:
        InvalidContent: the record is not an object, has an unknown ``type``, or a
            missing or mistyped field. The message names the field.
    """
    if not isinstance(raw, Mapping):
        raise InvalidContent(f"a record must be a JSON object, got {_json_type(raw)}")
    if "type" not in raw:
        raise InvalidContent("missing field 'type'")
    kind = raw["type"]
    if kind not in RECORD_TYPES:
        raise InvalidContent(f"unknown record type {kind!r}; expected one of {', '.join(RECORD_TYPES)}")
    if "ts" not in raw:
        raise InvalidContent("missing field 'ts'")
    ts = raw["ts"]
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        raise InvalidContent(f"field 'ts' must be a finite number (seconds since the epoch), got {_json_type(ts)}")
    out = dict(raw)
    if kind == "compaction":
        out["summary"] = _require_str(raw, "summary")
        if "replaces_through" not in raw:
            raise InvalidContent("missing field 'replaces_through'")
        through = raw["replaces_through"]
        if isinstance(through, bool) or not isinstance(through, int) or through < 0:
            raise InvalidContent(f"field 'replaces_through' must be a record index ≥ 0, got {through!r:.40}")
        return cast(Record, out)
    for key in EXTRA_FIELDS:
        value = raw.get(key)
        if value is None:
            out.pop(key, None)
        elif key == "is_bot" and not isinstance(value, bool):
            raise InvalidContent(f"field 'is_bot' must be a boolean, got {_json_type(value)}")
        elif key == "tokens":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidContent(f"field 'tokens' must be an integer ≥ 0, got {value!r:.40}")
        elif key != "is_bot" and not isinstance(value, str):
            raise InvalidContent(f"field {key!r} must be a string, got {_json_type(value)}")
    if "content" not in raw and kind in ("user", "assistant", "tool_result"):
        raise InvalidContent("missing field 'content'")
    if kind == "user":
        content = raw["content"]
        if not isinstance(content, str):
            content = _blocks(content, (TextBlock, ToolResultBlock), "user")
            if not content:
                raise InvalidContent("field 'content' of a user record must not be an empty array")
        out["content"] = content
    elif kind == "assistant":
        content = raw["content"]
        out["content"] = (
            [TextBlock(content).to_dict()]
            if isinstance(content, str)
            else _blocks(content, (TextBlock, ToolUseBlock), "assistant")
        )
    elif kind == "tool_use":
        out["tool_use_id"] = _require_str(raw, "tool_use_id")
        out["name"] = _require_str(raw, "name")
        if "input" not in raw:
            raise InvalidContent("missing field 'input'")
        if not isinstance(raw["input"], Mapping):
            raise InvalidContent(f"field 'input' must be an object, got {_json_type(raw['input'])}")
        out["input"] = dict(raw["input"])
    else:  # tool_result
        out["tool_use_id"] = _require_str(raw, "tool_use_id")
        is_error = raw.get("is_error", False)
        if not isinstance(is_error, bool):
            raise InvalidContent(f"field 'is_error' must be a boolean, got {_json_type(is_error)}")
        block = block_from_dict(
            {"type": "tool_result", "tool_use_id": out["tool_use_id"], "content": raw["content"]}, where="content"
        )
        assert isinstance(block, ToolResultBlock)
        out["content"] = block.content
        out.pop("is_error", None)
        if is_error:
            out["is_error"] = True
    return cast(Record, out)
