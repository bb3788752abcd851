"""ChatRunner on a JSONL transcript: compaction is an appended record, replay starts from it."""

from __future__ import annotations

import json

from omoide.chat import ChatRunner, TranscriptConversation
from omoide.context import PromptBudget
from omoide.context.compaction import SUMMARISER_SYSTEM
from omoide.models import SUMMARY_PREFIX, Message
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.providers.tokens import get_token_counter
from omoide.transcripts import TranscriptStore

counter = get_token_counter()


def model(overflow_above: int | None = None) -> ScriptedChatModel:
    def reply(request: ChatRequest) -> str:
        return "short summary" if request.system == SUMMARISER_SYSTEM else "ok"

    return ScriptedChatModel(reply, counter=counter, overflow_above=overflow_above)


async def test_jsonl_compaction_is_a_record_and_is_not_redone(tmp_path):
    store = TranscriptStore(tmp_path)
    session = await store.create_session("agent", "s")
    conversation = TranscriptConversation(store, "agent", session.id)
    filler = " ".join(f"w{i}" for i in range(150))
    for i in range(8):
        await conversation.add(Message.user(f"u{i} {filler}"))
        await conversation.add(Message.assistant(f"a{i} {filler}"))
    full = counter.count_messages(await conversation.prompt_history())
    scripted = model(overflow_above=full // 2)
    runner = ChatRunner(scripted, counter, PromptBudget(1_000_000, 1_000))

    first = await runner.turn(conversation, Message.user("next question"))
    assert first.stage == 2
    records = await store.records("agent", session.id)
    kinds = [r["type"] for r in records]
    assert kinds.count("compaction") == 1
    assert kinds.count("user") == 9  # every original turn is still in the file
    compaction = next(r for r in records if r["type"] == "compaction")
    assert records[compaction["replaces_through"]]["type"] in {"user", "assistant"}

    summaries = sum(1 for c in scripted.calls if c.system == SUMMARISER_SYSTEM)
    second = await runner.turn(conversation, Message.user("and another"))
    assert second.stage == 0  # replay starts from the summary: nothing to compact again
    assert sum(1 for c in scripted.calls if c.system == SUMMARISER_SYSTEM) == summaries
    assert scripted.calls[-1].messages[0].text.startswith(SUMMARY_PREFIX)
    # the file is still valid JSONL a user can read
    path = tmp_path / "agents" / "agent" / "sessions" / f"{session.id}.jsonl"
    assert all(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())


async def test_manual_compact_and_usage(tmp_path):
    store = TranscriptStore(tmp_path)
    session = await store.create_session("agent")
    conversation = TranscriptConversation(store, "agent", session.id)
    runner = ChatRunner(model(), counter, PromptBudget(10_000, 1_000))
    assert await runner.compact(conversation) is None  # nothing yet
    for i in range(6):
        await runner.turn(conversation, Message.user(f"question {i} " + "x " * 50))
    before = await runner.usage(conversation)
    done = await runner.compact(conversation)
    assert done is not None
    after = await runner.usage(conversation)
    assert after.tokens < before.tokens
    assert after.context_window == 10_000
    assert after.prompt_limit == 9_000
