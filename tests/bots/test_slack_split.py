"""``split_reply``: Slack replies cut at paragraph boundaries, code blocks kept whole."""

from __future__ import annotations

import pytest

from omoide.bots.slack_bot import MESSAGE_LIMIT, split_reply


def test_short_and_blank_replies():
    assert split_reply("hello") == ["hello"]
    assert split_reply("\n\nhello\n") == ["hello"]
    assert split_reply("  \n\n ") == []


def test_paragraphs_are_packed_and_never_cut_when_they_fit():
    paragraphs = [f"{i}: " + "あいうえお。" * 90 for i in range(12)]  # ~543 characters each
    parts = split_reply("\n\n".join(paragraphs), 1_200)
    assert all(len(p) <= 1_200 for p in parts)
    assert [q for p in parts for q in p.split("\n\n")] == paragraphs  # whole paragraphs, in order
    assert len(parts) == 6  # two per message: a third would not fit


def test_a_code_block_with_blank_lines_stays_one_block():
    code = "```python\ndef f():\n\n    return 1\n\n\nprint(f())\n```"
    text = "Intro paragraph.\n\n" + code + "\n\nOutro."
    assert split_reply(text, 50) == ["Intro paragraph.", code, "Outro."]
    assert split_reply(text, 60) == ["Intro paragraph.", code + "\n\nOutro."]


def test_an_overlong_paragraph_is_cut_between_lines_then_sentences():
    lines = [f"line {i}: " + "word " * 30 for i in range(40)]  # one paragraph of ~6,500 characters
    parts = split_reply("\n".join(lines), 1_000)
    assert len(parts) > 1 and all(len(p) <= 1_000 for p in parts)
    assert " ".join(parts).split() == "\n".join(lines).split()
    sentence = "This sentence ends here. " * 200
    assert all(len(p) <= 500 for p in split_reply(sentence, 500))
    assert all(p.endswith(".") for p in split_reply(sentence, 500))


@pytest.mark.parametrize("size", [10, 3_000, 9_000, 40_000])
def test_parts_respect_the_default_limit(size: int):
    text = "\n\n".join("段落。" * 50 + "x" * (size // 20) for _ in range(20))
    parts = split_reply(text)
    assert all(len(p) <= MESSAGE_LIMIT for p in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())
