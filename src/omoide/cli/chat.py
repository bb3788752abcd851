"""`omoide chat`: an interactive REPL over a session (seed 002's /new /switch /context /compact).

Sessions are JSONL agent transcripts under ``OMOIDE_TRANSCRIPTS_DIR`` by default; the
REPL keeps no state of its own, so every command is a call on the library
(:class:`~omoide.chat.ChatRunner` and the transcript store).

Every turn offers the memory tools (remember, recall, list, delete) for ``--user`` in the
workspace ``--agent``: memories live in the database (``--db``, else ``OMOIDE_DATABASE_URL``,
opened at the first tool call), so 「犬の名前はポチだと覚えて」 / "Remember that …" is kept —
offline too, by the extractive model — and recalled in any later session.

Ctrl-C while an answer is streaming cancels that answer, not the session: the request to
the provider is closed, ``[answer cancelled]`` is printed and the prompt comes back. The
user's message stays stored (it was said); nothing of the cancelled answer is stored (no
half assistant message), so the next turn's prompt holds the unanswered question followed
by the new one, merged into one user turn. Ctrl-C at the prompt clears the line.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Protocol

import typer

from omoide.chat import (
    DEFAULT_SYSTEM_PROMPT,
    ChatRunner,
    Conversation,
    SessionConversation,
    ToolExecutor,
    TranscriptConversation,
)
from omoide.cli._common import print_error, run
from omoide.engine import Memory
from omoide.errors import AmbiguousSessionPrefix, ConfigError, OmoideError, UnknownSessionPrefix
from omoide.models import KeyPolicy, Message, ToolResultBlock, ToolUseBlock
from omoide.providers.registry import build_chat_model
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings, load_settings
from omoide.transcripts import TranscriptStore

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


@dataclass(frozen=True, slots=True)
class SessionInfo:
    label: str
    details: str
    last_active_at: datetime
    ref: str  # what find() takes to open exactly this session


class SessionSpace(Protocol):
    """Where the REPL's sessions live: JSONL agent transcripts or database sessions."""

    kept_in: str  # where a session's full history stays ("in the database"), for messages

    async def list(self) -> list[SessionInfo]: ...

    async def new(self, name: str | None) -> _Current: ...

    async def find(self, prefix: str) -> _Current:
        """Raises AmbiguousSessionPrefix / UnknownSessionPrefix."""


@dataclass
class TranscriptSpace:
    store: TranscriptStore
    agent: str
    max_bytes: int | None = None
    kept_in: str = "in the session's JSONL file"

    async def list(self) -> list[SessionInfo]:
        return [
            SessionInfo(s.display_name, f"{s.message_count} records", s.last_active_at, s.id)
            for s in await self.store.list_sessions(self.agent)
        ]

    async def new(self, name: str | None) -> _Current:
        session = await self.store.create_session(self.agent, name)
        return _Current(
            session.display_name, TranscriptConversation(self.store, self.agent, session.id, self.max_bytes)
        )

    async def find(self, prefix: str) -> _Current:
        session = await self.store.find(self.agent, prefix)
        return _Current(
            session.display_name, TranscriptConversation(self.store, self.agent, session.id, self.max_bytes)
        )


@dataclass
class DatabaseSpace:
    """Named agent sessions (``agent:WORKSPACE:a=NAME``) in the database."""

    mem: Memory
    workspace: str
    kept_in: str = "in the database"

    def _current(self, name: str) -> _Current:
        key = self.mem.session_key(workspace=self.workspace, agent=name, policy=KeyPolicy.AGENT)
        return _Current(name, SessionConversation(self.mem.sessions, key))

    async def list(self) -> list[SessionInfo]:
        sessions = await self.mem.sessions.list_sessions(workspace=self.workspace, limit=1000)
        return [
            SessionInfo(s.agent_id, f"{s.last_seq} messages", s.last_active_at, s.agent_id)
            for s in sessions
            if s.policy is KeyPolicy.AGENT and s.agent_id
        ]

    async def new(self, name: str | None) -> _Current:
        name = name or secrets.token_hex(6)
        current = self._current(name)
        await self.mem.sessions.get_or_create(
            self.mem.session_key(workspace=self.workspace, agent=name, policy="agent")
        )
        return current

    async def find(self, prefix: str) -> _Current:
        labels = [info.label for info in await self.list()]
        exact = [label for label in labels if label == prefix]
        matches = exact or [label for label in labels if label.startswith(prefix)]
        if len(matches) == 1:
            return self._current(matches[0])
        if matches:
            raise AmbiguousSessionPrefix(
                f"{prefix!r} matches {len(matches)} sessions: {', '.join(matches)}; type more characters",
                candidates=matches,
            )
        raise UnknownSessionPrefix(
            f"no session matches {prefix!r}; sessions: {', '.join(labels) or 'none yet'}", candidates=labels
        )


