"""``omoide import PATH…``: chat exports into long-term memory, then embedded (with progress bars).

The bars advance per item — messages while importing, chunks while embedding (per provider
request) — and show the rate and the time left (:func:`omoide.cli._common.progress_bars`). The history is
searchable by words as soon as the import bar is done; the vectors follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    Progress,
)

from omoide.cli._common import (
    DbOption,
    JsonOption,
    console,
    err_console,
    open_memory,
    print_json,
    progress_bars,
    run,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from omoide.engine import Memory
    from omoide.knowledge.importing import ImportSummary


async def import_and_embed(
    mem: Memory,
    paths: Sequence[Path],
    progress: Progress,
    *,
    workspace: str | None = None,
    strict: bool = False,
    include_system: bool = False,
    embed: bool = True,
) -> dict[str, Any]:
    """Import exports, then embed the new chunks, each with its progress bar; the summary as a dict.

    The import bar counts messages; the embedding bar counts chunks (per provider request).
    ``data["chunks_waiting"]`` is what is left without a vector (all of it with ``embed=False``).
    """
    reading = progress.add_task("Reading the export", total=None, unit="msg")
    task: list[Any] = []

    def read() -> None:
        progress.update(reading, visible=False)

    def advance(done: int, total: int) -> None:
        if not task:
            task.append(progress.add_task("Importing messages", total=total, unit="msg"))
        progress.update(task[0], completed=done, total=total)

    summary: ImportSummary = await mem.knowledge.import_export(
        paths, workspace=workspace, strict=strict, include_system=include_system, on_messages=advance, on_read=read
    )
    data = summary.as_dict()
    data["chunks_waiting"] = summary.chunks
    if embed and summary.chunks:
        etask = progress.add_task(f"Embedding chunks ({mem.embedder.model_id})", total=summary.chunks, unit="chunks")

        def embedded(n: int) -> None:
            progress.advance(etask, n)

        vectors = failed = 0
        while True:  # one pass claims OMOIDE_EMBED_CLAIM_SIZE sources
            report = await mem.knowledge.embed(on_chunks=embedded)
            vectors += report.chunks
            failed += report.failed
            if report.claimed == 0 or report.transient_error or report.stopped:
                break
        data["chunks_waiting"] = max(0, summary.chunks - vectors)
        data["embedded_with"] = report.model
        data["embedded_chunks"] = vectors
        data["failed_sources"] = failed
    return data


def import_(
    given: Annotated[
        list[str],  # not list[Path]: Path("") is ".", and "" must not mean the current folder
        typer.Argument(
            metavar="PATH",
            help="DiscordChatExporter JSON files/folders, a Slack export (zip or folder), JSONL transcripts.",
            show_default=False,
        ),
    ],
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", "--guild", "-g", help="Workspace id for Slack exports and transcripts."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on the first malformed record (nothing is written).")
    ] = False,
    include_system: Annotated[
        bool, typer.Option("--include-system", help="Keep platform notifications (joins, pins, …).")
    ] = False,
    embed: Annotated[bool, typer.Option("--embed/--no-embed", help="Embed the new chunks right away.")] = True,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Import chat history into long-term memory; re-importing the same or an overlapping export adds only new messages.

    Exits 1 when nothing could be imported from the paths given (not an export, unreadable,
    no messages, or a Slack zip beyond the size limits).
    """
    if any(not text.strip() for text in given):  # `omoide import "$EXPORTS"` with the variable unset
        raise typer.BadParameter(
            "an empty path (an unset shell variable?); give a file or folder, or '.' for the current one",
            param_hint="PATH",
        )
    paths = [Path(text) for text in given]

    async def main() -> dict[str, Any]:
        async with open_memory(db) as mem:
            with progress_bars(not json_) as progress:
                return await import_and_embed(
                    mem,
                    paths,
                    progress,
                    workspace=workspace,
                    strict=strict,
                    include_system=include_system,
                    embed=embed,
                )

    try:
        data = run(main, json_errors=json_)
    except typer.Exit as stop:
        if stop.exit_code == 130:  # Ctrl-C: run() said "Interrupted."
            err_console.print(
                "What was imported so far is kept. Run the same `omoide import` again to add the rest (messages "
                "already stored are skipped), and `omoide embed` (or `omoide worker`) to finish the vectors; "
                "`omoide status` shows what is left.",
                highlight=False,
                markup=False,
            )
        raise
    if not data["messages"]:
        if json_:
            print_json(data)
            raise typer.Exit(1)
        where = ", ".join(str(p) for p in paths)
        skipped = data["system_skipped"] + data["empty_skipped"]
        why = f" ({skipped} system or empty record(s) skipped)" if skipped else ""
        err_console.print(
            f"[bold red]Error:[/] Nothing was imported: found no messages in {where}{why}; "
            "check that it is a DiscordChatExporter .json file, a Slack export .zip or an omoide .jsonl "
            "transcript (add --include-system to keep platform notifications).",
            highlight=False,
        )
        for problem in data["problems"]:
            err_console.print(f"[yellow]Skipped:[/] {problem}", highlight=False)
        raise typer.Exit(1)
    if json_:
        print_json(data)
        return
    console.print(
        f"Imported {data['new_messages']} new message(s) from {data['conversations']} conversation(s) "
        f"into {data['sources']} source(s) / {data['chunks']} chunk(s); "
        f"{data['known_messages']} already stored.",
        highlight=False,
    )
    if "embedded_with" in data:
        console.print(
            f"Embedded {data['embedded_chunks']} chunk(s) with {data['embedded_with']}.", highlight=False, markup=False
        )
    if data["chunks"] and data["chunks_waiting"]:
        console.print(
            f"Searchable by words now; {data['chunks_waiting']} chunk(s) wait for vectors: run `omoide worker` "
            "(or `omoide embed`) to add them — `omoide status` shows the progress.",
            highlight=False,
            markup=False,
        )
    for problem in data["problems"]:
        err_console.print(f"[yellow]Skipped:[/] {escape(str(problem))}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``import`` to the root ``omoide`` app."""
    app.command(
        "import",
        epilog="Example: omoide import exports/ --db sqlite:///./data/omoide.db   (Slack: omoide import slack.zip --workspace T123)",
    )(import_)


__all__ = ["import_", "import_and_embed", "register"]
