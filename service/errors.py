"""Every error is a JSON body ``{"detail": ...}``; client input never produces a 500.

Also the request-body guard (Content-Type, size, read time and duplicate JSON keys, before the app parses
anything), the shutdown guard (JSON 503, not uvicorn's plain 500), and a JSON response that can carry any
Python string (a lone surrogate sent as ``"\\ud800"`` comes back escaped instead of failing to encode).
"""

from __future__ import annotations

import asyncio
import json
import json.scanner
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import HttpMiddleware

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


async def _answer_failure(app: ASGIApp, scope: Scope, receive: Receive, send: Send,
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


class UnexpectedErrorMiddleware(HttpMiddleware):
    """A bug becomes a JSON 500 and one logged traceback, inside the request's context (so the log line has
    its ID and the metrics count the 500), instead of Starlette's outermost handler and uvicorn's second
    traceback."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        def answer(started: bool) -> JSONResponse | None:
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            return None if started else error_response(500, "internal server error")

        await _answer_failure(self.app, scope, receive, send, Exception, answer)


DRAIN_BYTES = 64 * 1024 * 1024  # an over-limit body is read and discarded up to this much ...
DRAIN_SECONDS = 10.0  # ... for at most this long, so that the client reads its 413 instead of a reset
JSON_TYPES = ("application/json",)


async def refuse(scope: Scope, receive: Receive, send: Send, status: int, detail: Any, *, drain: bool,
                 read: int = 0, headers: dict[str, str] | None = None) -> None:
    """Answer ``status`` before the app sees the request, and close the connection.

    A server that answers while the client is still sending and then closes makes the kernel reset the
    connection, and the client loses the answer. So with ``drain`` the rest of the body is first read and
    discarded (up to DRAIN_BYTES / DRAIN_SECONDS), as mature servers do."""
    if drain:
        await _discard_body(receive, read)
    await error_response(status, detail, headers={**(headers or {}), "Connection": "close"})(scope, receive, send)


class BodyGuardMiddleware(HttpMiddleware):
    """The request body, before the app sees it, all answered as JSON without parsing anything first:
    415 when a JSON route gets another Content-Type, 413 over ``max_bytes``, 408 when the body takes longer
    than ``timeout`` seconds to arrive, and 422 when a JSON route's body repeats a key in an object (which
    a parser would otherwise settle silently, the last one winning).

    An over-limit or unwanted body is read and discarded before the answer (see ``refuse``); only a body
    announced larger than DRAIN_BYTES, or one sent with ``Expect: 100-continue`` (the client waits for us),
    is answered at once.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, json_routes: frozenset[tuple[str, str]] = frozenset(),
                 timeout: float = 30.0, max_values: int | None = None) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes
        self.max_values = max_values  # JSON values a legal request can hold (None: no bound)
        self.json_routes = json_routes  # (method, path) pairs whose body must be JSON
        self.timeout = timeout

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        length = _content_length(headers)
        waits_for_continue = headers.get(b"expect", b"").lower() == b"100-continue"
        is_json = (scope["method"], scope["path"]) in self.json_routes
        if is_json:
            content_type = headers.get(b"content-type", b"").decode("latin-1")
            media = content_type.split(";", 1)[0].strip().lower()
            if media not in JSON_TYPES and not media.endswith("+json"):
                got = f"got {content_type!r}" if content_type else "got none"
                await refuse(scope, receive, send, 415, f"Content-Type must be application/json ({got})",
                             drain=not waits_for_continue)
                return
        if length is not None and length > self.max_bytes:
            await refuse(scope, receive, send, 413, self._too_large(),
                         drain=length <= DRAIN_BYTES and not waits_for_continue)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                await refuse(scope, receive, send, 408, f"the request body took longer than {self.timeout:g} s "
                             "to arrive", drain=False)
                return
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await refuse(scope, receive, send, 413, self._too_large(), read=size,
                             drain=message.get("more_body", False))
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        if is_json and self.max_values is not None and json_values_at_most(whole, self.max_values) > self.max_values:
            await refuse(scope, receive, send, 413, f"the request body holds more JSON values than a request can "
                         f"(at most {self.max_values})", drain=False)
            return
        if is_json:
            # a large body is parsed on a worker thread (half a million tiny objects take a third of a second),
            # once: the route reads the value from the scope (``ParsedBodyRequest``)
            parsed = await asyncio.to_thread(parse_json, whole, True) if len(whole) > PARSE_OFF_LOOP else parse_json(whole)
            if isinstance(parsed, JsonProblem):
                await refuse(scope, receive, send, 422, [parsed.error], drain=False)
                return
            if parsed is not UNPARSED:
                scope[PARSED_BODY] = parsed
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes"


