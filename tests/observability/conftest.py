"""Observability fixtures: a Memory on each backend (hashing embedder, scripted chat model), the app
over it with metrics on, an ASGI client, and API keys of two workspaces."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from omoide import Memory
from omoide.providers.scripted import ScriptedChatModel
from omoide.server import create_app

ADMIN_KEY = "admin-" + "y" * 32
WS_A = "ws-a"
WS_B = "ws-b"


@dataclass
class Keys:
    a: str
    b: str

    @property
    def ha(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.a}"}

    @property
    def hb(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.b}"}


@pytest.fixture
def obs_settings(settings: Any) -> Any:
    return settings.model_copy(update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY)})


@pytest.fixture
async def memory(obs_settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(obs_settings, chat_model=ScriptedChatModel(lambda request: "はい。")) as mem:
        yield mem


@pytest.fixture
async def client(memory: Memory) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(memory, workers=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://omoide.test") as c:
        yield c


@pytest.fixture
async def keys(memory: Memory) -> Keys:
    a = await memory.api_keys.create(WS_A, name="a")
    b = await memory.api_keys.create(WS_B, name="b")
    return Keys(a.token, b.token)


@pytest.fixture
async def metrics_client(obs_settings: Any) -> AsyncIterator[tuple[Memory, httpx.AsyncClient]]:
    """An app with metrics on (its own registry, active while the test runs) and its Memory."""
    from omoide.observability.metrics import install_metrics

    on = obs_settings.model_copy(update={"metrics_enabled": True})
    async with Memory.open(on, chat_model=ScriptedChatModel(lambda request: "はい。")) as mem:
        app = create_app(mem, workers=False)
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://omoide.test") as c:
                c.app = app  # type: ignore[attr-defined]
                yield mem, c
        finally:
            install_metrics(None)


_EXPORTER: Any = None


@pytest.fixture
def spans() -> Any:
    """The spans finished during the test (an OpenTelemetry SDK provider with an in-memory exporter,
    set once per process: the API allows one global provider)."""
    global _EXPORTER
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if _EXPORTER is None:
        _EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
