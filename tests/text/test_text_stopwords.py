"""Query-side English stop words (omoide.text.stopwords)."""

from __future__ import annotations

from omoide.text import tokenize_for_search
from omoide.text.stopwords import drop_stopwords, english_stopwords


def test_question_words_are_dropped_content_words_kept() -> None:
    tokens = tokenize_for_search("What did Caroline research after she moved?", backend="ngram")
    assert drop_stopwords(tokens) == ["carolin", "research", "move"]


def test_a_query_of_only_stopwords_is_kept_whole() -> None:
    tokens = tokenize_for_search("Who are you?", backend="ngram")
    assert drop_stopwords(tokens) == tokens == ["who", "are", "you"]


def test_stopwords_are_in_token_form_and_japanese_is_untouched() -> None:
    stop = english_stopwords()
    assert "the" in stop and "doe" in stop  # "does" stemmed like an indexed word
    assert "caroline" not in stop and "first" not in stop
    tokens = tokenize_for_search("今日の天気", backend="ngram")
    assert drop_stopwords(tokens) == tokens
