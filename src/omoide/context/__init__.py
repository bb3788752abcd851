"""Keeping prompts inside the model's context window.

* :mod:`omoide.context.budget` — how many tokens a prompt may use for a model.
* :mod:`omoide.context.calls` — :func:`budgeted_complete`, the one way omoide calls a chat
  model: the prompt is counted and never sent over the budget.
* :mod:`omoide.context.turns` — normalising a history into valid alternating turns.
* :mod:`omoide.context.truncation` — stage 1: cut oversized tool results (head + tail).
* :mod:`omoide.context.compaction` — stage 2: summarise the oldest half of the history.
* :mod:`omoide.context.guard` — :class:`ContextGuard`, seed 002's three stages, made robust.
"""

from omoide.context.budget import PromptBudget, prompt_budget
from omoide.context.calls import BudgetedResponse, Prompt, budgeted_complete, count_prompt
from omoide.context.compaction import Compaction, compact, summary_turns
from omoide.context.guard import ContextGuard, GuardResult
from omoide.context.truncation import truncate_tool_results

__all__ = [
    "BudgetedResponse",
    "Compaction",
    "ContextGuard",
    "GuardResult",
    "Prompt",
    "PromptBudget",
    "budgeted_complete",
    "compact",
    "count_prompt",
    "prompt_budget",
    "summary_turns",
    "truncate_tool_results",
]