@dataclass
class LocalMemoryTools:
    """The memory tools for the REPL's user, on the database opened at the first call.

    With transcripts (no ``--db``) nothing is opened until the model calls a memory tool;
    then the configured database (``OMOIDE_DATABASE_URL``) keeps the memories.
    """

    settings: Settings
    stack: contextlib.AsyncExitStack
    workspace: str
    user: str
    mem: Memory | None = None

    async def __call__(self, call: ToolUseBlock) -> ToolResultBlock:
        from omoide.memories.tools import MemoryToolExecutor

        if self.mem is None:
            self.mem = await self.stack.enter_async_context(Memory.open(self.settings))
        return await MemoryToolExecutor(self.mem.memories, workspace=self.workspace, user=self.user)(call)


class Repl:
    """The REPL's state machine: one current session, commands, and turns."""

    def __init__(
        self,
        space: SessionSpace,
        runner: ChatRunner,
        out: Callable[[str], None],
        *,
        memory_tools: ToolExecutor | None = None,
        max_tool_rounds: int = 4,
    ) -> None:
        self.space = space
        self.runner = runner
        self.out = out
        self.current: _Current | None = None
        self.memory_tools = memory_tools
        self.max_tool_rounds = max_tool_rounds

    async def start(self, session: str | None) -> None:
        """Open ``session`` (an id or name prefix), else resume the latest session, else start one.

        Raises:
            UnknownSessionPrefix / AmbiguousSessionPrefix: ``session`` names no single session
                (the message lists them); the REPL does not start, so nothing is said in a
                session the user did not ask for.
        """
        if session:
            self.current = await self.space.find(session)
            self.out(f"Switched to session {self.current.label}.")
            return
        sessions = await self.space.list()
        if sessions:
            latest = max(sessions, key=lambda s: s.last_active_at)
            self.current = await self.space.find(latest.ref)
            self.out(f"Resumed session {latest.label} ({latest.details}). /help lists commands.")
        else:
            await self.new(None)

    async def new(self, name: str | None) -> None:
        self.current = await self.space.new(name)
        self.out(f"Started session {self.current.label}.")

    async def switch(self, prefix: str) -> None:
        try:
            self.current = await self.space.find(prefix)
        except (AmbiguousSessionPrefix, UnknownSessionPrefix) as exc:
            self.out(exc.message)
            if exc.candidates:
                self.out("Candidates: " + ", ".join(exc.candidates))
            return
        self.out(f"Switched to session {self.current.label}.")

    async def list(self) -> None:
        for info in await self.space.list():
            mark = "*" if self.current and self.current.label == info.label else " "
            self.out(f"{mark} {info.label}  {info.details}, last active {info.last_active_at:%Y-%m-%d %H:%M}")

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
            self.out(
                f"Compacted {done.replaced_turns} turns into a summary. The full history stays {self.space.kept_in}."
            )

    async def say(self, text: str, on_text: Callable[[str], None]) -> None:
        assert self.current is not None
        if self.memory_tools is None:
            result = await self.runner.turn(self.current.conversation, Message.user(text), on_text=on_text)
        else:
            from omoide.memories.tools import MEMORY_TOOLS

            result = await self.runner.turn(
                self.current.conversation,
                Message.user(text),
                tools=MEMORY_TOOLS,
                execute_tool=self.memory_tools,
                max_tool_rounds=self.max_tool_rounds,
                on_text=on_text,
            )
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


def usable_folder(path: Path, *, given: str) -> None:
    """Make sure the transcripts folder ``path`` exists or can be created (``given``: where it came from).

    Raises:
        ConfigError: it is a file, or it cannot be created.
    """
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"{given} {path} is not a folder: give the folder that keeps the JSONL sessions (created if missing)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the transcripts folder {path} ({given}): {exc.strerror or exc}") from None


