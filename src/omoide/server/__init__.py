"""omoide's HTTP API (``omoide serve``): FastAPI over :class:`omoide.Memory`; see ``docs/http.md``."""

from omoide.server.app import create_app

__all__ = ["create_app"]
