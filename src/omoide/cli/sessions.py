"""`omoide sessions …`: short-term memory from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omoide.cli._common import MAX_INT, DbOption, JsonOption, console, open_memory, print_json, run
from omoide.cli._db import check_output_file, open_existing_memory, replacing
from omoide.models import Message, Role, Session, SessionStatus

app = typer.Typer(
    help="Inspect and edit sessions (short-term memory).",
    epilog="Example: omoide sessions show 'discord:123:c=456:u=789' --json",
    no_args_is_help=True,
)

KeyArg = Annotated[str, typer.Argument(help="Session key, e.g. discord:123:c=456:u=789 (see `omoide sessions list`).")]


def _row(s: Session) -> list[str]:
    return [
        escape(str(s.key)),
        s.status.value,
        str(s.last_seq),
        str(s.last_seq - s.archived_seq),
        s.last_active_at.strftime("%Y-%m-%d %H:%M:%S"),
    ]


@app.command("list", epilog="Example: omoide sessions list --workspace 123 --channel 456 --status active --json")
def list_sessions(
    workspace: Annotated[str | None, typer.Option(help="Only this workspace (guild / Slack team).")] = None,
    status: Annotated[SessionStatus | None, typer.Option(help="Only sessions with this status.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform (discord, slack, …).")] = None,
    channel: Annotated[str | None, typer.Option(help="Only this channel id.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user id (per-user sessions).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_INT, help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(min=0, max=MAX_INT, help="Skip this many (paging).")] = 0,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """List sessions, most recently active first."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            sessions = await mem.sessions.list_sessions(
                workspace=workspace,
                status=status,
                platform=platform,
                channel=channel,
                user=user,
                limit=limit,
                offset=offset,
            )
        if json_:
            print_json(sessions)
            return
        if not sessions:
            console.print("No sessions yet. Add one with `omoide sessions append KEY --text …`.")
            return
        table = Table("key", "status", "messages", "unarchived", "last active (UTC)")
        for s in sessions:
            table.add_row(*_row(s))
        console.print(table)

    run(main, json_errors=json_)


def _print_messages(messages: list[Message]) -> None:
    for m in messages:
        who = m.author_name or m.author_id or m.role
        stamp = m.created_at.strftime("%Y-%m-%d %H:%M")
        console.print(f"[dim]#{m.seq} {stamp}[/] [bold]{escape(who)}[/] ({m.role})", highlight=False)
        for block in m.content:
            data = block.to_dict()
            if data["type"] == "text":
                console.print("  " + data["text"], highlight=False, markup=False)
            else:
                console.print(f"  [{data['type']}] {data}", highlight=False, markup=False)


