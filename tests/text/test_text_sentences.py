"""The sentence splitter for Japanese, English and mixed chat text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omoide.text import is_japanese, normalize, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今日は晴れ。明日は雨らしい！本当？", ["今日は晴れ。", "明日は雨らしい！", "本当？"]),
        ("「行こう。」と言った。次の文。", ["「行こう。」と言った。", "次の文。"]),
        ("彼は「そうだね。でも無理。」と答えた", ["彼は「そうだね。でも無理。」と答えた"]),
        ("本当!?すごい", ["本当!?", "すごい"]),
        (
            "I met Dr. Smith at 3.30 today. He was late! Why? OK",
            ["I met Dr. Smith at 3.30 today.", "He was late!", "Why?", "OK"],
        ),
        ("See e.g. the docs. J. K. Rowling wrote it.", ["See e.g. the docs.", "J. K. Rowling wrote it."]),
        ("Visit example.com now. Done", ["Visit example.com now.", "Done"]),
        ("line one\nline two\n\n  line three  ", ["line one", "line two", "line three"]),
        ("Pythonを使った。Then we shipped it.", ["Pythonを使った。", "Then we shipped it."]),
        ("そうですね…また今度", ["そうですね…", "また今度"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@given(st.text(max_size=300))
def test_sentences_keep_every_non_space_character_in_order(text: str) -> None:
    sentences = split_sentences(text)
    assert "".join("".join(s.split()) for s in sentences) == "".join(text.split())
    assert all(s and s == s.strip() for s in sentences)


def test_normalize_and_language_guess() -> None:
    assert normalize("ＡＢＣ ｶﾀｶﾅ It’s") == "abc カタカナ it's"
    assert is_japanese("andyって誰？")
    assert is_japanese("東京")
    assert not is_japanese("Who is Andy?")
    assert not is_japanese("")
