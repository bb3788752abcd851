"""Running the MCP server: stdio for one workspace and user, streamable HTTP behind API keys.

stdio
    One process serves one workspace and one user (``omoide mcp --workspace W --user U``).
    An MCP client spawns it; nothing else can reach it.

streamable HTTP
    Every request carries ``Authorization: Bearer <key>``. An *authenticator* — any
    ``async (token) -> workspace id | None`` — turns the key into its workspace (``omoide mcp
    --http`` uses ``Memory.api_keys``); a missing, unknown or revoked key is answered ``401``
    before any MCP message is read, and a key's calls never leave its workspace. Whose
    memories the memory tools use is the ``X-Omoide-User`` header, set by the client's
    configuration (the key holder is trusted within its workspace, as with the HTTP API);
    without the header the server's ``--user`` applies, and without either the memory tools
    refuse while search, ask and build_context still work.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl

from omoide.mcp.server import McpScope, ScopeResolver, build_server

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from omoide.engine import Memory

Authenticator = Callable[[str], Awaitable[str | None]]
"""``async (bearer token) -> workspace id``, or ``None`` for a key that is not valid."""

USER_HEADER = "X-Omoide-User"
MCP_PATH = "/mcp"
MAX_USER_CHARS = 256
_WORKSPACE_CLAIM = "omoide_workspace"


class ApiKeyVerifier:
    """The SDK's ``TokenVerifier`` over an :data:`Authenticator`.

    The token itself is not kept: the principal is named by a fingerprint of it, so the
    SDK binds each HTTP session to the key that opened it.
    """

    def __init__(self, authenticate: Authenticator) -> None:
        self._authenticate = authenticate

    async def verify_token(self, token: str) -> AccessToken | None:
        workspace = await self._authenticate(token)
        if not workspace:
            return None
        fingerprint = hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]
        return AccessToken(
            token=fingerprint,
            client_id=f"omoide-key-{fingerprint}",
            scopes=[],
            claims={_WORKSPACE_CLAIM: str(workspace)},
        )


def http_scope(default_user: str | None = None) -> ScopeResolver:
    """The scope of an HTTP tool call: the key's workspace, the ``X-Omoide-User`` header's user."""

    def resolve(ctx: Context[Any, Any]) -> McpScope:
        request = ctx.request_context.request
        principal = getattr(request, "scope", {}).get("user")
        if not isinstance(principal, AuthenticatedUser):  # RequireAuthMiddleware lets no such request through
            raise ToolError("UNAUTHENTICATED: this call carries no valid API key")
        workspace = (principal.access_token.claims or {}).get(_WORKSPACE_CLAIM)
        if not isinstance(workspace, str) or not workspace:
            raise ToolError("UNAUTHENTICATED: the API key names no workspace")
        header = request.headers.get(USER_HEADER) if request is not None else None
        if header is None:
            return McpScope(workspace, default_user)
        user = header.strip()
        if not user or len(user) > MAX_USER_CHARS:
            raise ToolError(
                f"INVALID_INPUT: the {USER_HEADER} header must be a user id of 1 to {MAX_USER_CHARS} characters, "
                f"got {len(user)}"
            )
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in user):
            raise ToolError(f"INVALID_INPUT: the {USER_HEADER} header must not contain a control character (tab…)")
        return McpScope(workspace, user)

    return resolve


def http_app(
    mem: Memory,
    authenticate: Authenticator,
    *,
    default_user: str | None = None,
    host: str = "127.0.0.1",
    path: str = MCP_PATH,
) -> Starlette:
    """The streamable-HTTP MCP app (Starlette; run it with uvicorn), every request behind an API key.

    Args:
        mem: an open ``Memory``.
        authenticate: bearer token → workspace id, or ``None`` (answered 401).
        default_user: whose memories when a request has no ``X-Omoide-User`` header.
        host: the host it will listen on (on loopback, the SDK's DNS-rebinding protection is on).
        path: the MCP endpoint.
    """
    server = build_server(
        mem,
        http_scope(default_user),
        # The SDK's bearer-token hook needs AuthSettings; there is no OAuth server here (no
        # provider, no resource metadata), so issuer_url is never published or used.
        auth=AuthSettings(issuer_url=AnyHttpUrl("http://localhost"), resource_server_url=None),
        token_verifier=ApiKeyVerifier(authenticate),
    )
    return server.streamable_http_app(streamable_http_path=path, host=host)


async def serve_stdio(mem: Memory, scope: McpScope) -> None:
    """Serve MCP on stdin/stdout for one workspace and user until the client closes the pipe."""
    await build_server(mem, scope).run_stdio_async()


async def serve_http(
    mem: Memory,
    authenticate: Authenticator,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    default_user: str | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve streamable HTTP on ``host:port`` (or an already bound ``sock``) until cancelled or signalled."""
    import uvicorn

    app = http_app(mem, authenticate, default_user=default_user, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level=mem.settings.log_level.lower(), lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock] if sock is not None else None)


__all__ = [
    "MCP_PATH",
    "USER_HEADER",
    "ApiKeyVerifier",
    "Authenticator",
    "http_app",
    "http_scope",
    "serve_http",
    "serve_stdio",
]
