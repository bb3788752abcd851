"""Replay: flat transcript records → Anthropic Messages and OpenAI chat histories.

Seed 002's ``_rebuild_history`` appends one turn per record and merges only tool_use
into a preceding assistant turn and tool_results into a preceding tool_result turn. That
can emit two user turns in a row (a user text after a tool_result turn, or two user
records), which the Anthropic API rejects. Here every record becomes a *segment* of
blocks with a role, and a segment whose role equals the previous turn's role is merged
into that turn, so roles strictly alternate. Inside a user turn, tool_result blocks are
moved (stably) in front of other blocks, as the Anthropic API requires.

Pairing rules, checked while replaying (violations raise ``InvalidContent`` with
``details['index']``, the 0-based record index, which the file reader turns into a line
number):

* a tool_use id is used once; a tool_result answers a tool_use id once;
* a tool_result answers a tool_use held by the assistant turn right before its own
  user turn (no assistant turn, and no compaction boundary, may come between).

Compaction: the last ``compaction`` record wins; records ``0..replaces_through`` are
replaced by seed 002's summary pair and replay continues after ``replaces_through``
(compaction records themselves add nothing).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from omoide.errors import InvalidContent, InvalidInput
from omoide.models import block_from_dict
from omoide.transcripts._records import SUMMARY_ACK, SUMMARY_PREFIX, Record, validate_record


def _problem(index: int, problem: str) -> InvalidContent:
    return InvalidContent(f"record {index}: {problem}", index=index, problem=problem)


@dataclass(slots=True)
class _Turn:
    role: str
    blocks: list[dict[str, Any]]
    first: int  # index of the first record merged into this turn
    last: int  # index of the last record merged into this turn
    plain: str | None = None  # the turn is exactly one user record whose content was a string
    tool_uses: dict[str, int] = field(default_factory=dict)  # tool_use id → record index


def _segment(record: Record) -> tuple[str, list[dict[str, Any]], str | None]:
    if record["type"] == "user":
        content = record["content"]
        if isinstance(content, str):
            return "user", [{"type": "text", "text": content}], content
        return "user", [dict(b) for b in content], None
    if record["type"] == "assistant":
        return "assistant", [dict(b) for b in record["content"]], None
    if record["type"] == "tool_use":
        block = {"type": "tool_use", "id": record["tool_use_id"], "name": record["name"], "input": record["input"]}
        return "assistant", [block], None
    if record["type"] == "tool_result":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": record["tool_use_id"],
            "content": record["content"],
        }
        if record.get("is_error"):
            result["is_error"] = True
        return "user", [result], None
    raise AssertionError(f"not a conversation record: {record['type']}")  # callers filter compaction records


def _build(
    records: Sequence[Record],
    indices: Iterable[int],
    turns: list[_Turn],
    *,
    boundary: tuple[int, int] | None = None,
) -> list[_Turn]:
    """Merge the records at ``indices`` onto ``turns``; check tool pairing.

    ``boundary`` is ``(compaction index, replaces_through)`` when replaying after a
    compaction, so a tool_result whose tool_use was compacted away is named as such.
    """
    uses: dict[str, int] = {}
    answered: dict[str, int] = {}
    for i in indices:
        role, blocks, plain = _segment(records[i])
        for block in blocks:
            if block["type"] == "tool_use":
                tid = block["id"]
                if tid in uses:
                    raise _problem(i, f"duplicate tool_use id {tid!r} (first used by record {uses[tid]})")
                uses[tid] = i
        if not blocks:
            continue
        if turns and turns[-1].role == role:
            turn = turns[-1]
            turn.blocks.extend(blocks)
            turn.plain = None
            turn.last = i
        else:
            turn = _Turn(role, blocks, first=i, last=i, plain=plain)
            turns.append(turn)
        for block in blocks:
            if block["type"] == "tool_use":
                turn.tool_uses[block["id"]] = i
            elif block["type"] == "tool_result":
                _check_result(block["tool_use_id"], i, turns, uses, answered, boundary, records)
    return turns


def _check_result(
    tid: str,
    i: int,
    turns: list[_Turn],
    uses: dict[str, int],
    answered: dict[str, int],
    boundary: tuple[int, int] | None,
    records: Sequence[Record],
) -> None:
    if tid in answered:
        raise _problem(i, f"duplicate tool_result for tool_use_id {tid!r} (first answered by record {answered[tid]})")
    if tid not in uses:
        if boundary is not None and any(_uses_id(records[j], tid) for j in range(boundary[1] + 1)):
            raise _problem(
                i,
                f"tool_result for tool_use_id {tid!r} is separated from its tool_use by the compaction "
                f"at record {boundary[0]} (replaces_through={boundary[1]}); a compaction must not split a tool call",
            )
        raise _problem(i, f"tool_result for tool_use_id {tid!r} has no earlier tool_use with that id")
    previous = turns[-2] if len(turns) >= 2 else None
    if previous is None or tid not in previous.tool_uses:
        raise _problem(
            i,
            f"tool_result for tool_use_id {tid!r} does not follow its tool_use (record {uses[tid]}): "
            "an assistant turn comes between them",
        )
    answered[tid] = i


def _uses_id(record: Record, tid: str) -> bool:
    if record["type"] == "tool_use":
        return record["tool_use_id"] == tid
    if record["type"] == "assistant":
        return any(b.get("type") == "tool_use" and b.get("id") == tid for b in record["content"])
    return False


def _last_compaction(records: Sequence[Record]) -> int | None:
    """Check every compaction record; return the index of the last one."""
    last: int | None = None
    through_before = -1
    for i, record in enumerate(records):
        if record["type"] != "compaction":
            continue
        through = record["replaces_through"]
        if through >= i:
            raise _problem(i, f"compaction replaces_through={through} must point to an earlier record (< {i})")
        if through < through_before:
            raise _problem(
                i, f"compaction replaces_through={through} goes back before an earlier compaction's {through_before}"
            )
        through_before = through
        last = i
    return last


def _conversation(records: Sequence[Record], start: int) -> Iterable[int]:
    return (i for i in range(start, len(records)) if records[i]["type"] != "compaction")


def _replay(records: Sequence[Record], *, apply_compaction: bool) -> list[_Turn]:
    last = _last_compaction(records)
    full = _build(records, _conversation(records, 0), [])
    if last is None or not apply_compaction:
        return full
    compaction = records[last]
    assert compaction["type"] == "compaction"
    through = compaction["replaces_through"]
    summary = [
        _Turn("user", [{"type": "text", "text": SUMMARY_PREFIX + compaction["summary"]}], through, through),
        _Turn("assistant", [{"type": "text", "text": SUMMARY_ACK}], through, through),
    ]
    summary[0].plain = SUMMARY_PREFIX + compaction["summary"]
    return _build(records, _conversation(records, through + 1), summary, boundary=(last, through))


def check_sequence(records: Sequence[Record]) -> None:
    """Check the sequence rules of already validated records (see the module docstring).

    Raises:
        InvalidContent: ``details['index']`` is the offending record's 0-based index.
    """
    _replay(records, apply_compaction=True)


def _validated(records: Iterable[Mapping[str, Any]]) -> list[Record]:
    out: list[Record] = []
    for i, raw in enumerate(records):
        try:
            out.append(validate_record(raw))
        except InvalidContent as exc:
            raise InvalidContent(f"record {i}: {exc.message}", index=i, problem=exc.message) from exc
    return out


def _render(turn: _Turn) -> dict[str, Any]:
    if turn.plain is not None:
        return {"role": turn.role, "content": turn.plain}
    blocks = [_copy_block(b) for b in turn.blocks]
    if turn.role == "user":
        blocks.sort(key=lambda b: b["type"] != "tool_result")  # stable: results first, order kept
    return {"role": turn.role, "content": blocks}


def _copy_block(block: dict[str, Any]) -> dict[str, Any]:
    out = dict(block)
    if "input" in out:
        out["input"] = copy.deepcopy(out["input"])  # callers may mutate the history freely
    return out


def rebuild_history(records: Iterable[Mapping[str, Any]], *, apply_compaction: bool = True) -> list[dict[str, Any]]:
    """Replay transcript records as an Anthropic Messages ``messages`` list.

    tool_use records join the assistant turn before them, consecutive tool_results form
    one user turn, consecutive same-role turns are merged (string content becomes a text
    block), so roles strictly alternate. A user turn that is a single string record keeps
    its string content, as in seed 002.

    Args:
        records: transcript records (validated here).
        apply_compaction: replace the records a ``compaction`` record covers by the
            summary pair (default); ``False`` replays the full original conversation.

    Raises:
        InvalidContent: a malformed record or a broken sequence rule;
            ``details['index']`` is the record's 0-based index.
    """
    checked = _validated(records)
    return [_render(t) for t in _replay(checked, apply_compaction=apply_compaction)]


def compaction_point(records: Iterable[Mapping[str, Any]], compress_count: int) -> int:
    """The ``replaces_through`` value that compacts the first messages of a history.

    Args:
        records: the transcript's records.
        compress_count: how many leading messages of ``rebuild_history(records)`` the
            summary replaces.

    Returns:
        The index of the last record those messages were built from.

    Raises:
        InvalidInput: ``compress_count`` is out of range, or the cut would separate a
            tool_use from its tool_result (compact one message more or fewer).
    """
    turns = _replay(_validated(records), apply_compaction=True)
    if not 1 <= compress_count <= len(turns):
        raise InvalidInput(
            f"compress_count must be between 1 and {len(turns)} (the history length), got {compress_count}"
        )
    cut = turns[compress_count - 1]
    if compress_count < len(turns):
        following = turns[compress_count]
        split = [
            b["tool_use_id"]
            for b in following.blocks
            if b["type"] == "tool_result" and b["tool_use_id"] in cut.tool_uses
        ]
        if split:
            raise InvalidInput(
                f"compacting {compress_count} messages would separate tool_use {split[0]!r} from its tool_result; "
                "compact one message more or fewer"
            )
    return cut.last


# ------------------------------------------------------------------------- OpenAI


def _anthropic_messages(items: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if all("type" in item and "role" not in item for item in items):
        return rebuild_history(items)
    if not all("role" in item for item in items):
        raise InvalidContent("expected transcript records (with 'type') or Anthropic messages (with 'role'), not a mix")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        role, content = item.get("role"), item.get("content")
        if role not in ("user", "assistant"):
            raise InvalidContent(f"messages[{i}]: role must be 'user' or 'assistant', got {role!r}")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif isinstance(content, list):
            blocks = [block_from_dict(b, where=f"messages[{i}].content[{j}]").to_dict() for j, b in enumerate(content)]
            out.append({"role": role, "content": blocks})
        else:
            raise InvalidContent(f"messages[{i}]: content must be a string or a list of blocks")
    return out


def _openai_text(texts: list[str]) -> str | list[dict[str, Any]]:
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def to_openai_messages(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Convert transcript records or Anthropic messages to OpenAI chat messages.

    An assistant turn becomes one ``assistant`` message whose tool_use blocks are
    ``tool_calls`` (``arguments`` is a JSON string); each tool_result becomes one
    ``role: "tool"`` message with ``tool_call_id``, emitted before the user's text of the
    same turn. One text block becomes a string; several become a list of text parts
    (nothing is joined, so no text changes). OpenAI has no error flag for tool results:
    ``is_error`` is dropped.

    Raises:
        InvalidContent: malformed records or messages.
    """
    listed = list(items)
    messages = _anthropic_messages(listed) if listed else []
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        texts = [b["text"] for b in content if b["type"] == "text"]
        if message["role"] == "user":
            out.extend(
                {"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]}
                for b in content
                if b["type"] == "tool_result"
            )
            if texts:
                out.append({"role": "user", "content": _openai_text(texts)})
            continue
        calls = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)},
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        assistant: dict[str, Any] = {"role": "assistant", "content": _openai_text(texts) if texts else None}
        if calls:
            assistant["tool_calls"] = calls
        out.append(assistant)
    return out
