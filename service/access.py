"""For a service exposed beyond one machine (both off by default): API keys and a per-client rate limit,
checked from the headers alone, before the body is read or parsed.

* With keys set (``CSC_API_KEYS``, ``--api-keys-file``; each at least 16 characters), the protected routes answer
  401 unless the request carries one of them as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``. An address
  that sends wrong keys gets ten at once, then one every 10 s (429 with ``Retry-After`` in between).
* With a rate (``--rate-limit-per-s``), each client may send ``burst`` requests at once to the limited
  routes, then one every 1/rate seconds (a token bucket); beyond that, 429 with ``Retry-After``. A client
  is its API key when keys are set, else its address (behind a proxy: the proxy's, see docs/service.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import math
from collections import OrderedDict

from starlette.types import ASGIApp, Receive, Scope, Send

from .asgi import HttpMiddleware
from .errors import refuse

MAX_CLIENTS = 10_000  # buckets kept; the least recently seen client is forgotten first (it starts full again)
WRONG_KEY_BURST = 10  # wrong keys an address may send at once ...
WRONG_KEY_RATE = 0.1  # ... then one every 10 s: guessing a key stays hopeless, a typo costs seconds


class RateLimiter:
    """Token buckets per client: ``burst`` tokens, refilled at ``rate`` per second."""

    def __init__(self, rate: float, burst: int, max_clients: int = MAX_CLIENTS):
        self.rate = rate
        self.burst = burst
        self.max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, when)

    def take(self, client: str, now: float) -> float:
        """Spend one token of ``client``'s: 0 when it had one, else the seconds until it will."""
        tokens, when = self._buckets.pop(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - when) * self.rate)
        wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate
        self._buckets[client] = (tokens - 1 if tokens >= 1 else tokens, now)
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return wait


def presented_key(scope: Scope) -> str | None:
    """The key a request carries: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, key = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and key.strip():
                return key.strip()
        elif name == b"x-api-key" and value.strip():
            return value.decode("latin-1").strip()
    return None


class AccessMiddleware(HttpMiddleware):
    """401 without a valid key on ``protected`` paths; 429 past the rate on ``limited`` (method, path) pairs."""

    def __init__(self, app: ASGIApp, keys: frozenset[str] = frozenset(), protected: frozenset[str] = frozenset(),
                 limiter: RateLimiter | None = None, limited: frozenset[tuple[str, str]] = frozenset()) -> None:
        super().__init__(app)
        self.keys = [k.encode("utf-8") for k in sorted(keys)]
        self.protected = protected
        self.limiter = limiter
        self.limited = limited
        self.wrong_keys = RateLimiter(WRONG_KEY_RATE, WRONG_KEY_BURST)  # per address

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = presented_key(scope) if self.keys else None
        if self.keys and scope["path"] in self.protected and not self._valid(key):
            detail = "an API key is required: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'" if key is None \
                else "the API key is not valid"
            if key is not None and (wait := self.wrong_keys.take(self._client(scope, None),
                                                                 asyncio.get_running_loop().time())) > 0:
                retry = max(1, math.ceil(wait))  # guessing keys: this address waits, whatever it sends
                await refuse(scope, receive, send, 429, f"too many wrong API keys from this address; retry in {retry} s",
                             drain=True, headers={"Retry-After": str(retry)})
                return
            await refuse(scope, receive, send, 401, detail, drain=True, headers={"WWW-Authenticate": "Bearer"})
            return
        if self.limiter is not None and (scope["method"], scope["path"]) in self.limited:
            wait = self.limiter.take(self._client(scope, key), asyncio.get_running_loop().time())
            if wait > 0:
                retry = max(1, math.ceil(wait))
                await refuse(scope, receive, send, 429, f"too many requests from this client; retry in {retry} s",
                             drain=True, headers={"Retry-After": str(retry)})
                return
        await self.app(scope, receive, send)

    def _valid(self, key: str | None) -> bool:
        if key is None:
            return False
        given = key.encode("latin-1")  # the header's own bytes
        return any([hmac.compare_digest(given, k) for k in self.keys])  # a list: every key compared, always

    def _client(self, scope: Scope, key: str | None) -> str:
        """The key's hash when keys are set and one is given, else the address (``key`` None)."""
        if self.keys and key is not None:
            return "key:" + hashlib.sha256(key.encode("latin-1")).hexdigest()
        client = scope.get("client")
        return f"addr:{client[0]}" if client else "addr:-"
