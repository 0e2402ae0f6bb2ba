"""Prometheus metrics in a registry of the app's own (never the global one), and the ASGI middleware
that counts every response, including those that never reach a route (413, 404), and requests whose client
left before the answer (status 499, as nginx counts them)."""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .asgi import HttpMiddleware
from .log_text import loggable, logged_path

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
ERROR_KINDS = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
               408: "body_timeout", 413: "too_large", 415: "unsupported_media_type", 422: "validation",
               429: "rate_limited", 499: "client_disconnect", 500: "internal", 503: "unavailable", 504: "timeout"}
CLIENT_GONE = 499  # the client disconnected before the answer (nginx's code; never sent, only counted)
STATUS_KEY = "csc.status"  # the status counted for a request, left in its ASGI scope for the access log

log = logging.getLogger(__name__)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("csc_http_requests", "HTTP requests by route, method and status code",
                                ["route", "method", "status"], registry=r)
        self.latency = Histogram("csc_http_request_duration_seconds", "HTTP request latency by route",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.errors = Counter("csc_http_errors", "Error responses (status >= 400) by route and kind",
                              ["route", "kind"], registry=r)
        self.in_flight = Gauge("csc_http_requests_in_flight", "HTTP requests being handled", registry=r)
        self.batch_size = Histogram("csc_batch_size", "Chunks (sentences) per model call",
                                    buckets=BATCH_BUCKETS, registry=r)
        self.model_seconds = Histogram("csc_model_seconds", "Seconds of each model call (a unit of work)",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.queued = Gauge("csc_queue_depth", "Admitted requests waiting for the model or between their units "
                                               "(preparing included)", registry=r)
        self.texts = Counter("csc_texts", "Texts corrected", registry=r)
        self.chars = Counter("csc_chars", "Characters corrected", registry=r)
        self.model_errors = Counter("csc_model_errors", "correct_batch calls that raised", registry=r)
        self.model_info = Gauge("csc_model_info", "The loaded model (value 1)", ["name", "version", "provider", "precision"],
                                registry=r)
        self.cost_rate = Gauge("csc_cost_chars_per_second", "Model speed admission assumes now (cost characters/s)",
                               registry=r)
        self.refused = Counter("csc_refused", "Requests refused before any work (cost, busy) or ended after units "
                               "that showed them late (slow, late), by reason", ["reason"], registry=r)
        self.connections_refused = Counter("csc_connections_refused", "Connections answered 503 at once, over a "
                                           "cap, by cap (server, client)", ["cap"], registry=r)

    def observe_batch(self, size: int, seconds: float) -> None:
        self.batch_size.observe(size)
        self.model_seconds.observe(seconds)

    def follow(self, runner: Any) -> None:
        """Gauges read from ``runner`` (a ``service.batching.Runner``) at every scrape."""
        self.cost_rate.set_function(lambda: runner.rate or 0.0)
        self.queued.set_function(lambda: runner.queued + runner.preparing)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


def method_label(method: str) -> str:
    """A standard method, else "other": a client cannot add label values by inventing methods."""
    return method if method in METHODS else "other"


def route_label(scope: Scope, known: frozenset[str] = frozenset(), mounts: tuple[str, ...] = ()) -> str:
    """The route template, never an arbitrary raw path, so labels stay few."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path
    raw = scope.get("path", "")
    if raw in known:  # routes without a route object in scope (/openapi.json), or answered before routing (413)
        return str(raw)
    for mount in mounts:
        if raw.startswith(mount + "/"):
            return mount
    return "unmatched"


class MetricsMiddleware(HttpMiddleware):
    def __init__(self, app: ASGIApp, metrics: Metrics, known_paths: frozenset[str] = frozenset(),
                 mounts: tuple[str, ...] = ()) -> None:
        super().__init__(app)
        self.metrics = metrics
        self.known_paths = known_paths
        self.mounts = mounts

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        status: int | None = None
        gone = False
        start = time.perf_counter()

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        async def receive_and_record() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive_and_record, send_and_record)
        finally:
            self.metrics.in_flight.dec()
            route = route_label(scope, self.known_paths, self.mounts)
            if status is None:  # no answer: the client left (e.g. in the middle of its upload), or the app failed
                status = CLIENT_GONE if gone else 500
                if gone:
                    log.info("%s %s: the client disconnected before the answer", loggable(scope["method"]),
                             logged_path(scope))
            scope[STATUS_KEY] = status
            m = self.metrics
            m.requests.labels(route, method_label(scope["method"]), str(status)).inc()
            m.latency.labels(route).observe(time.perf_counter() - start)
            if status >= 400:
                m.errors.labels(route, ERROR_KINDS.get(status, str(status))).inc()
