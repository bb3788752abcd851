"""A backup taken while the bot appends is one consistent snapshot, on both backends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from omoide import Memory
from omoide.models import Message
from omoide.ops import backup, restore

from .conftest import dump, filled, url_for

CASES = [  # source backend, logical backup (else an SQLite file copy), restored into
    ("sqlite", False, "sqlite"),
    ("sqlite", True, "sqlite"),
    pytest.param("sqlite", False, "postgres", marks=pytest.mark.postgres),
    pytest.param("sqlite", True, "postgres", marks=pytest.mark.postgres),
    pytest.param("postgres", True, "sqlite", marks=pytest.mark.postgres),
    pytest.param("postgres", True, "postgres", marks=pytest.mark.postgres),
]


async def _append_until(mem: Memory, stop: asyncio.Event, appended: list[int]) -> None:
    keys = [mem.session_key(platform="discord", workspace="g1", channel=f"busy{i}", user=f"u{i}") for i in range(3)]
    n = 0
    while not stop.is_set():
        key = keys[n % len(keys)]
        await mem.append(key, Message.user(f"message {n} ですよ", author_id=f"u{n % 3}"))
        n += 1
        appended.append(n)


@pytest.mark.parametrize(("backend", "logical", "target"), CASES)
async def test_backup_during_concurrent_appends_is_a_consistent_snapshot(
    backend: str, logical: bool, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src = url_for(backend, request, tmp_path, "source")
    settings = await filled(src, tmp_path)
    path = tmp_path / ("backup" if logical else "backup.db")
    stop = asyncio.Event()
    appended: list[int] = []
    async with Memory.open(settings) as bot:
        writer = asyncio.create_task(_append_until(bot, stop, appended))
        try:
            while len(appended) < 20:  # the bot is busy before the backup starts
                await asyncio.sleep(0.01)
            at_start = len(appended)
            report = await backup(src, path, logical=logical)
            await asyncio.sleep(0.05)
        finally:
            stop.set()
            await writer
    assert len(appended) > at_start

    dst = url_for(target, request, tmp_path, "restored")
    await restore(path, dst, settings=settings)
    source, restored = await dump(src), await dump(dst)
    by_id = {r["id"]: r for r in source["session_messages"]}
    busy = {s["id"] for s in restored["sessions"] if str(s["channel_id"]).startswith("busy")}
    messages = [m for m in restored["session_messages"] if m["session_id"] in busy]
    assert len(messages) >= at_start, "the appends before the backup are in it"
    assert len(restored["session_messages"]) <= len(source["session_messages"])
    for message in restored["session_messages"]:
        assert message == by_id[message["id"]], "a restored message is the source's, unchanged"
    for session in restored["sessions"]:  # sessions and messages are from the same instant
        seqs = sorted(m["seq"] for m in restored["session_messages"] if m["session_id"] == session["id"])
        assert seqs == list(range(1, session["last_seq"] + 1)), session["session_key"]
    assert report.kind == ("logical" if logical else "sqlite-file")
