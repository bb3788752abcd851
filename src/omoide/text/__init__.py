"""Text utilities: normalisation, Japanese-aware search tokens and sentence splitting.

* :func:`tokenize_for_search` — lexical tokens for full-text search, the same call at
  index and at query time (SudachiPy, a base dependency; character bigrams where it cannot
  load). :func:`japanese_tokenizer` says which one is active and why.
* :func:`lexical_text` — those tokens as the stored lexical index text, bounded so
  PostgreSQL's ``tsvector`` never rejects it.
* :func:`split_sentences` — a rule-based splitter for Japanese, English and mixed chat text.
* :func:`normalize` / :func:`is_japanese` — NFKC + lower case; a language guess for labels.
"""

from omoide.text._normalize import is_japanese, normalize
from omoide.text.lexical import lexical_text
from omoide.text.sentences import split_sentences
from omoide.text.tokenize import (
    JapaneseTokenizerInfo,
    NgramTokenizer,
    SearchTokenizer,
    SudachiTokenizer,
    char_bigrams,
    get_search_tokenizer,
    japanese_tokenizer,
    search_tokenizer_name,
    stem_english,
    sudachi_available,
    sudachi_problem,
    tokenize_for_search,
    tokenizer_named,
)

__all__ = [
    "JapaneseTokenizerInfo",
    "NgramTokenizer",
    "SearchTokenizer",
    "SudachiTokenizer",
    "char_bigrams",
    "get_search_tokenizer",
    "is_japanese",
    "japanese_tokenizer",
    "lexical_text",
    "normalize",
    "search_tokenizer_name",
    "split_sentences",
    "stem_english",
    "sudachi_available",
    "sudachi_problem",
    "tokenize_for_search",
    "tokenizer_named",
]
