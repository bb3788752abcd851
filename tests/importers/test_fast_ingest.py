"""The import's fast paths (issue 17 point 4) give what the careful paths give.

* :func:`omoide.importers._jsonfast.fast_items` (records decoded by ``json``'s C scanner
  from a bounded buffer) yields exactly ``iter_items``' records, and hands anything unusual
  (invalid JSON, NaN, surrogate escapes, deep nesting, not UTF-8) to ``iter_items`` from the
  record it stopped at;
* a streamed plan reads ``messageCount`` from the file's last bytes;
* an import's windows carry each chunk line and its count from one count of the text,
  exact (:class:`~omoide.importers.LineCounter`): the same windows and the same chunks as
  counting every line whole, with the careful path's search tokens;
* a window's whole count is derived from its lines' counts (:func:`joined_tokens`), exact.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide.importers import (
    ImportedMessage,
    ImportReport,
    LineCounter,
    _jsonfast,
    chunk_line,
    message_line,
    message_windows,
    split_windows,
)
from omoide.importers._jsonfast import fast_items
from omoide.importers._jsonstream import Rejected, iter_items
from omoide.importers._stream import _tail_count, stream_plan, stream_windows
from omoide.knowledge.import_chunks import _lexicals, _line_lexicals, _tail_piece, drafts_of, joined_tokens
from omoide.providers.tokens import get_token_counter
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
TEXTS = [
    "Did you see the Perseid meteor shower last night?",
    "Yes! We drove out past the old mill at 2am.",
    "明日は川沿いを歩きます。天気が良ければ。",
    "multi\nline\r\nmessage with **bold** and `code`",
    "emoji 🎉 and ZWJ 👨‍👩‍👧 and full-width ＡＢＣ１２３",
    "a 'quoted' word, don't, 3.11, e.g. U.S.A.",
]


def _record(n: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(1_310_000_000_000_000_000 + n),
        "type": "Default",
        "timestamp": (T0 + timedelta(minutes=n)).isoformat(),
        "content": text,
        "author": {"id": str(4200 + n % 3), "name": f"user{n % 3}", "nickname": None, "isBot": False},
        "attachments": [],
        **extra,
    }


def _file(path: Path, records: list[Any] | bytes, *, tail: str = '  "messageCount": {count}\n}}\n') -> Path:
    head = json.dumps({"guild": {"id": "1"}, "channel": {"id": "2", "type": "GuildTextChat", "name": "c"}})[:-1]
    body = (
        records
        if isinstance(records, bytes)
        else b",\n".join(json.dumps(r, ensure_ascii=False).encode() for r in records)
    )
    count = body.count(b'"id": "1310') if isinstance(records, bytes) else len(records)
    path.write_bytes(head.encode() + b',\n  "messages": [\n' + body + b"\n  ],\n" + tail.format(count=count).encode())
    return path


def _both(path: Path) -> tuple[list[Any], list[Any]]:
    return list(iter_items(path, "messages")), list(fast_items(path, "messages"))


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_fast_items_equal_ijson_across_block_boundaries(
    tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_jsonfast, "BLOCK_CHARS", block)
    records = [_record(i, TEXTS[i % len(TEXTS)], size=7**i % 2**62, ratio=i / 7) for i in range(40)]
    slow, fast = _both(_file(tmp_path / "a.json", records))
    assert fast == slow == records


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("invalid JSON midway", b'{"id": "1310000000000000002", "content": oops}'),
        ("NaN", b'{"id": "1310000000000000002", "content": "x", "n": NaN}'),
        ("lone surrogate escape", b'{"id": "1310000000000000002", "content": "\\ud800 x"}'),
        ("surrogate pair escape", b'{"id": "1310000000000000002", "content": "\\ud83c\\udf89"}'),
        (
            "integer beyond 64 bits",
            b'{"id": "1310000000000000002", "content": "x", "n": 123456789012345678901234567890}',
        ),
        ("number beyond a double", b'{"id": "1310000000000000002", "content": "x", "n": 1e999}'),
        ("not UTF-8", b'{"id": "1310000000000000002", "content": "\xff\xfe"}'),
        ("deeper than json recurses", b'{"id": "1310000000000000002", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
        ("deeper than MAX_DEPTH", b'{"id": "1310000000000000002", "x": ' + b"[" * 80 + b"]" * 80 + b"}"),
    ],
)
def test_fast_items_hand_the_unusual_to_ijson_from_the_same_record(tmp_path: Path, name: str, raw: bytes) -> None:
    good = [json.dumps(_record(i, "fine")).encode() for i in range(2)]
    path = _file(tmp_path / "b.json", b",".join([*good, raw, json.dumps(_record(3, "after")).encode()]))
    outcomes = []
    for reader in (iter_items, fast_items):
        try:
            outcomes.append(("ok", list(reader(path, "messages"))))
        except Exception as exc:  # the same error type from both: the fast path re-raises ijson's
            outcomes.append(("error", type(exc).__name__))
    assert outcomes[0] == outcomes[1], name


def test_a_record_nested_too_deeply_is_rejected_as_ijson_rejects_it(tmp_path: Path) -> None:
    deep = _record(1, "x", x=json.loads("[" * 70 + "]" * 70))
    slow, fast = _both(_file(tmp_path / "d.json", [_record(0, "a"), deep, _record(2, "b")]))
    assert isinstance(fast[1], Rejected) and isinstance(slow[1], Rejected)
    assert fast[0] == slow[0] and fast[2] == slow[2]


def test_the_plan_reads_message_count_from_the_tail(tmp_path: Path) -> None:
    path = _file(tmp_path / "Guild - c [2].json", [_record(i, "hi") for i in range(5)])
    assert _tail_count(path) == 5
    plan = stream_plan([path])
    assert plan is not None and plan.messages == 5
    odd = _file(
        tmp_path / "odd.json", [_record(i, "hi") for i in range(3)], tail='  "messageCount": {count}, "x": 1\n}}\n'
    )
    assert _tail_count(odd) == 3  # not at the end: read whole, as before
    none = _file(tmp_path / "none.json", [_record(i, "hi") for i in range(3)], tail='  "x": 1\n}}\n')
    assert _tail_count(none) is None


NAMES = ["Ann", "B*b", "User", "  spaced ", "new\nline", "émile!", "_x_", "42", "山田"]
EDGE_TEXTS = [
    *TEXTS,
    "ends with punctuation!!!",
    "   leading spaces and trailing   ",
    "'s contraction first",
    "123 starts with digits",
    "\nstarts with a newline",
    "windows\r\nline\r\nends",
    "!!!",
    "tab\tseparated\tvalues",
    "[2025-01-01 09:00] **Eve**: a header inside the text",
]


def _messages(n: int, *, long_every: int = 0, edge: bool = False) -> list[ImportedMessage]:
    out = []
    texts = EDGE_TEXTS if edge else TEXTS
    for i in range(n):
        text = texts[i % len(texts)]
        if long_every and i % long_every == long_every - 1:
            text = " ".join(f"word{j}!" for j in range(400))  # longer than a chunk alone
        out.append(
            ImportedMessage(
                platform="discord",
                workspace_id="g",
                workspace_name="G",
                channel_id="c",
                channel_name="c",
                thread_id=None,
                thread_name=None,
                message_id=str(1000 + i),
                author_id=f"u{i % 3}",
                author_name=(NAMES if edge else ["Ann", "B*b", "User"])[i % (len(NAMES) if edge else 3)],
                is_bot=False,
                text=text,
                created_at=T0 + timedelta(minutes=i * 7, seconds=i),
            )
        )
    return out


def test_line_counter_equals_counting_each_line_whole() -> None:
    """Header + text counts are exact: the split points are boundaries of cl100k's pieces."""
    counter = get_token_counter()
    lines = LineCounter(counter)
    messages = _messages(len(EDGE_TEXTS) * len(NAMES), edge=True) + [
        dataclasses.replace(m, created_at=m.created_at.replace(year=year))
        for m, year in zip(_messages(4), [999, 1000, 2099, 9999], strict=True)
    ]
    turns = json.loads(LOCOMO.read_text(encoding="utf-8")) if LOCOMO.exists() else []
    for conv in turns[:3]:
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                messages += [
                    dataclasses.replace(messages[0], author_name=t["speaker"], text=t["text"]) for t in session
                ]
    for message in messages:
        window_count, line, chunk_count = lines.lines(message)
        assert line == chunk_line(message)
        assert (window_count, chunk_count) == (counter.count(message_line(message)), counter.count(line)), message


