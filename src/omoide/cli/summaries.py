"""``omoide summaries show`` and ``omoide summarise``: seed 003's rolling summaries."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.panel import Panel

from omoide.cli._common import DbOption, JsonOption, console, err_console, open_memory, print_json, run
from omoide.cli._db import open_existing_memory
from omoide.stores.summaries import SummaryKind, SummaryScope

DEMO_EXAMPLE = (
    "Example: omoide summarise --imported && "
    "omoide summaries show 1290479547187331073 --workspace 1290478288896131072   (on the data of omoide demo)"
)
"""Works after ``omoide demo``: its export is imported history, summarised by ``--imported``
(the live summariser reads only the last 24 h of conversation)."""

app = typer.Typer(
    help="Rolling short-term and long-term summaries.",
    epilog=DEMO_EXAMPLE,
    no_args_is_help=True,
)


@app.command("show", epilog=DEMO_EXAMPLE)
def show(
    workspace: Annotated[str, typer.Option("--workspace", "--guild", "-w", help="Workspace id.")],
    scope_id: Annotated[str | None, typer.Argument(help="Channel, thread or user id (omit for the workspace).")] = None,
    scope: Annotated[SummaryScope, typer.Option(help="What the summary is of.")] = SummaryScope.CHANNEL,
    kind: Annotated[SummaryKind | None, typer.Option(help="Only this kind (default: both).")] = None,
    history: Annotated[bool, typer.Option("--history", help="Every short-term version, newest first.")] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Show the latest summaries of a channel, thread, user or the workspace."""
    if scope is not SummaryScope.WORKSPACE and scope_id is None:
        raise typer.BadParameter(f"give the {scope.value} id (or use --scope workspace)")
    target = workspace if scope is SummaryScope.WORKSPACE else str(scope_id)

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            summaries = mem.summaries
            kinds = [kind] if kind else [SummaryKind.SHORT_TERM, SummaryKind.LONG_TERM]
            found = []
            for k in kinds:
                if history and k is SummaryKind.SHORT_TERM:
                    found += await summaries.history(workspace, scope, target, k)
                else:
                    latest = await summaries.latest(workspace, scope, target, k)
                    found += [latest] if latest else []
        if json_:
            print_json([s.as_dict() for s in found])
            return
        if not found:
            if scope is SummaryScope.USER:  # summarise --imported builds none: imported lines are no user's session
                hint = (
                    "User summaries come from live conversations: run `omoide summarise` (or the worker); "
                    "`omoide summarise --imported` builds channel, thread and workspace summaries only."
                )
            else:
                hint = (
                    "Run `omoide summarise` (or the worker); for imported history (omoide import, omoide demo), "
                    "`omoide summarise --imported`."
                )
            console.print(f"No summary of {scope.value} {target} yet. {hint}", markup=False)
            return
        for s in found:
            stamp = s.created_at.strftime("%Y-%m-%d %H:%M")
            title = f"{s.kind.value} · {s.scope.value} {s.scope_id} · v{s.version} · {stamp} · {s.source_message_count} messages"
            console.print(Panel(s.content, title=title, expand=False), markup=False)

    run(main, json_errors=json_)


def summarise(
    now: Annotated[
        bool, typer.Option("--now", help="Ignore the triggers: summarise every scope with messages.")
    ] = False,
    imported: Annotated[
        bool,
        typer.Option(
            "--imported",
            help="Summarise the history imported into long-term memory (omoide import / demo), every "
            "public channel and thread, instead of the live conversation of the last summary window.",
        ),
    ] = False,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "--guild", "-w", help="With --imported: only this workspace.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="With --imported: messages from this time on (2025-10-01, 30d).")
    ] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Run one summariser pass: channels, threads and users whose triggers fired."""
    if imported:
        _summarise_imported(workspace, since, db, json_)
        return
    if workspace is not None or since is not None:
        raise typer.BadParameter("--workspace and --since go with --imported")

    async def main() -> dict[str, object]:
        async with open_memory(db) as mem:
            generator = mem.summary_generator()
            if now:
                generator.settings = generator.settings.model_copy(
                    update={"summary_idle_seconds": 1, "summary_message_threshold": 1}
                )
            with err_console.status("Summarising…", spinner="dots"):
                report = await generator.run()
        return {**report.as_log(), "updated": report.updated}

    data = run(main, json_errors=json_)
    if json_:
        print_json(data)
        return
    console.print(
        f"Updated {data['short_term']} short-term and {data['long_term']} long-term summaries "
        f"({data['workspaces']} workspace summaries) over {data['scopes']} scope(s); {data['skipped']} not due."
    )


def _summarise_imported(workspace: str | None, since: str | None, db: str | None, json_: bool) -> None:
    from omoide.cli.search import parse_time
    from omoide.summaries.imported import summarise_imported

    start = parse_time(since, option="--since")

    async def main() -> dict[str, object]:
        async with open_memory(db) as mem:
            with err_console.status("Summarising the imported history…", spinner="dots"):
                report = await summarise_imported(
                    mem.summary_generator(), mem.store.knowledge, workspace=workspace, since=start
                )
        return report.as_dict()

    data = run(main, json_errors=json_)
    if json_:
        print_json(data)
        return
    updated = data["updated"]
    assert isinstance(updated, list)
    if not updated:
        console.print("No imported history to summarise. Import a chat export first (omoide import, omoide demo).")
        return
    console.print(
        f"Summarised {data['messages']} imported message(s) of {len(updated)} channel(s) and thread(s) "
        f"({data['workspaces']} workspace summaries). Show one: omoide summaries show CHANNEL_ID --workspace ID"
    )


def register(root: typer.Typer) -> None:
    """Add ``summaries`` and ``summarise`` to the root ``omoide`` app."""
    root.add_typer(app, name="summaries")
    root.command(
        "summarise",
        epilog="Example: omoide summarise --now --json   (imported history: omoide summarise --imported --since 2025-10-01)",
    )(summarise)


__all__ = ["app", "register"]
