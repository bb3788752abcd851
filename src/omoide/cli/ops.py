"""``omoide backup``, ``omoide restore`` and ``omoide export``: thin layers over :mod:`omoide.ops`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from omoide.cli._common import DbOption, JsonOption, console, err_console, print_json, progress_bars, run
from omoide.cli._db import check_output_file, replacing
from omoide.settings import load_settings

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from omoide.ops._pipeline import OnProgress


@contextmanager
def _table_bars(enabled: bool, verb: str) -> Iterator[OnProgress]:
    """A bar per table, advanced as its rows are written."""
    with progress_bars(enabled) as progress:
        tasks: dict[str, TaskID] = {}

        def on_progress(table: str, rows: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(f"{verb} {table}", total=total or None, unit="rows")
            if rows:
                progress.advance(tasks[table], rows)

        yield on_progress
        _finish(progress)


def _finish(progress: Progress) -> None:
    for task in progress.tasks:
        if task.total is not None:
            progress.update(task.id, completed=task.total)


def _rows_line(rows: dict[str, int]) -> str:
    shown = ", ".join(f"{name} {n:,}" for name, n in rows.items() if n)
    return shown or "no rows"


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GB"


def backup(
    path: Annotated[Path, typer.Argument(help="New file (SQLite copy: .db/.sqlite/.sqlite3) or folder (logical).")],
    logical: Annotated[
        bool | None,
        typer.Option(
            "--logical/--file",
            help="Logical folder (restores into SQLite or PostgreSQL) or SQLite file copy. Default: by PATH's suffix.",
            show_default=False,
        ),
    ] = None,
    embeddings: Annotated[
        bool, typer.Option("--embeddings/--no-embeddings", help="Include the vectors (logical backups).")
    ] = True,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Back the database up while it is in use: an SQLite file copy (online backup API), or a logical,
    versioned folder (JSONL per table + manifest.json with row counts and SHA-256) that
    `omoide restore` brings back into an empty SQLite or PostgreSQL database.
    """

    async def main() -> dict[str, Any]:
        from omoide.ops import backup as make_backup

        url = load_settings(**({"database_url": db} if db else {})).database_url
        with _table_bars(not json_, "Backing up") as on_progress:
            report = await make_backup(url, path, logical=logical, embeddings=embeddings, on_progress=on_progress)
        return report.as_dict()

    report = run(main, json_errors=json_)
    if json_:
        print_json(report)
        return
    what = "SQLite copy" if report["kind"] == "sqlite-file" else "logical backup"
    console.print(
        f"Wrote a {what} of the {report['backend']} database to {escape(report['path'])} "
        f"({_size(report['bytes'])}, {report['seconds']:.1f} s).",
        highlight=False,
    )
    if report["rows"]:
        console.print(f"Rows: {_rows_line(report['rows'])}.", highlight=False)
    if not report["embeddings"]:
        console.print("No vectors in it: restore with --reembed to compute them.", highlight=False)


