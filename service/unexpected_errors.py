"""The innermost net: a bug becomes a JSON 500 inside the request's context."""

from __future__ import annotations

import logging

from starlette.types import Receive, Scope, Send

from .asgi import HttpMiddleware
from .errors import JSONResponse, answer_failure, error_response

log = logging.getLogger("service.errors")


class UnexpectedErrorMiddleware(HttpMiddleware):
    """A bug becomes a JSON 500 and one logged traceback, inside the request's context (so the log line has
    its ID and the metrics count the 500), instead of Starlette's outermost handler and uvicorn's second
    traceback."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        def answer(started: bool) -> JSONResponse | None:
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            return None if started else error_response(500, "internal server error")

        await answer_failure(self.app, scope, receive, send, Exception, answer)
