"""How the extractive model scores sentences against a question and picks a summary's.

A :class:`Candidate` sentence is scored by :func:`score` (embedding cosine plus IDF-weighted
token overlap) and :func:`prefer_answers` (a sentence that answers beats one that restates
the question); :func:`mmr` picks a summary's salient, non-redundant sentences. The words
these read are in :mod:`omoide.providers.local._language`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from omoide.providers.base import Embedder
from omoide.providers.local._language import answer_cues, content_tokens, is_question, matches, substance
from omoide.providers.local._prompt import Evidence
from omoide.text import split_sentences

QUESTION_PENALTY = 0.7
ECHO_PENALTY = 0.75
ECHO_NOVELTY = 0.25
CUE_BONUS = 0.35
MAX_CUES = 2
CUE_BASE_WEIGHT = 0.5
CUE_MISS_PENALTY = 0.7
LEAD_IN_MAX_TOKENS = 2
MMR_LAMBDA = 0.7


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    position: int
    evidence: Evidence | None = None
    speaker: str | None = None

    @property
    def scored_text(self) -> str:
        """The sentence with its speaker and evidence metadata (date, participants), as matched
        against a question ("What did Kenji say about …")."""
        meta = self.evidence.meta if self.evidence is not None and self.evidence.meta else ""
        return " ".join(p for p in (meta, self.speaker or "", self.text) if p)

    def render(self, japanese: bool) -> str:
        quoted = f"「{self.text}」" if japanese else f"“{self.text}”"
        parts = ["-"]
        if self.evidence is not None and self.evidence.meta:
            parts.append(self.evidence.meta)
        if self.speaker:
            parts.append(f"{self.speaker}:")
        parts.append(quoted)
        if self.evidence is not None:
            parts.append(self.evidence.citation)
        return " ".join(parts)


def answer_sentences(text: str, asked: set[str]) -> list[str]:
    """The sentences of one message, a short lead-in joined to the sentence after it.

    A lead-in is not a question, has at most ``LEAD_IN_MAX_TOKENS`` content words and
    names something the question asks about (``asked``: its content words), as
    "原因わかりました。" does for "…の原因は？" or "The reason is simple." for "What was the
    reason …?": what it announces is in the next sentence, so the two are quoted together.
    """
    out: list[str] = []
    pending = ""
    for sentence in split_sentences(text):
        if pending:
            sep = "" if pending.endswith(("。", "！", "？", "：", "…")) else " "
            sentence, pending = f"{pending}{sep}{sentence}", ""
        content = substance(sentence)
        lead_in = 0 < len(content) <= LEAD_IN_MAX_TOKENS and any(matches(t, asked) for t in content)
        if lead_in and not is_question(sentence):
            pending = sentence
            continue
        out.append(sentence)
    if pending:
        out.append(pending)
    return out


def prefer_answers(
    question: str, texts: Sequence[str], scores: Sequence[float], lexical: Sequence[float]
) -> list[float]:
    """Scores adjusted so that a sentence that *answers* beats one that restates the question.

    * a question (ends in ``?``/``？``, closing quotes aside) is ranked ``QUESTION_PENALTY`` lower;
    * an echo — a sentence whose content words are nearly all the question's own (fewer
      ``ECHO_NOVELTY`` or less of them new, e.g. "the nightly backup failed again" for "why did
      the nightly backup fail?") — is ranked ``ECHO_PENALTY`` lower;
    * when the question asks for something with a telling form (a cause for why, a time or
      date for when, a place for where, a person for who, a number with a unit for how
      much/many, a means for how), a sentence that shares a content word with the question
      gains ``CUE_BONUS`` for each different cue in it (at most ``MAX_CUES``; scaled by
      ``CUE_BASE_WEIGHT`` + its lexical overlap, at most 1), and a sentence with no cue (or a
      question) is ranked ``CUE_MISS_PENALTY`` lower.
    """
    cues = answer_cues(question)
    asked = substance(question)
    out: list[float] = []
    for text, score, overlap in zip(texts, scores, lexical, strict=True):
        asks = is_question(text)
        if asks:
            score *= QUESTION_PENALTY
        content = substance(text)
        if asked and content:
            new = [t for t in content if not matches(t, asked)]
            if len(new) / len(content) <= ECHO_NOVELTY:
                score *= ECHO_PENALTY
        if asks and cues is not None:
            score *= CUE_MISS_PENALTY  # a question carries no answer, whatever words it has
        elif cues is not None:
            found = {m.group(0).lower() for m in cues.finditer(text)}
            if found and overlap > 0:  # a cue counts when the sentence shares a word with the question
                score += CUE_BONUS * min(len(found), MAX_CUES) * min(1.0, CUE_BASE_WEIGHT + overlap)
            else:
                score *= CUE_MISS_PENALTY
        out.append(score)
    return out


async def score(embedder: Embedder, question: str, texts: list[str]) -> tuple[list[float], list[float]]:
    """Score each text against the question: ``(combined scores, lexical shares)``."""
    query_vec = await embedder.embed_query(question)
    sentence_vecs = await embedder.embed_documents(texts)
    cos = np.array([float(v @ query_vec) for v in sentence_vecs], dtype=np.float64)
    spread = float(cos.max() - cos.min())
    cos_scaled = (cos - cos.min()) / spread if spread > 1e-9 else np.ones_like(cos)

    query_tokens = set(content_tokens(question))
    matched = [{q for q in query_tokens if matches(q, set(content_tokens(t)))} for t in texts]
    df: Counter[str] = Counter(q for m in matched for q in m)
    n = len(texts)
    idf = {q: math.log(1.0 + (n + 1) / (df[q] + 0.5)) for q in query_tokens}
    total = sum(idf.values()) or 1.0
    lexical = [sum(idf[q] for q in m) / total for m in matched]
    scores = [0.5 * float(c) + 0.5 * lex for c, lex in zip(cos_scaled, lexical, strict=True)]
    return scores, lexical


def mmr(
    vectors: npt.NDArray[np.float32], k: int, *, prior: npt.NDArray[np.float64], lam: float = MMR_LAMBDA
) -> list[int]:
    """Indices chosen by maximal marginal relevance.

    Relevance is the mean of the cosine to the centroid of ``vectors`` (min-max scaled)
    and ``prior`` (an informativeness score in [0, 1]).
    """
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid))
    cos = vectors @ (centroid / norm) if norm > 0 else np.zeros(len(vectors), dtype=np.float32)
    spread = float(cos.max() - cos.min())
    scaled = (cos - cos.min()) / spread if spread > 1e-9 else np.ones_like(cos)
    relevance = 0.5 * scaled + 0.5 * prior
    similarity = vectors @ vectors.T
    chosen: list[int] = []
    remaining = list(range(len(vectors)))
    while remaining and len(chosen) < k:
        if chosen:
            redundancy = similarity[np.ix_(remaining, chosen)].max(axis=1)
        else:
            redundancy = np.zeros(len(remaining), dtype=np.float32)
        scores = lam * relevance[remaining] - (1.0 - lam) * redundancy
        best = remaining[int(np.argmax(scores))]
        chosen.append(best)
        remaining.remove(best)
    return chosen


__all__ = ["Candidate", "answer_sentences", "mmr", "prefer_answers", "score"]
