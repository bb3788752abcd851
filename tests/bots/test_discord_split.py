"""omoide.bots._split: replies cut at the platform's limit, on line and sentence boundaries."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from omoide.bots._split import DISCORD_LIMIT, split_message, utf16_length


def test_short_text_is_one_piece_and_blank_is_none():
    assert split_message("こんにちは") == ["こんにちは"]
    assert split_message("x" * DISCORD_LIMIT) == ["x" * DISCORD_LIMIT]
    assert split_message("") == [] and split_message("\n \n") == []


def test_lines_are_packed_and_never_cut_when_they_fit():
    lines = [f"{i:04d} " + "行の内容です。" * 10 for i in range(100)]
    pieces = split_message("\n".join(lines))
    assert len(pieces) > 1 and all(utf16_length(p) <= DISCORD_LIMIT for p in pieces)
    assert [line for p in pieces for line in p.split("\n")] == lines  # every line whole, in order
    assert all(utf16_length(a) + 1 + len(b.split("\n")[0]) > DISCORD_LIMIT for a, b in itertools.pairwise(pieces))


def test_a_long_line_breaks_between_sentences_then_words():
    japanese = "".join(f"これは{i}番目の文です。" for i in range(300))
    pieces = split_message(japanese, 500)
    assert all(len(p) <= 500 and p.endswith("。") for p in pieces)
    assert "".join(pieces) == japanese

    english = " ".join(f"Sentence number {i} is here." for i in range(200))
    pieces = split_message(english, 300)
    assert all(len(p) <= 300 and p.endswith(".") for p in pieces)
    assert " ".join(pieces) == english

    words = " ".join(["supercalifragilistic"] * 100)  # no sentence end at all
    pieces = split_message(words, 100)
    assert all(len(p) <= 100 for p in pieces) and " ".join(pieces) == words


def test_urls_are_not_cut():
    url = "https://discord.com/channels/1290478288896131072/1290478288896131073/1299999999999999999"
    text = " ".join(f"see {url}?n={i}" for i in range(80))
    pieces = split_message(text, 400)
    assert all(len(p) <= 400 for p in pieces)
    found = [u for p in pieces for u in re.findall(r"https://\S+", p)]
    assert found == [f"{url}?n={i}" for i in range(80)]


def test_a_code_block_stays_whole_when_it_fits():
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```"
    text = "前置き\n" + "a" * 150 + "\n" + code + "\nあとがき"
    pieces = split_message(text, 250)
    assert any(p.startswith("```python\nx0 = 0\n") and "x19 = 19\n```" in p for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)


def test_a_long_code_block_is_reopened_in_each_piece():
    body = [f"print({i})  # {'注釈' * 5}" for i in range(200)]
    text = "結果:\n```py\n" + "\n".join(body) + "\n```\n以上。"
    pieces = split_message(text, 500)
    assert all(len(p) <= 500 for p in pieces)
    code = [p for p in pieces if "```" in p]
    assert len(code) > 2 and all(p.count("```") == 2 for p in code)
    segments = [p[p.index("```") : p.rindex("```") + 3] for p in code]
    assert all(s.startswith("```py\n") and s.endswith("\n```") for s in segments)
    assert [line for s in segments for line in s.split("\n")[1:-1]] == body
    assert pieces[0].startswith("結果:\n```py") and pieces[-1].endswith("```\n以上。")


def test_utf16_counting_and_random_text_never_exceeds_the_limit():
    assert utf16_length("😀") == 2 and utf16_length("あ") == 1
    pieces = split_message("😀" * 1500)
    assert [utf16_length(p) for p in pieces] == [2000, 1000]

    rng = random.Random(7)
    alphabet = ["あ", "a", " ", "\n", "。", ".", "😀", "\n```\n", "```", "https://x.y/" + "z" * 30]
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3000)))
        text = re.sub(r"```[^\S\n]*[\w+#.-]+", "``` ", text)  # a language tag is repeated in each piece: none here
        limit = rng.choice([50, 200, 2000])
        pieces = split_message(text, limit)
        assert all(0 < utf16_length(p) <= limit for p in pieces)
        assert re.sub(r"\s|`", "", "".join(pieces)) == re.sub(r"\s|`", "", text)  # nothing lost


def test_text_after_a_fence_is_content_not_a_language():
    text = "```not a language\n" + "\n".join(["line"] * 100) + "\n```done"
    pieces = split_message(text, 120)
    joined = "\n".join(pieces)
    assert joined.count("not a language") == 1 and "done" in joined
    assert all(p.startswith("```\n") for p in pieces)


def test_limit_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        split_message("x", 0)
