"""rebuild_history merge rules, compaction replay, compaction_point and OpenAI conversion."""

from __future__ import annotations

import json

import pytest

from omoide.errors import InvalidContent, InvalidInput
from omoide.transcripts import (
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    assistant_record,
    compaction_point,
    compaction_record,
    rebuild_history,
    to_openai_messages,
    tool_result_record,
    tool_use_record,
    user_record,
)


def u(text):
    return user_record(text, ts=1)


def a(text):
    return assistant_record(text, ts=1)


def use(tid, name="f", **input):
    return tool_use_record(tid, name, input, ts=1)


def res(tid, content="ok", **kw):
    return tool_result_record(tid, content, ts=1, **kw)


def text(t):
    return {"type": "text", "text": t}


def tu(tid, name="f", **input):
    return {"type": "tool_use", "id": tid, "name": name, "input": input}


def tr(tid, content="ok"):
    return {"type": "tool_result", "tool_use_id": tid, "content": content}


def test_seed_example():
    history = rebuild_history([u("Hello"), a("Hi!")])
    assert history == [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": [text("Hi!")]}]


def test_tool_use_merges_into_preceding_assistant_turn():
    history = rebuild_history([u("q"), a("checking"), use("t1", path="a"), use("t2"), res("t1"), res("t2"), a("done")])
    assert history == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [text("checking"), tu("t1", path="a"), tu("t2")]},
        {"role": "user", "content": [tr("t1"), tr("t2")]},
        {"role": "assistant", "content": [text("done")]},
    ]


def test_tool_use_without_assistant_text_starts_an_assistant_turn():
    history = rebuild_history([u("q"), use("t1"), res("t1")])
    assert history[1] == {"role": "assistant", "content": [tu("t1")]}


def test_empty_assistant_record_then_tool_use():
    history = rebuild_history([u("q"), assistant_record([], ts=1), use("t1"), res("t1")])
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[1]["content"] == [tu("t1")]


def test_two_user_records_merge_into_one_turn():
    history = rebuild_history([u("one"), u("two"), a("ok")])
    assert history[0] == {"role": "user", "content": [text("one"), text("two")]}


def test_two_assistant_records_merge_into_one_turn():
    history = rebuild_history([u("q"), a("one"), a("two")])
    assert history[1] == {"role": "assistant", "content": [text("one"), text("two")]}


def test_user_text_after_tool_results_joins_their_turn_after_them():
    """Seed 002 would emit two user turns here; the API needs one, tool results first."""
    history = rebuild_history([u("q"), use("t1"), use("t2"), res("t1"), u("hurry up"), res("t2")])
    assert history[2] == {"role": "user", "content": [tr("t1"), tr("t2"), text("hurry up")]}


def test_tool_results_in_user_record_blocks():
    history = rebuild_history([u("q"), use("t1"), user_record([tr("t1"), text("and?")], ts=1)])
    assert history[2] == {"role": "user", "content": [tr("t1"), text("and?")]}


def test_is_error_is_kept():
    history = rebuild_history([u("q"), use("t1"), res("t1", "boom", is_error=True)])
    assert history[2]["content"] == [{**tr("t1", "boom"), "is_error": True}]


def test_inline_tool_use_in_assistant_record():
    history = rebuild_history([u("q"), assistant_record([text("x"), tu("t1")], ts=1), res("t1")])
    assert history[1]["content"] == [text("x"), tu("t1")]
    assert history[2]["content"] == [tr("t1")]


def test_history_may_start_with_assistant():
    assert [m["role"] for m in rebuild_history([a("hello"), u("hi")])] == ["assistant", "user"]


def test_history_is_a_copy():
    records = [u("q"), use("t1", path="a"), res("t1")]
    history = rebuild_history(records)
    history[1]["content"][0]["input"]["path"] = "changed"
    assert records[1]["input"] == {"path": "a"}


def test_raw_dicts_are_validated_with_their_index():
    with pytest.raises(InvalidContent, match="record 1: missing field 'ts'"):
        rebuild_history([u("q"), {"type": "user", "content": "x"}])


def test_sequence_error_names_the_record():
    with pytest.raises(InvalidContent, match="record 1: tool_result for tool_use_id 'nope'") as info:
        rebuild_history([u("q"), res("nope")])
    assert info.value.details["index"] == 1


# ---------------------------------------------------------------- compaction


def test_compaction_replaces_records_through_index():
    records = [u("a"), a("b"), u("c"), a("d"), compaction_record("talked about a and b", 1, ts=1), u("e")]
    history = rebuild_history(records)
    assert history == [
        {"role": "user", "content": SUMMARY_PREFIX + "talked about a and b"},
        {"role": "assistant", "content": [text(SUMMARY_ACK)]},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": [text("d")]},
        {"role": "user", "content": "e"},
    ]
    assert rebuild_history(records, apply_compaction=False) == rebuild_history(records[:4] + records[5:])


def test_summary_text_is_seed_002s():
    assert SUMMARY_PREFIX == "[Previous conversation summary]\n"
    assert SUMMARY_ACK == "Understood, I have the context."


def test_last_compaction_wins():
    records = [
        u("a"),
        a("b"),
        compaction_record("s1", 1, ts=1),
        u("c"),
        a("d"),
        compaction_record("s2", 3, ts=1),
        u("e"),
    ]
    history = rebuild_history(records)
    assert history[0]["content"] == SUMMARY_PREFIX + "s2"
    assert history[2:] == [{"role": "user", "content": "e"}]