def restore(
    path: Annotated[
        Path,
        typer.Argument(help="A backup folder (from `omoide backup`), or an SQLite file: a copy or a database itself."),
    ],
    reembed: Annotated[
        bool,
        typer.Option("--reembed", help="Leave the backup's vectors out; compute them with the configured embedder."),
    ] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Restore a backup into an EMPTY database (--db: a new SQLite file, or a new PostgreSQL database),
    from either backend: the way to move from SQLite to PostgreSQL and back. Refuses a database
    that has data; a failed restore leaves the target empty.
    """

    async def main() -> dict[str, Any]:
        from omoide.ops import restore as do_restore

        settings = load_settings(**({"database_url": db} if db else {}))
        with _table_bars(not json_, "Restoring") as on_progress:
            report = await do_restore(
                path, settings.database_url, settings=settings, reembed=reembed, on_progress=on_progress
            )
        return report.as_dict()

    report = run(main, json_errors=json_)
    if json_:
        print_json(report)
        return
    console.print(
        f"Restored the {report['source_backend']} backup into the {report['backend']} database "
        f"(schema version {report['schema_version']}, {report['seconds']:.1f} s).",
        highlight=False,
    )
    if report["rows"]:
        console.print(f"Rows: {_rows_line(report['rows'])}.", highlight=False)
    if report["reembedded"]:
        console.print(f"Vectors computed: {_rows_line(report['reembedded'])}.", highlight=False)
    if not report["embeddings"]:
        console.print(
            "The backup had no vectors: run `omoide reindex --model MODEL` (or restore with --reembed).",
            highlight=False,
        )


def export(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A new folder: the whole database as a logical, restorable export (what `omoide backup --logical` "
            "writes); `omoide restore PATH --db URL` brings it into an empty SQLite or PostgreSQL database.",
            show_default=False,
        ),
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="The workspace (guild / team) id: its data as JSONL.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="Only this user's data (a data-subject request).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.", dir_okay=False)
    ] = None,
    db: DbOption = None,
) -> None:
    """Export a workspace's data, or one user's, as JSONL (one JSON object per line, the first line
    says what the file is): sessions, messages, knowledge, memories with their history, summaries.
    A user's export holds only their lines of shared conversations (see docs/operations.md).
    With a folder instead, export the whole database so that `omoide restore` can move it to the
    other backend: `omoide export ./move && omoide restore ./move --db postgresql://…`.
    """
    if path is not None:
        if workspace is not None or user is not None or output is not None:
            raise typer.BadParameter(
                "a folder gets the whole database (restorable); for a workspace's or a user's JSONL give "
                "--workspace (and --user) with -o FILE instead of the folder"
            )
        backup(path, logical=True, embeddings=True, db=db, json_=False)
        return
    if workspace is None:
        raise typer.BadParameter(
            "say what to export: --workspace W [--user U] for JSONL, or a folder for the whole database "
            "(e.g. `omoide export ./move`, then `omoide restore ./move --db postgresql://…`)"
        )

    if output is not None:
        check_output_file(output, db)

    async def main() -> dict[str, int]:
        from omoide.ops.export import ExportScope, export_rows, line

        url = load_settings(**({"database_url": db} if db else {})).database_url
        scope = ExportScope(workspace, user)
        counts: dict[str, int] = {}

        async def write(out: IO[str]) -> None:
            async for row in export_rows(url, scope, counts=counts):
                out.write(line(row))
            out.flush()

        if output is not None:  # written beside it, moved into place when complete
            with replacing(output) as out:
                await write(out)
            return counts
        try:
            await write(sys.stdout)
        except BrokenPipeError:  # `omoide export … | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
            counts.clear()
            counts["closed"] = 1
        return counts

    counts = run(main)
    whose = f"user {user} in workspace {workspace}" if user else f"workspace {workspace}"
    if "closed" in counts:
        err_console.print(f"Stopped exporting {whose}: the output was closed.", highlight=False)
        return
    where = f" to {output}" if output is not None else ""
    err_console.print(f"Exported {whose}{escape(where)}: {_rows_line(counts)}.", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``omoide backup``, ``restore`` and ``export`` to the root ``omoide`` app."""
    app.command(
        "backup",
        epilog="Examples: omoide backup backups/omoide-2026-11-26.db   |   "
        "omoide backup backups/2026-11-26 --db postgresql://omoide@localhost/omoide",
    )(backup)
    app.command(
        "restore",
        epilog="Example: omoide restore ./move --db postgresql://omoide@localhost/omoide_new   "
        "(after `omoide backup ./move` of the SQLite database: a move to PostgreSQL)",
    )(restore)
    app.command(
        "export",
        epilog="Examples: omoide export --workspace 1290478288896131072 --user 4242 -o user-4242.jsonl   |   "
        "omoide export ./move && omoide restore ./move --db postgresql://omoide@localhost/omoide",
    )(export)


__all__ = ["backup", "export", "register", "restore"]
