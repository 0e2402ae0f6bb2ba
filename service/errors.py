"""Every error is a JSON body ``{"detail": ...}``; client input never produces a 500.

The JSON response (one that can carry any Python string: a lone surrogate sent as ``"\\ud800"`` comes back escaped
instead of failing to encode), the handlers of HTTP and validation errors, ``refuse`` (an answer before the app sees
the request, the body drained first), and ``answer_failure``, which the failure middlewares share
(``unexpected_errors.py``, ``shutdown_guard.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


class JSONResponse(StarletteJSONResponse):
    """UTF-8 JSON; falls back to ASCII escapes when a string holds a lone surrogate."""

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error_response(status: int, detail: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return error_response(exc.status_code, exc.detail, getattr(exc, "headers", None))


MAX_ERRORS = 20  # a 422 lists the first errors of a body, then how many more there were


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # loc, msg and type only: echoing the input back could return megabytes, or objects JSON cannot hold
    maxima = server_maxima(getattr(request.app.state, "settings", None))
    found = exc.errors()
    errors = [{"loc": list(e.get("loc", ())), "msg": _message(e, maxima), "type": str(e.get("type", ""))}
              for e in found[:MAX_ERRORS]]
    if len(found) > MAX_ERRORS:
        errors.append({"loc": [], "msg": f"and {len(found) - MAX_ERRORS:,} more errors", "type": "too_many_errors"})
    return error_response(422, jsonable_encoder(errors))


def server_maxima(settings: Any) -> dict[str, int]:
    """The per-request settings this server caps below their declared range (a 422 above), by name."""
    if settings is None:
        return {}
    return {"top_k": settings.max_top_k, "shortlist": settings.max_shortlist}


def over_maximum(name: str, limit: int) -> dict[str, Any]:
    """The 422 error of a cost setting above this server's maximum: one message whatever the value."""
    return {"loc": ["body", name], "msg": f"Input should be less than or equal to {limit} (this server's maximum)",
            "type": "less_than_equal"}


def _message(error: dict[str, Any], maxima: dict[str, int]) -> str:
    """The error's message; for JSON that does not parse, with the parser's reason ("Expecting value"); for a
    capped setting over its declared bound, this server's (lower) maximum, as below it."""
    msg = str(error.get("msg", ""))
    loc = list(error.get("loc", ()))
    if error.get("type") == "less_than_equal" and len(loc) == 2 and loc[0] == "body" and loc[1] in maxima:
        return str(over_maximum(loc[1], maxima[loc[1]])["msg"])
    reason = (error.get("ctx") or {}).get("error")
    return f"{msg}: {reason}" if error.get("type") == "json_invalid" and isinstance(reason, str) else msg


def install_error_handlers(app: FastAPI) -> None:
    """HTTP and validation errors as JSON; anything else is ``UnexpectedErrorMiddleware``'s."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)


async def answer_failure(app: ASGIApp, scope: Scope, receive: Receive, send: Send,
                          catch: type[BaseException], answer: Callable[[bool], JSONResponse | None]) -> None:
    """Run ``app`` on an HTTP request; when it raises ``catch``, send ``answer(started)`` instead, or re-raise
    when that is None. ``started``: the app had begun its response (no other answer can follow). ``answer`` is
    called inside the ``except`` block (``log.exception`` there logs the traceback)."""
    started = False

    async def watch(message: Message) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, watch)
    except catch:
        response = answer(started)
        if response is None:
            raise
        await response(scope, receive, send)


DRAIN_BYTES = 64 * 1024 * 1024  # an over-limit body is read and discarded up to this much ...
DRAIN_SECONDS = 10.0  # ... for at most this long, so that the client reads its 413 instead of a reset


async def refuse(scope: Scope, receive: Receive, send: Send, status: int, detail: Any, *, drain: bool,
                 read: int = 0, headers: dict[str, str] | None = None) -> None:
    """Answer ``status`` before the app sees the request, and close the connection.

    A server that answers while the client is still sending and then closes makes the kernel reset the
    connection, and the client loses the answer. So with ``drain`` the rest of the body is first read and
    discarded (up to DRAIN_BYTES / DRAIN_SECONDS), as mature servers do."""
    if drain:
        await _discard_body(receive, read)
    await error_response(status, detail, headers={**(headers or {}), "Connection": "close"})(scope, receive, send)


async def _discard_body(receive: Receive, read: int) -> None:
    """Read what the client still sends, up to DRAIN_BYTES in all and DRAIN_SECONDS."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_SECONDS
    while read < DRAIN_BYTES and (left := deadline - loop.time()) > 0:
        try:
            message = await asyncio.wait_for(receive(), left)
        except asyncio.TimeoutError:
            return
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