@pytest.mark.parametrize("max_tokens", [40, 120, 512])
def test_rendered_windows_give_exactly_the_chunks_of_counting_each_line(max_tokens: int) -> None:
    """The import's chunks do not move: same windows, same chunks as counting every line whole."""
    counter = get_token_counter()
    messages = _messages(150, long_every=37) + _messages(60, edge=True)
    messages = [dataclasses.replace(m, message_id=str(i)) for i, m in enumerate(messages)]
    plain = message_windows(messages, max_tokens=max_tokens, counter=counter)
    rendered = message_windows(messages, max_tokens=max_tokens, counter=counter, render_chunks=True)
    assert [(w.message_ids, w.token_count, w.oversized) for w in plain] == [
        (w.message_ids, w.token_count, w.oversized) for w in rendered
    ]
    assert all(w.rendered == tuple(chunk_line(m) for m in w.messages) for w in rendered)
    old, new = drafts_of(plain, max_tokens), drafts_of(rendered, max_tokens)
    assert len(old) > len(plain)  # some windows were split: the packing path is compared too
    assert old == new
    for piece in new:  # the careful path's tokens (two readings compared) are the same
        assert (piece.lexical, piece.unit_lexical) == _lexicals(piece.content, piece.location)
        assert piece.lexical == lexical_text(tokenize_for_search(chunk_lexical_text(piece.content)))


