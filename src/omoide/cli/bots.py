"""``omoide discord``: run a chat-platform bot on top of :class:`omoide.Memory`."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from omoide.cli._common import DbOption, console, open_memory, run
from omoide.errors import ConfigError


def discord_bot(
    guild: Annotated[
        int | None,
        typer.Option(
            "--guild",
            help="Register the slash commands in this server only (they appear at once; for development).",
        ),
    ] = None,
    mentions: Annotated[
        bool,
        typer.Option(
            "--mentions/--no-mentions",
            help="Answer messages that mention the bot (needs the Message Content intent).",
        ),
    ] = True,
    workers: Annotated[
        bool,
        typer.Option("--workers/--no-workers", help="Run omoide's background workers in the bot's process."),
    ] = True,
    sync_commands: Annotated[
        bool, typer.Option("--sync-commands/--no-sync-commands", help="Register the slash commands at start.")
    ] = True,
    db: DbOption = None,
) -> None:
    """Run the Discord bot: /ask, /chat, /memory, /sync, /forget-me and mentions. Token from DISCORD_TOKEN.

    Needs the discord extra: pip install 'omoide\\[discord]'. See docs/discord.md.
    """

    async def main() -> None:
        token = os.environ.get("DISCORD_TOKEN", "").strip()
        if not token:
            raise ConfigError(
                "set DISCORD_TOKEN to your bot's token "
                "(Discord Developer Portal → your application → Bot → Reset Token); see docs/discord.md"
            )
        try:
            from omoide.bots.discord_bot import DiscordBotConfig, run_discord_bot
        except ImportError as exc:
            raise ConfigError(f"the Discord bot needs discord.py: pip install 'omoide[discord]' ({exc})") from None
        config = DiscordBotConfig(command_guild=guild, mentions=mentions, sync_commands=sync_commands)
        async with open_memory(db) as mem:
            console.print("Starting the Discord bot (Ctrl-C stops it)…")
            await run_discord_bot(mem, token, config=config, workers=workers)

    run(main)


def register(app: typer.Typer) -> None:
    """Add ``omoide discord`` to the ``omoide`` command."""
    app.command("discord", epilog="Example: DISCORD_TOKEN=… omoide discord --guild 1290478288896131072")(discord_bot)


__all__ = ["register"]
