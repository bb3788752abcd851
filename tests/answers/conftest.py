from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from omoide import Memory
from search.helpers import tuned


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(tuned(settings, embedder="hashing")) as m:
        yield m
