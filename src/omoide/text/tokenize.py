"""Japanese-aware lexical tokens for full-text search.

omoide tokenises text itself and hands the stores space-separated tokens (SQLite FTS5
with its plain ``unicode61`` tokenizer, PostgreSQL ``to_tsvector('simple', ...)``),
because neither database splits Japanese usefully: FTS5's trigram tokenizer cannot
match a two-character word such as 天気, and PostgreSQL has no Japanese parser.

:func:`tokenize_for_search` is used at **index time and at query time alike**; the
symmetry is what makes a query token match a document token. How it works:

1. :func:`~omoide.text.normalize`: NFKC + lower case (``ＡＢＣ`` → ``abc``, ``ｶﾀｶﾅ`` → ``カタカナ``).
2. The text is cut into runs of Japanese characters (kanji, kana) and the rest.
3. Outside Japanese runs, words are letters/digits (``3.11``, ``don't`` stay whole);
   a trailing possessive ``'s`` is dropped and alphabetic words are stemmed with the
   Snowball English (Porter2) stemmer (``painting``/``painted``/``paints`` → ``paint``,
   ``parties`` → ``parti``), so a question's word form finds the chat's. (v1 only stripped
   plurals; stemming raised lexical Recall@10 on LoCoMo by 0.025–0.035, see
   ``docs/bench-notes/retrieval-quality.md``.) The stems come from PyStemmer (Snowball's C
   code, a base dependency on CPython) when it is installed, else from snowballstemmer's pure
   Python: the same algorithm and the same stems (checked on 13,646 LoCoMo and docs words),
   PyStemmer ~19x faster.
4. Japanese runs go to one of two backends:

   * ``sudachi`` (SudachiPy and sudachidict-core, base dependencies where a wheel exists): morphological
     analysis in split mode C, emitting each morpheme's *normalised form* (``いい`` →
     ``良い``, ``住ん`` → ``住む``) and, for compounds, also their mode-A parts
     (``東京都庁`` → ``東京都庁 東京 都庁``), so a query for a part finds the compound.
     Each morpheme also emits a token per *synonym group* the dictionary gives it
     (``syn683`` for both ``果物`` and ``フルーツ``, ``syn16`` for ``買う`` and ``購入``;
     :func:`synonym_token`), so a paraphrased question still meets its evidence (v3:
     cross-validated Recall@10 on the Japanese set +0.013, docs/bench-notes/retrieval-quality.md).
     Particles, auxiliary verbs and symbols are dropped. One Sudachi call accepts at
     most ~49 KB, so runs are cut into pieces of at most 10,000 characters (≤ 40 KB).
   * ``ngram`` (dependency-free fallback): overlapping character bigrams of each run
     (``今日は天気`` → ``今日 日は は天 天気``); a run of one character is kept whole.
     ``auto`` falls back to it when SudachiPy is missing (a platform without a wheel) or its
     dictionary does not load, and logs one ``japanese_tokenizer_fallback`` warning per process
     saying why: Japanese recall is lower with bigrams (lexical Recall@10 0.433 against 0.463
     on the hold-out set of issue 20). :func:`japanese_tokenizer` describes the active one.

Both backends put a two-character word such as 天気 into the tokens of any sentence
containing it *and* of the query ``天気``. Indexes built with one backend must be
queried with the same one: :func:`search_tokenizer_name` names the active backend
(e.g. ``"sudachi-core:v3"``) so a store can record it and re-index when it changes.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import structlog

from omoide.errors import ConfigError
from omoide.text._normalize import HAS_JA, JA_RUN, WORD, normalize

log = structlog.get_logger(__name__)

Backend = Literal["auto", "sudachi", "ngram"]

MAX_SUDACHI_CHARS = 10_000
"""Longest piece handed to Sudachi in one call (≤ 40 KB in UTF-8; Sudachi's limit is ~49 KB)."""

_DROPPED_POS = frozenset({"助詞", "助動詞", "補助記号", "空白", "記号"})
_SEGMENT = re.compile(f"(?P<ja>{JA_RUN.pattern})|(?P<word>{WORD.pattern})")


class SearchTokenizer(Protocol):
    """Text → lexical tokens. ``name`` identifies the backend and its version."""

    name: str

    def tokenize(self, text: str) -> list[str]:
        """The search tokens of ``text`` (lower case, normalised, in text order)."""


_stemmers = threading.local()


def _porter2(word: str) -> str:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:  # Snowball stemmer objects keep state: one per thread
        import snowballstemmer  # type: ignore[import-untyped]

        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return str(stemmer.stemWord(word))


def stem_plural(word: str) -> str:
    """v1's light stemmer: drop a possessive ``'s`` and apply Harman's S-stemmer.

    Kept for :class:`NgramTokenizer` ``(stemmer="plural")``, which the hashing embedder
    uses for its features (its ``hashing:v1`` vectors must not change).

    >>> [stem_plural(w) for w in ["caroline's", "dogs", "parties", "glass", "bus"]]
    ['caroline', 'dog', 'party', 'glass', 'bus']
    """
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=65_536)
def stem_english(word: str) -> str:
    """Drop a possessive ``'s`` and stem an alphabetic word with Snowball English (Porter2).

    Words with digits or inner punctuation (``3.11``, ``don't``) are kept as they are.

    >>> [stem_english(w) for w in ["caroline's", "dogs", "painting", "painted", "glass", "3.11"]]
    ['carolin', 'dog', 'paint', 'paint', 'glass', '3.11']
    """
    if word.endswith("'s"):
        word = word[:-2]
    if not word.isalpha() or not word.isascii():
        return word
    return _porter2(word)


