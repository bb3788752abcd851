"""`omoide chat` as a user drives it: a real pseudo-terminal (pexpect), typed commands, the files left behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest

from omoide.cli.chat import _cancellable, usage_line
from providers.servers import Reply, ScriptedServer, openai_api

OMOIDE = str(Path(sys.executable).with_name("omoide"))


def spawn(tmp_path: Path, *args: str, **extra_env: str) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(extra_env)
    env.update(
        OMOIDE_TRANSCRIPTS_DIR=str(tmp_path / "transcripts"),
        OMOIDE_DATABASE_URL=f"sqlite:///{tmp_path / 'omoide.db'}",
        PROMPT_TOOLKIT_NO_CPR="1",
        TERM="xterm",
        COLUMNS="200",
        LINES="50",
    )
    child = pexpect.spawn(
        OMOIDE, ["chat", *args], env=env, cwd=str(tmp_path), encoding="utf-8", timeout=30, dimensions=(50, 200)
    )
    child.expect("omoide chat")
    return child


def say(child: pexpect.spawn, line: str) -> None:
    child.expect("You >")
    child.sendline(line)


def records(tmp_path: Path) -> dict[str, list[dict]]:
    folder = tmp_path / "transcripts" / "agents" / "default" / "sessions"
    return {p.stem: [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines()] for p in folder.glob("*.jsonl")}


def test_repl_session_commands(tmp_path):
    child = spawn(tmp_path)
    say(child, "/new alpha")
    child.expect(r"Started session [0-9a-f]{12} \(alpha\)")
    for text in (
        "私の名前はタロウです。ラーメンが好きです。",
        "My favourite editor is Helix.",
        "明日は京都に行きます。",
    ):
        say(child, text)
        child.expect("Assistant > ")
        child.expect(r"(extractive mode: no LLM|抽出モード)")
    say(child, "/new beta")
    child.expect(r"Started session [0-9a-f]{12} \(beta\)")
    say(child, "hello from beta")
    child.expect("Assistant > ")
    say(child, "/switch al")
    child.expect(r"Switched to session [0-9a-f]{12} \(alpha\)")
    say(child, "/switch zzz")
    child.expect("Candidates: ")
    say(child, "/context")
    child.expect(r"Context usage: ~([\d,]+) / ([\d,]+) tokens")
    used = int(child.match.group(1).replace(",", ""))
    assert used > 20
    child.expect(r"\[[#-]{30}\] \d+\.\d%")
    say(child, "/compact")
    child.expect(r"Compacted \d+ turns into a summary")
    say(child, "/context")
    child.expect(r"Context usage: ~([\d,]+) /")
    say(child, "/list")
    child.expect(r"\* [0-9a-f]{12} \(alpha\)")
    say(child, "/help")
    child.expect("/switch <prefix>")
    say(child, "/bogus")
    child.expect("Unknown command /bogus")
    say(child, "/exit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    stored = {k: v for k, v in records(tmp_path).items() if v}  # the session opened at start stayed empty
    assert len(stored) == 2
    alpha = next(
        r for r in stored.values() if any(x.get("content") == "私の名前はタロウです。ラーメンが好きです。" for x in r)
    )
    beta = next(r for r in stored.values() if r is not alpha)
    kinds = [r["type"] for r in alpha]
    # three exchanges, then the compaction record: the originals stay in the file
    assert kinds == ["user", "assistant"] * 3 + ["compaction"]
    assert alpha[-1]["replaces_through"] >= 1
    assert [r["type"] for r in beta] == ["user", "assistant"]


def test_repl_on_transcripts_keeps_the_message_size_limit(tmp_path):
    """``OMOIDE_MAX_MESSAGE_BYTES`` held for database sessions only: ``omoide chat`` on JSONL
    transcripts stored a message of any size."""
    child = spawn(tmp_path, OMOIDE_MAX_MESSAGE_BYTES="1024")
    say(child, "/new limits")
    say(child, "x" * 1500)
    child.expect("OMOIDE_MAX_MESSAGE_BYTES")
    say(child, "short one")
    child.expect("Assistant > ")
    say(child, "/exit")
    child.expect(pexpect.EOF)
    texts = [json.dumps(r, ensure_ascii=False) for session in records(tmp_path).values() for r in session]
    assert not any("x" * 1500 in t for t in texts) and any("short one" in t for t in texts)


def test_repl_resumes_latest_session_and_exits_on_eof(tmp_path):
    child = spawn(tmp_path)
    say(child, "/new first")
    say(child, "remember this line")
    child.expect("Assistant > ")
    child.expect("You >")
    child.sendeof()
    child.expect("Bye.")
    child.close()
    child = spawn(tmp_path)
    child.expect(r"Resumed session [0-9a-f]{12} \(first\)")
    say(child, "/exit")
    child.expect(pexpect.EOF)


async def test_repl_keeps_what_it_is_asked_to_remember_offline(tmp_path):
    """Issue 14 §4: 「覚えて」 / "Remember that …" with no LLM is kept (in the database) and
    recalled in a new session, not answered with "No evidence was found"."""
    child = spawn(tmp_path, OMOIDE_EMBEDDER="hashing")
    say(child, "Remember that my dog is called Pochi")
    child.expect("Assistant > ")
    child.expect("I'll remember that:")
    child.expect("my dog is called Pochi")
    say(child, "犬の名前はポチだと覚えて")
    child.expect("覚えました:")
    say(child, "Do you remember my cat?")  # a question about remembering stores nothing
    child.expect("Assistant > ")
    say(child, "/new later")
    say(child, "What is my dog called?")
    child.expect("From what you asked me to remember:")
    child.expect("my dog is called Pochi")
    say(child, "犬の名前は？")
    child.expect("覚えていること:")
    child.expect("犬の名前はポチ")
    say(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    from omoide import Memory
    from omoide.settings import Settings

    async with Memory.open(Settings(database_url=f"sqlite:///{tmp_path / 'omoide.db'}")) as mem:
        kept = await mem.memories.list("default", "local")
        assert sorted(m.content for m in kept) == ["my dog is called Pochi", "犬の名前はポチ"]


async def test_repl_on_database_sessions(tmp_path, db_url):
    child = spawn(tmp_path, "--db", db_url, "--agent", "cli")
    say(child, "/new alpha")
    child.expect(r"Started session alpha")
    for text in ("私の名前はタロウです。", "ラーメンが好きです。", "明日は京都に行きます。"):
        say(child, text)
        child.expect("Assistant > ")
    say(child, "/new beta")
    child.expect("Started session beta")
    say(child, "/switch al")
    child.expect("Switched to session alpha")
    say(child, "/context")
    child.expect(r"Context usage: ~[\d,]+ / [\d,]+ tokens")
    say(child, "/compact")
    child.expect(r"Compacted \d+ turns into a summary")
    say(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    from omoide import Memory
    from omoide.settings import Settings

    async with Memory.open(Settings(database_url=db_url)) as mem:
        alpha = await mem.sessions.get("agent:cli:a=alpha")
        stored = await mem.sessions.messages("agent:cli:a=alpha")
        assert [m.role for m in stored] == ["user", "assistant"] * 3  # compaction deleted nothing
        assert alpha.context_summary
        assert alpha.context_summary_seq >= 2
        beta = await mem.sessions.get("agent:cli:a=beta")
        assert beta.last_seq == 0


def test_usage_line_matches_seed_format():
    assert usage_line(1_234, 180_000) == (
        "Context usage: ~1,234 / 180,000 tokens\n[------------------------------] 0.7%"
    )
    assert usage_line(90_000, 180_000).splitlines()[1].startswith("[" + "#" * 15 + "-" * 15 + "]")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_ctrl_c_cancels_the_answer_not_the_repl():
    loop = asyncio.get_running_loop()
    loop.call_later(0.1, os.kill, os.getpid(), signal.SIGINT)
    finished = await _cancellable(asyncio.sleep(10))
    assert finished is False
    # the handler is gone again: the next answer runs normally
    assert await _cancellable(asyncio.sleep(0)) is True


# ------------------------------------------------------------------ Ctrl-C while an answer streams


@contextmanager
def streaming_server(*replies: Reply) -> Iterator[ScriptedServer]:
    """An OpenAI-compatible server on 127.0.0.1 in its own thread (pexpect blocks this one)."""
    loop = asyncio.new_event_loop()
    server = ScriptedServer()
    ready = threading.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        async with server:
            server.script("/v1/chat/completions", *replies)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "the scripted server did not start"
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals")
def test_ctrl_c_cancels_a_streaming_answer_as_a_user_hits_it(tmp_path):
    slow = openai_api.stream([f"slow{i} " for i in range(40)], event_delay=0.25)  # ~10 s if not cancelled
    quick = openai_api.stream(["second ", "answer ", "done"])
    with streaming_server(slow, quick) as server:
        child = spawn(
            tmp_path,
            OMOIDE_LLM="openai-compatible:slow-model",
            OMOIDE_LLM_BASE_URL=f"{server.url}/v1",
            OMOIDE_CONTEXT_WINDOWS='{"slow-model": 32768}',
            OMOIDE_PROVIDER_MAX_RETRIES="0",
        )
        child.expect(r"model openai-compatible:slow-model")
        say(child, "/new cancel-me")
        child.expect(r"Started session [0-9a-f]{12} \(cancel-me\)")
        say(child, "tell me a long story")
        child.expect("Assistant > ")
        child.expect("slow2 ")  # the answer is streaming
        child.send("\x03")  # Ctrl-C, typed: the terminal turns it into SIGINT
        child.expect(r"\[answer cancelled\]")
        assert "slow39" not in child.before
        say(child, "are you still there?")  # the prompt is back and the next turn works
        child.expect("Assistant > ")
        child.expect("second answer done")
        say(child, "/exit")
        child.expect("Bye.")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        requests = server.requests_to("/v1/chat/completions")
    assert len(requests) == 2
    # the cancelled question was kept and is part of the next prompt
    assert "tell me a long story" in requests[1].body.decode()

    session = next(r for r in records(tmp_path).values() if r)

    # what is stored: the user's message is kept; the cancelled answer is not stored at all
    # (no half assistant message); the next exchange is complete
    def text(record: dict) -> str:
        content = record.get("content")
        return content if isinstance(content, str) else "".join(b.get("text", "") for b in content or [])

    assert [(r["type"], text(r)) for r in session] == [
        ("user", "tell me a long story"),
        ("user", "are you still there?"),
        ("assistant", "second answer done"),
    ]
