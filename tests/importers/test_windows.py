"""Message windows: gap and size splitting, conversations, invariants (hypothesis)."""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.errors import InvalidInput
from omoide.importers import (
    SEPARATOR_TOKENS,
    ImportedMessage,
    message_line,
    message_windows,
    split_windows,
    window_text,
)
from omoide.providers.tokens import get_token_counter

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)


class LenCounter:
    """One token per character: predictable sizes for the tests."""

    def count(self, text: str) -> int:
        return len(text)


def msg(
    minutes: float,
    text: str = "hi",
    *,
    author: str = "a",
    channel: str = "c1",
    thread: str | None = None,
    mid: str | None = None,
) -> ImportedMessage:
    when = T0 + timedelta(minutes=minutes)
    return ImportedMessage(
        platform="discord",
        workspace_id="g",
        workspace_name="G",
        channel_id=channel,
        channel_name=channel,
        thread_id=thread,
        thread_name=None,
        message_id=mid or f"{channel}-{thread}-{minutes}-{text}",
        author_id=author,
        author_name=author.upper(),
        is_bot=author == "bot",
        text=text,
        created_at=when,
    )


def test_gap_splits_windows() -> None:
    messages = [msg(0), msg(10), msg(40), msg(71), msg(101)]
    windows = message_windows(messages, max_gap=timedelta(minutes=30), counter=LenCounter())
    # 10 → 40 is exactly 30 minutes (kept together); 40 → 71 is 31 (split); 71 → 101 is 30 (kept)
    assert [w.message_ids for w in windows] == [
        tuple(m.message_id for m in messages[:3]),
        tuple(m.message_id for m in messages[3:]),
    ]
    assert windows[0].started_at == messages[0].created_at and windows[0].ended_at == messages[2].created_at


def test_message_and_token_limits() -> None:
    messages = [msg(i, "x" * 5, mid=str(i)) for i in range(7)]  # each line "A: xxxxx" = 8 tokens
    by_count = message_windows(messages, max_messages=3, counter=LenCounter())
    assert [len(w.messages) for w in by_count] == [3, 3, 1]
    by_tokens = message_windows(messages, max_tokens=8 * 2 + SEPARATOR_TOKENS, counter=LenCounter())
    assert [len(w.messages) for w in by_tokens] == [2, 2, 2, 1]
    assert [w.token_count for w in by_tokens] == [17, 17, 17, 8]


def test_an_oversized_message_gets_a_window_of_its_own() -> None:
    messages = [msg(0, "short"), msg(1, "y" * 100), msg(2, "short")]
    windows = message_windows(messages, max_tokens=20, counter=LenCounter())
    assert [len(w.messages) for w in windows] == [1, 1, 1]
    assert [w.oversized for w in windows] == [False, True, False]


def test_channels_and_threads_are_windowed_separately_in_time_order() -> None:
    messages = [
        msg(5, "c1 late", mid="3"),
        msg(1, "thread", thread="t1", mid="t"),
        msg(0, "c1 early", mid="1"),
        msg(2, "other", channel="c2", mid="o"),
        msg(3, "c1 mid", author="b", mid="2"),
    ]
    windows = message_windows(messages, counter=LenCounter())
    assert [(w.channel_id, w.thread_id, w.message_ids) for w in windows] == [
        ("c1", None, ("1", "2", "3")),
        ("c1", "t1", ("t",)),
        ("c2", None, ("o",)),
    ]
    first = windows[0]
    assert [(p.author_id, p.author_name, p.message_count) for p in first.participants] == [("a", "A", 2), ("b", "B", 1)]
    assert window_text(first) == "A: c1 early\nB: c1 mid\nA: c1 late"
    assert window_text(first, timestamps=True).splitlines()[0] == "[2025-01-01 09:00] A: c1 early"
    assert first.key == "discord:g:c1:-:1-3"
    assert first.channel_name == "c1" and first.platform == "discord" and first.workspace_id == "g"


def test_the_default_counter_is_tiktoken() -> None:
    messages = [msg(0, "今日は天気がいいですね"), msg(1, "そうですね、散歩に行きましょう")]
    (window,) = message_windows(messages)
    counter = get_token_counter()
    assert window.token_count == sum(counter.count(message_line(m)) for m in messages) + SEPARATOR_TOKENS
    assert counter.count(window_text(window)) <= window.token_count + 1


