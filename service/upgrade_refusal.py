"""A request that asks to switch to WebSocket gets a JSON 400 that closes the connection: the service has no
WebSocket endpoint.

The connection layer never switches protocols (``protocol.GuardedH11Protocol``), so such a request reaches the
app as plain HTTP, is counted and has a request ID like any other; its connection is released as any other's.
Other ``Upgrade`` offers (h2c) are ignored, as RFC 9110 7.8 lets a server do: the request is answered as HTTP/1.1.
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from .asgi import HttpMiddleware
from .errors import refuse

DETAIL = "this service has no WebSocket endpoint: send plain HTTP requests (POST /correct; see /docs)"


def asks_for_websocket(scope: Scope) -> bool:
    """Whether the request's ``Upgrade`` header offers WebSocket."""
    return any(name == b"upgrade" and b"websocket" in value.lower() for name, value in scope["headers"])


class UpgradeRefusalMiddleware(HttpMiddleware):
    """Answers a WebSocket upgrade request with a JSON 400 and closes its connection."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if asks_for_websocket(scope):
            await refuse(scope, receive, send, 400, DETAIL, drain=True)
            return
        await self.app(scope, receive, send)
