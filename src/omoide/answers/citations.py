"""Which evidence an answer actually cites: ``[#n]`` markers parsed from the answer text."""

from __future__ import annotations

import re

_GROUP = re.compile(r"[\[［]\s*(#\s*\d+(?:\s*[,，、;]\s*#?\s*\d+)*)\s*[\]］]")
_NUMBER = re.compile(r"\d+")


def cited_numbers(text: str, available: int) -> list[int]:
    """Evidence numbers cited in ``text``, in order of first citation, each once.

    Understands ``[#2]``, ``[#1][#3]``, ``[#1, #3]``, ``[#1,3]`` and full-width brackets
    (``［#2］``). Numbers outside ``1..available`` (invented by a model) are ignored.

    Example:
        >>> cited_numbers("andy は開発者です [#2][#1]。再掲 [#2, #9]", 3)
        [2, 1]
    """
    out: list[int] = []
    for group in _GROUP.finditer(text):
        for m in _NUMBER.finditer(group.group(1)):
            n = int(m.group())
            if 1 <= n <= available and n not in out:
                out.append(n)
    return out


__all__ = ["cited_numbers"]
