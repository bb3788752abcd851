"""How many tokens a prompt may use.

Every chat call goes through :func:`prompt_budget`: the model's context window (from the
table in :mod:`omoide.providers.context`, overridable with ``OMOIDE_CONTEXT_WINDOWS``)
minus the room reserved for the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from omoide.errors import ConfigError
from omoide.settings import Settings


@dataclass(frozen=True, slots=True)
class PromptBudget:
    """Token limits for one call.

    Attributes:
        context_window: input + output tokens the model accepts.
        reserved_output: tokens kept free for the answer (the call's ``max_tokens``).
    """

    context_window: int
    reserved_output: int

    @property
    def prompt_limit(self) -> int:
        """The most tokens the prompt (system + tools + messages) may use."""
        return self.context_window - self.reserved_output


def prompt_budget(model_id: str, settings: Settings | None = None, *, max_tokens: int | None = None) -> PromptBudget:
    """The budget for a call to ``model_id`` that may answer with up to ``max_tokens`` tokens.

    Raises:
        ConfigError: the answer reservation leaves no room for a prompt.
    """
    from omoide.providers.context import model_limits

    limits = model_limits(model_id, settings)
    reserve = min(max_tokens or limits.max_output_tokens, limits.max_output_tokens)
    if reserve >= limits.context_window:
        raise ConfigError(
            f"max_tokens={reserve} leaves no room for a prompt in {model_id}'s {limits.context_window}-token window; "
            "lower max_tokens or set OMOIDE_CONTEXT_WINDOWS"
        )
    return PromptBudget(limits.context_window, reserve)


__all__ = ["PromptBudget", "prompt_budget"]
