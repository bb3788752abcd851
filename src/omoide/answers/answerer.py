"""Cited answers (seed 004): search → prompt with numbered evidence → chat model → citations.

Outcomes:

* **language**: the ``language`` argument, else ``GenerationConfig.language``
  (``OMOIDE_ANSWER_LANGUAGE``) — except with the offline extractive model, whose answer
  follows the question's language (Japanese if it reads as Japanese, else English), so the
  labels, headings and messages all match the quoted answer.
* **no data**: the search found nothing → seed 004's 「まだ同期されたメッセージがありません…」
  when the workspace has no knowledge; "nothing matches the filters" when filters narrowed
  the search; "no messages contain the question's words" when the workspace has knowledge but
  a search by words alone found none (lexical mode, or chunks not embedded yet). Localised;
  the model is not called (``no_data`` is ``True`` in all three).
* **vector failure**: the pipeline falls back to lexical results; the answer is still
  generated, ``fallback`` is ``True``, ``notes`` say why, and a localised note is
  appended to the text so a reader sees it too.
* **chat failure**: any provider error while generating becomes
  :class:`~omoide.errors.AnswerFailed` (code ``CHAT_FAILED``), the provider's error as its cause.
* **turns of one chunk**: the hits may be single messages (``unit`` ``turn``), several of
  them from one chunk. The prompt quotes each chunk once, in order of its first hit
  (:func:`~omoide.answers.prompt.by_chunk`), so ``[#n]`` always cites a chunk; a citation
  (and each evidence passage) keeps the turns of its chunk that were found (``matched``).
* **too much evidence**: the prompt is counted before it is sent
  (:func:`~omoide.context.calls.budgeted_complete`); when it does not fit the model's
  context window (less the answer's ``max_tokens``), the lowest-ranked evidence passages
  are left out (as many as the excess needs, by their own counts, checked again) until it fits, the kept passages are numbered ``[#1]…[#n]`` as
  sent (``hits``), and ``notes`` say how many were left out. A prompt that does not fit
  even with one passage is never sent: ``AnswerFailed`` with ``cause_code`` ``CONTEXT_OVERFLOW``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omoide.answers.citations import cited_numbers
from omoide.answers.messages import FALLBACK_NOTE, NO_DATA, NO_HITS, NO_MATCH, Language, check_language
from omoide.answers.prompt import AnswerPrompt, build_prompt, evidence_block
from omoide.context.calls import Prompt, budgeted_complete
from omoide.errors import AnswerFailed, ContextOverflow, ProviderError
from omoide.models import Message
from omoide.providers.base import ChatModel, TokenCounter
from omoide.providers.tokens import get_token_counter
from omoide.search.pipeline import SearchHit, SearchMode, SearchPipeline, check_query
from omoide.settings import Settings
from omoide.stores.search import SearchFilters
from omoide.text import is_japanese


def matched_turns(hits: Sequence[SearchHit]) -> list[dict[str, Any]]:
    """The ``turn`` hits among ``hits`` (one chunk's), as JSON: rank, line, message ids and quote."""
    return [
        {"rank": h.rank, "line": h.line, "message_ids": list(h.message_ids), "quote": h.quote}
        for h in hits
        if h.unit == "turn"
    ]


@dataclass(frozen=True, slots=True)
class Citation:
    """Evidence ``[#number]`` that the answer cites: a chunk.

    Attributes:
        number: the ``n`` of ``[#n]``.
        hit: the chunk's best hit (its ``chunk`` is what is cited).
        matched: all the hits of that chunk, best first (``matched[0] is hit``; ``()`` is
            read as ``(hit,)``): for a chunk whose messages were found one by one, the
            ``turn`` hits, whose quotes are the lines that matched.
    """

    number: int
    hit: SearchHit
    matched: tuple[SearchHit, ...] = ()

    @property
    def turns(self) -> tuple[SearchHit, ...]:
        """The ``turn`` hits of the cited chunk, best first (empty for a whole-chunk hit)."""
        return tuple(h for h in (self.matched or (self.hit,)) if h.unit == "turn")

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, **self.hit.as_dict(), "matched": matched_turns(self.turns)}


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """An answer with its evidence.

    Attributes:
        text: the answer (or the localised no-data message).
        citations: the evidence the answer cites, in order of first citation.
        hits: all evidence given to the model, one hit per chunk (the chunk's best);
            ``hits[n - 1]`` is ``[#n]``.
        timings: milliseconds per phase: ``embed``, ``search``, ``fetch``, ``rerank``,
            ``generate`` (and ``expand``) for the phases that ran.
        notes: fallbacks and skipped stages, for humans.
        no_data: nothing was found, so no model was called.
        fallback: the vector side failed and the evidence comes from lexical search.
        model: the chat model that answered (``""`` when none was called).
        language: the prompt's language.
        matched: per evidence passage, all the hits of its chunk, best first
            (``matched[n - 1][0] is hits[n - 1]``; empty when not known).
    """

    text: str
    citations: tuple[Citation, ...]
    hits: tuple[SearchHit, ...]
    timings: Mapping[str, float]
    notes: tuple[str, ...] = ()
    no_data: bool = False
    fallback: bool = False
    model: str = ""
    language: Language = "ja"
    matched: tuple[tuple[SearchHit, ...], ...] = ()

    @property
    def total_ms(self) -> float:
        return round(sum(self.timings.values()), 3)

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": [c.as_dict() for c in self.citations],
            "evidence": [
                {**h.as_dict(), "matched": matched_turns(self.matched[i] if i < len(self.matched) else (h,))}
                for i, h in enumerate(self.hits)
            ],
            "timings_ms": dict(self.timings),
            "total_ms": self.total_ms,
            "notes": list(self.notes),
            "no_data": self.no_data,
            "fallback": self.fallback,
            "model": self.model,
            "language": self.language,
        }


