"""``omoide mcp``: an MCP server (the official ``mcp`` SDK) over :class:`omoide.Memory`.

Tools ``remember``, ``recall``, ``list_memories``, ``forget_memory``, ``forget_me``, ``search``,
``ask`` and ``build_context``, on stdio (one workspace and user per process) or streamable HTTP
(behind API keys, one workspace per key). See docs/mcp.md.

Example:
    >>> async with omoide.Memory.open() as mem:                                  # doctest: +SKIP
    ...     await serve_stdio(mem, McpScope("1290478288896131072", user="42"))
"""

from __future__ import annotations

from omoide.mcp.server import McpScope, ScopeResolver, build_server
from omoide.mcp.transport import USER_HEADER, ApiKeyVerifier, Authenticator, http_app, serve_http, serve_stdio

__all__ = [
    "USER_HEADER",
    "ApiKeyVerifier",
    "Authenticator",
    "McpScope",
    "ScopeResolver",
    "build_server",
    "http_app",
    "serve_http",
    "serve_stdio",
]
