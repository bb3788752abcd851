"""TranscriptStore: append-only JSONL session files with a small index per agent.

Layout (seed 002)::

    {root}/agents/{agent_id}/sessions/{session_id}.jsonl   one record per line
    {root}/agents/{agent_id}/sessions.json                 index: id → label, times, count
    {root}/agents/{agent_id}/sessions.json.lock            lock file for index updates

An append is one ``os.write`` of complete lines to a file opened with ``O_APPEND``,
under an exclusive ``fcntl.flock``, so writers in several threads or processes never
interleave lines; ``fsync=True`` makes each append durable before it returns. Before
writing, a writer repairs a tail left by a crash: a complete record that lacks its
newline gets one, a torn line is cut off (with a warning). Readers take a shared lock.

The index is a cache for listing and prefix search; it is rewritten atomically (temp
file + ``os.replace``) under its own lock after each append, and
:meth:`TranscriptStore.rebuild_index` recreates it from the files. The file operations are in
:mod:`omoide.transcripts._files`, the session record and id checks in :mod:`omoide.transcripts._sessions`.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from omoide.errors import (
    AmbiguousSessionPrefix,
    InvalidContent,
    InvalidInput,
    SessionNotFound,
    TranscriptError,
    UnknownSessionPrefix,
)
from omoide.models import Message, utcnow
from omoide.transcripts._convert import messages_from_records
from omoide.transcripts._files import erase_author_in_file, locked, repair_tail, replace_atomically, write_all
from omoide.transcripts._jsonl import dump_record, parse_jsonl
from omoide.transcripts._records import (
    AssistantRecord,
    CompactionRecord,
    Record,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
    assistant_record,
    compaction_record,
    tool_result_record,
    tool_use_record,
    user_record,
    validate_record,
)
from omoide.transcripts._replay import rebuild_history
from omoide.transcripts._sessions import TranscriptSession, check_component, check_label

_R = TypeVar("_R", bound=Mapping[str, Any])


def _iso(value: datetime) -> str:
    return value.isoformat()


class TranscriptStore:
    """Append-only JSONL transcripts of agent sessions under ``root``.

    Example::

        store = TranscriptStore(Path("workspace/.sessions"))
        session = await store.create_session("default", name="my-project")
        await store.append_user("default", session.id, "Tell me about generators")
        await store.append_assistant("default", session.id, "Generators are …")
        messages = await store.history("default", session.id)   # Anthropic format

    Args:
        root: the directory that holds ``agents/``; created on first write.
        fsync: ``fsync`` every append and index write (durable across power loss;
            slower). Without it a crash of the process still never tears a line of a
            finished append, since each append is one ``write`` call.
    """

    def __init__(self, root: Path | str, *, fsync: bool = False) -> None:
        self.root = Path(root)
        self.fsync = fsync

    # ----------------------------------------------------------------- paths

    def agent_dir(self, agent_id: str) -> Path:
        return self.root / "agents" / check_component("agent_id", agent_id)

    def session_path(self, agent_id: str, session_id: str) -> Path:
        """The JSONL file of a session (validates both ids)."""
        return self.agent_dir(agent_id) / "sessions" / f"{check_component('session_id', session_id)}.jsonl"

    def index_path(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / "sessions.json"

    # ----------------------------------------------------------------- index

    def _read_index(self, agent_id: str) -> dict[str, dict[str, Any]]:
        path = self.index_path(agent_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise TranscriptError(
                f"session index {path} is not valid JSON ({exc}); recreate it with rebuild_index({agent_id!r})",
                path=str(path),
            ) from exc
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise TranscriptError(
                f"session index {path} must map session ids to objects; recreate it with rebuild_index({agent_id!r})",
                path=str(path),
            )
        return data

    def _write_index(self, agent_id: str, index: Mapping[str, Any]) -> None:
        path = self.index_path(agent_id)
        data = json.dumps(index, ensure_ascii=False, indent=1, sort_keys=True).encode()
        replace_atomically(path, data, fsync=self.fsync)

    def _update_index(self, agent_id: str, change: Callable[[dict[str, dict[str, Any]]], None]) -> None:
        agent_dir = self.agent_dir(agent_id)
        (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
        with locked(agent_dir / "sessions.json.lock", os.O_RDWR | os.O_CREAT, fcntl.LOCK_EX):
            index = self._read_index(agent_id)
            change(index)
            self._write_index(agent_id, index)

    def _session(self, agent_id: str, session_id: str, entry: Mapping[str, Any]) -> TranscriptSession:
        try:
            label = entry.get("label")
            return TranscriptSession(
                agent_id=agent_id,
                id=session_id,
                label=label if isinstance(label, str) else None,
                created_at=datetime.fromisoformat(entry["created_at"]),
                last_active_at=datetime.fromisoformat(entry["last_active_at"]),
                message_count=int(entry["message_count"]),
                path=self.session_path(agent_id, session_id),
            )
        except (KeyError, TypeError, ValueError, InvalidInput) as exc:
            raise TranscriptError(
                f"session index {self.index_path(agent_id)}: entry {session_id!r} is malformed ({exc!r}); "
                f"recreate the index with rebuild_index({agent_id!r})",
                path=str(self.index_path(agent_id)),
            ) from exc

    def _list_sync(self, agent_id: str) -> list[TranscriptSession]:
        index = self._read_index(agent_id)
        sessions = [self._session(agent_id, sid, entry) for sid, entry in index.items()]
        return sorted(sessions, key=lambda s: (s.created_at, s.id))

    # -------------------------------------------------------------- sessions

    async def create_session(self, agent_id: str, name: str | None = None) -> TranscriptSession:
        """Create an empty session with a fresh 12-hex-digit id and an optional name.

        Raises:
            InvalidInput: a bad agent id or name, or the name is already used by
                another session of this agent (names must be unique for ``find``).
        """
        check_component("agent_id", agent_id)
        label = None if name is None else check_label(name)
        return await asyncio.to_thread(self._create_sync, agent_id, label)

    def _create_sync(self, agent_id: str, label: str | None) -> TranscriptSession:
        created: dict[str, Any] = {}

        def change(index: dict[str, dict[str, Any]]) -> None:
            if label is not None:
                for sid, entry in index.items():
                    if isinstance(entry.get("label"), str) and entry["label"].casefold() == label.casefold():
                        raise InvalidInput(f"agent {agent_id!r} already has a session named {label!r} (id {sid})")
            while True:
                sid = uuid.uuid4().hex[:12]
                try:
                    os.close(os.open(self.session_path(agent_id, sid), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                except FileExistsError:
                    continue
                break
            now = _iso(utcnow())
            index[sid] = {"label": label, "created_at": now, "last_active_at": now, "message_count": 0}
            created.update(id=sid, entry=index[sid])

        self._update_index(agent_id, change)
        return self._session(agent_id, created["id"], created["entry"])

    async def list_sessions(self, agent_id: str) -> list[TranscriptSession]:
        """The agent's sessions, oldest first (empty for an unknown agent)."""
        check_component("agent_id", agent_id)
        return await asyncio.to_thread(self._list_sync, agent_id)

    async def get_session(self, agent_id: str, session_id: str) -> TranscriptSession:
        """One session by exact id.

        Raises:
            SessionNotFound: the index has no such session.
        """
        self.session_path(agent_id, session_id)
        index = await asyncio.to_thread(self._read_index, agent_id)
        if session_id not in index:
            raise SessionNotFound(
                f"agent {agent_id!r} has no transcript session {session_id!r}",
                agent_id=agent_id,
                session_id=session_id,
            )
        return self._session(agent_id, session_id, index[session_id])

    async def find(self, agent_id: str, prefix: str) -> TranscriptSession:
        """The one session whose id or name starts with ``prefix`` (case-insensitive).

        An exact id or name match wins over longer matches (``a`` picks the session
        named ``a`` even when ``ab`` exists).

        Raises:
            InvalidInput: an empty prefix.
            AmbiguousSessionPrefix: several sessions match; ``candidates`` lists them.
            UnknownSessionPrefix: none matches; ``candidates`` lists every session.
        """
        if not isinstance(prefix, str) or not prefix.strip():
            raise InvalidInput("a session prefix must be a non-empty string")
        wanted = prefix.strip().casefold()
        sessions = await self.list_sessions(agent_id)

        def names(s: TranscriptSession) -> list[str]:
            return [s.id.casefold()] + ([s.label.casefold()] if s.label else [])

        exact = [s for s in sessions if wanted in names(s)]
        if len(exact) == 1:
            return exact[0]
        matches = exact or [s for s in sessions if any(n.startswith(wanted) for n in names(s))]
        if len(matches) == 1:
            return matches[0]
        if matches:
            listed = ", ".join(s.display_name for s in matches)
            raise AmbiguousSessionPrefix(
                f"{prefix!r} matches {len(matches)} sessions of agent {agent_id!r}: {listed}; type more characters",
                candidates=[s.display_name for s in matches],
            )
        listed = ", ".join(s.display_name for s in sessions) or "none yet"
        raise UnknownSessionPrefix(
            f"no session of agent {agent_id!r} matches {prefix!r}; sessions: {listed}",
            candidates=[s.display_name for s in sessions],
        )

    async def rebuild_index(self, agent_id: str) -> list[TranscriptSession]:
        """Recreate ``sessions.json`` from the JSONL files (after a crash or a hand edit).

        Labels and creation times of sessions still in the old index are kept when it
        is readable; counts and last activity come from the files.
        """
        check_component("agent_id", agent_id)
        return await asyncio.to_thread(self._rebuild_index_sync, agent_id)

    def _rebuild_index_sync(self, agent_id: str) -> list[TranscriptSession]:
        def change(index: dict[str, dict[str, Any]]) -> None:
            old = dict(index)
            index.clear()
            for path in sorted((self.agent_dir(agent_id) / "sessions").glob("*.jsonl")):
                sid = path.stem
                records = self._records_sync(agent_id, sid)
                stat = path.stat()
                mtime = _iso(datetime.fromtimestamp(stat.st_mtime, UTC))
                previous = old.get(sid, {})
                index[sid] = {
                    "label": previous.get("label"),
                    "created_at": previous.get("created_at", mtime),
                    "last_active_at": mtime,
                    "message_count": sum(r["type"] != "compaction" for r in records),
                }

        def tolerant_read() -> dict[str, dict[str, Any]]:
            try:
                return self._read_index(agent_id)
            except TranscriptError:
                return {}

        agent_dir = self.agent_dir(agent_id)
        (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
        with locked(agent_dir / "sessions.json.lock", os.O_RDWR | os.O_CREAT, fcntl.LOCK_EX):
            index = tolerant_read()
            change(index)
            self._write_index(agent_id, index)
        return self._list_sync(agent_id)

    # ---------------------------------------------------------------- append

    async def append(self, agent_id: str, session_id: str, record: Mapping[str, Any]) -> Record:
        """Append one record (validated first); returns the normalised record written.

        Raises:
            InvalidContent: the record is malformed (nothing is written).
            SessionNotFound: the session was never created.
        """
        return (await self.extend(agent_id, session_id, [record]))[0]

    async def extend(self, agent_id: str, session_id: str, records: Iterable[Mapping[str, Any]]) -> list[Record]:
        """Append several records with one write (all or none of them are validated and written).

        Raises:
            InvalidContent: a record is malformed; ``details['index']`` names it.
            SessionNotFound: the session was never created.
        """
        path = self.session_path(agent_id, session_id)
        checked: list[Record] = []
        lines: list[str] = []
        for i, raw in enumerate(records):
            try:
                record = validate_record(raw)
                lines.append(dump_record(record))
            except InvalidContent as exc:
                raise InvalidContent(f"record {i}: {exc.message}", index=i) from exc
            checked.append(record)
        try:
            data = "".join(lines).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidContent(f"record text is not valid Unicode (lone surrogate at {exc.start})") from exc
        if checked:
            count = sum(r["type"] != "compaction" for r in checked)
            await asyncio.to_thread(self._append_sync, agent_id, session_id, path, data, count)
        return checked

    def _append_sync(self, agent_id: str, session_id: str, path: Path, data: bytes, count: int) -> None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)  # never O_CREAT: sessions are created explicitly
        except FileNotFoundError:
            raise SessionNotFound(
                f"agent {agent_id!r} has no transcript session {session_id!r}; create it with create_session()",
                agent_id=agent_id,
                session_id=session_id,
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            repair_tail(fd, path)
            write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock

        def change(index: dict[str, dict[str, Any]]) -> None:
            now = _iso(utcnow())
            entry = index.setdefault(
                session_id, {"label": None, "created_at": now, "last_active_at": now, "message_count": 0}
            )
            entry["last_active_at"] = now
            entry["message_count"] = int(entry.get("message_count", 0)) + count

        self._update_index(agent_id, change)

    async def append_user(self, agent_id: str, session_id: str, text: str, **extras: Any) -> UserRecord:
        """Append ``{"type": "user", "content": text}``; ``extras``: author_id, author_name, is_bot, message_id."""
        return await self._add(agent_id, session_id, user_record(text, **extras))

    async def append_assistant(
        self, agent_id: str, session_id: str, blocks: str | Sequence[Mapping[str, Any]], **extras: Any
    ) -> AssistantRecord:
        """Append an assistant turn: a string or a list of text / tool_use blocks."""
        return await self._add(agent_id, session_id, assistant_record(blocks, **extras))

    async def append_tool_use(
        self, agent_id: str, session_id: str, tool_use_id: str, name: str, input: Mapping[str, Any], **extras: Any
    ) -> ToolUseRecord:
        """Append a tool call (it joins the assistant turn before it on replay)."""
        return await self._add(agent_id, session_id, tool_use_record(tool_use_id, name, input, **extras))

    async def append_tool_result(
        self, agent_id: str, session_id: str, tool_use_id: str, content: str, *, is_error: bool = False, **extras: Any
    ) -> ToolResultRecord:
        """Append a tool result (must answer a tool_use of the latest assistant turn)."""
        return await self._add(
            agent_id, session_id, tool_result_record(tool_use_id, content, is_error=is_error, **extras)
        )

    async def append_compaction(
        self, agent_id: str, session_id: str, summary: str, replaces_through: int
    ) -> CompactionRecord:
        """Record a compaction: replay replaces records ``0..replaces_through`` by ``summary``.

        Use :func:`~omoide.transcripts.compaction_point` to turn "the first N messages"
        into ``replaces_through``. The replaced records stay in the file.
        """
        return await self._add(agent_id, session_id, compaction_record(summary, replaces_through))

    async def _add(self, agent_id: str, session_id: str, record: _R) -> _R:
        await self.extend(agent_id, session_id, [record])
        return record

    # ------------------------------------------------------------------ read

    async def records(self, agent_id: str, session_id: str) -> list[Record]:
        """Every record of the session, validated (a torn last line is skipped with a warning).

        Raises:
            SessionNotFound: no such session file.
            CorruptTranscript: a malformed line (names the file and line).
        """
        self.session_path(agent_id, session_id)
        return await asyncio.to_thread(self._records_sync, agent_id, session_id)

    def _records_sync(self, agent_id: str, session_id: str) -> list[Record]:
        path = self.session_path(agent_id, session_id)
        try:
            with locked(path, os.O_RDONLY, fcntl.LOCK_SH) as fd, os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise SessionNotFound(
                f"agent {agent_id!r} has no transcript session {session_id!r}",
                agent_id=agent_id,
                session_id=session_id,
            ) from None
        return parse_jsonl(data, source=str(path))

    # ---------------------------------------------------------------- erasure

    async def erase_author(self, author_id: str) -> int:
        """Remove every record ``author_id`` wrote, in every agent's sessions; the number of files changed.

        A session in which every user record is theirs was their conversation: the file goes
        whole (the assistant's replies to them included). Elsewhere their records go, and so do
        the compaction records (summaries that may quote them); a file that no longer replays
        once they are gone is removed too. Each agent's index is rebuilt afterwards.
        """
        if not isinstance(author_id, str) or not author_id:
            raise InvalidInput(f"author_id must be a non-empty string, got {author_id!r}")
        return await asyncio.to_thread(self._erase_author_sync, author_id)

    def _erase_author_sync(self, author_id: str) -> int:
        changed = 0
        agents = self.root / "agents"
        if not agents.is_dir():
            return 0
        for agent_dir in sorted(p for p in agents.iterdir() if p.is_dir()):
            touched = False
            for path in sorted((agent_dir / "sessions").glob("*.jsonl")):
                if erase_author_in_file(path, author_id):
                    touched = True
                    changed += 1
            if touched:
                self._rebuild_index_sync(agent_dir.name)
        return changed

    async def history(self, agent_id: str, session_id: str, *, apply_compaction: bool = True) -> list[dict[str, Any]]:
        """The session replayed as Anthropic Messages (see :func:`rebuild_history`)."""
        return rebuild_history(await self.records(agent_id, session_id), apply_compaction=apply_compaction)

    async def load_messages(
        self, agent_id: str, session_id: str, *, apply_compaction: bool = False, positions: bool = False
    ) -> list[Message]:
        """The session as :class:`~omoide.models.Message` objects (see :func:`messages_from_records`)."""
        records = await self.records(agent_id, session_id)
        return messages_from_records(records, apply_compaction=apply_compaction, positions=positions)


__all__ = ["TranscriptSession", "TranscriptStore", "check_component"]
