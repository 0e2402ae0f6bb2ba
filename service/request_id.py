"""Request IDs: every response carries ``X-Request-ID`` and every log line written while handling a request
ends with ``[request ID]``, the access line included.

A client (or a proxy in front) may send its own ``X-Request-ID`` (1-128 characters of letters, digits and
``._:-``); otherwise one is made up. The ID lives in a context variable for the request's task, so that
log lines of any logger (the service's, uvicorn's) can be tagged by :class:`RequestIdFilter`.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import HttpMiddleware
from .log_text import CONTROL, loggable, logged_path
from .metrics import STATUS_KEY

HEADER = "X-Request-ID"
_VALID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

current: ContextVar[str | None] = ContextVar("csc_request_id", default=None)
access_log = logging.getLogger("service.access")


class RequestIdFilter(logging.Filter):
    """On every handler of the service's logging (``service.cli.log_config``): gives every record ``request_tag``,
    `` [request ID]`` inside a request, else empty (use it in a format string:
    ``"%(levelprefix)s %(message)s%(request_tag)s"``); and writes the control characters of any message as escapes
    (``loggable``), so that no line, whichever logger writes it and whatever path or text it quotes, can break
    into a forged one."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = current.get()
        record.request_tag = f" [request {rid}]" if rid else ""
        message = record.getMessage()
        if CONTROL.search(message.replace("\\", "")):  # a control character (backslashes alone need nothing)
            record.msg, record.args = loggable(message), ()
        return True


def request_id_of(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            if _VALID.fullmatch(text):
                return text
    return uuid.uuid4().hex


class RequestIdMiddleware(HttpMiddleware):
    """Sets the request's ID, adds it to the response headers, and writes the access line (when
    ``access_log``): client, method, path, HTTP version, status (as ``MetricsMiddleware`` inside it counted
    it: 499 when the client left first) and time taken."""

    def __init__(self, app: ASGIApp, access_log: bool = True) -> None:
        super().__init__(app)
        self.access_log = access_log

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        rid = request_id_of(scope)
        token = current.set(rid)
        start = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (HEADER.lower().encode(), rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if self.access_log:
                client = scope.get("client")
                access_log.info('%s - "%s %s HTTP/%s" %s %.1f ms', f"{client[0]}:{client[1]}" if client else "-",
                                loggable(scope["method"]), logged_path(scope), loggable(scope.get("http_version", "1.1")),
                                scope.get(STATUS_KEY, "-"), (time.perf_counter() - start) * 1000)
            current.reset(token)