@app.command("show", epilog="Example: omoide sessions show 'discord:123:c=456:u=789' --window 20")
def show(
    key: KeyArg,
    window: Annotated[
        int | None, typer.Option(min=1, max=MAX_INT, help="Messages in the window (default: OMOIDE_SESSION_WINDOW).")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every stored message, not only the window.")] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Show a session and its current window of messages."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            session = await mem.sessions.get(key)
            messages = await (mem.sessions.messages(key) if all_ else mem.history(key, window=window))
        if json_:
            print_json({"session": session, "messages": messages})
            return
        console.print(
            f"[bold]{escape(str(session.key))}[/]  status={session.status.value} messages={session.last_seq} "
            f"archived_through={session.archived_seq} version={session.version}",
            highlight=False,
        )
        _print_messages(messages)

    run(main, json_errors=json_)


@app.command(
    "append", epilog="Example: omoide sessions append 'discord:123:c=456:u=789' --role user --text 'こんにちは'"
)
def append(
    key: KeyArg,
    text: Annotated[str, typer.Option("--text", help="The message text.")],
    role: Annotated[str, typer.Option(help="user or assistant.")] = "user",
    author: Annotated[str | None, typer.Option(help="Author id on the platform.")] = None,
    author_name: Annotated[str | None, typer.Option(help="Author display name.")] = None,
    message_id: Annotated[
        str | None,
        typer.Option(help="Platform message id, unique per workspace: re-appending it (to any session) is a no-op."),
    ] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Append one message to a session (created if needed)."""
    if role not in ("user", "assistant"):
        raise typer.BadParameter("must be user or assistant", param_hint="--role")
    typed_role: Role = "user" if role == "user" else "assistant"

    async def main() -> None:
        message = _message(typed_role, text, author, author_name, message_id)
        async with open_memory(db) as mem:
            stored, created = await mem.sessions.append_checked(key, message)
            target = await mem.sessions.get(key)
            elsewhere = None
            if not created and stored.session_id is not None and int(stored.session_id) != int(target.id):
                other = await mem.store.sessions.get_session_by_id(stored.session_id)
                elsewhere = other.key if other is not None else f"session id {stored.session_id}"
        if json_:
            print_json({"created": created, "message": stored, "stored_in_session": elsewhere or key})
        elif created:
            console.print(f"Stored message #{stored.seq} in {key}.", highlight=False, markup=False)
        elif elsewhere:
            console.print(
                f"Message {message_id} is already stored as #{stored.seq} of another session, {elsewhere} "
                "(platform message ids are unique per workspace, so this counts as a re-delivery); "
                f"nothing stored in {key}.",
                highlight=False,
                markup=False,
            )
        else:
            console.print(
                f"Message {message_id} was already stored as #{stored.seq}; nothing changed.",
                highlight=False,
                markup=False,
            )

    run(main, json_errors=json_)


def _message(role: Role, text: str, author: str | None, author_name: str | None, message_id: str | None) -> Message:
    factory = Message.user if role == "user" else Message.assistant
    return factory(text, author_id=author, author_name=author_name, message_id=message_id)


@app.command("reset", epilog="Example: omoide sessions reset 'agent:default:a=notes'")
def reset(key: KeyArg, db: DbOption = None) -> None:
    """Start a fresh conversation: empty the window (stored messages stay until archived)."""

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            session = await mem.reset(key)
        console.print(
            f"Reset {session.key}: the window now starts after message #{session.window_start_seq}.", markup=False
        )

    run(main)


@app.command("delete", epilog="Example: omoide sessions delete 'discord:123:c=456:u=789' --yes")
def delete(
    key: KeyArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    db: DbOption = None,
) -> None:
    """Delete a session and all its stored messages."""
    if not yes:
        typer.confirm(f"Delete {key} and all its messages?", abort=True)

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            deleted = await mem.sessions.delete(key)
        console.print(
            f"Deleted {key}." if deleted else f"No session {key}; nothing deleted.", highlight=False, markup=False
        )

    run(main)


@app.command("expire", epilog="Example: omoide sessions expire --idle-hours 24")
def expire(
    idle_hours: Annotated[
        float | None,
        typer.Option(
            help="Hours idle before expiry, 0 or more (0: every session; default: OMOIDE_SESSION_EXPIRE_AFTER_SECONDS)."
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Mark sessions idle for too long as expired (in batches). A new message re-activates them."""
    from datetime import timedelta

    from omoide.cli._durations import MAX_DURATION

    max_hours = MAX_DURATION.total_seconds() / 3600
    if idle_hours is not None and not 0 <= idle_hours <= max_hours:  # NaN too
        raise typer.BadParameter(
            f"{idle_hours} is not an idle time: give hours from 0 to {max_hours:,.0f} (0 expires every session)",
            param_hint="--idle-hours",
        )

    async def main() -> None:
        async with open_memory(db) as mem:
            idle = timedelta(hours=idle_hours) if idle_hours is not None else None
            count = await mem.sessions.expire_idle(idle_for=idle)
        console.print(f"Expired {count} session(s).")

    run(main)


@app.command("export", epilog="Example: omoide sessions export 'discord:123:c=456:u=789' > chat.jsonl")
def export(
    key: KeyArg,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of standard output.")
    ] = None,
    db: DbOption = None,
) -> None:
    """Export every stored message of a session as a JSONL transcript (one JSON record per line; `omoide sessions import` reads it back)."""
    from omoide.transcripts import dump_records, records_from_messages

    if output is not None:
        check_output_file(output, db)

    async def main() -> None:
        async with open_existing_memory(db) as mem:
            messages = await mem.sessions.messages(key)
        text = dump_records(records_from_messages(messages))
        if output is None:
            typer.echo(text, nl=False)
        else:
            with replacing(output) as out:
                out.write(text)
            console.print(f"Wrote {len(messages)} message(s) to {output}.", highlight=False, markup=False)

    run(main)


@app.command("import", epilog="Example: omoide sessions import chat.jsonl --key 'agent:default:a=chat' --json")
def import_(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="A JSONL transcript.")],
    key: Annotated[
        str | None, typer.Option(help="Session key to import into (default: agent:default:a=<file name>).")
    ] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Import a JSONL transcript into a session (platform message ids already stored are skipped).

    With --json: {"key", "session_id", "messages", "imported", "already_stored", "last_seq"}.
    """
    from rich.progress import Progress

    from omoide.keys import session_key
    from omoide.transcripts import messages_from_records, read_records

    target = key or session_key(workspace="default", agent=file.stem, policy="agent").value

    async def main() -> None:
        messages = messages_from_records(read_records(file))
        created = 0
        async with open_memory(db) as mem:
            with Progress(console=console, transient=True, disable=json_) as progress:
                task = progress.add_task(f"Importing {file.name}", total=len(messages))
                for message in messages:
                    _, new = await mem.sessions.append_checked(target, message)
                    created += new
                    progress.advance(task)
            session = await mem.sessions.get(target) if messages else None
        if json_:
            print_json(
                {
                    "key": target,
                    "session_id": session.id if session else None,
                    "messages": len(messages),
                    "imported": created,
                    "already_stored": len(messages) - created,
                    "last_seq": session.last_seq if session else None,
                }
            )
            return
        console.print(
            f"Imported {created} new message(s) into {target} ({len(messages) - created} already stored).",
            highlight=False,
        )

    run(main, json_errors=json_)
