"""``omoide demo``: the main job, offline, on the embedded SQLite default.

It imports the sample Discord export shipped with omoide ("omoide lab": about 340
Japanese and English messages over six weeks in four channels and a thread) into
long-term memory, embeds it with the offline embedder, and answers questions about it
with citations and jump links — with no network and no API key. Offline the chat model
is extractive (it quotes the evidence instead of generating); set ``OMOIDE_LLM`` for a
real model. Running it again imports nothing twice and answers at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.panel import Panel

from omoide.cli._common import console, err_console, open_memory, progress_bars
from omoide.cli.imports import import_and_embed
from omoide.cli.search import render_answer
from omoide.sample_data import SampleQuestion, discord_export_paths, questions, sample_guild

if TYPE_CHECKING:
    from omoide.answers import Language

DEFAULT_QUESTIONS = ("q02", "q05", "q04")
"""Shown by default: two Japanese questions and an English one (``omoide demo --all`` asks every one)."""


def pick_questions(*, ask_all: bool, custom: list[str]) -> list[tuple[str, Language | None]]:
    """``(question, language)`` pairs to ask: the user's own, every sample question, or the default few."""
    if custom:
        return [(q, None) for q in custom]
    chosen: list[SampleQuestion] = questions() if ask_all else [q for q in questions() if q.id in DEFAULT_QUESTIONS]
    return [(q.question, "en" if q.lang == "en" else "ja") for q in chosen]


async def run_demo(db: str | None, *, ask_all: bool = False, custom: list[str] | None = None) -> dict[str, Any]:
    """Import, embed and ask; returns what was done (for tests and ``--json`` callers)."""
    guild_id, guild_name = sample_guild()
    asked = pick_questions(ask_all=ask_all, custom=custom or [])
    async with open_memory(db) as mem:
        console.print(
            Panel.fit(
                f"omoide demo — offline\n"
                f"database: {mem.settings.database_url}\n"
                f"embedder: {mem.embedder.model_id}   chat model: {mem.chat_model.model_id}",
                style="bold",
            ),
            highlight=False,
        )
        console.print(f"1. Importing the sample Discord export of “{guild_name}” into long-term memory…")
        with progress_bars() as progress:
            imported = await import_and_embed(mem, discord_export_paths(), progress)
        console.print(
            f"   {imported['new_messages']} new message(s) from {imported['conversations']} channel(s) and threads "
            f"→ {imported['chunks']} chunk(s); {imported['known_messages']} already stored"
            + (f"; embedded {imported['embedded_chunks']} chunk(s)." if "embedded_chunks" in imported else "."),
            highlight=False,
        )
        status = await mem.knowledge.status()
        waiting = status.sources.get("pending", 0) + status.sources.get("failed", 0)
        if waiting:
            err_console.print(
                f"[yellow]Note:[/] {waiting} source(s) are not embedded yet; "
                "run `omoide embed` (vector search covers only embedded chunks).",
                highlight=False,
            )
        console.print("2. Asking questions about it (hybrid search → answer with citations)…")
        answers: list[dict[str, Any]] = []
        for question, language in asked:
            result = await mem.ask(question, workspace=guild_id, language=language)
            console.rule(f"[bold]{question}[/]")
            render_answer(result)
            answers.append(result.as_dict())
        console.print()
        if mem.chat_model.model_id == "extractive":
            console.print(
                "Offline the chat model is extractive: it quotes the best evidence instead of writing an answer. "
                "Set OMOIDE_LLM (see `omoide providers`) for a generated answer.",
                style="dim",
            )
        db_flag = "" if db is None else f" --db {db}"
        console.print(
            f'Try: omoide ask "v0.4.0 のリリースが延期された理由は？" --guild {guild_id}{db_flag}   ·   '
            f'omoide search "Hive Shibuya" --guild {guild_id}{db_flag}   ·   omoide chat{db_flag}',
            highlight=False,
            soft_wrap=True,  # commands to copy: never broken in the middle of an id
        )
        return {"imported": imported, "answers": answers}


__all__ = ["DEFAULT_QUESTIONS", "pick_questions", "run_demo"]
