"""Hypothesis properties of replay and conversion over random valid transcripts.

Valid sequences mix user texts (strings or text-block lists), assistant texts, and tool
episodes: optional assistant text, 1-3 tool calls (flat tool_use records or inline
blocks), then every result in any order and batching (flat tool_result records or user
records holding tool_result blocks), optionally with user texts between the batches.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from omoide.errors import InvalidInput
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.transcripts import (
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    assistant_record,
    compaction_point,
    compaction_record,
    datetime_from_ts,
    dump_records,
    messages_from_records,
    parse_jsonl,
    rebuild_history,
    records_from_messages,
    to_openai_messages,
    tool_result_record,
    tool_use_record,
    ts_from_datetime,
    user_record,
)

texts = st.text(max_size=12)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def transcripts(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    next_id = 0
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["user", "user_blocks", "assistant", "tools", "tools"]))
        if kind == "user":
            records.append(user_record(draw(texts), ts=1))
        elif kind == "user_blocks":
            parts = draw(st.lists(texts, min_size=1, max_size=3))
            records.append(user_record([{"type": "text", "text": t} for t in parts], ts=1))
        elif kind == "assistant":
            records.append(assistant_record(draw(texts), ts=1))
        else:
            ids = [f"toolu_{next_id + i}" for i in range(draw(st.integers(1, 3)))]
            next_id += len(ids)
            lead = draw(st.one_of(st.none(), texts))
            uses = [{"type": "tool_use", "id": tid, "name": "f", "input": {"n": tid}} for tid in ids]
            if draw(st.booleans()):  # inline blocks in one assistant record
                records.append(
                    assistant_record(([{"type": "text", "text": lead}] if lead is not None else []) + uses, ts=1)
                )
            else:
                if lead is not None:
                    records.append(assistant_record(lead, ts=1))
                records.extend(tool_use_record(b["id"], "f", b["input"], ts=1) for b in uses)
            order = draw(st.permutations(ids))
            i = 0
            while i < len(order):
                size = draw(st.integers(1, len(order) - i))
                batch, i = order[i : i + size], i + size
                if draw(st.booleans()):
                    records.extend(tool_result_record(tid, f"result of {tid}", ts=1) for tid in batch)
                else:
                    blocks = [
                        {"type": "tool_result", "tool_use_id": tid, "content": f"result of {tid}"} for tid in batch
                    ]
                    records.append(user_record(blocks, ts=1))
                if i < len(order) and draw(st.booleans()):
                    records.append(user_record(draw(texts), ts=1))
    return records


def _texts_in(records: list[dict[str, Any]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for r in records:
        if r["type"] in ("user", "assistant"):
            content = r["content"]
            if isinstance(content, str):
                out[content] += 1
            else:
                out.update(b["text"] for b in content if b["type"] == "text")
    return out


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _ids(records: list[dict[str, Any]], kind: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for r in records:
        if r["type"] == kind:
            out[r["tool_use_id"]] += 1
        elif kind == "tool_use" and r["type"] == "assistant":
            out.update(b["id"] for b in r["content"] if b["type"] == "tool_use")
        elif kind == "tool_result" and r["type"] == "user" and not isinstance(r["content"], str):
            out.update(b["tool_use_id"] for b in r["content"] if b["type"] == "tool_result")
    return out


@SETTINGS
@given(transcripts())
def test_roles_strictly_alternate(records):
    history = rebuild_history(records)
    roles = [m["role"] for m in history]
    assert all(x != y for x, y in itertools.pairwise(roles))
    if records and records[0]["type"] == "user":
        assert roles[0] == "user"
    assert all(_blocks(m) for m in history)


@SETTINGS
@given(transcripts())
def test_every_tool_result_is_in_the_turn_after_its_tool_use(records):
    history = rebuild_history(records)
    for i, message in enumerate(history):
        blocks = _blocks(message)
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if not results:
            continue
        assert message["role"] == "user"
        assert i > 0
        previous_uses = {b["id"] for b in _blocks(history[i - 1]) if b["type"] == "tool_use"}
        assert set(results) <= previous_uses
        kinds = [b["type"] for b in blocks]
        assert kinds == sorted(kinds, key=lambda k: k != "tool_result")  # results come first


@SETTINGS
@given(transcripts())
def test_no_block_dropped_or_duplicated(records):
    history = rebuild_history(records)
    out_texts: Counter[str] = Counter()
    out_uses: Counter[str] = Counter()
    out_results: Counter[str] = Counter()
    for message in history:
        for b in _blocks(message):
            if b["type"] == "text":
                out_texts[b["text"]] += 1
            elif b["type"] == "tool_use":
                out_uses[b["id"]] += 1
            else:
                out_results[b["tool_use_id"]] += 1
    assert out_texts == _texts_in(records)
    assert out_uses == _ids(records, "tool_use")
    assert out_results == _ids(records, "tool_result")


@SETTINGS
@given(transcripts())
def test_openai_keeps_every_tool_call_paired(records):
    out = to_openai_messages(records)
    calls_total = 0
    for i, message in enumerate(out):
        if message["role"] == "tool":
            j = i - 1
            while out[j]["role"] == "tool":
                j -= 1
            assert out[j]["role"] == "assistant"
            assert message["tool_call_id"] in {c["id"] for c in out[j]["tool_calls"]}
        if message["role"] == "assistant" and "tool_calls" in message:
            calls = [c["id"] for c in message["tool_calls"]]
            calls_total += len(calls)
            answers = []
            for follower in out[i + 1 :]:
                if follower["role"] != "tool":
                    break
                answers.append(follower["tool_call_id"])
            assert sorted(answers) == sorted(calls)
            for call in message["tool_calls"]:
                assert json.loads(call["function"]["arguments"]) == {"n": call["id"]}
    assert calls_total == sum(_ids(records, "tool_use").values())
    assert sum(m["role"] == "tool" for m in out) == sum(_ids(records, "tool_result").values())


@SETTINGS
@given(transcripts(), st.data())
def test_compaction_replays_as_summary_plus_tail(records, data):
    full = rebuild_history(records)
    assume(len(full) >= 2)
    count = data.draw(st.integers(1, len(full) - 1))
    try:
        through = compaction_point(records, count)
    except InvalidInput:
        assume(False)
    compacted = rebuild_history([*records, compaction_record("S", through, ts=1)])
    expected = [
        {"role": "user", "content": SUMMARY_PREFIX + "S"},
        {"role": "assistant", "content": [{"type": "text", "text": SUMMARY_ACK}]},
    ]
    tail = full[count:]
    if tail and tail[0]["role"] == "assistant":
        expected[1]["content"] = expected[1]["content"] + tail[0]["content"]
        tail = tail[1:]
    assert compacted == expected + tail
    assert rebuild_history([*records, compaction_record("S", through, ts=1)], apply_compaction=False) == full


@SETTINGS
@given(transcripts())
def test_jsonl_round_trip(records):
    assert parse_jsonl(dump_records(records)) == records


@SETTINGS
@given(transcripts())
def test_messages_round_trip_through_records(records):
    messages = messages_from_records(records)
    again = messages_from_records(parse_jsonl(dump_records(records_from_messages(messages))))
    assert again == messages
    # same turns; a one-text-block user content may come back as a plain string
    normalised = [{**m, "content": _blocks(m)} for m in rebuild_history(records_from_messages(messages))]
    assert normalised == [{**m, "content": _blocks(m)} for m in rebuild_history(records)]


def _message_strategy() -> st.SearchStrategy[Message]:
    optional = st.one_of(st.none(), st.text(min_size=1, max_size=8))
    when = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))
    user = st.builds(
        Message,
        st.just("user"),
        st.lists(st.builds(TextBlock, texts), min_size=1, max_size=3).map(tuple),
        author_id=optional,
        author_name=optional,
        is_bot=st.booleans(),
        message_id=optional,
        created_at=when,
    )
    assistant = st.builds(
        Message,
        st.just("assistant"),
        st.lists(st.builds(TextBlock, texts), min_size=1, max_size=3).map(tuple),
        author_id=optional,
        author_name=optional,
        is_bot=st.booleans(),
        message_id=optional,
        created_at=when,
    )
    return st.one_of(user, assistant)


@SETTINGS
@given(st.lists(_message_strategy(), max_size=8))
def test_db_messages_round_trip_losslessly(messages):
    """DB → JSONL → DB keeps authors, bot flags, platform ids, times and message boundaries."""
    records = records_from_messages(messages)
    assert messages_from_records(parse_jsonl(dump_records(records))) == messages


def test_db_messages_with_tool_blocks_round_trip():
    messages = [
        Message.user("read a"),
        Message("assistant", (TextBlock("ok"), ToolUseBlock("t1", "read", {"p": "a"}))),
        Message("user", (ToolResultBlock("t1", "A", is_error=True), TextBlock("thanks"))),
        Message("assistant", (ToolUseBlock("t2", "read", {}),)),  # tool-only message stays its own message
        Message("user", (ToolResultBlock("t2", "B"),)),
    ]
    assert messages_from_records(parse_jsonl(dump_records(records_from_messages(messages)))) == messages


@SETTINGS
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2240, 1, 1), timezones=st.just(UTC)))
def test_timestamps_are_exact_to_the_microsecond(when):
    assert datetime_from_ts(json.loads(json.dumps(ts_from_datetime(when)))) == when
