"""``omoide discord`` and ``omoide slack``: run a chat-platform bot on top of :class:`omoide.Memory`."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from omoide.cli._common import MAX_INT, DbOption, console, needs_extra, open_memory, run
from omoide.errors import ConfigError
from omoide.runtime import freeze_startup_heap

WorkersOption = Annotated[
    bool, typer.Option("--workers/--no-workers", help="Run omoide's background workers in the bot's process.")
]


def discord_bot(
    guild: Annotated[
        int | None,
        typer.Option(
            "--guild",
            min=1,
            max=MAX_INT,
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
    workers: WorkersOption = True,
    sync_commands: Annotated[
        bool, typer.Option("--sync-commands/--no-sync-commands", help="Register the slash commands at start.")
    ] = True,
    db: DbOption = None,
) -> None:
    """Run the Discord bot: /ask, /chat, /memory, /sync, /forget-me and mentions. Token from DISCORD_TOKEN.

    Needs the discord extra: pip install 'omoide\\[discord]'. See docs/discord.md.
    """

    async def main() -> None:
        with needs_extra("discord", "omoide discord"):
            from omoide.bots.discord_bot import DiscordBotConfig, run_discord_bot
        token = os.environ.get("DISCORD_TOKEN", "").strip()
        if not token:
            raise ConfigError(
                "set DISCORD_TOKEN to your bot's token "
                "(Discord Developer Portal → your application → Bot → Reset Token); see docs/discord.md"
            )
        config = DiscordBotConfig(command_guild=guild, mentions=mentions, sync_commands=sync_commands)
        async with open_memory(db) as mem:
            freeze_startup_heap()  # this process is the bot's: see omoide.runtime
            console.print("Starting the Discord bot (Ctrl-C stops it)…")
            await run_discord_bot(mem, token, config=config, workers=workers)

    run(main)


def slack_bot(
    workers: WorkersOption = True,
    ask_command: Annotated[
        str, typer.Option("--ask-command", help="The name of the /ask slash command as configured in the app.")
    ] = "/ask",
    memory_command: Annotated[
        str, typer.Option("--memory-command", help="The name of the /memory slash command as configured in the app.")
    ] = "/memory",
    db: DbOption = None,
) -> None:
    """Run the Slack bot over Socket Mode: mentions, DMs, /ask and /memory. Tokens from SLACK_BOT_TOKEN and SLACK_APP_TOKEN.

    Needs the slack extra: pip install 'omoide\\[slack]'. See docs/slack.md.
    """

    async def main() -> None:
        with needs_extra("slack", "omoide slack"):
            from omoide.bots.slack_bot import run_slack_bot, slack_tokens
        bot_token, app_token = slack_tokens()
        async with open_memory(db) as mem:
            freeze_startup_heap()  # this process is the bot's: see omoide.runtime
            console.print("Starting the Slack bot over Socket Mode (Ctrl-C stops it)…")
            await run_slack_bot(
                mem,
                bot_token=bot_token,
                app_token=app_token,
                workers=workers,
                ask_command=ask_command,
                memory_command=memory_command,
            )

    run(main)


def register(app: typer.Typer) -> None:
    """Add ``omoide discord`` and ``omoide slack`` to the ``omoide`` command."""
    app.command("discord", epilog="Example: DISCORD_TOKEN=… omoide discord --guild 1290478288896131072")(discord_bot)
    app.command("slack", epilog="Example: SLACK_BOT_TOKEN=xoxb-… SLACK_APP_TOKEN=xapp-… omoide slack")(slack_bot)


__all__ = ["register"]
