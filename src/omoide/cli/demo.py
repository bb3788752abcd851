"""The offline demo: a short Discord-style conversation through short-term memory.

It runs on the embedded SQLite default with no network: messages go into per-user
sessions, the prompt window keeps the newest 20 while older messages stay stored for the
archiver, a re-delivered platform message is ignored, and the session exports to JSONL.
Running it again shows the idempotency: nothing is stored twice.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.panel import Panel
from rich.table import Table

from omoide.cli._common import console, open_memory
from omoide.models import Message

GUILD, CHANNEL = "1100000000000000001", "1200000000000000002"
ROUNDS = 6
USERS = {"3100000000000000001": "さくら", "3100000000000000002": "Andy"}

_SCRIPT: list[tuple[str, str]] = [
    ("3100000000000000001", "こんにちは！来週の勉強会の場所ってもう決まりましたか？"),
    ("bot", "こんにちは、さくらさん。まだ決まっていないようです。候補は渋谷と新宿です。"),
    ("3100000000000000001", "新宿なら駅から近い会議室がいいです。"),
    ("bot", "了解です。新宿の駅近の会議室で探してみますね。"),
    ("3100000000000000002", "Hi! Is the study group still on Thursday at 7pm?"),
    ("bot", "Yes, Thursday at 7pm. The venue is still being decided (Shibuya or Shinjuku)."),
    ("3100000000000000002", "Great. I'll bring the slides about pgvector and HNSW indexes."),
    ("bot", "Thanks Andy, I'll note that you are presenting on pgvector."),
]


async def run_demo(db: str | None) -> None:
    start = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    async with open_memory(db) as mem:
        console.print(Panel.fit(f"omoide demo — database: {mem.settings.database_url}", style="bold"))
        keys = {uid: mem.session_key(platform="discord", workspace=GUILD, channel=CHANNEL, user=uid) for uid in USERS}
        created = 0
        last_user = "3100000000000000001"
        # six rounds of the script give each user more than a 20-message window of conversation
        for round_no in range(ROUNDS):
            for i, (author, text) in enumerate(_SCRIPT):
                when = start + timedelta(days=round_no, minutes=i)
                msg_id = f"{round_no:02d}{i:04d}"
                if author == "bot":
                    message = Message.assistant(
                        text, author_id="bot", author_name="omoide", message_id=f"b{msg_id}", created_at=when
                    )
                else:
                    last_user = author
                    message = Message.user(
                        f"{text}（{round_no + 1}回目）",
                        author_id=author,
                        author_name=USERS[author],
                        message_id=f"u{msg_id}",
                        created_at=when,
                    )
                _, new = await mem.sessions.append_checked(keys[last_user], message)
                created += new
        # Discord re-delivers an event: the platform message id makes it a no-op
        first_author, first_text = _SCRIPT[0]
        _, redelivered = await mem.sessions.append_checked(
            keys[first_author],
            Message.user(
                f"{first_text}（1回目）", author_id=first_author, author_name=USERS[first_author], message_id="u000000"
            ),
        )

        table = Table("session", "stored", "in window", "unarchived", "status")
        for uid, key in keys.items():
            session = await mem.sessions.get(key)
            window = await mem.history(key)
            table.add_row(
                f"{USERS[uid]}  {key}",
                str(session.last_seq),
                str(len(window)),
                str(session.unarchived_count),
                session.status.value,
            )
        console.print(table)
        console.print(
            f"Stored {created} new message(s) this run"
            + (" (the re-delivered message was ignored)." if not redelivered else "."),
            highlight=False,
        )
        console.print(
            "The prompt window holds the newest 20 messages; older ones stay stored until the archiver "
            "moves them to long-term memory.",
            style="dim",
        )
        sakura = keys["3100000000000000001"]
        window = await mem.history(sakura, window=4)
        console.print(Panel("\n".join(f"[b]{m.author_name}[/b]: {m.text}" for m in window), title="latest window (4)"))
        question = "勉強会の場所の候補はどこでしたっけ？"
        reply = await mem.chat(sakura, Message.user(question, author_id="3100000000000000001", author_name="さくら"))
        console.print(
            Panel(f"[b]さくら[/b]: {question}\n[b]{mem.chat_model.model_id}[/b]: {reply.text}", title="mem.chat")
        )
        console.print(
            "Offline, the chat model is extractive: it quotes the conversation instead of generating. "
            "Set OMOIDE_LLM (see `omoide providers`) for a real model.",
            style="dim",
        )
        console.print(f"Try: omoide sessions show '{sakura}'   ·   omoide chat --db {mem.settings.database_url}")