def test_rendered_windows_count_each_text_once() -> None:
    class Counting:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def count(self, text: str) -> int:
            self.texts.append(text)
            return get_token_counter().count(text)

    counter = Counting()
    messages = _messages(60)
    list(split_windows(messages, max_tokens=200, counter=counter, render_chunks=True))
    bodies = [" " + m.text.replace("\n", "\n  ") for m in messages]
    bodies += [" " + m.text.replace("\r\n", "\n").replace("\n", "\n  ") for m in messages if "\r\n" in m.text]
    headers = set()
    for m in messages:
        name, stamp = m.author_name or m.author_id, f"{m.created_at:%Y-%m-%d %H:%M}"
        headers |= {name + ":", f" **{name.replace('*', '')}**:", "[" + stamp[:10], stamp[10:] + "]"}
    assert sorted(counter.texts) == sorted(bodies + sorted(headers))  # each text once, each header once


ENDINGS = [
    *(chr(c) for c in range(128)),
    *"éß山ア。、！？～…—¡¿©½٣ⅫＡ１",
    "\u0301",  # a combining mark
    "\ufe0f",
    "\u3000",  # ideographic space
    "\u00a0",
    "\u200b",
    "\u2028",
    "\U0001f389",
    "\U000e0041",  # a tag character
]


def test_joined_count_equals_counting_the_joined_text() -> None:
    """A window's count from its lines' counts is the count of the joined text: every kind of
    line ending (letters, digits, punctuation runs with or without a space before them,
    whitespace, controls, marks, emoji), then LoCoMo and Japanese lines grouped at random."""
    import random

    counter = get_token_counter()
    after = "[2025-01-01 09:00] **Ann**: next"
    derived = 0
    for end in ENDINGS:
        for line in ("ab" + end, "ab " + end, "1" + end + "!", end, "x" + end + end):
            for nxt in (after, " leading", "\nnewline", end):
                want = counter.count(line + "\n" + nxt)
                assert joined_tokens([line, nxt], [counter.count(line), counter.count(nxt)]) == want, (line, nxt)
            derived += _tail_piece(line) is not None
    assert derived > len(ENDINGS) * 3  # most endings are derived, not counted again
    turns = json.loads(LOCOMO.read_text(encoding="utf-8")) if LOCOMO.exists() else []
    texts = [*TEXTS, *EDGE_TEXTS]
    texts += [
        t["text"]
        for conv in turns[:3]
        for k, s in conv["conversation"].items()
        if k.startswith("session_")
        for t in (s if isinstance(s, list) else [])
    ]
    ja = LOCOMO.parents[1] / "ja" / "realpersonachat_sample_dialogues.json"
    if ja.exists():
        texts += [u["text"] for d in json.loads(ja.read_text(encoding="utf-8"))[:40] for u in d["utterances"]]
    messages = _messages(len(texts), edge=True)
    lines = [chunk_line(dataclasses.replace(m, text=text)) for m, text in zip(messages, texts, strict=True)]
    rnd = random.Random(17)
    for _ in range(600):
        group = rnd.sample(lines, rnd.randint(2, 12))
        costs = [counter.count(line) for line in group]
        assert joined_tokens(group, costs) == counter.count("\n".join(group)), group


def test_a_line_this_module_did_not_write_takes_the_careful_path() -> None:
    assert _line_lexicals(["no header here"]) is None
    assert _line_lexicals(["[2025-01-01 09:00] **Ann**:   "]) is None
    line = "[2025-01-01 09:00] **Ann (User)**: hello there"
    assert _line_lexicals([line]) == [tokenize_for_search("Ann\nhello there")]


def test_streamed_windows_on_chunk_lines_match_the_whole_read(tmp_path: Path) -> None:
    path = _file(tmp_path / "s.json", [_record(i, TEXTS[i % len(TEXTS)]) for i in range(90)])
    plan = stream_plan([path])
    assert plan is not None
    counter = get_token_counter()
    streamed = [
        w
        for batch in stream_windows(
            plan,
            report=ImportReport(),
            keep=lambda m: True,
            max_tokens=100,
            counter=counter,
            batch=4,
            render_chunks=True,
        )
        for w in batch
    ]
    from omoide.importers import read_export

    whole = message_windows(read_export(path).messages, max_tokens=100, counter=counter)
    assert [w.message_ids for w in streamed] == [w.message_ids for w in whole]
    assert [d.content for d in drafts_of(streamed, 100)] == [d.content for d in drafts_of(whole, 100)]
