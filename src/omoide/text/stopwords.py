"""Query-side English stop words for lexical search.

A question such as "What did Caroline research after she moved?" tokenises to
``what did caroline research after she moved``; only ``caroline``, ``research`` and
``moved`` say what it is about. BM25 gives such words little weight through their
document frequency, but not none: a long chunk full of "what", "did" and "she" still
gains score, and on PostgreSQL every such word is one more term to test per match. :func:`drop_stopwords` removes them from **query**
tokens only: the index keeps every word (so nothing needs re-indexing, and a query made
only of stop words, such as "who are you", is searched as it is).

Japanese needs no list here: the Sudachi backend already drops particles and auxiliary
verbs, and character bigrams have no stop words to speak of.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

# Function words of English questions and chat (a short list in the spirit of the
# SMART / Snowball lists, without content words such as "first", "new" or "like").
_ENGLISH = """
a about above after again against all am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours
ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they'd they'll they're they've
this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what
what's when when's where where's which while who who's whom why why's with won't would wouldn't you
you'd you'll you're you've your yours yourself yourselves also just will
"""


@functools.cache
def english_stopwords() -> frozenset[str]:
    """The stop words as search tokens (normalised and stemmed like indexed words)."""
    from omoide.text.tokenize import stem_english

    return frozenset(stem_english(w) for w in _ENGLISH.split())


def drop_stopwords(tokens: Sequence[str]) -> list[str]:
    """``tokens`` without English stop words; all of them when nothing else would be left.

    >>> drop_stopwords(["what", "did", "caroline", "research"])
    ['caroline', 'research']
    >>> drop_stopwords(["who", "are", "you"])
    ['who', 'are', 'you']
    """
    stop = english_stopwords()
    kept = [t for t in tokens if t not in stop]
    return kept if kept else list(tokens)


__all__ = ["drop_stopwords", "english_stopwords"]
