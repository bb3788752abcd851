"""Model providers: chat models, embedders, rerankers and token counters.

The Protocols live in :mod:`omoide.providers.base`; implementations are chosen by spec
strings in settings and built by :mod:`omoide.providers.registry`::

    from omoide.providers import build_chat_model, build_embedder, build_reranker

    llm = build_chat_model(settings)        # OMOIDE_LLM, default: offline extractive
    embedder = build_embedder(settings)     # OMOIDE_EMBEDDER, default: offline embedder
    reranker = build_reranker(settings)     # OMOIDE_RERANKER, default: None

SDK-backed providers (``anthropic``, ``openai``, ``gemini``, ``cohere``, ``voyage``) are
imported only when built, so their SDKs stay optional extras.
"""

from omoide.providers._retry import RetryPolicy
from omoide.providers.base import (
    ChatModel,
    ChatResponse,
    Embedder,
    Reranker,
    RerankResult,
    StopReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    TokenCounter,
    ToolSpec,
    Usage,
    Vector,
)
from omoide.providers.context import ModelLimits, context_window, max_output_tokens, model_limits
from omoide.providers.registry import (
    ProviderInfo,
    ProviderSpec,
    ProviderStatus,
    build_chat_model,
    build_embedder,
    build_reranker,
    describe_providers,
    parse_spec,
    register_provider,
)

__all__ = [
    "ChatModel",
    "ChatResponse",
    "Embedder",
    "ModelLimits",
    "ProviderInfo",
    "ProviderSpec",
    "ProviderStatus",
    "RerankResult",
    "Reranker",
    "RetryPolicy",
    "StopReason",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "TokenCounter",
    "ToolSpec",
    "Usage",
    "Vector",
    "build_chat_model",
    "build_embedder",
    "build_reranker",
    "context_window",
    "describe_providers",
    "max_output_tokens",
    "model_limits",
    "parse_spec",
    "register_provider",
]
