"""The request body checked before the app sees it: Content-Type, size, read time, the count of JSON values and
duplicate keys; a JSON body is parsed once here (``json_body.py``)."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import HttpMiddleware
from .errors import DRAIN_BYTES, refuse
from .json_body import PARSE_OFF_LOOP, PARSED_BODY, UNPARSED, JsonProblem, parse_json

JSON_TYPES = ("application/json",)


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


def _content_length(headers: dict[bytes, bytes]) -> int | None:
    try:
        return int(headers[b"content-length"])
    except (KeyError, ValueError):
        return None
