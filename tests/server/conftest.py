"""HTTP API fixtures: a Memory on each backend (hashing embedder, scripted chat model), the app
over it, an ASGI client, and API keys of two workspaces."""

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

ADMIN_KEY = "admin-" + "x" * 32
WS_A = "1290478288896131072"  # the sample export's guild
WS_B = "workspace-b"
CHAT_REPLY = "了解です。"


@dataclass
class Tenants:
    a: str
    b: str
    a_id: int
    b_id: int

    @property
    def ha(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.a}"}

    @property
    def hb(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.b}"}


@pytest.fixture
def server_settings(settings: Any) -> Any:
    return settings.model_copy(
        update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY), "http_max_body_bytes": 64 * 1024}
    )


@pytest.fixture
async def memory(server_settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(server_settings, chat_model=ScriptedChatModel(lambda request: CHAT_REPLY)) as mem:
        yield mem


@pytest.fixture
async def client(memory: Memory) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(memory, workers=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://omoide.test") as c:
        yield c


@pytest.fixture
async def tenants(memory: Memory) -> Tenants:
    a = await memory.api_keys.create(WS_A, name="a")
    b = await memory.api_keys.create(WS_B, name="b")
    return Tenants(a.token, b.token, int(a.record.id), int(b.record.id))
