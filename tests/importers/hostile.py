"""A corpus of hostile and oversized chat exports, generated (nothing large is committed).

Each generator writes one file into a folder and returns its path. The files are those
that broke imports before (issue 14, "Trust"): brackets nested 400 KB deep in a field the
Discord reader ignores, Slack zips that inflate far beyond their size, records nested
deeper than any real export in a Slack day file and a JSONL transcript, one message of
150k distinct words (more than a PostgreSQL ``tsvector`` holds), one 63 KB message, and
files that are no export at all. :func:`good_export` is the well-formed export imported
first, whose data must be intact afterwards.

Used by ``tests/importers/test_hostile_imports.py`` (through ``hostile_driver.py``, in a
subprocess whose peak memory is measured) and ``benchmarks/hostile_imports.py``.
"""

from __future__ import annotations

import json
import random
import string
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

GUILD = "1300000000000000001"
"""The workspace of every file: the Discord guild, and the workspace given for Slack and JSONL."""
CHANNEL = "1300000000000000002"
GOOD_CHANNEL = "1300000000000000009"
GOOD_PHRASE = "the blue heron nests by the old mill"
"""Text of the good export that must stay searchable."""
NESTED_KB = 400
ZIP_RATIO_MIB = 64
ZIP_TOTAL_LIMIT = 4 * 1024 * 1024
"""``import_max_uncompressed_bytes`` the runs use, so the total-size zip (6 MiB) exceeds it."""
DISTINCT_WORDS = 150_000
LONG_MESSAGE_BYTES = 63 * 1024
DEEP = 100_000


def _message(n: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(1_310_000_000_000_000_000 + n),
        "type": "Default",
        "timestamp": f"2025-03-01T{10 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00",
        "content": text,
        "author": {"id": "4200", "name": "rin", "nickname": "Rin", "isBot": False},
        **extra,
    }


def _discord(path: Path, messages: list[bytes], channel: str = CHANNEL, name: str = "general") -> Path:
    header = json.dumps(
        {
            "guild": {"id": GUILD, "name": "hostile lab"},
            "channel": {"id": channel, "type": "GuildTextChat", "name": name},
        }
    )[:-1].encode()
    path.write_bytes(header + b', "messages": [' + b",".join(messages) + b"]}")
    return path


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def good_export(folder: Path) -> Path:
    """A well-formed DiscordChatExporter file of five messages in another channel."""
    texts = [
        f"Field notes: {GOOD_PHRASE}.",
        "Saw two herons this morning.",
        "The mill pond froze over last week.",
        "Bring binoculars on Saturday.",
        "明日は川沿いを歩きます。",
    ]
    return _discord(
        folder / FILES["good"], [_dumps(_message(i, t)) for i, t in enumerate(texts, start=901)], GOOD_CHANNEL, "birds"
    )


def nested_brackets(folder: Path) -> Path:
    """400 KB of ``[`` … ``]`` in a field the reader ignores, between two valid messages."""
    depth = NESTED_KB * 1024 // 2
    hostile = _dumps(_message(2, "carrier"))[:-1] + b', "junk": ' + b"[" * depth + b"]" * depth + b"}"
    return _discord(
        folder / FILES["nested_brackets"],
        [_dumps(_message(1, "valid before the brackets")), hostile, _dumps(_message(3, "valid after the brackets"))],
    )