def test_compaction_cut_after_a_user_turn_keeps_alternation():
    records = [u("a"), a("b"), u("c"), a("d"), compaction_record("s", 2, ts=1)]
    history = rebuild_history(records)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content"] == [text(SUMMARY_ACK), text("d")]


def test_compaction_point_maps_messages_to_records():
    records = [u("a"), a("b"), use("t1"), res("t1"), a("c"), u("d"), a("e")]
    # messages: [a] [b, t1] [result t1] [c] [d] [e]
    assert compaction_point(records, 1) == 0
    assert compaction_point(records, 3) == 3
    assert compaction_point(records, 4) == 4
    with pytest.raises(InvalidInput, match="would separate tool_use 't1' from its tool_result"):
        compaction_point(records, 2)
    with pytest.raises(InvalidInput, match="between 1 and 6"):
        compaction_point(records, 0)
    with pytest.raises(InvalidInput, match="between 1 and 6"):
        compaction_point(records, 7)


def test_compaction_point_on_compacted_history():
    records = [u("a"), a("b"), u("c"), a("d"), compaction_record("s", 1, ts=1), u("e"), a("f")]
    # history: summary, ack, c, d, e, f
    assert compaction_point(records, 2) == 1
    assert compaction_point(records, 4) == 3
    through = compaction_point(records, 5)
    assert through == 5
    records.append(compaction_record("s2", through, ts=1))
    assert rebuild_history(records) == [
        {"role": "user", "content": SUMMARY_PREFIX + "s2"},
        {"role": "assistant", "content": [text(SUMMARY_ACK), text("f")]},
    ]


# -------------------------------------------------------------------- OpenAI


def test_openai_conversion():
    records = [
        u("q"),
        a("checking"),
        use("t1", "search", q="天気"),
        use("t2", "read"),
        res("t1", "晴れ"),
        u("also"),
        res("t2", "boom", is_error=True),
        a("done"),
    ]
    assert to_openai_messages(records) == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "search", "arguments": '{"q": "天気"}'}},
                {"id": "t2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "晴れ"},
        {"role": "tool", "tool_call_id": "t2", "content": "boom"},
        {"role": "user", "content": "also"},
        {"role": "assistant", "content": "done"},
    ]


def test_openai_assistant_without_text_has_null_content():
    out = to_openai_messages([u("q"), use("t1"), res("t1")])
    assert out[1]["content"] is None
    assert json.loads(out[1]["tool_calls"][0]["function"]["arguments"]) == {}


def test_openai_several_texts_become_parts():
    out = to_openai_messages([u("one"), u("two"), a("x"), a("y")])
    assert out == [
        {"role": "user", "content": [text("one"), text("two")]},
        {"role": "assistant", "content": [text("x"), text("y")]},
    ]


def test_openai_accepts_anthropic_messages():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [tu("t1", x=1)]},
        {"role": "user", "content": [tr("t1", "r")]},
    ]
    out = to_openai_messages(messages)
    assert out[1]["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'
    assert out[2] == {"role": "tool", "tool_call_id": "t1", "content": "r"}
    assert to_openai_messages(rebuild_history([u("q"), use("t1", x=1), res("t1", "r")])) == out


def test_openai_rejects_a_mix_and_bad_roles():
    with pytest.raises(InvalidContent, match="not a mix"):
        to_openai_messages([{"role": "user", "content": "q"}, u("x")])
    with pytest.raises(InvalidContent, match="role must be 'user' or 'assistant'"):
        to_openai_messages([{"role": "system", "content": "q"}])
    assert to_openai_messages([]) == []


def test_one_text_records_carry_their_token_count_through_a_replay() -> None:
    """The first prompt built from a replayed JSONL session reads the counts (issue 4)."""
    from omoide.models import Message, TextBlock, ToolUseBlock
    from omoide.providers.tokens import get_token_counter
    from omoide.transcripts import messages_from_records, records_from_messages

    text = "明日の勉強会は何時から？ The room is 3F."
    records = records_from_messages(
        [
            Message.user(text),
            Message("assistant", (TextBlock("見てみます"), ToolUseBlock("t1", "recall", {"q": "勉強会"}))),
        ]
    )
    exact = get_token_counter().count(text)
    assert records[0]["tokens"] == exact
    assert "tokens" not in records[1]  # several blocks: counted when used
    replayed = messages_from_records(json.loads(json.dumps(records)))
    assert replayed[0].content[0].tokens == exact  # type: ignore[union-attr]
    assert [getattr(b, "tokens", None) for b in replayed[1].content] == [None, None]


@pytest.mark.parametrize("tokens", [10_000, 0])
def test_an_impossible_stored_count_is_dropped(tokens: int) -> None:
    """A hand-edited line whose count cannot be right (more tokens than bytes, or none for a
    text) is counted again instead of trusted."""
    from omoide.transcripts import messages_from_records

    record = {"type": "user", "content": "short", "ts": 1.0, "tokens": tokens}
    assert messages_from_records([record])[0].content[0].tokens is None  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["3", -1, True, 1.5])
def test_a_mistyped_token_count_is_a_corrupt_record(bad: object) -> None:
    from omoide.transcripts import validate_record

    with pytest.raises(InvalidContent, match="'tokens' must be an integer"):
        validate_record({"type": "user", "content": "hi", "ts": 1.0, "tokens": bad})
