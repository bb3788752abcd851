"""`omoide chat`: an interactive REPL over a session (seed 002's /new /switch /context /compact).

Sessions are JSONL agent transcripts under ``OMOIDE_TRANSCRIPTS_DIR`` by default; the
REPL keeps no state of its own, so every command is a call on the library
(:class:`~omoide.chat.ChatRunner` and the transcript store).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from omoide.chat import ChatRunner, Conversation, TranscriptConversation
from omoide.cli._common import err_console, run
from omoide.context import prompt_budget
from omoide.errors import OmoideError
from omoide.models import Message
from omoide.settings import Settings, load_settings
from omoide.transcripts import TranscriptStore
from omoide.transcripts._store import AmbiguousSessionPrefix, UnknownSessionPrefix

DEFAULT_SYSTEM = (
    "You are a helpful assistant with a memory of this conversation. Answer in the user's language "
    "(日本語で話しかけられたら日本語で答えてください)."
)
HELP = """Commands:
  /new [name]        start a new session (optionally named)
  /switch <prefix>   switch to the session whose id or name starts with <prefix>
  /list              list this agent's sessions
  /context           show how much of the model's context window the session uses
  /compact           summarise the older half of the session now
  /help              show this help
  /exit              leave (Ctrl-D works too; Ctrl-C cancels the current answer)"""
BAR_WIDTH = 30


def usage_line(tokens: int, window: int) -> str:
    """``Context usage: ~1,234 / 180,000 tokens`` and a bar, as in seed 002."""
    fraction = tokens / window if window else 0.0
    filled = min(BAR_WIDTH, round(fraction * BAR_WIDTH))
    return (
        f"Context usage: ~{tokens:,} / {window:,} tokens\n"
        f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {fraction * 100:.1f}%"
    )


@dataclass
class _Current:
    label: str
    conversation: Conversation


class Repl:
    """The REPL's state machine: one current session, commands, and turns."""

    def __init__(self, store: TranscriptStore, agent: str, runner: ChatRunner, out: Callable[[str], None]) -> None:
        self.store = store
        self.agent = agent
        self.runner = runner
        self.out = out
        self.current: _Current | None = None

    async def start(self, session: str | None) -> None:
        if session:
            await self.switch(session)
            return
        sessions = await self.store.list_sessions(self.agent)
        if sessions:
            latest = max(sessions, key=lambda s: s.last_active_at)
            self._use(latest.id, latest.display_name)
            self.out(f"Resumed session {latest.display_name} ({latest.message_count} records). /help lists commands.")
        else:
            await self.new(None)

    def _use(self, session_id: str, label: str) -> None:
        self.current = _Current(label, TranscriptConversation(self.store, self.agent, session_id))

    async def new(self, name: str | None) -> None:
        session = await self.store.create_session(self.agent, name)
        self._use(session.id, session.display_name)
        self.out(f"Started session {session.display_name}.")

    async def switch(self, prefix: str) -> None:
        try:
            session = await self.store.find(self.agent, prefix)
        except (AmbiguousSessionPrefix, UnknownSessionPrefix) as exc:
            self.out(exc.message)
            if exc.candidates:
                self.out("Candidates: " + ", ".join(c.display_name for c in exc.candidates))
            return
        self._use(session.id, session.display_name)
        self.out(f"Switched to session {session.display_name}.")

    async def list(self) -> None:
        sessions = await self.store.list_sessions(self.agent)
        for s in sessions:
            mark = "*" if self.current and self.current.label == s.display_name else " "
            self.out(
                f"{mark} {s.display_name}  {s.message_count} records, last active {s.last_active_at:%Y-%m-%d %H:%M}"
            )

    async def context(self) -> None:
        assert self.current is not None
        usage = await self.runner.usage(self.current.conversation)
        self.out(usage_line(usage.tokens, usage.context_window))

    async def compact(self) -> None:
        assert self.current is not None
        done = await self.runner.compact(self.current.conversation)
        if done is None:
            self.out("Nothing to compact yet: the session is too short.")
        else:
            self.out(f"Compacted {done.replaced_turns} turns into a summary. The full history stays in the file.")

    async def say(self, text: str, on_text: Callable[[str], None]) -> None:
        assert self.current is not None
        result = await self.runner.turn(self.current.conversation, Message.user(text), on_text=on_text)
        if result.stage == 1:
            self.out(f"(cut {result.truncated} oversized tool result(s) to fit the context window)")
        elif result.stage == 2:
            self.out("(the older part of this session was summarised to fit the context window)")

    async def handle(self, line: str, on_text: Callable[[str], None]) -> bool:
        """Run one input line; ``False`` means exit."""
        text = line.strip()
        if not text:
            return True
        if not text.startswith("/"):
            await self.say(text, on_text)
            return True
        command, _, arg = text.partition(" ")
        arg = arg.strip()
        if command in ("/exit", "/quit"):
            return False
        actions: dict[str, Callable[[], Awaitable[None]]] = {
            "/new": lambda: self.new(arg or None),
            "/list": self.list,
            "/context": self.context,
            "/compact": self.compact,
        }
        if command == "/help":
            self.out(HELP)
        elif command == "/switch":
            if not arg:
                self.out("Usage: /switch <prefix>")
            else:
                await self.switch(arg)
        elif command in actions:
            await actions[command]()
        else:
            self.out(f"Unknown command {command}; /help lists commands.")
        return True


