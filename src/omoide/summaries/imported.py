"""Summaries of imported history: the chat exports already in long-term memory, summarised
per channel and thread as seed 003's summaries are.

The summariser (:class:`~omoide.summaries.service.SummaryGenerator`) reads the live
conversation of the last ``summary_window_hours``; history imported from a Discord or Slack
export (``omoide import``, ``omoide demo``) never was a live conversation, so it gets no
summary that way. :func:`summarise_imported` reads it from the knowledge chunks instead —
one ``[time] speaker: text`` line per message (the chunks' overlap read once), public
channels and threads only — and writes, for each channel and thread, a new short-term
summary merged into its long-term one, then each workspace's long-term summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from omoide.errors import ErasureConflict
from omoide.stores.knowledge import KnowledgeSource, KnowledgeStore
from omoide.stores.summaries import SummaryScope
from omoide.summaries.service import SummaryGenerator
from omoide.text.chat_lines import HEADER, speaker_of

PAGE = 500


@dataclass(slots=True)
class ImportedSummaryReport:
    """What :func:`summarise_imported` did."""

    scopes: list[str] = field(default_factory=list)
    messages: int = 0
    workspaces: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"updated": list(self.scopes), "messages": self.messages, "workspaces": self.workspaces}


def _scope(source: KnowledgeSource) -> tuple[SummaryScope, str] | None:
    meta = source.metadata
    thread, channel = meta.get("thread_id"), meta.get("channel_id")
    if thread:
        return SummaryScope.THREAD, str(thread)
    if channel:
        return SummaryScope.CHANNEL, str(channel)
    return None


def _stamp(line: str) -> datetime:
    return datetime.strptime(line[1:17], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def chunk_lines(content: str) -> list[str]:
    """``[YYYY-MM-DD HH:MM] speaker: text`` for each message of a chunk (continuation lines joined).

    >>> chunk_lines("[2025-10-07 12:15] **Kenji (User)**: 原因わかりました。\\n  続き")
    ['[2025-10-07 12:15] Kenji: 原因わかりました。 続き']
    """
    heads = list(HEADER.finditer(content))
    out: list[str] = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(content)
        said = " ".join(content[head.end() : end].split())
        if said:
            who = speaker_of(head.group("label")) or head.group("label")
            out.append(f"{content[head.start() : head.start() + 18]} {who}: {said}")
    return out


async def summarise_imported(
    generator: SummaryGenerator,
    knowledge: KnowledgeStore,
    *,
    workspace: str | None = None,
    since: datetime | None = None,
) -> ImportedSummaryReport:
    """Summarise the imported history of every public channel and thread (of ``workspace``, or all).

    Args:
        generator: the summariser (its chat model and settings; it saves the summaries).
        knowledge: the knowledge store holding the imported sources.
        workspace: only this workspace (default: every workspace).
        since: only messages from this time on (default: all of them).
    """
    sources: list[KnowledgeSource] = []
    while True:
        page = await knowledge.list_sources(workspace_id=workspace, limit=PAGE, offset=len(sources))
        sources.extend(page)
        if len(page) < PAGE:
            break
    # read before the chunks: a summary of lines an erasure removes meanwhile is refused when saved
    generations = {ws: (await knowledge.erasure_state(ws)).generation for ws in {s.workspace_id for s in sources}}
    groups: dict[tuple[str, SummaryScope, str], dict[str, None]] = {}
    for source in sorted(sources, key=lambda s: s.id):
        where = _scope(source)
        if where is None or source.private:
            continue
        seen = groups.setdefault((source.workspace_id, *where), {})
        for chunk in await knowledge.chunks_of_source(source.id):
            for line in chunk_lines(chunk.content):
                seen.setdefault(line, None)  # overlapping chunks repeat lines: keep each once
    report = ImportedSummaryReport()
    changed: set[str] = set()
    for (workspace_id, scope, scope_id), found in sorted(
        groups.items(), key=lambda g: (g[0][0], g[0][1].value, g[0][2])
    ):
        lines: Sequence[str] = sorted(found, key=_stamp)
        if since is not None:
            lines = [line for line in lines if _stamp(line) >= since]
        if not lines:
            continue
        try:
            await generator.summarise_lines(
                workspace_id,
                scope,
                scope_id,
                lines,
                latest_at=_stamp(lines[-1]),
                erasure_generation=generations[workspace_id],
            )
        except ErasureConflict:
            continue  # someone was erased meanwhile; the next run summarises what remains
        report.scopes.append(f"{scope.value}:{scope_id}")
        report.messages += len(lines)
        if scope is SummaryScope.CHANNEL:
            changed.add(workspace_id)
    for workspace_id in sorted(changed):
        await generator.update_workspace(workspace_id)
        report.workspaces += 1
    return report


__all__ = ["ImportedSummaryReport", "chunk_lines", "summarise_imported"]