def _slack_zip(path: Path, days: dict[str, bytes | Callable[[Any], None]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("channels.json", json.dumps([{"id": "C1", "name": "general"}]))
        archive.writestr("users.json", json.dumps([{"id": "U1", "name": "rin", "team_id": GUILD}]))
        for name, data in days.items():
            if isinstance(data, bytes):
                archive.writestr(name, data)
            else:
                with archive.open(name, "w", force_zip64=True) as out:
                    data(out)
    return path


def _slack_message(ts: int, text: str) -> dict[str, Any]:
    return {"type": "message", "user": "U1", "text": text, "ts": f"{ts}.000100"}


def zip_bomb_ratio(folder: Path) -> Path:
    """A Slack zip whose day file inflates 64 MiB of blanks from ~64 KB (about 1000 to 1)."""

    def blanks(out: Any) -> None:
        out.write(b'[{"type": "message", "user": "U1", "ts": "1740823200.000100", "text": "')
        block = b" " * (1024 * 1024)
        for _ in range(ZIP_RATIO_MIB):
            out.write(block)
        out.write(b'"}]')

    return _slack_zip(folder / FILES["zip_bomb_ratio"], {"general/2025-03-01.json": blanks})


def zip_bomb_members(folder: Path) -> Path:
    """A Slack zip of 48 day files of 1 MiB of blanks each: every member under the 1 MiB
    exemption from the per-member ratio, ~1000 to 1 together."""

    def blanks(out: Any) -> None:
        out.write(b'[{"type": "message", "user": "U1", "ts": "1740823200.000100", "text": "')
        out.write(b" " * (1024 * 1024 - 100))
        out.write(b'"}]')

    days: dict[str, bytes | Callable[[Any], None]] = {f"general/2025-01-{d:02d}.json": blanks for d in range(1, 49)}
    return _slack_zip(folder / FILES["zip_bomb_members"], days)


def zip_bomb_total(folder: Path) -> Path:
    """A Slack zip of three 2 MiB day files of random text (barely compressible): 6 MiB in total."""
    rng = random.Random(14)
    days: dict[str, bytes | Callable[[Any], None]] = {}
    for day in range(1, 4):
        text = "".join(rng.choices(string.ascii_letters + string.digits, k=2 * 1024 * 1024))
        days[f"general/2025-03-0{day}.json"] = _dumps([_slack_message(1_740_823_200 + day * 86_400, text)])
    return _slack_zip(folder / FILES["zip_bomb_total"], days)


def slack_deep(folder: Path) -> Path:
    """A Slack zip whose day file holds a record nested 100,000 levels deep between two valid ones."""
    deep = b'{"type": "message", "user": "U1", "ts": "1740823300.000100", "text": "deep", "blocks": '
    deep += b"[" * DEEP + b"]" * DEEP + b"}"
    day = b"[" + b",".join([_dumps(_slack_message(1_740_823_200, "valid slack before")), deep]) + b","
    day += _dumps(_slack_message(1_740_823_400, "valid slack after")) + b"]"
    return _slack_zip(folder / FILES["slack_deep"], {"general/2025-03-01.json": day})


def jsonl_deep(folder: Path) -> Path:
    """A JSONL transcript whose second line nests 100,000 levels deep."""
    from omoide.transcripts import dump_records, user_record

    good = [
        user_record("valid transcript line one", ts=1_740_823_200, author_id="u1", message_id="t1"),
        user_record("valid transcript line three", ts=1_740_823_260, author_id="u1", message_id="t3"),
    ]
    first, last = dump_records(good[:1]).encode(), dump_records(good[1:]).encode()
    deep = b'{"type": "message", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}\n"
    path = folder / FILES["jsonl_deep"]
    path.write_bytes(first + deep + last)
    return path


def huge_words(folder: Path) -> Path:
    """One message of 150,000 distinct words (~1.4 MB of distinct lexemes: more than a
    ``tsvector`` holds), then a valid one."""
    rng = random.Random(4)
    # a digit in every word: distinct words cost the search tokenizer no stemming (the
    # stemmer, pure Python, would take ~20 s for 150k distinct English-looking words)
    text = " ".join("".join(rng.choices(string.ascii_lowercase, k=4)) + str(i) for i in range(DISTINCT_WORDS))
    return _discord(
        folder / FILES["huge_words"],
        [_dumps(_message(201, text)), _dumps(_message(202, "valid after the word salad"))],
    )


def long_message(folder: Path) -> Path:
    """One message of 63 KB of prose (one chunk of ~13,400 tokens before the fix)."""
    rng = random.Random(63)
    vocabulary = [
        "river",
        "heron",
        "mill",
        "bridge",
        "stone",
        "water",
        "morning",
        "winter",
        "field",
        "notes",
        "reed",
        "willow",
        "path",
    ]
    words: list[str] = []
    size = 0
    while size < LONG_MESSAGE_BYTES:
        word = rng.choice(vocabulary) + str(rng.randrange(1000))
        words.append(word)
        size += len(word) + 1
    return _discord(folder / FILES["long_message"], [_dumps(_message(301, " ".join(words)))])


def not_an_export(folder: Path) -> Path:
    """A JSON file holding an array: valid JSON, but no DiscordChatExporter export."""
    path = folder / FILES["not_an_export"]
    path.write_text(json.dumps([{"note": "buy milk"}, {"note": "call mum"}]))
    return path


def binary_file(folder: Path) -> Path:
    """Random bytes behind a ``.json`` name (a photo renamed by mistake)."""
    path = folder / FILES["binary_file"]
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + random.Random(1).randbytes(4096))
    return path


FILES = {
    "good": "good.json",
    "nested_brackets": "nested.json",
    "zip_bomb_ratio": "bomb-ratio.zip",
    "zip_bomb_members": "bomb-members.zip",
    "zip_bomb_total": "bomb-total.zip",
    "slack_deep": "slack-deep.zip",
    "jsonl_deep": "deep.jsonl",
    "huge_words": "words.json",
    "long_message": "long.json",
    "not_an_export": "notes.json",
    "binary_file": "photo.json",
}
"""Each file's name in the corpus folder."""

CORPUS: dict[str, Callable[[Path], Path]] = {
    "nested_brackets": nested_brackets,
    "zip_bomb_ratio": zip_bomb_ratio,
    "zip_bomb_members": zip_bomb_members,
    "zip_bomb_total": zip_bomb_total,
    "slack_deep": slack_deep,
    "jsonl_deep": jsonl_deep,
    "huge_words": huge_words,
    "long_message": long_message,
    "not_an_export": not_an_export,
    "binary_file": binary_file,
}
"""Every hostile file, by name, in the order the runs import them."""


def generate(folder: Path) -> dict[str, Path]:
    """Write the good export and every hostile file into ``folder``; ``{"good": …, name: …}``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {"good": good_export(folder)}
    for name, make in CORPUS.items():
        out[name] = make(folder)
    return out


__all__ = ["CORPUS", "FILES", "GOOD_PHRASE", "GUILD", "ZIP_TOTAL_LIMIT", "generate"]
