"""Lexical search tokens: Japanese-aware, identical at index and query time."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omoide.errors import ConfigError
from omoide.text import (
    NgramTokenizer,
    get_search_tokenizer,
    search_tokenizer_name,
    stem_english,
    sudachi_available,
    tokenize_for_search,
)
from omoide.text.tokenize import (
    MAX_SUDACHI_CHARS,
    SudachiTokenizer,
    is_synonym_token,
    synonym_token,
    tokenizer_named,
)


def words(tokens: list[str]) -> list[str]:
    """The tokens without the synonym-group ones (Sudachi v3 adds them)."""
    return [t for t in tokens if not is_synonym_token(t)]


BACKENDS = [
    "ngram",
    "sudachi",
]  # Sudachi is a base dependency: its tests run, never skip (fallback: test_tokenizer_fallback.py)

SENTENCES_WITH_TENKI = [
    "今日は天気がいいですね。",
    "明日の天気はどうかな",
    "天気予報によると雨らしい",
    "週末の天気、晴れるといいな！",
    "Discordで天気の話をした",
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sentence", SENTENCES_WITH_TENKI)
def test_two_character_word_is_a_token_of_sentence_and_query(backend: str, sentence: str) -> None:
    query_tokens = tokenize_for_search("天気", backend=backend)  # type: ignore[arg-type]
    assert words(query_tokens) == ["天気"]
    # the word is a token of the sentence (a compound's parts give no synonym tokens: 天気予報)
    assert "天気" in tokenize_for_search(sentence, backend=backend)  # type: ignore[arg-type]


@given(
    st.text(alphabet="あいうえおかきくけこ今日明雨晴アイウエオ 、。abc", max_size=20),
    st.sampled_from(["天気", "京都", "映画", "仕事", "ゲーム"]),
    st.text(alphabet="あいうえおかきくけこ今日明雨晴アイウエオ 、。abc", max_size=20),
)
def test_ngram_backend_finds_any_two_character_word(prefix: str, word: str, suffix: str) -> None:
    tokens = tokenize_for_search(prefix + word + suffix, backend="ngram")
    assert word[:2] in tokens
    assert set(tokenize_for_search(word[:2], backend="ngram")) <= set(tokens)


@pytest.mark.parametrize("backend", BACKENDS)
def test_normalisation_and_case(backend: str) -> None:
    tokens = tokenize_for_search("ＡＢＣ１２３ Hello WORLD", backend=backend)  # type: ignore[arg-type]
    assert tokens == ["abc123", "hello", "world"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_english_words_possessives_and_plurals(backend: str) -> None:
    tokens = tokenize_for_search("Caroline's dogs went to Python 3.11 parties.", backend=backend)  # type: ignore[arg-type]
    assert tokens == ["carolin", "dog", "went", "to", "python", "3.11", "parti"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_english_word_forms_meet_at_one_stem(backend: str) -> None:
    def tok(text: str) -> list[str]:
        return tokenize_for_search(text, backend=backend)  # type: ignore[arg-type]

    assert tok("painting painted paints") == ["paint"] * 3
    assert tok("She adopted a puppy") == ["she", "adopt", "a", "puppi"]
    assert tok("she adopts puppies") == ["she", "adopt", "puppi"]
    assert tok("don't 3.11 café") == ["don't", "3.11", "café"]


def test_stem_english() -> None:
    assert [stem_english(w) for w in ["cats", "buses", "glass", "status", "ponies", "is", "mel's"]] == [
        "cat",
        "buse",  # Porter2: "bus" and "buses" differ; symmetric at index and query time all the same
        "glass",
        "status",
        "poni",
        "is",
        "mel",
    ]


def test_ngram_backend_bigrams_and_single_characters() -> None:
    assert NgramTokenizer().tokenize("雨") == ["雨"]
    assert NgramTokenizer().tokenize("今日は雨、ok") == ["今日", "日は", "は雨", "ok"]


def test_sudachi_drops_particles_and_lemmatises() -> None:
    tokens = tokenize_for_search("東京都庁に住んでいます", backend="sudachi")
    assert "に" not in tokens and "ます" not in tokens
    assert "住む" in tokens
    # compounds also give their parts, so a query for a part finds them
    assert {"東京都庁", "東京", "都庁"} <= set(tokens)
    assert set(words(tokenize_for_search("東京", backend="sudachi"))) <= set(tokens)


def test_sudachi_synonym_groups_let_a_paraphrase_meet_its_evidence() -> None:
    def tok(text: str) -> set[str]:
        return set(tokenize_for_search(text, backend="sudachi"))

    # one synonym group each: 果物 / フルーツ, 買う / 購入, イヤホン / イヤフォン (one normalised form too)
    assert synonym_token(683) in tok("果物") & tok("生のフルーツは苦手")
    assert tok("買わない") & tok("購入しました") >= {synonym_token(16)}
    assert tok("イヤホン") == tok("イヤフォン")
    # the tokens are ASCII words both databases keep whole, told apart from English words
    assert all(t.isascii() and t.isalnum() for t in tok("果物を買う") if is_synonym_token(t))
    assert not any(is_synonym_token(t) for t in tokenize_for_search("synergy syn 683 fruit", backend="sudachi"))
    # English text has none; the fallback backend has none
    assert not any(is_synonym_token(t) for t in tokenize_for_search("fruit purchases", backend="sudachi"))
    assert not any(is_synonym_token(t) for t in tokenize_for_search("果物を買う", backend="ngram"))


def test_an_index_written_before_synonyms_is_queried_without_them() -> None:
    v2 = tokenizer_named("sudachi-core:v2")
    v3 = tokenizer_named("sudachi-core:v3")
    assert v2 is not None and v3 is not None
    assert (v2.name, v3.name) == ("sudachi-core:v2", "sudachi-core:v3")
    assert v2.tokenize("果物を買う") == ["果物", "買う"]
    assert v3.tokenize("果物を買う") == ["果物", synonym_token(683), "買う", synonym_token(16)]
    v1 = tokenizer_named("sudachi-core:v1")
    assert v1 is not None and not any(is_synonym_token(t) for t in v1.tokenize("果物を買う"))
    assert tokenizer_named("sudachi-core:v4") is None
    with pytest.raises(ConfigError, match="no synonym tokens"):
        SudachiTokenizer(stemmer="plural", synonyms=True)


def test_sudachi_handles_text_longer_than_one_call_accepts() -> None:
    # about 90 KB of Japanese without punctuation: one Sudachi call takes at most ~49 KB
    text = "天気" * (MAX_SUDACHI_CHARS * 3 // 2)
    assert len(text.encode("utf-8")) > 49_149
    tokens = tokenize_for_search(text, backend="sudachi")
    assert tokens.count("天気") >= MAX_SUDACHI_CHARS


def test_sudachi_is_safe_across_threads() -> None:
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                results.append(tokenize_for_search("今日は天気がいいので京都へ行きます", backend="sudachi"))
        except BaseException as exc:  # collected and re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("backend", BACKENDS)
@given(text=st.text(max_size=200))
def test_tokens_are_clean_for_any_text(backend: str, text: str) -> None:
    tokens = tokenize_for_search(text, backend=backend)  # type: ignore[arg-type]
    assert tokens == tokenize_for_search(text, backend=backend)  # type: ignore[arg-type]
    for token in tokens:
        assert token
        assert not any(ch.isspace() for ch in token)


def test_auto_backend_and_names() -> None:
    assert sudachi_available()
    assert search_tokenizer_name() == "sudachi-core:v3"
    assert search_tokenizer_name("ngram") == "ngram:v2"
    assert get_search_tokenizer() is get_search_tokenizer()


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown search tokenizer backend 'mecab'"):
        tokenize_for_search("x", backend="mecab")  # type: ignore[arg-type]


def test_ngram_tokenizer_default_keeps_v1_plural_stemming_for_the_hashing_embedder() -> None:
    v1 = NgramTokenizer()
    assert v1.name == "ngram:v1"
    assert v1.tokenize("Caroline's parties") == ["caroline", "party"]
    v2 = NgramTokenizer(stemmer="porter2")
    assert v2.name == "ngram:v2"
    assert v2.tokenize("Caroline's parties") == ["carolin", "parti"]


def test_pystemmer_and_pure_python_snowball_give_the_same_stems():
    """The index's English stems must not depend on whether PyStemmer (C) is installed: snowballstemmer
    uses it when present, its pure Python otherwise. Same algorithm, same stems (the bundled sample
    chat's words and inflected forms)."""
    import re
    from importlib import resources

    Stemmer = pytest.importorskip("Stemmer", reason="PyStemmer is a base dependency on CPython only")
    from snowballstemmer.english_stemmer import EnglishStemmer  # type: ignore[import-untyped]

    text = "".join(
        p.read_text(encoding="utf-8")
        for p in resources.files("omoide.sample_data").joinpath("discord").iterdir()
        if p.name.endswith(".json")
    )
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
    words |= {"painting", "painted", "paints", "parties", "generously", "caroline", "hopefully", "dying"}
    c, pure = Stemmer.Stemmer("english"), EnglishStemmer()
    assert len(words) > 100
    assert {w: c.stemWord(w) for w in words} == {w: pure.stemWord(w) for w in words}
