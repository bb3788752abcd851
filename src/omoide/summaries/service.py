"""Seed 003's memory hierarchy: rolling short-term summaries merged into long-term ones.

For a channel (and likewise a thread, or a user — what the bot knows about a person):

1. read the scope's messages of the last ``summary_window_hours``;
2. read its latest short-term summary and count the messages newer than it;
3. decide with :func:`should_update_short_term_memory` (seed 003, exactly: True when the
   history feature is off or there is no summary yet, else conversation idle for
   ``conversation_idle_seconds`` OR at least ``message_threshold`` new messages);
4. summarise the messages (the chat model; offline the extractive model selects salient
   sentences) and save it — as a new version (history on) or over the latest (off);
5. right after, merge it into the scope's long-term summary (always overwritten);
6. for channels, then rebuild the workspace's long-term summary from every channel's.

Every model call is budgeted (:func:`~omoide.context.calls.budgeted_complete`): the prompt
is counted and never sent over the model's context window (less ``summary_max_tokens``).
When the messages of a scope (or the channel summaries of a workspace) do not fit, they
are summarised in parts, oldest first: the older half is summarised, then that summary
together with the newer half, recursively (at most ``MAX_PART_DEPTH`` levels), so every
message is still read and no prompt over the budget is sent.

Deviation from seed 003: the workspace merge runs once per pass over a workspace's
channels (after the last channel that changed), not once per channel — the result is the
same, with one model call instead of one per channel. Set ``merge_each=True`` on
:meth:`SummaryGenerator.generate_channel_memories` for the seed's exact order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import structlog

from omoide.context.calls import budgeted_complete
from omoide.errors import BadRequest, ContextOverflow, ErasureConflict, InvalidInput, OmoideError, VersionConflict
from omoide.models import Message, utcnow
from omoide.providers.base import ChatModel, TokenCounter
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings
from omoide.stores.summaries import (
    ShortTermHistoryConfig,
    Summary,
    SummaryDraft,
    SummaryKind,
    SummaryScope,
    SummaryStore,
)

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]
Language = Literal["ja", "en"]
MAX_PART_DEPTH = 8
"""How deep summarising in parts may split an over-budget input."""
SCOPE_FAILURES: tuple[type[OmoideError], ...] = (ContextOverflow, BadRequest, InvalidInput)
"""Failures that belong to one scope's content (a message too long for the window, a request the
provider refuses, an empty summary): a pass (:meth:`SummaryGenerator.run`) counts the scope as
failed and goes on with the others. Anything else (the database or the provider down, a bad API
key) stops the pass, and the worker backs off."""

_PROMPTS: dict[Language, dict[str, str]] = {
    "ja": {
        "system": "あなたはチャットの記録を要約するアシスタントです。事実・決定事項・予定・人物の好みを簡潔に、日本語で書いてください。",
        "short": "次の会話（{scope}: {name}）を、後で思い出せるように箇条書きで要約してください。\n\n{body}",
        "long": (
            "これまでの長期要約と新しい短期要約を統合し、{scope}: {name} の長期要約を更新してください。"
            "古くなった情報は新しい情報で置き換えてください。\n\n## これまでの長期要約\n{existing}\n\n## 新しい短期要約\n{body}"
        ),
        "workspace": (
            "各チャンネルの長期要約を統合し、ワークスペース全体の長期要約を書いてください。\n\n"
            "## これまでのワークスペース要約\n{existing}\n\n{body}"
        ),
        "none": "（なし）",
        "earlier": "（これより前の部分の要約）",
    },
    "en": {
        "system": "You summarise chat logs. Keep facts, decisions, plans and people's preferences, briefly.",
        "short": "Summarise this conversation ({scope}: {name}) as bullet points to remember later.\n\n{body}",
        "long": (
            "Merge the previous long-term summary with the new short-term summary into an updated long-term "
            "summary of {scope}: {name}. Replace outdated facts with newer ones.\n\n"
            "## Previous long-term summary\n{existing}\n\n## New short-term summary\n{body}"
        ),
        "workspace": (
            "Merge the channels' long-term summaries into one long-term summary of the whole workspace.\n\n"
            "## Previous workspace summary\n{existing}\n\n{body}"
        ),
        "none": "(none)",
        "earlier": "(summary of the earlier part)",
    },
}


def should_update_short_term_memory(
    latest_message_at: datetime | None,
    existing: Summary | None,
    new_message_count: int,
    config: ShortTermHistoryConfig,
    *,
    now: datetime | None = None,
) -> bool:
    """Seed 003's ``_should_update_short_term_memory``: the OR of its two triggers.

    Args:
        latest_message_at: when the newest message was written.
        existing: the current latest short-term summary.
        new_message_count: messages since that summary.
        config: the history settings.
        now: the clock (default: now, UTC).
    """
    if not config.enabled:
        return True  # history off: always overwrite
    if existing is None:
        return True
    if latest_message_at is not None:
        idle = ((now or utcnow()) - latest_message_at).total_seconds()
        if idle >= config.conversation_idle_seconds:
            return True
    return new_message_count >= config.message_threshold


@dataclass(slots=True)
class SummaryReport:
    """What one pass did (a worker run report)."""

    scopes: int = 0
    short_term: int = 0
    long_term: int = 0
    workspaces: int = 0
    skipped: int = 0
    failed: int = 0
    duration_s: float = 0.0
    stopped: bool = False
    updated: list[str] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        return self.short_term == 0

    @property
    def retry_later(self) -> bool:
        return False

    def as_log(self) -> dict[str, Any]:
        return {
            "scopes": self.scopes,
            "short_term": self.short_term,
            "long_term": self.long_term,
            "workspaces": self.workspaces,
            "skipped": self.skipped,
            "failed": self.failed,
            "duration_ms": round(self.duration_s * 1000, 1),
            "stopped": self.stopped,
        }


def _line(message: Message) -> str:
    who = message.author_name or message.author_id or message.role
    return f"[{message.created_at:%Y-%m-%d %H:%M}] {who}: {message.text}"


class SummaryGenerator:
    """Generates and merges summaries (see the module docstring).

    Args:
        store: the summary store.
        model: returns the chat model that summarises (offline: the extractive model).
        settings: ``summary_*`` settings (and ``context_windows``).
        clock: the current time (tests inject one).
        counter: counts prompts (default: the shared tiktoken counter).
    """

    def __init__(
        self,
        store: SummaryStore,
        model: Callable[[], ChatModel],
        settings: Settings,
        *,
        clock: Clock = utcnow,
        counter: TokenCounter | None = None,
    ) -> None:
        self.store = store
        self._model = model
        self.settings = settings
        self.clock = clock
        self._counter = counter

    @property
    def counter(self) -> TokenCounter:
        return get_token_counter() if self._counter is None else self._counter

    @property
    def config(self) -> ShortTermHistoryConfig:
        s = self.settings
        return ShortTermHistoryConfig(s.summary_history, s.summary_idle_seconds, s.summary_message_threshold)

    async def latest(
        self, workspace: str, scope: SummaryScope | str, scope_id: str, kind: SummaryKind | str
    ) -> Summary | None:
        """The newest version of one summary, or ``None``.

        Raises:
            InvalidInput: ``scope`` is not thread, channel, workspace or user, or ``kind`` not
                short_term or long_term.
        """
        try:
            chosen, which = SummaryScope(scope), SummaryKind(kind)
        except ValueError:
            raise InvalidInput(
                f"scope must be thread, channel, workspace or user and kind short_term or long_term, "
                f"got {scope!r} / {kind!r}"
            ) from None
        return await self.store.latest_summary(workspace, chosen, scope_id, which)

    async def history(
        self, workspace: str, scope: SummaryScope, scope_id: str, kind: SummaryKind, *, limit: int = 20
    ) -> list[Summary]:
        """The versions of one summary, newest first."""
        return await self.store.summary_history(workspace, scope, scope_id, kind, limit=limit)

    def _language(self) -> Language:
        return "en" if self.settings.answer_language == "en" else "ja"

    async def summarise(self, prompt: str) -> str:
        """One budgeted model call: the prompt in, the summary text out.

        Raises:
            ContextOverflow: the prompt does not fit the model's window (it was not sent).
        """
        texts = _PROMPTS[self._language()]
        call = await budgeted_complete(
            self._model(),
            self.counter,
            self.settings,
            messages=[Message.user(prompt)],
            system=texts["system"],
            max_tokens=self.settings.summary_max_tokens,
            temperature=0.2,
            what="the summary prompt",
        )
        text = call.text.strip()
        if not text:
            raise InvalidInput("the chat model returned an empty summary")
        return text

    async def summarise_parts(
        self, render: Callable[[Sequence[str]], str], items: Sequence[str], *, _depth: int = 0
    ) -> str:
        """Summarise ``render(items)``; when it does not fit, in parts (see the module docstring).

        The older half of ``items`` is summarised first; its summary then stands in for
        that half, as the first item, next to the newer half.

        Raises:
            ContextOverflow: even one item is too long for the model's window.
        """
        try:
            return await self.summarise(render(items))
        except ContextOverflow:
            if len(items) < 2 or _depth >= MAX_PART_DEPTH:
                raise
        middle = len(items) // 2
        earlier = await self.summarise_parts(render, items[:middle], _depth=_depth + 1)
        label = _PROMPTS[self._language()]["earlier"]
        log.info("summary_in_parts", items=len(items), depth=_depth)
        return await self.summarise_parts(render, [f"{label}\n{earlier}", *items[middle:]], _depth=_depth + 1)

    async def update_scope(
        self, workspace_id: str, scope: SummaryScope, scope_id: str, *, config: ShortTermHistoryConfig | None = None
    ) -> Summary | None:
        """Steps 1–5 for one channel, thread or user; the new short-term summary, or ``None`` if not due."""
        cfg = config or self.config
        now = self.clock()
        since = now - timedelta(hours=self.settings.summary_window_hours)
        generation = (await self.store.erasure_state(workspace_id)).generation  # before the messages are read
        messages = await self.store.scope_messages(workspace_id, scope, scope_id, since=since)
        if not messages:
            return None
        existing = await self.store.latest_summary(workspace_id, scope, scope_id, SummaryKind.SHORT_TERM)
        newer_than = existing.source_latest_message_at if existing is not None else None
        new_count = len(messages) if newer_than is None else sum(1 for m in messages if m.created_at > newer_than)
        latest_at = messages[-1].created_at
        if not should_update_short_term_memory(latest_at, existing, new_count, cfg, now=now):
            return None
        if existing is not None and new_count == 0 and cfg.enabled:
            return None  # idle, but nothing new since the last summary: no new version of the same text
        try:
            return await self.summarise_lines(
                workspace_id,
                scope,
                scope_id,
                [_line(m) for m in messages],
                latest_at=latest_at,
                erasure_generation=generation,
                config=cfg,
                expected_version=existing.version if existing is not None else 0,
            )
        except ErasureConflict:
            # a user was erased while the model ran: this text may quote them; the next pass redoes it
            log.info("summary_discarded_after_erasure", workspace=workspace_id, scope=scope.value, scope_id=scope_id)
            return None
        except VersionConflict:
            # another worker's pass summarised this scope while the model ran: it is done, once
            log.info("summary_superseded", workspace=workspace_id, scope=scope.value, scope_id=scope_id)
            return None

    async def _merge_long_term(self, short: Summary, generation: int | None = None) -> Summary:
        """Step 5: merge a new short-term summary into its scope's long-term one (overwritten)."""
        texts = _PROMPTS[self._language()]
        existing = await self.store.latest_summary(
            short.workspace_id, short.scope, short.scope_id, SummaryKind.LONG_TERM
        )
        prompt = texts["long"].format(
            scope=short.scope.value,
            name=short.scope_id,
            existing=existing.content if existing else texts["none"],
            body=short.content,
        )
        content = await self.summarise(prompt)
        draft = SummaryDraft(
            short.workspace_id,
            short.scope,
            short.scope_id,
            SummaryKind.LONG_TERM,
            content,
            source_message_count=short.source_message_count,
            source_latest_message_at=short.source_latest_message_at,
            erasure_generation=generation,
        )
        return await self.store.save_summary(draft, new_version=False)

    async def summarise_lines(
        self,
        workspace_id: str,
        scope: SummaryScope,
        scope_id: str,
        lines: Sequence[str],
        *,
        latest_at: datetime | None,
        erasure_generation: int | None = None,
        config: ShortTermHistoryConfig | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        """Steps 4–5 for conversation lines read elsewhere (imported history, see
        :mod:`omoide.summaries.imported`): a new short-term summary, merged into the long-term one.

        ``lines`` are ``[YYYY-MM-DD HH:MM] speaker: text``, oldest first. ``erasure_generation``:
        the workspace's, read before the lines were (see :class:`~omoide.stores.summaries.SummaryDraft`).
        ``config``: the history settings (default: this generator's). ``expected_version``: the
        version of the latest short-term summary read before the lines were (0: none); when another
        writer saved one since, nothing is saved or merged (see :class:`~omoide.stores.summaries.SummaryDraft`).

        Raises:
            ErasureConflict: a user of the workspace was erased since ``erasure_generation``.
            VersionConflict: another short-term version was saved since ``expected_version``.
        """
        texts = _PROMPTS[self._language()]

        def render(items: Sequence[str]) -> str:
            return texts["short"].format(scope=scope.value, name=scope_id, body="\n".join(items))

        content = await self.summarise_parts(render, list(lines))
        draft = SummaryDraft(
            workspace_id,
            scope,
            scope_id,
            SummaryKind.SHORT_TERM,
            content,
            source_message_count=len(lines),
            source_latest_message_at=latest_at,
            erasure_generation=erasure_generation,
            expected_version=expected_version,
        )
        short = await self.store.save_summary(draft, new_version=(config or self.config).enabled)
        await self._merge_long_term(short, erasure_generation)
        return short

    async def update_workspace(self, workspace_id: str) -> Summary | None:
        """Step 6: the workspace's long-term summary from every channel's long-term summary."""
        generation = (await self.store.erasure_state(workspace_id)).generation
        channels = await self.store.latest_summaries(workspace_id, SummaryScope.CHANNEL, SummaryKind.LONG_TERM)
        if not channels:
            return None
        texts = _PROMPTS[self._language()]
        existing = await self.store.latest_summary(
            workspace_id, SummaryScope.WORKSPACE, workspace_id, SummaryKind.LONG_TERM
        )
        previous = existing.content if existing else texts["none"]

        def render(blocks: Sequence[str]) -> str:
            return texts["workspace"].format(existing=previous, body="\n\n".join(blocks))

        content = await self.summarise_parts(render, [f"## #{c.scope_id}\n{c.content}" for c in channels])
        latest = [c.source_latest_message_at for c in channels if c.source_latest_message_at is not None]
        draft = SummaryDraft(
            workspace_id,
            SummaryScope.WORKSPACE,
            workspace_id,
            SummaryKind.LONG_TERM,
            content,
            source_message_count=sum(c.source_message_count for c in channels),
            source_latest_message_at=max(latest, default=None),
            erasure_generation=generation,
        )
        try:
            return await self.store.save_summary(draft, new_version=False)
        except ErasureConflict:
            log.info("summary_discarded_after_erasure", workspace=workspace_id, scope="workspace")
            return None

    async def generate_channel_memories(
        self,
        workspace_id: str,
        channels: Sequence[str],
        *,
        config: ShortTermHistoryConfig | None = None,
        merge_each: bool = False,
        skip_failed: bool = False,
        stop: asyncio.Event | None = None,
    ) -> SummaryReport:
        """Seed 003's ``generate_channel_memories`` for some channels of one workspace.

        ``skip_failed``: a channel whose content cannot be summarised (:data:`SCOPE_FAILURES`)
        is logged and counted as failed, and the other channels go on; without it, it is raised.
        ``stop``: once set, no further channel is started (the workspace summary is still
        merged from the channels that changed).
        """
        report = SummaryReport()
        changed = False
        for channel in channels:
            if stop is not None and stop.is_set():
                report.stopped = True
                break
            report.scopes += 1
            try:
                short = await self.update_scope(workspace_id, SummaryScope.CHANNEL, channel, config=config)
            except SCOPE_FAILURES as exc:
                if not skip_failed:
                    raise
                _log_failure(workspace_id, SummaryScope.CHANNEL.value, channel, exc)
                report.failed += 1
                continue
            if short is None:
                report.skipped += 1
                continue
            report.short_term += 1
            report.long_term += 1
            report.updated.append(f"channel:{channel}")
            changed = True
            if merge_each:
                await self._workspace(workspace_id, report, skip_failed=skip_failed)
        if changed and not merge_each:
            await self._workspace(workspace_id, report, skip_failed=skip_failed)
        return report

    async def _workspace(self, workspace_id: str, report: SummaryReport, *, skip_failed: bool) -> None:
        try:
            await self.update_workspace(workspace_id)
        except SCOPE_FAILURES as exc:
            if not skip_failed:
                raise
            _log_failure(workspace_id, SummaryScope.WORKSPACE.value, workspace_id, exc)
            report.failed += 1
            return
        report.workspaces += 1

    async def run(self, *, stop: asyncio.Event | None = None) -> SummaryReport:
        """One pass over every channel, thread and user with recent messages (the worker job).

        A scope whose content cannot be summarised (:data:`SCOPE_FAILURES`: say one message too
        long for the model's window) is logged (``summary_failed``), counted in ``failed`` and
        tried again next pass; the other scopes go on.

        ``stop`` (the worker's shutdown): once set, no further scope is started; the scope in
        flight is saved and merged (and the workspace summary of the channels that changed), and
        the rest waits for the next pass (``report.stopped``).
        """
        started = time.perf_counter()
        since = self.clock() - timedelta(hours=self.settings.summary_window_hours)
        report = SummaryReport()
        by_workspace: dict[str, list[str]] = {}
        for workspace_id, channel in await self.store.active_scopes(since=since, scope=SummaryScope.CHANNEL):
            by_workspace.setdefault(workspace_id, []).append(channel)
        for workspace_id, channels in by_workspace.items():
            if stop is not None and stop.is_set():
                report.stopped = True
                break
            part = await self.generate_channel_memories(workspace_id, channels, skip_failed=True, stop=stop)
            report.scopes += part.scopes
            report.short_term += part.short_term
            report.long_term += part.long_term
            report.workspaces += part.workspaces
            report.skipped += part.skipped
            report.failed += part.failed
            report.stopped = report.stopped or part.stopped
            report.updated += part.updated
        for scope in (SummaryScope.THREAD, SummaryScope.USER):
            for workspace_id, scope_id in await self.store.active_scopes(since=since, scope=scope):
                if stop is not None and stop.is_set():
                    report.stopped = True
                    break
                report.scopes += 1
                try:
                    short = await self.update_scope(workspace_id, scope, scope_id)
                except SCOPE_FAILURES as exc:
                    _log_failure(workspace_id, scope.value, scope_id, exc)
                    report.failed += 1
                    continue
                if short is None:
                    report.skipped += 1
                    continue
                report.short_term += 1
                report.long_term += 1
                report.updated.append(f"{scope.value}:{scope_id}")
        report.duration_s = time.perf_counter() - started
        # at INFO only when the pass did something (the worker's own worker_run line follows the same
        # rule); a logger per pass, not the module's cached one, follows the logging configured since
        pass_log = structlog.get_logger(__name__)
        (pass_log.debug if report.idle and not report.failed else pass_log.info)("summaries_run", **report.as_log())
        return report


def _log_failure(workspace_id: str, scope: str, scope_id: str, exc: OmoideError) -> None:
    log.error(
        "summary_failed", workspace=workspace_id, scope=scope, scope_id=scope_id, code=exc.code, error=exc.message
    )


__all__ = ["SCOPE_FAILURES", "SummaryGenerator", "SummaryReport", "should_update_short_term_memory"]
