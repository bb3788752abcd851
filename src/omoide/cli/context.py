"""``omoide context KEY [QUERY]``: what a bot would send for the next turn of a session."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.panel import Panel

from omoide.cli._common import MAX_INT, DbOption, JsonOption, console, print_json, run
from omoide.cli._db import open_existing_memory


def context(
    key: Annotated[str, typer.Argument(help="Session key, e.g. discord:123:c=456:u=789.")],
    query: Annotated[str | None, typer.Argument(help="What to look up (default: the newest user message).")] = None,
    budget: Annotated[
        int | None,
        typer.Option("--budget", min=1, max=MAX_INT, help="Most prompt tokens (default: the chat model's limit)."),
    ] = None,
    user: Annotated[str | None, typer.Option(help="Whose memories (default: the session's user).")] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Show the context a bot would send: system prompt with memories and knowledge, and the window."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            built = await mem.build_context(key, query, budget_tokens=budget, user=user)
        if json_:
            print_json(built.as_dict())
            return
        console.print(Panel(built.system, title="system", expand=False), markup=False)
        for m in built.messages:
            who = m.author_name or m.author_id or m.role
            console.print(f"[bold]{escape(who)}[/] ({m.role}): ", end="", highlight=False)
            console.print(m.text, highlight=False, markup=False)
        dropped = f"; left out: {', '.join(built.dropped)}" if built.dropped else ""
        console.print(f"[dim]{built.tokens} / {built.budget} tokens, {len(built.parts)} part(s){escape(dropped)}[/]")

    run(main, json_errors=json_)


def register(app: typer.Typer) -> None:
    """Add ``context`` to the root ``omoide`` app."""
    app.command(
        "context", epilog="Example: omoide context 'discord:123:c=456:u=789' \"来週の勉強会は？\" --budget 4000"
    )(context)


__all__ = ["context", "register"]
