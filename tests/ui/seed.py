"""Data the inspector tests look at: two workspaces, each with a session archived into knowledge
(and embedded), memories (one updated), and summaries with two versions; B's text carries a
secret that A must never see."""

from __future__ import annotations

from dataclasses import dataclass

from omoide import Memory
from omoide.models import Message
from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

WS_A = "1290478288896131072"  # digits: a Discord guild, so sources get jump URLs
WS_B = "workspace-b"
SECRET = "B-secret-うなぎ"
A_LINES = (
    "来週の定例会議は金曜日の午後3時からです",
    "議事録は共有フォルダに置きました",
    "了解です、金曜日に参加します",
    "プロジェクトの締め切りは月末です",
)


@dataclass
class Seeded:
    a_token: str
    b_token: str
    a_session: str
    b_session: str
    a_memory: int
    a_memory_2: int
    b_memory: int


async def seed(mem: Memory) -> Seeded:
    """Fill both workspaces; return their keys and ids."""
    a_key = mem.session_key(platform="discord", workspace=WS_A, channel="42", user="7")
    for i, line in enumerate(A_LINES):
        author = "7" if i % 2 == 0 else "8"
        await mem.append(
            a_key, Message.user(line, author_id=author, author_name=f"user{author}", message_id=str(1000 + i))
        )
    b_key = mem.session_key(platform="discord", workspace=WS_B, channel="99", user="5")
    for i in range(3):
        await mem.append(b_key, Message.user(f"{SECRET} 会議 message {i}", author_id="5", message_id=f"b{i}"))
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    await mem.append(a_key, Message.user("アーカイブ後のメッセージ", author_id="7", message_id="1100"))

    first = await mem.remember("コーヒーはブラックが好き", workspace=WS_A, user="7", category="preference")
    second = await mem.remember("誕生日は3月3日", workspace=WS_A, user="7")
    await mem.memories.update(WS_A, "7", int(first.memory.id), content="コーヒーはブラックで砂糖なしが好き")
    b_memory = await mem.remember(f"{SECRET} memory", workspace=WS_B, user="5")

    for ws, text in ((WS_A, "金曜日の会議について話した"), (WS_B, f"{SECRET} summary")):
        for version in (1, 2):
            draft = SummaryDraft(
                workspace_id=ws,
                scope=SummaryScope.CHANNEL,
                scope_id="42" if ws == WS_A else "99",
                kind=SummaryKind.LONG_TERM,
                content=f"{text} (v{version})",
                source_message_count=2 * version,
            )
            await mem.store.summaries.save_summary(draft, new_version=True)

    a = await mem.api_keys.create(WS_A, name="a")
    b = await mem.api_keys.create(WS_B, name="b")
    return Seeded(
        a_token=a.token,
        b_token=b.token,
        a_session=a_key.value,
        b_session=b_key.value,
        a_memory=int(first.memory.id),
        a_memory_2=int(second.memory.id),
        b_memory=int(b_memory.memory.id),
    )
