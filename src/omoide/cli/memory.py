"""``omoide memory …`` and ``omoide forget-user``: a user's explicit memories from the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omoide.cli._common import MAX_INT, DbOption, JsonOption, console, open_memory, print_json, run
from omoide.cli._db import open_existing_memory

if TYPE_CHECKING:
    from omoide.stores.memories import MemoryHit, MemoryRecord

app = typer.Typer(
    help="A user's explicit memories (what they asked the bot to remember).",
    epilog='Example: omoide memory add "誕生日は3月15日" --workspace 123 --user 456',
    no_args_is_help=True,
)

WorkspaceOpt = Annotated[str, typer.Option("--workspace", "--guild", "-w", help="Workspace (guild / Slack team) id.")]
UserOpt = Annotated[str, typer.Option("--user", "-u", help="The user whose memories these are.")]
CategoryOpt = Annotated[str | None, typer.Option(help="Only this category (e.g. preference, schedule).")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", "-t", help="Tag (repeatable; filters need every tag).")]
IdArg = Annotated[int, typer.Argument(min=1, max=MAX_INT, help="Memory id (see `omoide memory list`).")]


def _table(memories: list[MemoryRecord], *, found_by: list[str] | None = None) -> Table:
    table = Table(*(["#"] if found_by else []), "id", "category", "tags")
    table.add_column("content", overflow="fold", min_width=12)  # never cut what the user asked to remember
    table.add_column("updated (UTC)")
    if found_by:
        table.add_column("found by")
    for i, m in enumerate(memories):
        row = [
            str(m.id),
            escape(m.category),
            escape(", ".join(m.tags)),
            escape(m.content),
            m.updated_at.strftime("%Y-%m-%d %H:%M"),
        ]
        if found_by:
            table.add_row(str(i + 1), *row, found_by[i])
        else:
            table.add_row(*row)
    return table


def _found_by(hit: MemoryHit, *, explain: bool) -> str:
    """How a recalled memory matched, in words (``meaning + words``); ``--explain`` adds the raw numbers."""
    names = {"vector": "meaning", "lexical": "words"}
    text = " + ".join(names[k] for k in ("vector", "lexical") if k in hit.ranks) or "-"
    if explain:
        ranks = ", ".join(f"{k}={v}" for k, v in hit.ranks.items())
        text += f"\nscore {hit.score:.4f}" + (f"; {ranks}" if ranks else "")
    return text


@app.command("add", epilog='Example: omoide memory add "誕生日は3月15日" --workspace 123 --user 456 --tag profile')
def add(
    content: Annotated[str, typer.Argument(help="What to remember, as a statement.")],
    workspace: WorkspaceOpt,
    user: UserOpt,
    category: Annotated[str, typer.Option(help="A short label.")] = "general",
    tag: TagOpt = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Remember something for a user (a near-duplicate of theirs is updated instead)."""

    async def main() -> None:
        async with open_memory(db) as mem:
            done = await mem.remember(content, workspace=workspace, user=user, category=category, tags=tag, actor="cli")
        if json_:
            print_json(done.as_dict())
        elif done.updated:
            console.print(
                f"Updated memory {done.memory.id} (it was a near-duplicate, similarity {done.similarity:.3f})."
            )
        else:
            console.print(f"Remembered as memory {done.memory.id}.")

    run(main, json_errors=json_)


@app.command("search", epilog='Example: omoide memory search "誕生日はいつ？" --workspace 123 --user 456 --limit 5')
def search(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    workspace: WorkspaceOpt,
    user: UserOpt,
    limit: Annotated[int, typer.Option(min=1, max=100, help="At most this many.")] = 5,
    category: CategoryOpt = None,
    tag: TagOpt = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Also show each memory's raw fused score and its rank in each list.")
    ] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Recall a user's memories, best match first: by meaning (vectors) and by words (full text), fused.

    The "found by" column says which of the two found each memory; --json and --explain give the raw scores.
    """

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            hits = await mem.recall(query, workspace=workspace, user=user, limit=limit, category=category, tags=tag)
        if json_:
            print_json([h.as_dict() for h in hits])
        elif not hits:
            console.print("No memory matches. See them all with `omoide memory list`.")
        else:
            console.print(_table([h.memory for h in hits], found_by=[_found_by(h, explain=explain) for h in hits]))

    run(main, json_errors=json_)


@app.command("list", epilog="Example: omoide memory list --workspace 123 --user 456 --category preference --page 2")
def list_(
    workspace: WorkspaceOpt,
    user: UserOpt,
    category: CategoryOpt = None,
    tag: TagOpt = None,
    page: Annotated[int, typer.Option(min=1, max=MAX_INT, help="Page, from 1.")] = 1,
    page_size: Annotated[int, typer.Option(min=1, max=200, help="Memories per page.")] = 20,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """List a user's memories, newest first."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            memories = await mem.memories.list(
                workspace, user, category=category, tags=tag, page=page, page_size=page_size
            )
        if json_:
            print_json([m.as_dict() for m in memories])
        elif not memories:
            console.print("No memories on this page. Add one with `omoide memory add`.")
        else:
            console.print(_table(memories))

    run(main, json_errors=json_)


