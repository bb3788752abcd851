"""``omoide summaries show`` and ``omoide summarise``: seed 003's rolling summaries."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.panel import Panel

from omoide.cli._common import DbOption, JsonOption, console, err_console, open_memory, print_json, run
from omoide.cli._db import open_existing_memory
from omoide.summaries.models import SummaryKind, SummaryScope

app = typer.Typer(
    help="Rolling short-term and long-term summaries.",
    epilog="Example: omoide summaries show 1290479547187331073 --workspace 1290478288896131072",
    no_args_is_help=True,
)


@app.command(
    "show",
    epilog="Example: omoide summaries show 1290479547187331073 --scope channel --workspace 1290478288896131072 --history",
)
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
            store = mem.summary_generator().store
            kinds = [kind] if kind else [SummaryKind.SHORT_TERM, SummaryKind.LONG_TERM]
            found = []
            for k in kinds:
                if history and k is SummaryKind.SHORT_TERM:
                    found += await store.summary_history(workspace, scope, target, k)
                else:
                    latest = await store.latest_summary(workspace, scope, target, k)
                    found += [latest] if latest else []
        if json_:
            print_json([s.as_dict() for s in found])
            return
        if not found:
            console.print(f"No summary of {scope.value} {target} yet. Run `omoide summarise` (or the worker).")
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
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Run one summariser pass: channels, threads and users whose triggers fired."""

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


def register(root: typer.Typer) -> None:
    """Add ``summaries`` and ``summarise`` to the root ``omoide`` app."""
    root.add_typer(app, name="summaries")
    root.command("summarise", epilog="Example: omoide summarise --now --json")(summarise)


__all__ = ["app", "register"]