@dataclass(frozen=True, slots=True)
class GenerationConfig:
    """Seed 004's generation settings (``answer_*`` settings)."""

    language: Language = "ja"
    temperature: float = 0.3
    top_p: float = 0.9
    max_tokens: int = 2048

    @classmethod
    def from_settings(cls, settings: Settings) -> GenerationConfig:
        return cls(
            language=settings.answer_language,
            temperature=settings.answer_temperature,
            top_p=settings.answer_top_p,
            max_tokens=settings.answer_max_tokens,
        )


class Answerer:
    """Answers questions over a :class:`SearchPipeline` with a chat model.

    Args:
        pipeline: finds the evidence.
        model: returns the chat model (built on first use).
        config: language and generation settings.
        counter: counts the prompt (default: the shared tiktoken counter).
        settings: where the model's context window is looked up (``OMOIDE_CONTEXT_WINDOWS``;
            default: the built-in table).
        has_knowledge: whether a workspace holds any knowledge, asked only when a search found
            nothing: then the answer is :data:`NO_HITS` (the words matched nothing) rather than
            :data:`NO_DATA` (nothing synced yet). Without it, :data:`NO_DATA`.
    """

    def __init__(
        self,
        pipeline: SearchPipeline,
        model: Callable[[], ChatModel],
        config: GenerationConfig,
        *,
        counter: TokenCounter | None = None,
        settings: Settings | None = None,
        has_knowledge: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self._model = model
        self.config = config
        self._counter = counter
        self.settings = settings
        self._has_knowledge = has_knowledge

    async def _nothing_found(self, workspace: str, lang: Language) -> str:
        """The answer when an unfiltered search found nothing: :data:`NO_DATA` for a workspace with
        no knowledge; :data:`NO_HITS` where some exists (only a search by words alone finds nothing
        then: lexical mode, or chunks that have no vectors yet)."""
        if self._has_knowledge is not None and await self._has_knowledge(workspace):
            return NO_HITS[lang]
        return NO_DATA[lang]

    @property
    def counter(self) -> TokenCounter:
        return get_token_counter() if self._counter is None else self._counter

    def _language(self, question: str, model: ChatModel) -> Language:
        """The language when the caller gave none: the configured one, except offline.

        The offline extractive model quotes the evidence and labels its answer in the
        question's language, so its answer's headings (and the prompt) follow the question
        too — never an English quote under a Japanese 「根拠」 heading.
        """
        return question_language(question) if model.provider == "extractive" else self.config.language

    async def ask(
        self,
        question: str,
        filters: SearchFilters,
        *,
        asker: str | None = None,
        k: int | None = None,
        mode: SearchMode | None = None,
        language: Language | None = None,
    ) -> AnswerResult:
        """Answer ``question`` from the knowledge in ``filters``' scope (see the module docstring).

        Raises:
            InvalidInput: an empty question, bad filters, ``k``, mode or language.
            AnswerFailed: the chat model failed (code ``CHAT_FAILED``).
        """
        text = check_query(question)
        model = self._model()
        lang = check_language(self._language(text, model) if language is None else language)
        found = await self.pipeline.search_evidence(text, filters, chunks=k, mode=mode)  # k chunks of evidence
        timings = dict(found.timings)
        if not found.hits:
            message = NO_MATCH[lang] if filters.narrows else await self._nothing_found(filters.workspace_id, lang)
            return AnswerResult(message, (), (), timings, found.notes, True, found.fallback, "", lang)

        prompt = build_prompt(text, found.hits, asker=asker, language=lang)  # one passage per chunk
        passages = len(prompt.evidence)
        notes = list(found.notes)

        def fewer_passages(_sent: Prompt, tokens: int, limit: int) -> Prompt | None:
            """The trim strategy: leave out the lowest-ranked passages (at least one; keep at least one).

            As many as the excess needs, by the passages' own counts; the call counts the
            result again, so an estimate that falls short only costs one more round.
            """
            nonlocal prompt
            evidence = prompt.evidence
            if len(evidence) <= 1:
                return None
            keep = len(evidence) - 1
            freed = self.counter.count(evidence_block(keep + 1, evidence[keep], lang))
            while keep > 1 and freed < tokens - limit:
                keep -= 1
                freed += self.counter.count(evidence_block(keep + 1, evidence[keep], lang))
            prompt = build_prompt(text, prompt.hits(keep), asker=asker, language=lang)
            return _as_call(prompt)

        started = time.perf_counter()
        try:
            call = await budgeted_complete(
                model,
                self.counter,
                self.settings,
                messages=_as_call(prompt).messages,
                system=prompt.system,
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
                top_p=self.config.top_p,
                trim=fewer_passages,
                what="the answer prompt (question and one evidence passage)",
                hint="ask a shorter question or raise OMOIDE_CONTEXT_WINDOWS if the model allows more",
            )
            response = call.response
        except ProviderError as exc:
            failure = (
                f"the question does not fit the context window of {model.provider}:{model.model_id}"
                if isinstance(exc, ContextOverflow)
                else f"the chat model ({model.provider}:{model.model_id}) failed while generating the answer"
            )
            raise AnswerFailed(
                f"{failure}: {exc.message}", provider=model.provider, status_code=exc.status_code, cause_code=exc.code
            ) from exc
        timings["generate"] = round((time.perf_counter() - started) * 1000.0, 3)
        left_out = passages - len(prompt.evidence)
        if left_out:
            notes.append(
                f"{left_out} lowest-ranked evidence passage(s) left out so the prompt fits the context window of "
                f"{model.provider}:{model.model_id} ({call.prompt_tokens:,} of {call.limit:,} prompt tokens)"
            )

        answer = response.text.strip()
        if found.fallback:
            answer = f"{answer}\n\n{FALLBACK_NOTE[lang]}" if answer else FALLBACK_NOTE[lang]
        citations = tuple(
            Citation(n, prompt.evidence[n - 1], prompt.matched[n - 1])
            for n in cited_numbers(answer, len(prompt.evidence))
        )
        return AnswerResult(
            text=answer,
            citations=citations,
            hits=prompt.evidence,
            timings=timings,
            notes=tuple(notes),
            no_data=False,
            fallback=found.fallback,
            model=response.model or model.model_id,
            language=lang,
            matched=prompt.matched,
        )


def question_language(question: str) -> Language:
    """``ja`` when ``question`` reads as Japanese, else ``en``."""
    return "ja" if is_japanese(question) else "en"


def _as_call(prompt: AnswerPrompt) -> Prompt:
    return Prompt([Message.user(prompt.user)], system=prompt.system)


__all__ = ["AnswerResult", "Answerer", "Citation", "GenerationConfig", "matched_turns", "question_language"]