async def _read_lines(history_file: Path) -> Callable[[str], Awaitable[str | None]]:
    """A line reader: prompt_toolkit (editing + history) on a terminal, plain stdin otherwise."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        history_file.parent.mkdir(parents=True, exist_ok=True)
        session: PromptSession[str] = PromptSession(history=FileHistory(str(history_file)))

        async def prompt(label: str) -> str | None:
            while True:
                try:
                    return await session.prompt_async(label)
                except KeyboardInterrupt:
                    continue  # Ctrl-C at the prompt clears the line, as in a shell
                except EOFError:
                    return None

        return prompt

    async def plain(label: str) -> str | None:
        sys.stdout.write(label)
        sys.stdout.flush()
        line = await asyncio.to_thread(sys.stdin.readline)
        return line.rstrip("\n") if line else None

    return plain


async def _cancellable(work: Awaitable[object]) -> bool:
    """Run ``work``; Ctrl-C cancels it (not the REPL). Returns False when cancelled."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        await task
        return True
    except asyncio.CancelledError:
        if task.cancelled():
            return False
        raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


async def run_repl(settings: Settings, *, agent: str, session: str | None, system: str) -> None:
    from omoide.providers.registry import build_chat_model
    from omoide.providers.tokens import get_token_counter

    model = build_chat_model(settings)
    runner = ChatRunner(model, get_token_counter(), prompt_budget(model.model_id, settings), system=system)
    store = TranscriptStore(settings.transcripts_dir)

    def out(text: str) -> None:
        print(text, flush=True)

    repl = Repl(store, agent, runner, out)
    print(f"omoide chat — model {model.provider}:{model.model_id}, sessions in {settings.transcripts_dir}", flush=True)
    await repl.start(session)
    read = await _read_lines(settings.transcripts_dir / ".repl_history")

    def stream(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    while True:
        line = await read("You > ")
        if line is None:
            break
        try:
            if not line.strip().startswith("/") and line.strip():
                stream("Assistant > ")
                finished = await _cancellable(repl.handle(line, stream))
                print("" if finished else "\n[answer cancelled]", flush=True)
            elif not await repl.handle(line, stream):
                break
        except OmoideError as exc:
            err_console.print(f"[bold red]Error:[/] {exc.message}", highlight=False)
    print("Bye.", flush=True)


def chat(
    agent: Annotated[
        str, typer.Option(help="Agent whose sessions to use (a folder under the transcripts dir).")
    ] = "default",
    session: Annotated[
        str | None, typer.Option(help="Open this session (id or name prefix) instead of the latest.")
    ] = None,
    system: Annotated[str, typer.Option(help="System prompt.")] = DEFAULT_SYSTEM,
    transcripts: Annotated[
        Path | None, typer.Option(help="Transcripts directory (default: OMOIDE_TRANSCRIPTS_DIR).")
    ] = None,
) -> None:
    """Chat in the terminal with session memory: /new /switch /list /context /compact /help /exit.

    Works offline with the extractive model; set OMOIDE_LLM (e.g. anthropic:claude-sonnet-4-5) for a real LLM.
    """
    overrides = {"transcripts_dir": transcripts} if transcripts else {}

    async def main() -> None:
        await run_repl(load_settings(**overrides), agent=agent, session=session, system=system)

    run(main)
