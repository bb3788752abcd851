"""Text utilities: normalisation, Japanese-aware search tokens and sentence splitting.

* :func:`tokenize_for_search` — lexical tokens for full-text search, the same call at
  index and at query time (SudachiPy when installed, character bigrams otherwise).
* :func:`lexical_text` — those tokens as the stored lexical index text, bounded so
  PostgreSQL's ``tsvector`` never rejects it.
* :func:`split_sentences` — a rule-based splitter for Japanese, English and mixed chat text.
* :func:`normalize` / :func:`is_japanese` — NFKC + lower case; a language guess for labels.
"""

from omoide.text._normalize import is_japanese, normalize
from omoide.text.lexical import lexical_text
from omoide.text.sentences import split_sentences
from omoide.text.tokenize import (
    NgramTokenizer,
    SearchTokenizer,
    SudachiTokenizer,
    char_bigrams,
    get_search_tokenizer,
    search_tokenizer_name,
    stem_english,
    sudachi_available,
    tokenize_for_search,
    tokenizer_named,
)

__all__ = [
    "NgramTokenizer",
    "SearchTokenizer",
    "SudachiTokenizer",
    "char_bigrams",
    "get_search_tokenizer",
    "is_japanese",
    "lexical_text",
    "normalize",
    "search_tokenizer_name",
    "split_sentences",
    "stem_english",
    "sudachi_available",
    "tokenize_for_search",
    "tokenizer_named",
]
