"""``create_app(freeze_heap=True)`` (what ``omoide serve`` builds) freezes the startup heap out of the
garbage collector's full collections once the store is open; the default app leaves the process alone."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from omoide.runtime import freeze_startup_heap
from omoide.server import create_app


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test run collects as usual


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_serve_freezes_the_startup_heap_and_the_library_default_does_not(settings: Any, unfrozen: None) -> None:
    config = settings.model_copy(update={"embedder": "hashing"})
    with TestClient(create_app(config, workers=False)) as client:
        assert client.get("/healthz").status_code == 200
        assert gc.get_freeze_count() == 0
    with TestClient(create_app(config, workers=False, freeze_heap=True)) as client:
        assert gc.get_freeze_count() > 1000  # modules, the store, the app: everything alive at startup
        assert client.get("/healthz").status_code == 200


def test_freeze_startup_heap_collects_first_and_reports_the_frozen_count(unfrozen: None) -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    garbage = Cycle()
    gone = weakref.ref(garbage)
    del garbage  # unreachable, but only the collector frees a cycle
    assert gone() is not None
    frozen = freeze_startup_heap()
    assert gone() is None  # collected before the freeze, not frozen for the process's life
    assert frozen == gc.get_freeze_count() > 0