def json_values_at_most(body: bytes, enough: int = 0) -> int:
    """An upper bound on the JSON values in ``body``, by a byte scan far cheaper than parsing: every value but the
    first follows a ``,``, a ``:`` or a ``[``, outside strings. Characters inside strings (a text may hold any
    number of commas) are not counted: escaped backslashes and quotes are dropped first, then every other quote
    opens or closes a string. Linear in the body, whatever it holds. A first count that takes strings along is
    returned as it is when it is at most ``enough`` (no need to look inside the strings)."""
    bound = body.count(b",") + body.count(b":") + body.count(b"[") + 1
    if bound <= enough:
        return bound
    outside = b"".join(body.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[0::2])
    return outside.count(b",") + outside.count(b":") + outside.count(b"[") + 1


class _Duplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


@dataclass(frozen=True)
class JsonProblem:
    error: dict[str, Any]  # loc, msg, type


UNPARSED = object()  # a syntax error: left to the app's parser, which names it
PARSED_BODY = "csc.parsed_body"  # ASGI scope key: the JSON value of the body, parsed by BodyGuardMiddleware
PARSE_OFF_LOOP = 64 * 1024  # bytes: a larger body is parsed on a worker thread


class _YieldingDecoder(json.JSONDecoder):
    """The standard decoder with the scanner written in Python (strings still scanned in C): as fast on what a
    client sends, and on a body of half a million empty lists it lets the event loop run between values, where the
    C scanner would hold it for a quarter of a second."""

    def __init__(self) -> None:
        super().__init__(object_pairs_hook=_no_duplicates)
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]  # (typeshed omits it)


def parse_json(body: bytes, off_loop: bool = False) -> Any:
    """The JSON value of ``body``; or a ``JsonProblem`` for what makes it unusable beyond a syntax error: bytes
    that are not UTF-8 (with the first bad byte and its offset), a key repeated inside one object, nesting too deep
    for the parser, an integer with too many digits; or UNPARSED for a syntax error. ``off_loop``: on a worker
    thread (the scanner then yields the interpreter between values)."""
    try:
        text = body.decode("utf-8")
        if off_loop:
            return _YieldingDecoder().decode(text)
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as e:
        bad = body[e.start]
        return JsonProblem({"loc": ["body"], "msg": f"the body is not valid UTF-8: byte 0x{bad:02x} at offset {e.start}",
                            "type": "utf8_invalid"})
    except _Duplicate as d:
        return JsonProblem({"loc": ["body", d.key], "msg": f"duplicate key {d.key!r} in a JSON object",
                            "type": "duplicate_key"})
    except RecursionError:
        return JsonProblem({"loc": ["body"], "msg": "the JSON nests too deeply", "type": "json_too_deep"})
    except json.JSONDecodeError:
        return UNPARSED
    except ValueError as e:  # int() of more digits than sys.get_int_max_str_digits() allows
        return JsonProblem({"loc": ["body"], "msg": f"a number in the JSON is too long ({str(e).split(';')[0]})",
                            "type": "json_number_too_long"})


class ParsedBodyRequest(Request):
    """A request whose ``json()`` is the value BodyGuardMiddleware parsed, when it did."""

    async def json(self) -> Any:
        if PARSED_BODY in self.scope:
            return self.scope[PARSED_BODY]
        return await super().json()


class ParsedBodyRoute(APIRoute):
    """A route that reads its JSON body as ParsedBodyRequest does (FastAPI's documented custom-request pattern)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def parsed_body_handler(request: Request) -> Response:
            return await handler(ParsedBodyRequest(request.scope, request.receive))

        return parsed_body_handler


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


def _content_length(headers: dict[bytes, bytes]) -> int | None:
    try:
        return int(headers[b"content-length"])
    except (KeyError, ValueError):
        return None


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
            log.warning("%s %s cancelled by the shutdown; answered 503", scope["method"], scope["path"])
            return error_response(503, "the service is shutting down; retry the request",
                                  headers={"Retry-After": "5", "Connection": "close"})

        await _answer_failure(self.app, scope, receive, send, asyncio.CancelledError, answer)
