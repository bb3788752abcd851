"""Inspector fixtures: a Memory on each backend (hashing embedder, the offline extractive chat
model), the API app with the inspector mounted, a cookie-keeping ASGI client, seeded data, and a
login helper that goes through the real login form."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from omoide import Memory
from omoide.server import create_app

from .seed import Seeded, seed

ADMIN_KEY = "admin-" + "u" * 32


@pytest.fixture
def ui_settings(settings: Any) -> Any:
    return settings.model_copy(update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY)})


@pytest.fixture
async def memory(ui_settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(ui_settings) as mem:
        yield mem


@pytest.fixture
async def seeded(memory: Memory) -> Seeded:
    return await seed(memory)


@pytest.fixture
async def client(memory: Memory) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(memory, workers=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://omoide.test") as c:
        yield c


def form_value(html: str, name: str) -> str:
    """The value of the first hidden input ``name`` in ``html``."""
    found = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert found, f"no {name} field in the page"
    return found.group(1)


async def login(client: httpx.AsyncClient, key: str) -> httpx.Response:
    """Log in through the form (GET for the login token, POST the key); the client keeps the cookies."""
    form = await client.get("/ui/login")
    assert form.status_code == 200
    return await client.post("/ui/login", data={"key": key, "login_token": form_value(form.text, "login_token")})


async def csrf_of(client: httpx.AsyncClient) -> str:
    page = await client.get("/ui/users")
    assert page.status_code == 200, page.text
    return form_value(page.text, "csrf")
