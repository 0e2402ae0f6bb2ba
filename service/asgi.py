"""What the service's ASGI middlewares share: they act on HTTP requests only, and pass every other scope
straight to the app."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """An ASGI middleware that handles HTTP requests in :meth:`handle`; any other scope (lifespan, websocket)
    goes to ``app`` as it is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
