"""The inspector at ``/ui``: a server-rendered web UI for bot operators over ``omoide.Memory``.

Pages: the workspace overview, sessions, knowledge (sources, chunks, a search playground with
``explain`` and ``ask``), memories (with their history), summaries (with their versions) and
users ("forget this user" with the erasure receipt). Japanese and English. Behind the HTTP API's
own keys (see :mod:`omoide.server.ui.security`); see ``docs/inspector.md``.
"""

from omoide.server.ui.app import create_inspector

__all__ = ["create_inspector"]
