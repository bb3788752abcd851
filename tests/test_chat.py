"""Memory.chat: one whole turn on a database session, on every backend."""

from __future__ import annotations

import pytest

from omoide import Memory, Message
from omoide.context.compaction import SUMMARISER_SYSTEM
from omoide.errors import AuthenticationFailed
from omoide.models import SUMMARY_ACK, SUMMARY_PREFIX
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.providers.tokens import get_token_counter

counter = get_token_counter()


def scripted(overflow_above: int | None = None) -> ScriptedChatModel:
    def reply(request: ChatRequest) -> str:
        if request.system == SUMMARISER_SYSTEM:
            return f"summary #{sum(1 for c in model.calls if c.system == SUMMARISER_SYSTEM)}"
        return f"answer to: {request.messages[-1].text[:30]}"

    model = ScriptedChatModel(reply, counter=counter, overflow_above=overflow_above)
    return model


@pytest.fixture
def key():
    return "discord:g1:c=c1:u=u1"


async def test_a_turn_stores_both_messages(settings, key):
    model = scripted()
    async with Memory.open(settings, chat_model=model) as mem:
        await mem.append(key, Message.user("前の話: 私はラーメンが好き"))
        await mem.append(key, Message.assistant("覚えました"))
        result = await mem.chat(key, "私の好物は？", system="be brief")
        assert result.stage == 0
        assert result.text == "answer to: 私の好物は？"
        sent = model.calls[0]
        assert sent.system == "be brief"
        assert [m.text for m in sent.messages] == ["前の話: 私はラーメンが好き", "覚えました", "私の好物は？"]
        stored = await mem.sessions.messages(key)
        assert [(m.role, m.text) for m in stored][-2:] == [("user", "私の好物は？"), ("assistant", result.text)]
        assert stored[-1].is_bot


async def test_streaming_passes_every_piece(settings, key):
    pieces: list[str] = []
    async with Memory.open(settings, chat_model=scripted()) as mem:
        result = await mem.chat(key, "stream this answer please", on_text=pieces.append)
    assert "".join(pieces) == result.text


async def test_compaction_is_persisted_and_not_redone(settings, key):
    filler = " ".join(f"word{i}" for i in range(120))
    async with Memory.open(settings, chat_model=scripted()) as mem:
        for i in range(10):
            await mem.append(key, Message.user(f"q{i} {filler}"))
            await mem.append(key, Message.assistant(f"a{i} {filler}"))
        full = counter.count_messages(await mem.history(key))
    model = scripted(overflow_above=full // 2)
    async with Memory.open(settings, chat_model=model) as mem:
        first = await mem.chat(key, "what did we discuss?")
        assert first.stage == 2
        assert first.compaction is not None
        session = await mem.sessions.get(key)
        assert session.context_summary == first.compaction.summary
        assert session.context_summary_seq == first.compaction.through_seq
        # nothing was deleted: every message is still stored
        assert len(await mem.sessions.messages(key)) == 22
        summaries_before = sum(1 for c in model.calls if c.system == SUMMARISER_SYSTEM)

        second = await mem.chat(key, "and then?")
        assert second.stage == 0  # starts from the stored summary: no new compaction
        assert sum(1 for c in model.calls if c.system == SUMMARISER_SYSTEM) == summaries_before
        sent = model.calls[-1].messages
        assert sent[0].text.startswith(SUMMARY_PREFIX)
        assert sent[1].text == SUMMARY_ACK
        assert sent[-1].text == "and then?"


async def test_reset_drops_the_summary_from_the_prompt(settings, key):
    async with Memory.open(settings, chat_model=scripted()) as mem:
        for i in range(6):
            await mem.append(key, Message.user(f"m{i}"))
        session = await mem.sessions.get(key)
        await mem.store.sessions.save_context_summary(session.id, summary="old topic", through_seq=4)
        await mem.reset(key)
        model = mem.chat_model
        await mem.chat(key, "new topic")
        assert [m.text for m in model.calls[-1].messages] == ["new topic"]  # type: ignore[attr-defined]


async def test_a_failing_model_is_not_compacted_and_keeps_the_user_message(settings, key):
    bad_key = AuthenticationFailed("invalid x-api-key (token rejected)", provider="anthropic", status_code=401)
    model = ScriptedChatModel([bad_key], counter=counter)
    async with Memory.open(settings, chat_model=model) as mem:
        with pytest.raises(AuthenticationFailed):
            await mem.chat(key, "hello?")
        stored = await mem.sessions.messages(key)
        assert [m.text for m in stored] == ["hello?"]
        assert (await mem.sessions.get(key)).context_summary is None
        assert len(model.calls) == 1


async def test_a_retried_message_gets_its_stored_answer_without_a_model_call(settings, key):
    """A bot or an HTTP client that retries a turn (same platform message id, e.g. after a timeout)
    got the model called again, the message twice in the prompt and a second answer stored."""
    model = scripted()
    async with Memory.open(settings, chat_model=model) as mem:
        first = await mem.chat(key, Message.user("what is on today?", message_id="m1"))
        pieces: list[str] = []
        again = await mem.chat(key, Message.user("what is on today?", message_id="m1"), on_text=pieces.append)
        assert again.text == first.text and pieces == [first.text]
        assert len(model.calls) == 1
        assert [(m.role, m.text) for m in await mem.sessions.messages(key)] == [
            ("user", "what is on today?"),
            ("assistant", first.text),
        ]
        # a new message is a new turn, and its prompt holds the earlier exchange once
        await mem.chat(key, Message.user("and tomorrow?", message_id="m2"))
        assert [m.text for m in model.calls[-1].messages] == ["what is on today?", first.text, "and tomorrow?"]


async def test_a_retry_after_a_failed_model_call_answers_once(settings, key):
    bad_key = AuthenticationFailed("invalid x-api-key (token rejected)", provider="anthropic", status_code=401)
    model = ScriptedChatModel([bad_key, "the answer"], counter=counter)
    async with Memory.open(settings, chat_model=model) as mem:
        await mem.append(key, Message.user("earlier", message_id="m0"))
        with pytest.raises(AuthenticationFailed):
            await mem.chat(key, Message.user("hello?", message_id="m1"))
        result = await mem.chat(key, Message.user("hello?", message_id="m1"))
        assert result.text == "the answer"
        assert [m.text for m in model.calls[-1].messages] == ["earlier\nhello?"]  # once (consecutive user turns join)
        assert [m.text for m in await mem.sessions.messages(key)] == ["earlier", "hello?", "the answer"]


async def test_offline_default_answers_in_extractive_mode(settings, key):
    async with Memory.open(settings) as mem:
        result = await mem.chat(key, "今日は何をしましょうか？")
        assert mem.chat_model.provider == "extractive"
        assert "抽出モード" in result.text
