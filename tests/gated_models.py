"""A scripted chat model whose first call waits until the test lets it answer: a slow LLM call
held open, so a test can act while a summary pass (or any model call) is in flight."""

from __future__ import annotations

import asyncio
from typing import Any

from omoide.providers.scripted import ScriptedChatModel


class Gated(ScriptedChatModel):
    """``entered`` is set when the first call starts; that call returns once ``gate`` is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()

    async def complete(self, messages: Any, **kwargs: Any) -> Any:
        if not self.entered.is_set():
            self.entered.set()
            await self.gate.wait()
        return await super().complete(messages, **kwargs)