def test_multiline_messages_are_indented() -> None:
    assert message_line(msg(0, "line one\nline two")) == "A: line one\n  line two"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_gap": timedelta(0)}, {"max_messages": 0}, {"max_tokens": 0}],
)
def test_bad_limits(kwargs: dict) -> None:
    with pytest.raises(InvalidInput):
        message_windows([msg(0)], counter=LenCounter(), **kwargs)


def test_split_windows_checks_its_input() -> None:
    with pytest.raises(InvalidInput, match="time order"):
        list(split_windows([msg(5), msg(1)], counter=LenCounter()))
    with pytest.raises(InvalidInput, match="one conversation"):
        list(split_windows([msg(0), msg(1, channel="c2")], counter=LenCounter()))
    assert list(split_windows([], counter=LenCounter())) == []


# ----------------------------------------------------------------- properties

_message_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2),  # conversation
        st.integers(min_value=0, max_value=90),  # minutes since the previous message of that conversation
        st.text(alphabet="abcあいう漢字 \n", min_size=0, max_size=40),
        st.sampled_from(["a", "b", "bot"]),
    ),
    max_size=40,
)
_CONVERSATIONS = [("c1", None), ("c1", "t1"), ("c2", None)]


def _build(specs: list[tuple[int, int, str, str]]) -> list[ImportedMessage]:
    clocks = [0, 0, 0]
    out = []
    for i, (conv, gap, text, author) in enumerate(specs):
        clocks[conv] += gap
        channel, thread = _CONVERSATIONS[conv]
        out.append(
            dataclasses.replace(
                msg(clocks[conv], text or "x", author=author, channel=channel, thread=thread), message_id=f"m{i}"
            )
        )
    return out


@settings(max_examples=100, deadline=None)
@given(
    specs=_message_specs,
    max_gap=st.integers(min_value=1, max_value=60),
    max_messages=st.integers(min_value=1, max_value=8),
    max_tokens=st.integers(min_value=5, max_value=120),
    shuffle_seed=st.randoms(use_true_random=False),
)
def test_window_invariants(specs, max_gap, max_messages, max_tokens, shuffle_seed) -> None:
    messages = _build(specs)
    shuffled = list(messages)
    shuffle_seed.shuffle(shuffled)  # input order must not matter (--reverse, interleaved files)
    counter = LenCounter()
    gap = timedelta(minutes=max_gap)
    windows = message_windows(shuffled, max_gap=gap, max_messages=max_messages, max_tokens=max_tokens, counter=counter)

    # every message in exactly one window
    ids = [i for w in windows for i in w.message_ids]
    assert sorted(ids) == sorted(m.message_id for m in messages)
    assert len(ids) == len(set(ids))

    expected_order: dict[tuple, list[str]] = defaultdict(list)
    for m in sorted(messages, key=lambda m: (m.created_at, int(m.message_id[1:]))):  # ties: by id
        expected_order[m.conversation].append(m.message_id)
    got_order: dict[tuple, list[ImportedMessage]] = defaultdict(list)

    for w in windows:
        assert {m.conversation for m in w.messages} == {w.conversation}
        assert w.message_ids == tuple(m.message_id for m in w.messages)
        assert len(w.messages) <= max_messages
        cost = sum(counter.count(message_line(m)) for m in w.messages) + SEPARATOR_TOKENS * (len(w.messages) - 1)
        assert w.token_count == cost
        assert w.token_count <= max_tokens or (len(w.messages) == 1 and w.oversized)
        for a, b in zip(w.messages, w.messages[1:], strict=False):
            assert a.created_at <= b.created_at
            assert b.created_at - a.created_at <= gap  # gaps respected inside a window
        assert (w.started_at, w.ended_at) == (w.messages[0].created_at, w.messages[-1].created_at)
        assert sum(p.message_count for p in w.participants) == len(w.messages)
        got_order[w.conversation].extend(w.messages)

    # order kept, and a window only ends for a reason (greedy, maximal windows)
    for conversation, conv_messages in got_order.items():
        assert [m.message_id for m in conv_messages] == expected_order[conversation]
    per_conversation: dict[tuple, list] = defaultdict(list)
    for w in windows:
        per_conversation[w.conversation].append(w)
    for conv_windows in per_conversation.values():
        for before, after in itertools.pairwise(conv_windows):
            nxt = after.messages[0]
            reason_gap = nxt.created_at - before.ended_at > gap
            reason_count = len(before.messages) >= max_messages
            reason_tokens = before.token_count + SEPARATOR_TOKENS + counter.count(message_line(nxt)) > max_tokens
            assert reason_gap or reason_count or reason_tokens
