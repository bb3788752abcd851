"""The types the provider registry and its factories share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from omoide.errors import ConfigError
from omoide.providers._retry import RetryPolicy

if TYPE_CHECKING:
    from omoide.providers.base import Embedder
    from omoide.settings import Settings

Role: TypeAlias = Literal["llm", "embedder", "reranker"]
ROLES: tuple[Role, ...] = ("llm", "embedder", "reranker")
ROLE_VARIABLE: dict[Role, str] = {"llm": "OMOIDE_LLM", "embedder": "OMOIDE_EMBEDDER", "reranker": "OMOIDE_RERANKER"}


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A parsed spec string ``provider[:model][@dimensions]``.

    Attributes:
        role: ``llm``, ``embedder`` or ``reranker``.
        provider: the provider name (``anthropic``, ``hashing``, …).
        model: the model id or local model name/path, if any.
        dimensions: the ``@N`` suffix of an embedder spec, if any.
        text: the spec as written.
    """

    role: Role
    provider: str
    model: str | None
    dimensions: int | None
    text: str

    @property
    def variable(self) -> str:
        """The environment variable this spec belongs to (``OMOIDE_LLM``, …)."""
        return ROLE_VARIABLE[self.role]


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What a provider factory gets besides the spec.

    Attributes:
        settings: the settings (timeout, retries, base URL).
        environ: where API keys are read.
        retry: the retry policy for SDK-backed providers.
        embedder: an embedder for providers that use one (the extractive chat model).
    """

    settings: Settings
    environ: Mapping[str, str]
    retry: RetryPolicy
    embedder: Embedder | None = None

    @property
    def timeout(self) -> float:
        return self.settings.provider_timeout_seconds

    def key(self, spec: ProviderSpec, *variables: str) -> str:
        """The first non-empty variable of ``variables``.

        Raises:
            ConfigError: none is set; the message names the variables to set.
        """
        for variable in variables:
            value = self.environ.get(variable, "").strip()
            if value:
                return value
        raise ConfigError(f"{spec.variable}={spec.text!r} needs an API key: set {' or '.join(variables)}")


Factory: TypeAlias = Callable[[ProviderSpec, BuildContext], Any]


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """A registered provider.

    Attributes:
        name: the spec prefix.
        factories: one factory per role it can fill.
        needs_model: whether the spec must name a model (``provider:model``).
        key_variables: environment variables holding its API key, first found wins
            (empty: no key needed).
        module: the import name of its optional SDK / library, checked before building.
        extra: the ``pip install 'omoide[EXTRA]'`` extra that brings ``module``.
        example: an example spec, for error messages.
    """

    name: str
    factories: Mapping[Role, Factory]
    needs_model: bool = False
    key_variables: tuple[str, ...] = ()
    module: str | None = None
    extra: str | None = None
    example: str = ""


__all__ = ["ROLES", "ROLE_VARIABLE", "BuildContext", "Factory", "ProviderInfo", "ProviderSpec", "Role"]
