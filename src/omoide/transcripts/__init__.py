"""JSONL transcripts: append-only agent sessions on disk (seed 002).

Each session is a file ``{root}/agents/{agent_id}/sessions/{session_id}.jsonl`` holding
one JSON record per line; ``{root}/agents/{agent_id}/sessions.json`` indexes an agent's
sessions (id → label, created_at, last_active_at, message_count). Writing only ever
appends; reading replays the records into a model's message list.

Record types (``ts`` is seconds since the epoch, UTC, a JSON number)::

    {"type": "user", "content": "Hello", "ts": 1712345678.123}
    {"type": "assistant", "content": [{"type": "text", "text": "Hi!"}], "ts": ...}
    {"type": "tool_use", "tool_use_id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}, "ts": ...}
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file contents", "ts": ...}
    {"type": "compaction", "summary": "…", "replaces_through": 41, "ts": ...}

* ``user.content`` is a string, or a non-empty list of ``text`` / ``tool_result`` blocks.
* ``assistant.content`` is a list of ``text`` / ``tool_use`` blocks (a string is read
  as one text block).
* ``tool_result`` may carry ``"is_error": true``; its content is a string (a list of
  text blocks is read and joined with newlines).
* ``compaction``: on replay, records ``0..replaces_through`` (0-based record indexes,
  i.e. file lines ``1..replaces_through+1``) are replaced by seed 002's summary pair, a
  user turn ``"[Previous conversation summary]\\n" + summary`` and an assistant turn
  ``"Understood, I have the context."``. The replaced records stay in the file; the
  last compaction wins and ``replaces_through`` never goes backwards.
* Optional fields on conversation records: ``author_id``, ``author_name``, ``is_bot``,
  ``message_id`` (kept by DB ↔ JSONL conversion) and ``tokens`` (the cl100k count of a
  one-text record, so a replay is not encoded again). Unknown top-level fields are kept.

Reading is strict: a bad line (invalid JSON or UTF-8, unknown type, missing or mistyped
field, an empty line) raises :class:`~omoide.errors.CorruptTranscript` naming the file,
the 1-based line and the problem, and so does a broken sequence (a tool_result without
an earlier tool_use of that id, a duplicate id, a tool_result separated from its tool_use
by a later assistant turn or by a compaction). The one exception is a torn *last* line
(no newline and not valid JSON: a crash mid-write), which is skipped with a
:class:`TornLineWarning`; the next append removes it.

Replay (:func:`rebuild_history`) yields Anthropic Messages with strict user/assistant
alternation; :func:`to_openai_messages` yields OpenAI chat messages;
:func:`records_from_messages` / :func:`messages_from_records` convert to and from
:class:`omoide.models.Message` for ``omoide sessions export/import``. See
``docs/transcripts.md``.
"""

from omoide.errors import AmbiguousSessionPrefix, UnknownSessionPrefix
from omoide.transcripts._convert import messages_from_records, records_from_messages
from omoide.transcripts._jsonl import TornLineWarning, dump_record, dump_records, parse_jsonl, read_records
from omoide.transcripts._records import (
    EXTRA_FIELDS,
    RECORD_TYPES,
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    AssistantRecord,
    CompactionRecord,
    Record,
    RecordType,
    ToolResultRecord,
    ToolUseRecord,
    UserRecord,
    assistant_record,
    compaction_record,
    datetime_from_ts,
    tool_result_record,
    tool_use_record,
    ts_from_datetime,
    user_record,
    validate_record,
)
from omoide.transcripts._replay import compaction_point, rebuild_history, to_openai_messages
from omoide.transcripts._sessions import TranscriptSession, check_component
from omoide.transcripts._store import TranscriptStore

__all__ = [
    "EXTRA_FIELDS",
    "RECORD_TYPES",
    "SUMMARY_ACK",
    "SUMMARY_PREFIX",
    "AmbiguousSessionPrefix",
    "AssistantRecord",
    "CompactionRecord",
    "Record",
    "RecordType",
    "ToolResultRecord",
    "ToolUseRecord",
    "TornLineWarning",
    "TranscriptSession",
    "TranscriptStore",
    "UnknownSessionPrefix",
    "UserRecord",
    "assistant_record",
    "check_component",
    "compaction_point",
    "compaction_record",
    "datetime_from_ts",
    "dump_record",
    "dump_records",
    "messages_from_records",
    "parse_jsonl",
    "read_records",
    "rebuild_history",
    "records_from_messages",
    "to_openai_messages",
    "tool_result_record",
    "tool_use_record",
    "ts_from_datetime",
    "user_record",
    "validate_record",
]