@app.command("get", epilog="Example: omoide memory get 42 --workspace 123 --user 456 --json")
def get(
    memory_id: IdArg, workspace: WorkspaceOpt, user: UserOpt, db: DbOption = None, json_: JsonOption = False
) -> None:
    """Show one of a user's memories."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            memory = await mem.memories.get(workspace, user, memory_id)
        if json_:
            print_json(memory.as_dict())
        else:
            console.print(_table([memory]))

    run(main, json_errors=json_)


@app.command("update", epilog='Example: omoide memory update 42 "誕生日は4月2日" --workspace 123 --user 456')
def update(
    memory_id: IdArg,
    text: Annotated[
        str | None,
        typer.Argument(
            metavar="TEXT", help="New content (embedded again), as in `omoide memory add`.", show_default=False
        ),
    ] = None,
    *,
    workspace: WorkspaceOpt,
    user: UserOpt,
    content: Annotated[
        str | None, typer.Option(help="New content, as an option (same as the TEXT argument).", show_default=False)
    ] = None,
    category: Annotated[str | None, typer.Option(help="New category.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Replace the tags (repeatable).")] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Change one of a user's memories: its content (TEXT or --content), category or tags."""
    if text is not None and content is not None and text != content:
        raise typer.BadParameter("give the new content once: as TEXT or as --content, not both", param_hint="TEXT")
    content = text if text is not None else content

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            memory = await mem.memories.update(
                workspace, user, memory_id, content=content, category=category, tags=tag, actor="cli"
            )
        if json_:
            print_json(memory.as_dict())
        else:
            console.print(f"Updated memory {memory.id}.")

    run(main, json_errors=json_)


@app.command("delete", epilog="Example: omoide memory delete 42 --workspace 123 --user 456")
def delete(
    memory_id: IdArg, workspace: WorkspaceOpt, user: UserOpt, db: DbOption = None, json_: JsonOption = False
) -> None:
    """Delete one of a user's memories."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            await mem.memories.delete(workspace, user, memory_id, actor="cli")
        if json_:
            print_json({"deleted": memory_id})
        else:
            console.print(f"Deleted memory {memory_id}.")

    run(main, json_errors=json_)


ERASED = (
    "their memories; their sessions and every message they wrote; their lines in long-term knowledge "
    "(archived conversations and imported history); the summaries that drew on them; their transcripts"
)
"""What ``forget-user`` erases, as its confirmation prompt and ``--help`` say it."""


def forget_user(
    workspace: WorkspaceOpt,
    user: UserOpt,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Erase everything stored about a user in a workspace, for good: their memories; their sessions
    and every message they wrote; their lines in long-term knowledge (archived conversations and
    imported history); the summaries that drew on them; their transcripts.

    Asks first (on stderr) unless --yes. Prints the receipt: how many records of each kind were
    erased (--json: {kind: count}). Running it again erases nothing and prints zeros.
    """
    if not yes:
        typer.confirm(
            f"Erase everything stored about user {user} in workspace {workspace}: {ERASED}? This cannot be undone.",
            abort=True,
            err=True,
        )

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            report = await mem.forget_user(workspace=workspace, user=user)
        erased = report.as_dict()
        if json_:
            print_json(erased)
            return
        if any(erased.values()):
            console.print(f"Erased user {user} in workspace {workspace}:", markup=False, highlight=False)
        else:
            console.print(
                f"Nothing was stored about user {user} in workspace {workspace}: nothing erased.",
                markup=False,
                highlight=False,
            )
        width = max((len(kind) for kind in erased), default=0)
        for kind, count in erased.items():
            console.print(f"  {kind.replace('_', ' '):<{width}}  {count:>7,}", markup=False, highlight=False)

    run(main, json_errors=json_)


def register(root: typer.Typer) -> None:
    """Add ``memory`` and ``forget-user`` to the root ``omoide`` app."""
    root.add_typer(app, name="memory")
    root.command(
        "forget-user",
        epilog="Example: omoide forget-user -w 123 -u 456 (asks first; in scripts add --yes --json)",
    )(forget_user)


__all__ = ["app", "register"]