async def _read_lines(history_file: Path) -> Callable[[str], Awaitable[str | None]]:
    """A line reader: prompt_toolkit (editing + history) on a terminal, plain stdin otherwise."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory

        history: History
        try:
            history_file.parent.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(history_file))
        except OSError:  # the transcripts folder is unusable (with --db it holds only this history)
            history = InMemoryHistory()
        session: PromptSession[str] = PromptSession(history=history)

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


async def run_repl(
    settings: Settings, *, agent: str, session: str | None, system: str, use_db: bool, user: str = "local"
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        space: SessionSpace
        tools = LocalMemoryTools(settings, stack, workspace=agent, user=user)
        if use_db:  # the database is opened (and migrated) only when sessions live there
            mem = await stack.enter_async_context(Memory.open(settings))
            tools.mem = mem
            runner = mem.chat_runner(system=system)
            space = DatabaseSpace(mem, agent)
            where = f"database sessions of workspace {agent!r} in {settings.database_url}"
        else:
            runner = _runner(settings, system)
            space = TranscriptSpace(TranscriptStore(settings.transcripts_dir), agent, settings.max_message_bytes)
            where = f"sessions in {settings.transcripts_dir}"
        model = runner.model
        print(f"omoide chat — model {model.provider}:{model.model_id}, {where}", flush=True)
        repl = Repl(
            space,
            runner,
            lambda text: print(text, flush=True),
            memory_tools=tools,
            max_tool_rounds=settings.memory_tool_rounds,
        )
        await repl.start(session)
        await _loop(repl, settings)


def _runner(settings: Settings, system: str) -> ChatRunner:
    """The runner of transcript sessions: the configured model, as ``Memory.chat_runner`` builds it."""
    return ChatRunner.from_settings(settings, build_chat_model(settings), get_token_counter(), system=system)


def _end_line(turn: bool) -> None:
    """End the ``Assistant > …`` line of a turn that failed, so the error starts on its own line."""
    if turn:
        print(flush=True)


async def _loop(repl: Repl, settings: Settings) -> None:
    read = await _read_lines(settings.transcripts_dir / ".repl_history")

    def stream(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    while True:
        line = await read("You > ")
        if line is None:
            break
        turn = not line.strip().startswith("/") and bool(line.strip())
        try:
            if turn:
                stream("Assistant > ")
                finished = await _cancellable(repl.handle(line, stream))
                print("" if finished else "\n[answer cancelled]", flush=True)
            elif not await repl.handle(line, stream):
                break
        except OmoideError as exc:
            _end_line(turn)
            print_error(exc.message)
        except OSError as exc:  # a transcript file or folder that became unreadable or unwritable (disk full, …)
            _end_line(turn)
            print_error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
    print("Bye.", flush=True)


def chat(
    agent: Annotated[
        str, typer.Option(help="Agent whose sessions to use (a transcripts folder, or the workspace with --db).")
    ] = "default",
    session: Annotated[
        str | None,
        typer.Option(
            help="Open this session (id or name prefix) instead of the latest; none or several matching: error, exit 1."
        ),
    ] = None,
    system: Annotated[str, typer.Option(help="System prompt.")] = DEFAULT_SYSTEM_PROMPT,
    transcripts: Annotated[
        Path | None, typer.Option(help="Transcripts directory (default: OMOIDE_TRANSCRIPTS_DIR).")
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="Keep the sessions in this database (sqlite:///… or postgresql://…) instead of JSONL."
        ),
    ] = None,
    user: Annotated[
        str, typer.Option(help="Whose memories 「覚えて」 / 'remember that …' keeps (in workspace --agent).")
    ] = "local",
) -> None:
    """Chat in the terminal with session memory: /new /switch /list /context /compact /help /exit.

    Works offline with the extractive model; set OMOIDE_LLM (e.g. anthropic:claude-sonnet-4-5) for a real LLM.
    """
    overrides: dict[str, object] = {"transcripts_dir": transcripts} if transcripts else {}
    if db:
        overrides["database_url"] = db

    async def main() -> None:
        settings = load_settings(**overrides)
        if db is None:  # the sessions are JSONL files there
            usable_folder(settings.transcripts_dir, given="--transcripts" if transcripts else "OMOIDE_TRANSCRIPTS_DIR")
        await run_repl(settings, agent=agent, session=session, system=system, use_db=db is not None, user=user)

    run(main)
