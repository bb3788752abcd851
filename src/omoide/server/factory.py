"""The app as each process of ``omoide serve --processes N`` builds it.

uvicorn starts its worker processes fresh (spawn), so they cannot be handed an app object:
they import :func:`process_app` and call it. Settings come from the environment and
``omoide.toml`` as in every omoide process (the parent exports ``--db`` as
``OMOIDE_DATABASE_URL``). The background workers never run here: the parent runs them in one
process of their own, so N HTTP processes do not poll the queues N times.
"""

from __future__ import annotations

from fastapi import FastAPI

from omoide.server.app import create_app
from omoide.settings import load_settings


def process_app() -> FastAPI:
    """The HTTP API over the configured store, without background workers."""
    return create_app(load_settings(), workers=False, freeze_heap=True)


__all__ = ["process_app"]
