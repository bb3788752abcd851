"""Importers: chat history that bot owners already have, in one neutral shape.

Three formats are read, each by a streaming parser that yields
:class:`ImportedMessage` objects (frozen, platform-neutral, times in aware UTC):

* **DiscordChatExporter JSON** (:func:`iter_discord`): one file per channel or thread,
  ``[part N]`` partitions, ``--reverse`` order, DMs, threads, replies, edits,
  attachments, embeds, stickers, forwards, slash-command responses; streamed with ijson;
* **Slack workspace exports** (:func:`iter_slack`): the ``.zip`` or its directory;
  threads, bots, edits and deletions, ``<@U…>`` mentions resolved to names, files;
* **omoide JSONL transcripts** (:func:`iter_transcripts`), through
  :mod:`omoide.transcripts`.

:func:`iter_export` / :func:`read_export` detect the format. An :class:`ImportReport`
collects the channels found, counts, and every malformed record or file as an
:class:`ImportProblem` with its position (``file: messages[12]``, ``file: [3]``,
``file: line 7``); with ``strict=True`` the first one raises :class:`MalformedExport`
instead. Records nested deeper than 64 levels are such problems; a Slack zip that would
inflate beyond :class:`ZipLimits` raises :class:`ExportTooLarge`. Messages are de-duplicated by ``(platform, workspace, thread or channel,
message id)`` across everything read with one report, so overlapping exports and
re-read partitions yield each message once (the first copy wins). System notifications
are skipped unless ``include_system=True``.

:func:`message_windows` then cuts each channel and thread, in time order, into
:class:`MessageWindow` objects by time gap and by message and token limits: the unit
that is chunked, embedded and cited (seed 004's ``message_windows``). See
``docs/importers.md``.

Example::

    from omoide.importers import message_windows, read_export

    export = read_export("exports/")            # a folder of DiscordChatExporter files
    for problem in export.problems:
        print(problem)                          # e.g. "general.json: messages[12]: missing 'author' object"
    for window in message_windows(export.messages):
        print(window.channel_name, window.started_at, window.message_ids)
"""

from omoide.importers._auto import ExportFormat, ImportedExport, detect_format, iter_export, read_export
from omoide.importers._discord import DM_GUILD_ID, iter_discord, jump_url, snowflake_time
from omoide.importers._errors import ExportTooLarge, MalformedExport, UnrecognizedExport
from omoide.importers._model import (
    ConversationKey,
    ImportedAttachment,
    ImportedChannel,
    ImportedMessage,
    ImportProblem,
    ImportReport,
    MessageKind,
    Platform,
)
from omoide.importers._slack import ZipLimits, iter_slack
from omoide.importers._slack_text import slack_text
from omoide.importers._transcripts import iter_transcripts
from omoide.importers._windows import (
    DEFAULT_MAX_GAP,
    DEFAULT_MAX_MESSAGES,
    DEFAULT_MAX_TOKENS,
    SEPARATOR_TOKENS,
    LineCounter,
    MessageWindow,
    Participant,
    TextCounter,
    chunk_line,
    message_line,
    message_windows,
    split_windows,
    window_text,
)

__all__ = [
    "DEFAULT_MAX_GAP",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "DM_GUILD_ID",
    "SEPARATOR_TOKENS",
    "ConversationKey",
    "ExportFormat",
    "ExportTooLarge",
    "ImportProblem",
    "ImportReport",
    "ImportedAttachment",
    "ImportedChannel",
    "ImportedExport",
    "ImportedMessage",
    "LineCounter",
    "MalformedExport",
    "MessageKind",
    "MessageWindow",
    "Participant",
    "Platform",
    "TextCounter",
    "UnrecognizedExport",
    "ZipLimits",
    "chunk_line",
    "detect_format",
    "iter_discord",
    "iter_export",
    "iter_slack",
    "iter_transcripts",
    "jump_url",
    "message_line",
    "message_windows",
    "read_export",
    "slack_text",
    "snowflake_time",
    "split_windows",
    "window_text",
]
