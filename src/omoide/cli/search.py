"""``omoide search`` and ``omoide ask``: retrieval and cited answers from the command line.

Both take the same filters (``--guild --channel --author --since --until``), ``--k`` and
``--mode``, and print JSON with ``--json``. Added to the root app by :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from omoide.cli._common import DbOption, JsonOption, console, err_console, print_json, run
from omoide.cli._db import open_existing_memory

if TYPE_CHECKING:
    from omoide.answers import AnswerResult
    from omoide.engine import Memory
    from omoide.search.pipeline import SearchHit, SearchResult

GuildOption = Annotated[
    str,
    typer.Option("--guild", "--workspace", "-g", help="Workspace to search: Discord guild id, Slack team id or agent."),
]
ChannelOption = Annotated[
    list[str] | None, typer.Option("--channel", "-c", help="Only these channel ids (repeatable).", show_default=False)
]
AuthorOption = Annotated[
    list[str] | None, typer.Option("--author", "-a", help="Only chunks with these author ids (repeatable).")
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Only messages from this time on: ISO date/time (2025-11-08, 2025-11-08T12:00) or an age (7d, 12h).",
    ),
]
UntilOption = Annotated[
    str | None, typer.Option("--until", help="Only messages up to this time: ISO date/time or an age (7d, 12h).")
]
KOption = Annotated[
    int | None, typer.Option("--k", "-k", min=1, max=1000, help="Results (default $OMOIDE_SEARCH_TOP_K, 5).")
]
ViewerOption = Annotated[
    str | None,
    typer.Option(
        "--viewer",
        help="Search as this user: public knowledge plus the private knowledge (DMs, private channels) "
        "they are a member of. Default: everything in the workspace, private included (an admin's view).",
        show_default=False,
    ),
]
ModeOption = Annotated[
    str | None, typer.Option("--mode", "-m", help="hybrid (default), vector or lexical.", show_default=False)
]


def parse_time(text: str | None, *, option: str, end_of_day: bool = False) -> datetime | None:
    """An ISO date or date-time (naive = UTC), or an age such as ``7d`` meaning that long ago
    (0 to :data:`~omoide.cli._durations.MAX_DURATION`).

    A bare date means its start (``--since``) or its end (``--until``).

    Raises:
        typer.BadParameter: neither, or a negative or too long age.
    """
    if text is None or not text.strip():
        return None
    value = text.strip()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        from omoide.cli._durations import NotADuration, parse_duration

        try:
            return datetime.now(UTC) - parse_duration(value, option=option)
        except NotADuration:
            raise typer.BadParameter(
                f"{option} {value!r} is neither an ISO date/time (2025-11-08, 2025-11-08T12:00) nor an age (7d, 12h)"
            ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if end_of_day and len(value) == 10:  # a bare date: through its last microsecond
        parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return parsed


def _filters(
    guild: str, channel: list[str] | None, author: list[str] | None, since: str | None, until: str | None
) -> dict[str, Any]:
    return {
        "workspace": guild,
        "channel": channel or None,
        "author": author or None,
        "since": parse_time(since, option="--since"),
        "until": parse_time(until, option="--until", end_of_day=True),
    }


def _where(hit: SearchHit) -> str:
    from omoide.answers.prompt import time_range

    c = hit.chunk
    parts = [p for p in (c.source_title, time_range(c.started_at, c.ended_at)) if p]
    return " · ".join(parts)


def _piped() -> bool:
    """Output goes to a pipe or file: print each line whole (``soft_wrap``) instead of wrapping at 80 columns."""
    return not console.is_terminal


PREVIEW_CHARS = 400
"""Longest hit text printed (a chunk, or a turn's message); ``--json`` has all of it."""
QUOTE_CHARS = 200
"""Longest matched message printed under a citation of ``omoide ask``."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _number(value: float) -> str:
    return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"


def explain_lines(hit: SearchHit) -> list[str]:
    """What ``--explain`` prints under a hit: the final score and the rank in each list, the
    score of each stage, what the hit is (a turn: its line and message; a chunk) and the unit
    scorer's features.

    The first line keeps the ``score …; ranks: …`` form scripts may grep.
    """
    ranks = ", ".join(f"{name}={rank}" for name, rank in (hit.ranks or {}).items()) or "-"
    lines = [f"score {hit.score:.4f}; ranks: {ranks}"]
    s = hit.scores
    stages = (("fused", s.fused), ("rerank", s.rerank), ("vector", s.vector), ("lexical", s.lexical))
    shown = ", ".join(f"{name}={_number(value)}" for name, value in stages if value is not None)
    if shown:
        lines.append(f"scores: {shown}")
    what = [f"unit: {hit.unit}", f"chunk {int(hit.chunk.chunk_id)}"]
    if hit.line is not None:
        what.append(f"line {hit.line}")
    if hit.message_ids:
        ids = [str(m) for m in hit.message_ids]
        label = "message" if len(ids) == 1 else "messages"
        what.append(f"{label} " + ", ".join(ids[:5]) + (f" (+{len(ids) - 5})" if len(ids) > 5 else ""))
    lines.append(" · ".join(what))
    if hit.features:
        lines.append("features: " + ", ".join(f"{name}={value:.4g}" for name, value in hit.features.items()))
    return lines


def render_hits(result: SearchResult) -> None:
    """Best first, numbered: where and when, then the text — for a ``turn`` hit the message
    that matched (its line as stored), else the chunk — and the jump URL. The raw scores, the
    rank in each list and the unit scorer's features only with ``--explain`` (they mean
    nothing to a reader)."""
    if not result.hits:
        console.print("No results.")
    for hit in result.hits:
        console.print(f"[bold]{hit.rank}.[/]  {escape(_where(hit))}", highlight=False)
        text = hit.quote if hit.unit == "turn" and hit.quote else hit.content
        console.print(_cut(text, PREVIEW_CHARS), highlight=False, markup=False, soft_wrap=_piped())
        if hit.jump_url:  # never wrapped nor cut, so it stays clickable and greppable
            console.print(hit.jump_url, style="dim", highlight=False, markup=False, soft_wrap=True)
        if hit.ranks is not None:  # --explain
            for line in explain_lines(hit):
                console.print(line, style="dim", highlight=False, markup=False, soft_wrap=_piped())
        console.print()
    for note in result.notes:
        err_console.print(f"[yellow]Note:[/] {escape(note)}", highlight=False)


def render_answer(result: AnswerResult) -> None:
    console.print(result.text, highlight=False, markup=False, soft_wrap=_piped())
    if result.citations:
        console.print()
        console.print("[bold]根拠[/]" if result.language == "ja" else "[bold]Sources[/]")
        for c in result.citations:  # a line with a jump URL is never wrapped nor cut
            url = f"  {c.hit.jump_url}" if c.hit.jump_url else ""
            console.print(f"[#{c.number}] {_where(c.hit)}{url}", highlight=False, markup=False, soft_wrap=True)
            for turn in c.turns:  # the messages of the cited chunk that matched
                if turn.quote:
                    console.print(
                        f"    > {_cut(turn.quote, QUOTE_CHARS)}",
                        style="dim",
                        highlight=False,
                        markup=False,
                        soft_wrap=_piped(),
                    )
    for note in result.notes:
        err_console.print(f"[yellow]Note:[/] {escape(note)}", highlight=False)
    timings = ", ".join(f"{k} {v:.0f} ms" for k, v in result.timings.items())
    if timings:
        err_console.print(f"[dim]{timings}[/]", highlight=False)


async def workspace_hint(mem: Memory, workspace: str) -> str | None:
    """When ``workspace`` has no knowledge at all: a note naming it, and a few workspaces that do
    (the most similar ids first, so a typo's target leads).

    A mistyped ``--guild`` otherwise only says "no synced messages yet". ``None`` when the
    workspace has knowledge (then the filters or the query found nothing).
    """
    status = await mem.knowledge.status(workspace=workspace)
    if status.chunks:
        return None
    note = f"workspace {workspace!r} has no knowledge in this database"
    if status.unarchived_messages:
        return note + (
            f" yet, only {status.unarchived_messages} unarchived session message(s): run `omoide archive --now`"
        )
    others: list[str] = []
    for source in await mem.knowledge.sources(limit=_SCAN_SOURCES):
        if source.workspace_id != workspace and source.workspace_id not in others:
            others.append(source.workspace_id)
    if not others:
        return note + "; import chat history with `omoide import EXPORT` (or try `omoide demo`)"
    others.sort(key=lambda other: -SequenceMatcher(None, workspace, other).ratio())  # a typo's target first
    shown = ", ".join(others[:_SUGGESTIONS]) + (
        f" (and {len(others) - _SUGGESTIONS} more)" if len(others) > _SUGGESTIONS else ""
    )
    return note + f". Workspaces with knowledge: {shown} — e.g. --guild {others[0]}"


async def vectors_waiting(mem: Memory, workspace: str) -> dict[str, Any] | None:
    """What of ``workspace`` still waits for vectors of the configured embedder (``--explain``):
    ``chunks`` without a vector, of ``chunks`` in all, and ``units`` (embedded chunks whose
    messages have no vectors yet); ``None`` when the embedder cannot be built.

    An import is searchable by words at once; until the worker (or ``omoide embed``) has
    embedded it, vector search and the per-message vector features see only what is embedded.
    """
    try:
        model = mem.embedder.model_id
        status = await mem.knowledge.status(workspace=workspace)
    except Exception:  # best effort: the note must never fail a search (no embedder here, a stand-in memory)
        return None
    return {
        "model": model,
        "chunks": status.chunks,
        "chunks_waiting": max(0, status.chunks - status.embedded.get(model, 0)),
        "units_waiting": status.unit_vectors_missing.get(model, 0),
    }


def waiting_note(waiting: dict[str, Any] | None) -> str | None:
    """The ``--explain`` note when vectors are still missing, else ``None``."""
    if not waiting or not (waiting["chunks_waiting"] or waiting["units_waiting"]):
        return None
    parts = []
    if waiting["chunks_waiting"]:
        parts.append(f"{waiting['chunks_waiting']} of {waiting['chunks']} chunk(s) wait for vectors")
    if waiting["units_waiting"]:
        parts.append(f"{waiting['units_waiting']} embedded chunk(s) wait for per-message vectors")
    return (
        f"{' and '.join(parts)} ({waiting['model']}): they are found by words only until "
        "`omoide worker` (or `omoide embed`) embeds them; `omoide status` shows the progress"
    )


_SCAN_SOURCES = 1000  # newest sources read to suggest workspaces (an error path: bounded, not exhaustive)
_SUGGESTIONS = 5


def search(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    guild: GuildOption,
    channel: ChannelOption = None,
    author: AuthorOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    k: KOption = None,
    mode: ModeOption = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Show how each hit was found: its score, its rank in every list (lexical, vector, unit, fused…), "
            "the score of each stage, what it is (a turn: its line and message; a chunk) and the unit scorer's features.",
        ),
    ] = False,
    viewer: ViewerOption = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Search long-term memory: vector + lexical results, fused and ranked (--explain shows the raw ranks and scores)."""
    filters = _filters(guild, channel, author, since, until)

    async def main() -> tuple[SearchResult, str | None, dict[str, Any] | None]:
        from omoide.search.pipeline import check_mode

        async with open_existing_memory(db) as mem:
            found = await mem.search(
                query,
                workspace=filters["workspace"],
                channel=filters["channel"],
                author=filters["author"],
                since=filters["since"],
                until=filters["until"],
                k=k,
                mode=None if mode is None else check_mode(mode),
                explain=explain,
                viewer=viewer,
            )
            hint = None if found.hits else await workspace_hint(mem, filters["workspace"])
            waiting = await vectors_waiting(mem, filters["workspace"]) if explain else None
            return found, hint, waiting

    result, hint, waiting = run(main, json_errors=json_)
    if json_:
        data = result.as_dict()
        if explain:
            data["vectors_waiting"] = waiting
        print_json(data)
    else:
        render_hits(result)
    note = waiting_note(waiting)
    if note and not json_:
        err_console.print(f"[yellow]Note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    if hint:
        err_console.print(f"[yellow]Note:[/] {escape(hint)}", highlight=False, soft_wrap=True)


def ask(
    question: Annotated[str, typer.Argument(help="The question (Japanese or English).")],
    guild: GuildOption,
    channel: ChannelOption = None,
    author: AuthorOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    k: KOption = None,
    mode: ModeOption = None,
    lang: Annotated[
        str | None, typer.Option("--lang", help="Answer language: ja (default $OMOIDE_ANSWER_LANGUAGE) or en.")
    ] = None,
    asker: Annotated[str | None, typer.Option("--asker", help="The asking user's id (named in the prompt).")] = None,
    viewer: ViewerOption = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Answer a question with citations \\[#n] from long-term memory."""
    filters = _filters(guild, channel, author, since, until)

    async def main() -> tuple[AnswerResult, str | None]:
        from omoide.answers.messages import check_language
        from omoide.search.pipeline import check_mode

        async with open_existing_memory(db) as mem:
            answer = await mem.ask(
                question,
                workspace=filters["workspace"],
                channel=filters["channel"],
                author=filters["author"],
                since=filters["since"],
                until=filters["until"],
                asker=asker,
                k=k,
                mode=None if mode is None else check_mode(mode),
                language=None if lang is None else check_language(lang),
                viewer=viewer,
            )
            hint = await workspace_hint(mem, filters["workspace"]) if answer.no_data else None
            return answer, hint

    result, hint = run(main, json_errors=json_)
    if json_:
        print_json(result.as_dict())
    else:
        render_answer(result)
    if hint:
        err_console.print(f"[yellow]Note:[/] {escape(hint)}", highlight=False, soft_wrap=True)


COMMANDS: dict[str, tuple[Callable[..., None], str]] = {
    "search": (search, 'Example: omoide search "天気" --guild 123 --channel 456 --since 7d --k 5 --mode hybrid'),
    "ask": (ask, 'Example: omoide ask "andyって誰？" --guild 123 --json'),
}


def register(app: typer.Typer) -> None:
    """Add ``search`` and ``ask`` to the root ``omoide`` app."""
    for name, (function, example) in COMMANDS.items():
        app.command(name, epilog=example)(function)


__all__ = [
    "COMMANDS",
    "ask",
    "explain_lines",
    "parse_time",
    "register",
    "render_answer",
    "render_hits",
    "search",
    "vectors_waiting",
    "waiting_note",
    "workspace_hint",
]
