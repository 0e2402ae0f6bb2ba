"""A request cancelled by the end of the shutdown's grace period answers a JSON 503, not uvicorn's plain 500."""

from __future__ import annotations

import asyncio
import logging

from starlette.types import Receive, Scope, Send

from .asgi import HttpMiddleware
from .errors import JSONResponse, answer_failure, error_response
from .log_text import loggable, logged_path

log = logging.getLogger("service.errors")


class ShutdownGuardMiddleware(HttpMiddleware):
    """A request still running when the server's shutdown grace period ends is cancelled by uvicorn, which
    would answer a plain-text 500 and log a traceback. Answer a JSON 503 instead (the client may retry
    elsewhere) and end the request quietly."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        def answer(started: bool) -> JSONResponse | None:
            task = asyncio.current_task()
            if started or task is None:
                return None
            if hasattr(task, "uncancel"):  # Python 3.11+: this task goes on to answer
                task.uncancel()
            log.warning("%s %s cancelled by the shutdown; answered 503", loggable(scope["method"]), logged_path(scope))
            return error_response(503, "the service is shutting down; retry the request",
                                  headers={"Retry-After": "5", "Connection": "close"})

        await answer_failure(self.app, scope, receive, send, asyncio.CancelledError, answer)
