"""The HTTP/1.1 connection layer: uvicorn's h11 protocol with what a server facing unknown clients needs.

* **Header timeout.** From the moment a connection opens, or its previous response ends, the next request's
  headers must be complete within ``header_timeout_s``; a client that trickles them slowly gets a JSON 408
  and the connection is closed (uvicorn's keep-alive timeout only covers a connection that sends nothing).
* **Connection caps.** Beyond ``max_connections`` accepted connections, or ``max_connections_per_client`` from one
  address, a new connection is answered at once with a JSON 503 (``Retry-After: 1``, a request ID) and closed:
  one client cannot hold every slot, nor the server's file descriptors (what it sends is read and dropped for
  at most ``LINGER_S``, so that the answer is not lost to a reset). Refusals are counted in /metrics through the
  app's lifespan state (``COUNT_REFUSED``); the log gets at most one line about them every ``LOG_EVERY_S``. The
  server's cap stays below the file descriptors the process may open (``descriptor_cap``).
* **Header size.** Request headers larger than h11's limit (16 KiB) get a 431, whether they arrive in pieces
  (h11's own check) or in one segment.
* **Protocol errors as JSON.** A request h11 cannot parse gets ``{"detail": "invalid HTTP request: ..."}``
  (400, or 431 for oversized headers) instead of uvicorn's plain text.
* **No protocol switch.** The service has no WebSocket endpoint: a request asking to upgrade stays an HTTP
  request (``upgrade_refusal`` answers a WebSocket one with a JSON 400), so its connection is released like any
  other, whichever WebSocket library is installed, and uvicorn's two warning lines per such request are not written.
* **Shutdown.** An idle keep-alive connection stays open ``DRAIN_S`` after the shutdown begins: a request its
  client sent just then gets a JSON 503 (``Retry-After``) and a close, not a reset.
* **Absolute-form targets.** ``POST http://host/correct`` is ``POST /correct`` (RFC 9112 3.2.2).
* **Ambiguous framing refused.** A request with both Content-Length and Transfer-Encoding is a 400 and the
  connection is closed (RFC 9112 6.1: the way request smuggling starts).

The body's own read timeout is ``BodyGuardMiddleware``'s (``body_timeout_s``). ``python -m service`` always
runs this protocol (``http=protocol_for(settings)``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import math
import re
import uuid
import weakref
from dataclasses import dataclass
from functools import cache
from typing import Any

import h11
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from .descriptors import descriptor_cap
from .settings import ServiceSettings

MAX_REASON = 200  # characters of h11's reason kept in the answer


COUNT_REFUSED = "csc.count_refused"  # lifespan state key: called with the cap ("server", "client") per refusal
LOG_EVERY_S = 10.0  # refused connections are logged at most once in this many seconds, with their count
LINGER_S = 1.0  # a refused connection is closed this long after its answer, or when the client closes first
DRAIN_S = 1.0  # at shutdown, an idle keep-alive connection answers a request that arrives this long with a 503
DETAILS = {"client": "too many open connections from your address; close some or retry shortly",
           "server": "too many open connections; retry shortly"}


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float
    max_connections: int
    max_connections_per_client: int

    @classmethod
    def of(cls, settings: ServiceSettings) -> ConnectionLimits:
        return cls(settings.header_timeout_s, descriptor_cap(settings.max_connections),
                   settings.max_connections_per_client)


class _Clients:
    """Open connections per client address on one server, the accepted ones (those the caps count), and the
    refusals not logged yet."""

    def __init__(self) -> None:
        self.open: collections.Counter[str] = collections.Counter()
        self.accepted = 0
        self.refused = 0
        self.logged_at = -math.inf


_clients: weakref.WeakKeyDictionary[ServerState, _Clients] = weakref.WeakKeyDictionary()


@cache
def _limits_from_environment() -> ConnectionLimits:
    return ConnectionLimits.of(ServiceSettings())


_ECHO = re.compile(r"""(?:bytearray\()?b(['"]).*?(?<!\\)\1\)?""", re.S)


def without_echo(reason: str) -> str:
    """h11's reason without the bytes it quotes from the request ("illegal header line: bytearray(b'X-API-Key
    secret')"): an answer never repeats what was sent, a key included."""
    return _ECHO.sub("(the line as sent)", reason)[:MAX_REASON]


def raw_response(status: int, reason: str, detail: str, extra: bytes = b"") -> bytes:
    """A complete HTTP/1.1 JSON error response that closes the connection."""
    body = json.dumps({"detail": detail}, ensure_ascii=True).encode("ascii")
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n").encode("ascii") + extra + b"\r\n" + body


class _Connection(h11.Connection):
    """h11's connection that also refuses ambiguous framing and remembers why it refused a request."""

    error: str = ""
    error_status: int = 400
    on_request: Any = None  # called when a request's headers are complete
    header_limit: int = DEFAULT_MAX_INCOMPLETE_EVENT_SIZE  # bytes of a request line and headers

    def next_event(self) -> Any:
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as e:
            self.error, self.error_status = str(e), e.error_status_hint
            if e.error_status_hint == 431:  # the same words however the headers arrived
                self.error = self.too_large()
            raise
        if isinstance(event, h11.Request):
            names = {name for name, _ in event.headers}
            if b"content-length" in names and b"transfer-encoding" in names:
                self.error, self.error_status = "a request may not carry both Content-Length and Transfer-Encoding", 400
                raise h11.RemoteProtocolError(self.error, 400)
            size = len(event.method) + len(event.target) + sum(len(n) + len(v) + 4 for n, v in event.headers)
            if size > self.header_limit:  # h11 checks only what is still incomplete: all of it may come at once
                self.error, self.error_status = self.too_large(), 431
                raise h11.RemoteProtocolError(self.error, 431)
            if self.on_request is not None:
                self.on_request()
            if event.target[:1] != b"/" and _ABSOLUTE.match(event.target):  # RFC 9112 3.2.2: accept it
                event = h11.Request(method=event.method, target=origin_form(event.target), headers=event.headers,
                                    http_version=event.http_version)
        return event

    def too_large(self) -> str:
        return f"request headers larger than {self.header_limit} bytes"


_ABSOLUTE = re.compile(rb"(?i)https?://[^/?#]*")


def origin_form(target: bytes) -> bytes:
    """``http://host:port/correct?x`` -> ``/correct?x`` (``/`` when the path is empty): a request's absolute-form
    target, which a server must accept (a client talking to a proxy, or configured as one, sends it)."""
    rest = target[_ABSOLUTE.match(target).end():]  # type: ignore[union-attr]
    return rest if rest[:1] == b"/" else b"/" + rest


REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large"}  # the status lines of protocol errors


class GuardedH11Protocol(H11Protocol):
    """See the module docstring. ``limits`` None: read from the CSC_* environment (worker processes)."""

    limits: ConnectionLimits | None = None

    def __init__(self, config: Any, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._limits = type(self).limits or _limits_from_environment()
        size = config.h11_max_incomplete_event_size  # as uvicorn's own connection
        conn = _Connection(h11.SERVER, size if size is not None else DEFAULT_MAX_INCOMPLETE_EVENT_SIZE)
        conn.on_request = self._headers_complete
        conn.header_limit = size if size is not None else DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self._clients = _clients.setdefault(server_state, _Clients())
        self._client: str | None = None
        self._accepted = False  # counted in the server's accepted connections
        self.conn = conn
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = False  # bytes of the next request arrived since the timer started
        self._refused = False  # answered with a 503 at connection time (over a cap)
        self._draining = False  # idle when the shutdown began: kept open ``DRAIN_S`` to answer a late request

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self._client = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        clients = self._clients
        clients.open[self._client] += 1
        # only accepted connections count toward the server's cap: one address's refused ones, held idle, never
        # lock other addresses out (its own count still includes them)
        reason = ("server" if clients.accepted >= self._limits.max_connections
                  else "client" if clients.open[self._client] > self._limits.max_connections_per_client else None)
        if reason is None:
            self._accepted = True
            clients.accepted += 1
            self._start_header_timer()
        else:
            self._refuse(reason)

    def _refuse(self, reason: str) -> None:
        """Answer a connection over a cap with a JSON 503 at once and close it (see the module docstring)."""
        clients = self._clients
        self._refused = True
        request_id = uuid.uuid4().hex
        self.transport.write(raw_response(503, "Service Unavailable", DETAILS[reason],
                                          f"retry-after: 1\r\nx-request-id: {request_id}\r\n".encode("ascii")))
        self._header_timer = self.loop.call_later(LINGER_S, self.transport.close)
        count = self.app_state.get(COUNT_REFUSED)
        if count is not None:
            count(reason)
        clients.refused += 1
        now = self.loop.time()
        if now - clients.logged_at >= LOG_EVERY_S:
            self.logger.warning("%d connection(s) refused with 503 in the last %g s (now %d open, %d from %s; caps "
                                "%d and %d per address)", clients.refused, LOG_EVERY_S, len(self.connections),
                                clients.open[self._client or "unknown"], self._client, self._limits.max_connections,
                                self._limits.max_connections_per_client)
            clients.refused, clients.logged_at = 0, now

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        if self._accepted:
            self._clients.accepted -= 1
            self._accepted = False
        if self._client is not None:
            self._clients.open[self._client] -= 1
            if self._clients.open[self._client] <= 0:
                del self._clients.open[self._client]
            self._client = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # answered already: what it sends is dropped until the linger ends
            return
        if self._draining and data:  # a request sent as the shutdown began: a 503 to retry elsewhere, not a reset
            self._draining = False
            self._stop_header_timer()
            self.transport.write(raw_response(503, "Service Unavailable", "the service is shutting down; retry the "
                                              "request", b"retry-after: 5\r\n"))
            self.transport.close()
            return
        if self._header_timer is not None and data:
            self._header_bytes = True
        super().data_received(data)

    def shutdown(self) -> None:
        """The server's graceful shutdown: an idle keep-alive connection stays open ``DRAIN_S`` more, so that a
        request its client sent as the shutdown began gets a 503 and a close instead of a reset; others as uvicorn."""
        idle = self.cycle is None or self.cycle.response_complete
        if idle and not self._refused and not self.transport.is_closing():
            self._stop_header_timer()
            self._draining = True
            self._header_timer = self.loop.call_later(DRAIN_S, self._drained)
            return
        super().shutdown()

    def _drained(self) -> None:
        self._header_timer = None
        self._draining = False
        if not self.transport.is_closing():
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()

    def eof_received(self) -> None:
        if self._refused:  # the client read its answer and left: close now
            self.transport.close()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._start_header_timer()  # before uvicorn handles a pipelined request, which stops it
        super().on_response_complete()

    def _should_upgrade(self) -> bool:
        return False  # see the module docstring: never hand the transport to a WebSocket protocol

    def send_400_response(self, msg: str) -> None:
        self._stop_header_timer()
        conn = self.conn
        reason = without_echo(conn.error if isinstance(conn, _Connection) and conn.error else msg)
        status = conn.error_status if isinstance(conn, _Connection) and conn.error_status in (400, 431) else 400
        body = json.dumps({"detail": f"invalid HTTP request: {reason}"}, ensure_ascii=True).encode("ascii")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=status, headers=headers,
                                                             reason=REASONS[status].encode("ascii"))) or b"")
            self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:  # h11 cannot frame an answer in this state: write it whole
            self.transport.write(raw_response(status, REASONS[status], f"invalid HTTP request: {reason}"))
        self.transport.close()

    # ---- the header timer ------------------------------------------------------------------------

    def _start_header_timer(self) -> None:
        self._stop_header_timer()
        self._header_bytes = False
        self._header_timer = self.loop.call_later(self._limits.header_timeout_s, self._header_timeout)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_complete(self) -> None:
        self._stop_header_timer()

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self._header_bytes:  # a request was on its way: say why it ends
            self.logger.info("request headers incomplete after %g s: closing the connection",
                             self._limits.header_timeout_s)
            detail = f"the request headers took longer than {self._limits.header_timeout_s:g} s to arrive"
            self.transport.write(raw_response(408, "Request Timeout", detail))
        self.transport.close()


def protocol_for(settings: ServiceSettings) -> type[GuardedH11Protocol]:
    """The protocol class with ``settings``' limits (for one process; worker processes read the environment)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": ConnectionLimits.of(settings)})
