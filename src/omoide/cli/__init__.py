"""The ``omoide`` command: a thin layer over :class:`omoide.Memory`.

Every command has ``--help`` with an example; database selection is ``--db URL`` or
``OMOIDE_DATABASE_URL``.
"""

from __future__ import annotations

import warnings
from typing import Annotated, TextIO

import typer
from rich.markup import escape

from omoide import __version__
from omoide.cli import (
    bots,
    context,
    imports,
    knowledge,
    mcp_server,
    memory,
    ops,
    search,
    server,
    sessions,
    status,
    summaries,
)
from omoide.cli._common import DbOption, JsonOption, console, err_console, open_memory, print_json, run
from omoide.cli.chat import chat as chat_command
from omoide.errors import OmoideError

app = typer.Typer(
    name="omoide",
    help="omoide (思い出): memory for chat bots and agents — sessions, knowledge, memories, summaries, cited answers.",
    epilog='Example: omoide demo   (then: omoide ask "v0.4.0 のリリースが延期された理由は？" --guild 1290478288896131072)',
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(sessions.app, name="sessions")
knowledge.register(app)  # archive, embed, worker, sources, reindex
status.register(app)  # status
search.register(app)  # search, ask
imports.register(app)  # import
memory.register(app)  # memory …, forget-user
context.register(app)  # context
summaries.register(app)  # summaries show, summarise
server.register(app)  # serve, keys create|list|revoke
mcp_server.register(app)  # mcp
bots.register(app)  # discord
ops.register(app)  # backup, restore, export
app.command("chat", epilog="Example: omoide chat --agent notes   (then: /new idea, /context, /compact, /exit)")(
    chat_command
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"omoide {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Configure logging once for every command."""
    from omoide.logging import configure_logging
    from omoide.settings import load_settings

    warnings.showwarning = _show_warning

    try:
        configure_logging(load_settings())
    except OmoideError as exc:
        typer.echo(f"Error: {exc.message}", err=True)
        raise typer.Exit(2) from None


_default_showwarning = warnings.showwarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """omoide's own warnings (a skipped torn transcript line, …) as one ``Warning: …`` line on
    stderr, not Python's display of the library's source file and line; others as Python shows them."""
    if category.__module__.partition(".")[0] != "omoide":
        _default_showwarning(message, category, filename, lineno, file, line)
        return
    err_console.print(f"[yellow]Warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)


@app.command(epilog="Example: omoide migrate --db postgresql://omoide:secret@localhost/omoide")
def migrate(db: DbOption = None, json_: JsonOption = False) -> None:
    """Create or upgrade the database schema (safe to run from several processes at once)."""

    async def main() -> None:
        from omoide.cli._db import refuse_foreign_database
        from omoide.settings import load_settings
        from omoide.stores import open_store

        refuse_foreign_database(db)
        settings = load_settings(**({"database_url": db} if db else {}))
        async with open_store(settings=settings, migrate=False) as store:
            applied = await store.migrate()
            version = await store.schema_version()
        if json_:
            print_json({"applied": applied, "schema_version": version, "backend": store.backend})
        elif applied:
            console.print(f"Applied migration(s) {', '.join(map(str, applied))}; schema version {version}.")
        else:
            console.print(f"Schema is up to date (version {version}).")

    run(main, json_errors=json_)


@app.command(epilog="Example: OMOIDE_LLM=anthropic:claude-sonnet-4-5 omoide providers --json")
def providers(json_: JsonOption = False) -> None:
    """List the chat model, embedder and reranker in use, and whether each is usable here (no network calls),
    which Japanese search tokenizer is active (Sudachi, or the character-bigram fallback and why), and
    whether the line reader (a second sentence encoder that reads each message) is on.

    Exits 1 when a model is not usable, saying what to set or install (the bigram fallback works: exit 0).
    """
    from rich.table import Table

    from omoide.providers.registry import ProviderStatus, describe_providers
    from omoide.settings import load_settings
    from omoide.text import japanese_tokenizer

    async def collect() -> tuple[list[ProviderStatus], dict[str, object], dict[str, object]]:
        ja = japanese_tokenizer()
        # same keys as the model rows, so --json stays one list of rows; spec: the tokenizer's index name
        row: dict[str, object] = {
            "role": "ja_tokenizer",
            "spec": ja.name,
            "usable": True,
            "reason": ja.detail,
            "is_default": True,
            "backend": ja.backend,
        }
        settings = load_settings()
        return describe_providers(settings), row, _line_reader_row(settings.line_reader)

    rows, tokenizer, reader = run(collect, json_errors=json_)
    if json_:
        print_json([*rows, tokenizer, reader])
    else:
        table = Table("role", "spec", "usable", "notes")
        for row in rows:  # the spec cell holds exactly what OMOIDE_<ROLE> or `omoide reindex --model` accepts
            notes = f"default; {row.reason}" if row.is_default else row.reason
            table.add_row(row.role, escape(row.spec), "[green]yes[/]" if row.usable else "[red]no[/]", escape(notes))
        fallback = tokenizer["backend"] != "sudachi"
        table.add_row(
            "ja tokenizer",
            escape(str(tokenizer["spec"])),
            "[yellow]fallback[/]" if fallback else "[green]yes[/]",
            escape(str(tokenizer["reason"])),
        )
        table.add_row(
            "line reader",
            escape(str(reader["spec"])),
            "[green]yes[/]" if reader["backend"] == "onnx" else "[yellow]off[/]",
            escape(str(reader["reason"])),
        )
        console.print(table)
    if not all(row.usable for row in rows):
        raise typer.Exit(1)


def _line_reader_row(setting: str) -> dict[str, object]:
    """The ``omoide providers`` row of the line reader (loads it: ~0.4 s). Optional like the
    tokenizer: without it search ranks messages with the model fitted without its features."""
    from omoide.providers.local.line_reader import READER_MODEL, line_reader, model_path

    if setting == "off":
        backend, reason = "off", "OMOIDE_LINE_READER=off: messages are ranked without it"
    elif model_path() is None:
        backend, reason = "none", "not installed (no wheel for this platform or Python): messages are ranked without it"
    elif line_reader(setting) is None:
        backend, reason = "none", "could not load (see the warning): messages are ranked without it"
    else:
        backend, reason = "onnx", "reads each message for the unit ranking (ONNX Runtime, one thread)"
    return {
        "role": "line_reader",
        "spec": READER_MODEL,
        "usable": True,
        "reason": reason,
        "is_default": True,
        "backend": backend,
    }


@app.command(epilog='Example: omoide demo --ask "もくもく会の会場は？" --db sqlite:///./data/demo.db')
def demo(
    ask: Annotated[
        list[str] | None, typer.Option("--ask", "-q", help="Ask your own question (repeatable) instead of the samples.")
    ] = None,
    all_questions: Annotated[bool, typer.Option("--all", help="Ask every sample question.")] = False,
    db: DbOption = None,
) -> None:
    """The main job, offline: import a sample Discord export, embed it, answer questions with citations."""
    from omoide.cli.demo import run_demo

    run(lambda: run_demo(db, ask_all=all_questions, custom=list(ask or [])))


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main", "open_memory"]
