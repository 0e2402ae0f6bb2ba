"""A request's JSON body parsed once, by ``BodyGuardMiddleware``: duplicate keys refused, a large body parsed off the
event loop, and the value handed to the route through the scope (``ParsedBodyRoute``)."""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute


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
