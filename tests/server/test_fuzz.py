"""A bounded property-based run of schemathesis over the app's OpenAPI schema: no 5xx, ever."""

from __future__ import annotations

import asyncio
import itertools

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from pydantic import SecretStr

from omoide import Memory
from omoide.models import Message
from omoide.server import create_app
from omoide.settings import Settings

from .conftest import ADMIN_KEY

EXAMPLES = 12  # per operation and mode (positive: valid inputs; negative: schema-violating ones)


async def _prepare(settings: Settings) -> str:
    """A key of workspace g1, and some data for the generated requests to hit."""
    async with Memory.open(settings) as mem:
        created = await mem.api_keys.create("g1", name="fuzz")
        key = mem.session_key(platform="api", workspace="g1", channel="1", user="1")
        await mem.append(key, Message.user("猫の名前はタマです", author_id="1"))
        await mem.remember("猫の名前はタマ", workspace="g1", user="1")
        await mem.knowledge.archive(now=True)
        return created.token


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_no_server_errors(settings):
    config = settings.model_copy(update={"embedder": "hashing", "admin_key": SecretStr(ADMIN_KEY)})
    token = asyncio.run(_prepare(config))
    app = create_app(config, workers=False)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    seen: dict[int, int] = {}
    auth: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 17
    for operation, mode in itertools.product(operations, list(schemathesis.GenerationMode)):
        auth.clear()
        auth.update({"Authorization": f"Bearer {ADMIN_KEY if '/admin/' in operation.path else token}"})

        @hypothesis.settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
        def run(case: schemathesis.Case) -> None:
            response = case.call(headers={**(case.headers or {}), **auth})
            seen[response.status_code] = seen.get(response.status_code, 0) + 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} → {response.status_code}: {response.text[:300]}")

        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            assert mode is schemathesis.GenerationMode.NEGATIVE  # nothing to break (e.g. GET /healthz)
    assert not failures, "\n".join(failures[:10])
    assert seen.get(200, 0) + seen.get(201, 0) > 50 and seen.get(422, 0) > 50, seen  # both kinds reached the app
