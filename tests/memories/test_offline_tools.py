"""Memory tools with no LLM (issue 14 §4): the offline extractive model keeps what a user
explicitly asks it to remember, forgets on request, and answers from it later — through
``Memory.chat(tools=True)`` on a real store."""

from __future__ import annotations

from typing import Any

import pytest

from omoide import Memory, Message


@pytest.fixture
async def offline(settings: Any) -> Any:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as mem:
        assert mem.chat_model.provider == "extractive"
        yield mem


@pytest.mark.parametrize(
    ("tell", "stored", "confirm", "ask", "answer_has"),
    [
        (
            "Remember that my dog is called Pochi",
            "my dog is called Pochi",
            "I'll remember that:",
            "What is my dog called?",
            "Pochi",
        ),
        ("犬の名前はポチだと覚えて", "犬の名前はポチ", "覚えました:", "犬の名前は？", "ポチ"),
        (
            "私の誕生日は3月15日です。覚えておいてください。",
            "私の誕生日は3月15日",
            "覚えました:",
            "私の誕生日はいつ？",
            "3月15日",
        ),
        (
            "Please don't forget that I'm allergic to peanuts.",
            "I'm allergic to peanuts",
            "I'll remember",
            "What am I allergic to?",
            "peanuts",
        ),
    ],
    ids=["remember-that-en", "覚えて-ja", "覚えておいて-ja", "dont-forget-en"],
)
async def test_an_explicit_remember_request_is_kept_and_recalled_in_a_new_conversation(
    offline: Memory, tell: str, stored: str, confirm: str, ask: str, answer_has: str
) -> None:
    key = offline.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    first = await offline.chat(key, Message.user(tell, author_id="u1"), tools=True)
    assert confirm in first.text and stored in first.text
    assert "No evidence" not in first.text and "根拠となる記録" not in first.text
    assert [m.content for m in await offline.memories.list("g1", "u1")] == [stored]
    kinds = [[b.type for b in m.content] for m in await offline.history(key)]
    assert kinds == [["text"], ["tool_use"], ["tool_result"], ["text"]]  # the round is recorded

    await offline.reset(key)  # later: a fresh conversation, the fact only in memories
    second = await offline.chat(key, Message.user(ask, author_id="u1"), tools=True)
    assert answer_has in second.text and stored in second.text, second.text
    assert await offline.memories.list("g1", "other") == []


@pytest.mark.parametrize(
    "asking",
    [
        "Do you remember my dog's name?",
        "犬の名前を覚えてる？",
        "Remember when we went to Kyoto?",
        "My dog is called Pochi.",
    ],
)
async def test_asking_about_remembering_or_just_telling_stores_nothing(offline: Memory, asking: str) -> None:
    key = offline.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    reply = await offline.chat(key, Message.user(asking, author_id="u1"), tools=True)
    assert await offline.memories.list("g1", "u1") == []
    assert "remember that" not in reply.text and "覚えました" not in reply.text


async def test_recall_that_finds_nothing_answers_from_the_conversation(offline: Memory) -> None:
    key = offline.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await offline.chat(key, Message.user("I'm flying to Sapporo on Friday.", author_id="u1"), tools=True)
    reply = await offline.chat(key, Message.user("Where am I flying on Friday?", author_id="u1"), tools=True)
    assert "Sapporo" in reply.text and "From our conversation" in reply.text


@pytest.mark.parametrize(
    ("tell", "forget", "gone"),
    [
        ("犬の名前はポチだと覚えて", "犬の名前を忘れて", "忘れました:"),
        ("Remember that my dog is called Pochi", "Please forget that my dog is called Pochi", "Forgotten:"),
    ],
)
async def test_an_explicit_forget_request_deletes_the_memory(
    offline: Memory, tell: str, forget: str, gone: str
) -> None:
    key = offline.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await offline.remember("I like green tea", workspace="g1", user="u1")
    await offline.chat(key, Message.user(tell, author_id="u1"), tools=True)
    assert len(await offline.memories.list("g1", "u1")) == 2
    reply = await offline.chat(key, Message.user(forget, author_id="u1"), tools=True)
    assert gone in reply.text and "Pochi" in reply.text.replace("ポチ", "Pochi")
    assert [m.content for m in await offline.memories.list("g1", "u1")] == ["I like green tea"]


def _request(kind: str, fact: str) -> object:
    from omoide.providers.local._requests import MemoryRequest

    return MemoryRequest(kind, fact)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("犬の名前はポチだと覚えて", ("remember", "犬の名前はポチ")),
        ("犬の名前はポチだと覚えておいて", ("remember", "犬の名前はポチ")),
        ("誕生日は3月15日って覚えといて！", ("remember", "誕生日は3月15日")),
        ("覚えておいて：来週の火曜は歯医者", ("remember", "来週の火曜は歯医者")),
        ("好きな色は青だということを記憶して", ("remember", "好きな色は青")),
        ("Remember that my dog is called Pochi.", ("remember", "my dog is called Pochi")),
        ("please remember my birthday is March 15", ("remember", "my birthday is March 15")),
        ("Can you remember that I prefer tea?", ("remember", "I prefer tea")),
        ("Keep in mind that I work nights.", ("remember", "I work nights")),
        (
            "Don't forget: the wifi password is in the drawer",
            ("remember", "the wifi password is in the drawer"),
        ),
        ("ポチのことは忘れてください", ("forget", "ポチ")),
        ("Please forget about my birthday", ("forget", "my birthday")),
        ("Do you remember my dog's name?", None),
        ("Do you remember that I have a dog?", None),
        ("I remember that day well.", None),
        ("Remember when we went to Kyoto?", None),
        ("ポチのこと覚えてる？", None),
        ("覚えていますか？", None),
        ("犬の名前は？", None),
        ("What is my dog called?", None),
    ],
)
def test_read_request(text: str, expected: tuple[str, str] | None) -> None:
    from omoide.providers.local._requests import read_request

    assert read_request(text) == (None if expected is None else _request(*expected))


async def test_after_forgetting_the_forget_request_is_not_quoted_as_the_answer(offline: Memory) -> None:
    key = offline.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await offline.chat(key, Message.user("犬の名前はポチだと覚えて", author_id="u1"), tools=True)
    await offline.reset(key)
    await offline.chat(key, Message.user("犬の名前を忘れて", author_id="u1"), tools=True)
    reply = await offline.chat(key, Message.user("犬の名前は？", author_id="u1"), tools=True)
    assert await offline.memories.list("g1", "u1") == []
    assert "ポチ" not in reply.text and "忘れて" not in reply.text, reply.text
