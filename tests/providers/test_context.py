"""Context windows of known models, overrides from settings, and the unknown-model default."""

from __future__ import annotations

import logging

import pytest

from omoide.providers import context_window, max_output_tokens, model_limits
from omoide.providers.context import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, normalise_model_id
from omoide.settings import Settings


@pytest.mark.parametrize(
    ("model", "window", "output"),
    [
        ("claude-sonnet-4-5", 200_000, 64_000),
        ("anthropic:claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("claude-opus-4-1-20250805", 200_000, 32_000),
        ("claude-3-5-haiku-latest", 200_000, 8_192),
        ("claude-sonnet-9-9", 200_000, 8_192),  # a newer Claude: the family fallback
        ("gpt-4o", 128_000, 16_384),
        ("gpt-4o-2024-08-06", 128_000, 16_384),
        ("openai:gpt-4o-mini", 128_000, 16_384),
        ("gpt-4.1-mini", 1_047_576, 32_768),
        ("gpt-4-0613", 8_192, 8_192),
        ("gpt-5-chat-latest", 128_000, 16_384),
        ("o4-mini", 200_000, 100_000),
        ("gemini-2.5-flash", 1_048_576, 65_536),
        ("models/gemini-2.5-pro", 1_048_576, 65_536),
        ("gemini-2.0-flash-001", 1_048_576, 8_192),
        ("gemini:gemini-embedding-001@1536", 2_048, 0),
        ("openai:text-embedding-3-small@512", 8_191, 0),
        ("extractive-v1", 1_000_000, DEFAULT_MAX_OUTPUT_TOKENS),
    ],
)
def test_known_models(model: str, window: int, output: int) -> None:
    limits = model_limits(model)
    assert (limits.context_window, limits.max_output_tokens, limits.known) == (window, output, True)
    assert context_window(model) == window
    assert max_output_tokens(model) == output


def test_a_prefix_must_end_at_a_dash() -> None:
    # "gpt-4" must not swallow "gpt-4o-…" or "gpt-4.1-…"; "o1" must not match "o1x"
    assert context_window("gpt-4o-mini-2024-07-18") == 128_000
    assert context_window("gpt-4.1-2025-04-14") == 1_047_576
    assert not model_limits("o1x").known


def test_unknown_models_get_a_conservative_default_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="omoide.providers.context"):
        limits = model_limits("openai-compatible:mystery-model-for-test")
        model_limits("openai-compatible:mystery-model-for-test")
    assert (limits.context_window, limits.max_output_tokens, limits.known) == (
        DEFAULT_CONTEXT_WINDOW,
        DEFAULT_MAX_OUTPUT_TOKENS,
        False,
    )
    assert sum("context_window_unknown" in r.message for r in caplog.records) == 1  # warned once per model


def test_settings_override_the_table() -> None:
    settings = Settings(context_windows={"llama3": 8192, "gpt-4o": 64_000, "qwen2.5:7b": 32_768})
    assert context_window("openai-compatible:llama3", settings) == 8192
    assert context_window("llama3-8b-instruct", settings) == 8192  # prefix rule applies to overrides
    assert context_window("gpt-4o", settings) == 64_000
    assert context_window("gpt-4o-mini", settings) == 128_000  # a different model: the table
    assert context_window("qwen2.5:7b", settings) == 32_768  # Ollama tags stay intact
    limits = model_limits("llama3", settings)
    assert limits.known


def test_an_override_caps_max_output() -> None:
    settings = Settings(context_windows={"gpt-4o": 8_000})
    assert model_limits("gpt-4o", settings).max_output_tokens == 8_000


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("llama3:8b", "llama3:8b"),
        ("openai-compatible:llama3:8b", "llama3:8b"),
        ("models/gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini:gemini-embedding-001@768", "gemini-embedding-001"),
        ("GPT-4o", "gpt-4o"),
    ],
)
def test_normalise_model_id(raw: str, normalised: str) -> None:
    assert normalise_model_id(raw) == normalised
