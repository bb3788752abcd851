"""TranscriptStore on real files: layout, index, prefix find, appends, torn tails, concurrency."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from omoide.errors import CorruptTranscript, InvalidContent, InvalidInput, SessionNotFound, TranscriptError
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.transcripts import (
    SUMMARY_PREFIX,
    AmbiguousSessionPrefix,
    TornLineWarning,
    TranscriptStore,
    UnknownSessionPrefix,
    compaction_point,
    user_record,
)

AGENT = "default"


@pytest.fixture
def store(tmp_path: Path) -> TranscriptStore:
    return TranscriptStore(tmp_path / ".sessions")


async def test_layout_and_index(store: TranscriptStore):
    s = await store.create_session(AGENT, name="my-project")
    assert len(s.id) == 12
    assert int(s.id, 16) >= 0
    assert s.label == "my-project"
    assert s.message_count == 0
    assert s.path == store.root / "agents" / AGENT / "sessions" / f"{s.id}.jsonl"
    assert s.path.read_bytes() == b""
    await store.append_user(AGENT, s.id, "hi")
    await store.append_assistant(AGENT, s.id, "hello")
    index = json.loads((store.root / "agents" / AGENT / "sessions.json").read_text())
    entry = index[s.id]
    assert entry["label"] == "my-project"
    assert entry["message_count"] == 2
    assert entry["created_at"] <= entry["last_active_at"]
    listed = await store.list_sessions(AGENT)
    assert [(x.id, x.label, x.message_count) for x in listed] == [(s.id, "my-project", 2)]
    assert listed[0].last_active_at > s.created_at
    assert listed[0].created_at.tzinfo is not None
    leftovers = [p.name for p in (store.root / "agents" / AGENT).iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


async def test_each_append_is_one_line(store: TranscriptStore):
    s = await store.create_session(AGENT)
    assert s.label is None
    await store.append_user(AGENT, s.id, "line\nbreak")
    await store.append_tool_use(AGENT, s.id, "t1", "f", {"a": 1})
    await store.append_tool_result(AGENT, s.id, "t1", "ok")
    lines = s.path.read_text().split("\n")
    assert len(lines) == 4
    assert lines[-1] == ""
    assert [json.loads(line)["type"] for line in lines[:-1]] == ["user", "tool_use", "tool_result"]


async def test_list_sessions_oldest_first_and_unknown_agent(store: TranscriptStore):
    assert await store.list_sessions("nobody") == []
    first = await store.create_session(AGENT, name="a")
    second = await store.create_session(AGENT, name="b")
    assert [s.id for s in await store.list_sessions(AGENT)] == [first.id, second.id]
    assert (await store.get_session(AGENT, second.id)).label == "b"
    with pytest.raises(SessionNotFound):
        await store.get_session(AGENT, "000000000000")


async def test_duplicate_name_rejected(store: TranscriptStore):
    await store.create_session(AGENT, name="proj")
    with pytest.raises(InvalidInput, match="already has a session named 'Proj'"):
        await store.create_session(AGENT, name="Proj")
    await store.create_session("other-agent", name="proj")  # names are per agent


@pytest.mark.parametrize("name", ["", "   ", "a\nb", "x" * 201, 5])
async def test_bad_names_rejected(store: TranscriptStore, name):
    with pytest.raises(InvalidInput):
        await store.create_session(AGENT, name=name)


@pytest.mark.parametrize(
    "bad", ["", "a/b", "..", "a/../b", "a..b", ".hidden", "a\x00b", "a\\b", "tab\tx", "x" * 129, 5]
)
async def test_unsafe_ids_rejected(store: TranscriptStore, bad):
    with pytest.raises(InvalidInput):
        await store.create_session(bad)
    with pytest.raises(InvalidInput):
        await store.append_user(AGENT, bad, "x")
    with pytest.raises(InvalidInput):
        await store.records(bad, "abc")
    with pytest.raises(InvalidInput):
        await store.records(AGENT, bad)
    assert not (store.root / "agents").exists() or not any((store.root / "agents").iterdir())


async def test_unknown_session(store: TranscriptStore):
    with pytest.raises(SessionNotFound, match="create it with create_session"):
        await store.append_user(AGENT, "abc", "x")
    with pytest.raises(SessionNotFound):
        await store.records(AGENT, "abc")
    assert not (store.root / "agents" / AGENT / "sessions" / "abc.jsonl").exists()


async def test_invalid_record_writes_nothing(store: TranscriptStore):
    s = await store.create_session(AGENT)
    with pytest.raises(InvalidContent, match="record 1: missing field 'ts'"):
        await store.extend(AGENT, s.id, [user_record("ok", ts=1), {"type": "user", "content": "x"}])
    with pytest.raises(InvalidContent, match="cannot be written as JSON"):
        await store.append_tool_use(AGENT, s.id, "t", "f", {"x": float("inf")})
    with pytest.raises(InvalidContent, match="lone surrogate"):
        await store.append_user(AGENT, s.id, "bad \ud800")
    assert s.path.read_bytes() == b""
    assert (await store.get_session(AGENT, s.id)).message_count == 0


async def test_extend_writes_many_records(store: TranscriptStore):
    s = await store.create_session(AGENT)
    written = await store.extend(AGENT, s.id, [user_record(str(i), ts=i) for i in range(5)])
    assert [r["content"] for r in written] == ["0", "1", "2", "3", "4"]
    assert await store.records(AGENT, s.id) == written
    assert (await store.get_session(AGENT, s.id)).message_count == 5


async def test_history_and_messages(store: TranscriptStore):
    s = await store.create_session(AGENT)
    await store.append_user(AGENT, s.id, "read a", author_id="u1", message_id="m1")
    await store.append_assistant(AGENT, s.id, [])
    await store.append_tool_use(AGENT, s.id, "t1", "read_file", {"path": "a"})
    await store.append_tool_result(AGENT, s.id, "t1", "A")
    await store.append_assistant(AGENT, s.id, "a says A")
    history = await store.history(AGENT, s.id)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    messages = await store.load_messages(AGENT, s.id)
    assert [(m.role, m.content) for m in messages] == [
        ("user", (TextBlock("read a"),)),
        ("assistant", (ToolUseBlock("t1", "read_file", {"path": "a"}),)),
        ("user", (ToolResultBlock("t1", "A"),)),
        ("assistant", (TextBlock("a says A"),)),
    ]
    assert messages[0].author_id == "u1"
    assert messages[0].message_id == "m1"
    assert messages[1].is_bot


async def test_compaction_through_the_store(store: TranscriptStore):
    s = await store.create_session(AGENT)
    for i in range(3):
        await store.append_user(AGENT, s.id, f"q{i}")
        await store.append_assistant(AGENT, s.id, f"a{i}")
    records = await store.records(AGENT, s.id)
    through = compaction_point(records, 4)
    assert through == 3
    await store.append_compaction(AGENT, s.id, "asked q0 and q1", through)
    history = await store.history(AGENT, s.id)
    assert history[0] == {"role": "user", "content": SUMMARY_PREFIX + "asked q0 and q1"}
    assert [m["content"] for m in history[2:]] == ["q2", [{"type": "text", "text": "a2"}]]
    assert len(await store.history(AGENT, s.id, apply_compaction=False)) == 6
    assert len(await store.records(AGENT, s.id)) == 7  # originals stay in the file
    compacted = await store.load_messages(AGENT, s.id, apply_compaction=True)
    assert [m.text for m in compacted] == [
        SUMMARY_PREFIX + "asked q0 and q1",
        "Understood, I have the context.",
        "q2",
        "a2",
    ]
    assert len(await store.load_messages(AGENT, s.id)) == 6
    assert (await store.get_session(AGENT, s.id)).message_count == 6  # compaction records are not messages


# ------------------------------------------------------------------- find


async def test_find(store: TranscriptStore):
    proj = await store.create_session(AGENT, name="my-project")
    exp = await store.create_session(AGENT, name="experiments")
    assert (await store.find(AGENT, "my-p")).id == proj.id
    assert (await store.find(AGENT, "EXP")).id == exp.id
    unique = next(
        proj.id[:n]
        for n in range(1, 13)
        if not exp.id.startswith(proj.id[:n]) and not "experiments".startswith(proj.id[:n])
    )
    assert (await store.find(AGENT, unique)).id == proj.id
    assert (await store.find(AGENT, proj.id)).id == proj.id
    assert (await store.find(AGENT, "  my-project ")).id == proj.id


async def test_find_exact_name_beats_longer_names(store: TranscriptStore):
    short = await store.create_session(AGENT, name="a")
    await store.create_session(AGENT, name="ab")
    assert (await store.find(AGENT, "a")).id == short.id


async def test_find_ambiguous_lists_candidates(store: TranscriptStore):
    one = await store.create_session(AGENT, name="proj-one")
    two = await store.create_session(AGENT, name="proj-two")
    with pytest.raises(AmbiguousSessionPrefix) as info:
        await store.find(AGENT, "proj")
    err = info.value
    assert set(err.candidates) == {one.display_name, two.display_name}
    assert err.details["candidates"] == [one.display_name, two.display_name]
    assert f"{one.id} (proj-one)" in err.message
    assert "type more characters" in err.message
    assert isinstance(err, InvalidInput)


async def test_find_unknown_lists_every_session(store: TranscriptStore):
    s = await store.create_session(AGENT, name="alpha")
    with pytest.raises(
        UnknownSessionPrefix, match=r"no session of agent 'default' matches 'zzz'; sessions: .*alpha"
    ) as info:
        await store.find(AGENT, "zzz")
    assert info.value.candidates == (s.display_name,)
    assert isinstance(info.value, SessionNotFound)
    with pytest.raises(UnknownSessionPrefix, match="none yet"):
        await store.find("empty-agent", "x")
    with pytest.raises(InvalidInput, match="non-empty"):
        await store.find(AGENT, " ")


# ------------------------------------------------------------------- index


async def test_rebuild_index(store: TranscriptStore):
    s = await store.create_session(AGENT, name="keep-me")
    await store.append_user(AGENT, s.id, "x")
    await store.append_assistant(AGENT, s.id, "y")
    with s.path.open("a") as fh:  # a record written by another tool, not counted in the index
        fh.write(json.dumps(user_record("z", ts=1)) + "\n")
    index_path = store.index_path(AGENT)
    index_path.write_text("{ not json")
    with pytest.raises(TranscriptError, match="rebuild_index"):
        await store.list_sessions(AGENT)
    rebuilt = await store.rebuild_index(AGENT)
    assert [(x.id, x.message_count) for x in rebuilt] == [(s.id, 3)]
    # a readable old index keeps names and creation times
    await store.create_session(AGENT, name="second")
    again = await store.rebuild_index(AGENT)
    assert {x.label for x in again} == {None, "second"}


async def test_index_with_malformed_entry(store: TranscriptStore):
    s = await store.create_session(AGENT)
    store.index_path(AGENT).write_text(json.dumps({s.id: {"label": None}}))
    with pytest.raises(TranscriptError, match="is malformed"):
        await store.list_sessions(AGENT)
    store.index_path(AGENT).write_text("[]")
    with pytest.raises(TranscriptError, match="must map session ids to objects"):
        await store.list_sessions(AGENT)


async def test_fsync_mode(tmp_path: Path):
    durable = TranscriptStore(tmp_path, fsync=True)
    s = await durable.create_session(AGENT)
    await durable.append_user(AGENT, s.id, "x")
    assert [r["content"] for r in await durable.records(AGENT, s.id)] == ["x"]


# -------------------------------------------------------------- crash tails


async def test_torn_tail_is_skipped_then_removed_by_the_next_append(store: TranscriptStore):
    s = await store.create_session(AGENT)
    await store.append_user(AGENT, s.id, "before the crash")
    with s.path.open("ab") as fh:
        fh.write(b'{"type":"assistant","content":[{"type":"te')
    with pytest.warns(TornLineWarning, match="line 2: skipped a torn last line"):
        assert [r["content"] for r in await store.records(AGENT, s.id)] == ["before the crash"]
    with pytest.warns(TornLineWarning, match="removed a torn last line"):
        await store.append_user(AGENT, s.id, "after the restart")
    assert [r["content"] for r in await store.records(AGENT, s.id)] == ["before the crash", "after the restart"]
    assert s.path.read_text().count("\n") == 2


async def test_complete_tail_without_newline_is_kept_by_the_next_append(store: TranscriptStore):
    s = await store.create_session(AGENT)
    s.path.write_text(json.dumps(user_record("hand written", ts=1)))
    await store.append_assistant(AGENT, s.id, "ok")
    assert [r["type"] for r in await store.records(AGENT, s.id)] == ["user", "assistant"]


async def test_long_torn_tail_is_found(store: TranscriptStore):
    s = await store.create_session(AGENT)
    await store.append_user(AGENT, s.id, "x")
    with s.path.open("ab") as fh:
        fh.write(b'{"type":"user","content":"' + b"y" * 200_000)
    with pytest.warns(TornLineWarning):
        await store.append_user(AGENT, s.id, "z")
    assert [r["content"] for r in await store.records(AGENT, s.id)] == ["x", "z"]


async def test_corrupt_line_names_file_and_line(store: TranscriptStore):
    s = await store.create_session(AGENT)
    await store.append_user(AGENT, s.id, "x")
    with s.path.open("a") as fh:
        fh.write('{"type":"user","content":"y","ts":1,"is_bot":"no"}\n')
    await store.append_user(AGENT, s.id, "z")
    with pytest.raises(CorruptTranscript) as info:
        await store.records(AGENT, s.id)
    assert str(s.path) in info.value.message
    assert info.value.details["line"] == 2
    assert "'is_bot' must be a boolean" in info.value.message


# -------------------------------------------------------------- concurrency


async def test_concurrent_writers_in_threads_never_interleave(store: TranscriptStore):
    s = await store.create_session(AGENT)
    writers, per_writer = 8, 25
    payload = "x" * 50_000  # larger than any pipe/page buffer

    async def writer(w: int) -> None:
        for i in range(per_writer):
            await store.append_user(AGENT, s.id, f"{w}:{i}:{payload}")

    await asyncio.gather(*(writer(w) for w in range(writers)))
    records = await store.records(AGENT, s.id)
    assert len(records) == writers * per_writer
    seen: dict[str, list[int]] = {}
    for r in records:
        w, i, body = r["content"].split(":")
        assert body == payload
        seen.setdefault(w, []).append(int(i))
    assert all(order == list(range(per_writer)) for order in seen.values())
    assert (await store.get_session(AGENT, s.id)).message_count == writers * per_writer


def test_concurrent_writers_in_processes_never_interleave(tmp_path: Path):
    store = TranscriptStore(tmp_path)
    s = asyncio.run(store.create_session(AGENT))
    script = textwrap.dedent(
        """
        import asyncio, sys
        from omoide.transcripts import TranscriptStore

        async def main(root, session_id, writer):
            store = TranscriptStore(root)
            for i in range(60):
                await store.append_user("default", session_id, f"{writer}:{i}:" + "p" * 70_000)

        asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), s.id, str(w)], env=env) for w in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = asyncio.run(store.records(AGENT, s.id))
    assert len(records) == 180
    by_writer: dict[str, list[int]] = {}
    for r in records:
        w, i, body = r["content"].split(":")
        assert body == "p" * 70_000
        by_writer.setdefault(w, []).append(int(i))
    assert by_writer == {str(w): list(range(60)) for w in range(3)}
    assert asyncio.run(store.get_session(AGENT, s.id)).message_count == 180  # no lost index update


async def test_concurrent_creates_keep_every_session(store: TranscriptStore):
    created = await asyncio.gather(*(store.create_session(AGENT, name=f"s{i}") for i in range(20)))
    listed = await store.list_sessions(AGENT)
    assert {s.id for s in listed} == {s.id for s in created}


async def test_messages_round_trip_through_store(store: TranscriptStore):
    from omoide.transcripts import records_from_messages

    s = await store.create_session(AGENT)
    messages = [
        Message.user("覚えておいて", author_id="u1", author_name="さくら", message_id="m1"),
        Message.assistant("はい", message_id="m2"),
    ]
    await store.extend(AGENT, s.id, records_from_messages(messages))
    assert await store.load_messages(AGENT, s.id) == messages
