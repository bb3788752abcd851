"""Cited answers over long-term memory (seed 004): prompt, citations, the answer pipeline."""

from omoide.answers.answerer import Answerer, AnswerResult, Citation, GenerationConfig
from omoide.answers.citations import cited_numbers
from omoide.answers.messages import NO_DATA, NO_HITS, NO_MATCH, Language
from omoide.answers.prompt import AnswerPrompt, build_prompt, by_chunk

__all__ = [
    "NO_DATA",
    "NO_HITS",
    "NO_MATCH",
    "AnswerPrompt",
    "AnswerResult",
    "Answerer",
    "Citation",
    "GenerationConfig",
    "Language",
    "build_prompt",
    "by_chunk",
    "cited_numbers",
]