def _segments(text: str, stem: Callable[[str], str] = stem_english) -> Iterator[tuple[bool, str]]:
    """Yield ``(is_japanese_run, piece)`` for the normalised text, in order."""
    for m in _SEGMENT.finditer(normalize(text)):
        ja = m.group("ja")
        if ja is not None:
            yield True, ja
        else:
            word = stem(m.group("word"))
            if word:
                yield False, word


def _words_only(text: str, stem: Callable[[str], str]) -> list[str] | None:
    """The tokens of a text without Japanese characters (most chat text): its words, stemmed —
    what :func:`_segments` yields for it, without a match object and a tuple per word (half the
    time of a message's tokens); ``None`` when the text has Japanese, for the analyser."""
    normalized = normalize(text)
    if HAS_JA.search(normalized):
        return None
    return [word for word in map(stem, WORD.findall(normalized)) if word]


def char_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of ``run``; a one-character run is kept whole."""
    if len(run) <= 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


class NgramTokenizer:
    """The dependency-free backend: words outside Japanese, character bigrams inside.

    Args:
        stemmer: ``"porter2"`` (the search tokenizer, ``ngram:v2``) or ``"plural"``
            (v1's S-stemmer, ``ngram:v1``; the default, kept because the hashing
            embedder builds its features with ``NgramTokenizer()``).

    Raises:
        ConfigError: an unknown stemmer.
    """

    def __init__(self, *, stemmer: Literal["porter2", "plural"] = "plural") -> None:
        if stemmer == "porter2":
            self._stem: Callable[[str], str] = stem_english
            self.name = "ngram:v2"
        elif stemmer == "plural":
            self._stem = stem_plural
            self.name = "ngram:v1"
        else:
            raise ConfigError(f"unknown stemmer {stemmer!r}; expected porter2 or plural")

    def tokenize(self, text: str) -> list[str]:
        words = _words_only(text, self._stem)
        if words is not None:
            return words
        out: list[str] = []
        for is_ja, piece in _segments(text, self._stem):
            if is_ja:
                out.extend(char_bigrams(piece))
            else:
                out.append(piece)
        return out


SYNONYM_PREFIX = "syn"


def synonym_token(group: int) -> str:
    """The index token of a Sudachi synonym group: ``syn`` and the group's number.

    An ASCII word, so both FTS5's ``unicode61`` and PostgreSQL's ``simple`` parser keep it
    whole; English text could only produce it by containing that very word.

    >>> synonym_token(683)
    'syn683'
    """
    return f"{SYNONYM_PREFIX}{group}"


def is_synonym_token(token: str) -> bool:
    """Whether ``token`` is a :func:`synonym_token`.

    >>> is_synonym_token("syn683"), is_synonym_token("synergi"), is_synonym_token("syn")
    (True, False, False)
    """
    return token.startswith(SYNONYM_PREFIX) and token[len(SYNONYM_PREFIX) :].isdigit()


class SudachiTokenizer:
    """The morphological backend: SudachiPy with the ``core`` dictionary.

    Sudachi tokenizers are not safe to share between threads, so each thread builds its
    own (about 50 ms; the dictionary file is memory-mapped and shared).

    Args:
        stemmer: ``"porter2"`` (the search tokenizer since v2) or ``"plural"``
            (``sudachi-core:v1``'s S-stemmer, to query an index written before v2).
        synonyms: also emit each morpheme's synonym groups (:func:`synonym_token`; the search
            tokenizer since v3). ``False`` with porter2 is ``sudachi-core:v2``, to query an
            index written before v3; v1 had none.

    Raises:
        ConfigError: SudachiPy or sudachidict-core is not installed, an unknown stemmer, or
            synonyms asked with the v1 stemmer.
    """

    def __init__(self, *, stemmer: Literal["porter2", "plural"] = "porter2", synonyms: bool = True) -> None:
        problem = sudachi_problem()
        if problem is not None:
            raise ConfigError(f"the sudachi tokenizer cannot run here: {problem}")
        if stemmer == "porter2":
            self._stem: Callable[[str], str] = stem_english
            self.name = "sudachi-core:v3" if synonyms else "sudachi-core:v2"
        elif stemmer == "plural" and not synonyms:
            self._stem = stem_plural
            self.name = "sudachi-core:v1"
        elif stemmer == "plural":
            raise ConfigError("sudachi-core:v1 (the plural stemmer) has no synonym tokens: pass synonyms=False")
        else:
            raise ConfigError(f"unknown stemmer {stemmer!r}; expected porter2 or plural")
        self._synonyms = synonyms
        self._local = threading.local()

    def _tokenizer(self) -> Any:
        tok = getattr(self._local, "tokenizer", None)
        if tok is None:
            from sudachipy import Dictionary, SplitMode

            self._local.dictionary = _take_probe_dictionary() or Dictionary(dict="core")
            tok = self._local.dictionary.tokenizer(mode=SplitMode.C)
            self._local.tokenizer = tok
            self._local.mode_a = SplitMode.A
        return tok

    def _analyse(self, run: str, out: list[str]) -> None:
        tok = self._tokenizer()
        mode_a = self._local.mode_a
        for start in range(0, len(run), MAX_SUDACHI_CHARS):
            for m in tok.tokenize(run[start : start + MAX_SUDACHI_CHARS]):
                if m.part_of_speech()[0] in _DROPPED_POS:
                    continue
                form = normalize(m.normalized_form()) or m.surface()
                out.append(form)
                if self._synonyms:
                    out.extend(synonym_token(group) for group in m.synonym_group_ids())
                parts = m.split(mode_a)
                if len(parts) > 1:
                    for part in parts:
                        if part.part_of_speech()[0] not in _DROPPED_POS:
                            out.append(normalize(part.normalized_form()) or part.surface())

    def tokenize(self, text: str) -> list[str]:
        words = _words_only(text, self._stem)
        if words is not None:
            return words
        out: list[str] = []
        for is_ja, piece in _segments(text, self._stem):
            if is_ja:
                self._analyse(piece, out)
            else:
                out.append(piece)
        return out


SUDACHI_INSTALL_HINT = "pip install sudachipy sudachidict-core (or pip install 'omoide[ja]')"

_probe_dictionaries: list[Any] = []  # the probe's loaded dictionary, for the first thread that tokenises
_probe_lock = threading.Lock()


def _take_probe_dictionary() -> Any | None:
    """The dictionary :func:`sudachi_problem` loaded, once: the first tokenizing thread reuses it
    instead of loading a second (~0.1 s a process). Each thread still gets its own dictionary."""
    with _probe_lock:
        return _probe_dictionaries.pop() if _probe_dictionaries else None


@functools.cache
def sudachi_problem() -> str | None:
    """Why the Sudachi backend cannot run here, or ``None`` when it can.

    Checked once per process: both packages importable *and* the core dictionary loads and
    analyses a word (a half-installed or corrupt dictionary fails here, not mid-import).
    """
    if importlib.util.find_spec("sudachipy") is None:
        return f"SudachiPy is not installed (no wheel for this platform?): {SUDACHI_INSTALL_HINT}"
    if importlib.util.find_spec("sudachidict_core") is None:
        return f"sudachidict-core is not installed: {SUDACHI_INSTALL_HINT}"
    try:
        from sudachipy import Dictionary, SplitMode

        dictionary = Dictionary(dict="core")
        dictionary.tokenizer(mode=SplitMode.C).tokenize("天気")
    except Exception as exc:  # any failure to load means: use the fallback, and say why
        return f"the Sudachi core dictionary does not load ({type(exc).__name__}: {exc}); reinstall: {SUDACHI_INSTALL_HINT}"
    with _probe_lock:
        _probe_dictionaries.append(dictionary)
    return None


def sudachi_available() -> bool:
    """Whether SudachiPy and its core dictionary are installed and load (see :func:`sudachi_problem`)."""
    return sudachi_problem() is None


@dataclass(frozen=True)
class JapaneseTokenizerInfo:
    """Which tokenizer ``auto`` uses for Japanese here, for ``omoide providers`` / ``status``.

    Attributes:
        name: the search tokenizer's name and version, e.g. ``"sudachi-core:v3"`` (what a
            store records for its lexical index).
        backend: ``"sudachi"`` (morphological) or ``"ngram"`` (character bigrams, the fallback).
        detail: the versions in use, or why Sudachi is not used and how to get it.
    """

    name: str
    backend: Literal["sudachi", "ngram"]
    detail: str


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def japanese_tokenizer() -> JapaneseTokenizerInfo:
    """The Japanese search tokenizer ``auto`` resolves to here, with versions or the reason for the fallback."""
    name = get_search_tokenizer().name
    problem = sudachi_problem()
    if problem is None:
        detail = f"morphological: SudachiPy {_version('sudachipy')}, sudachidict-core {_version('sudachidict-core')}, split mode C, synonym groups"
        return JapaneseTokenizerInfo(name, "sudachi", detail)
    return JapaneseTokenizerInfo(name, "ngram", f"fallback, character bigrams: {problem}")


@functools.cache  # once per process: get_search_tokenizer() and ("auto") are two cache entries
def _warn_fallback_once(problem: str) -> None:
    log.warning("japanese_tokenizer_fallback", tokenizer="ngram:v2", reason=problem)


@functools.cache
def get_search_tokenizer(backend: Backend = "auto") -> SearchTokenizer:
    """The process-wide tokenizer for ``backend`` (``auto``: Sudachi when it loads, else n-grams).

    ``auto`` falling back to n-grams logs one ``japanese_tokenizer_fallback`` warning per
    process (the result is cached), with the reason and the install command.

    Raises:
        ConfigError: ``backend`` is unknown, or ``sudachi`` was asked for but cannot run here.
    """
    if backend == "auto":
        problem = sudachi_problem()
        if problem is not None:
            _warn_fallback_once(problem)
        backend = "sudachi" if problem is None else "ngram"
    if backend == "sudachi":
        return SudachiTokenizer()
    if backend == "ngram":
        return NgramTokenizer(stemmer="porter2")
    raise ConfigError(f"unknown search tokenizer backend {backend!r}; expected auto, sudachi or ngram")


@functools.cache
def tokenizer_named(name: str) -> SearchTokenizer | None:
    """The tokenizer that writes index tokens called ``name`` (e.g. ``"ngram:v1"``), or
    ``None`` when it is unknown or not installed here.

    A store records the name of the tokenizer that wrote its lexical index; a query must
    be tokenised by that same tokenizer until the index is rebuilt with the current one
    (``omoide reindex --lexical``).

    >>> tokenizer_named("ngram:v1").tokenize("Caroline's parties")
    ['caroline', 'party']
    """
    family, _, version = name.partition(":")
    if family == "ngram" and version in ("v1", "v2"):
        return NgramTokenizer(stemmer="plural" if version == "v1" else "porter2")
    if family == "sudachi-core" and version in ("v1", "v2", "v3") and sudachi_available():
        if version == "v1":
            return SudachiTokenizer(stemmer="plural", synonyms=False)
        return SudachiTokenizer(synonyms=version == "v3")
    return None


def tokenize_for_search(text: str, *, backend: Backend = "auto") -> list[str]:
    """Lexical search tokens of ``text``; use the same call at index and at query time.

    >>> tokenize_for_search("Caroline's dogs", backend="ngram")
    ['carolin', 'dog']
    >>> tokenize_for_search("今日は天気", backend="ngram")
    ['今日', '日は', 'は天', '天気']
    """
    return get_search_tokenizer(backend).tokenize(text)


def search_tokenizer_name(backend: Backend = "auto") -> str:
    """Name and version of the tokenizer ``backend`` resolves to, e.g. ``"sudachi-core:v3"``."""
    return get_search_tokenizer(backend).name


__all__ = [
    "MAX_SUDACHI_CHARS",
    "SUDACHI_INSTALL_HINT",
    "Backend",
    "JapaneseTokenizerInfo",
    "NgramTokenizer",
    "SearchTokenizer",
    "SudachiTokenizer",
    "char_bigrams",
    "get_search_tokenizer",
    "is_synonym_token",
    "japanese_tokenizer",
    "search_tokenizer_name",
    "stem_english",
    "stem_plural",
    "sudachi_available",
    "sudachi_problem",
    "synonym_token",
    "tokenize_for_search",
    "tokenizer_named",
]
