from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import structlog

from omoide import Memory

from .helpers import tuned


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """The CLI configures structlog process-wide (level WARNING); undo it so later tests can capture INFO logs."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(tuned(settings, embedder="hashing")) as m:
        yield m
