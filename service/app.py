"""``create_app()``: the FastAPI application. The lifespan loads one ``Corrector`` (from settings, never
from a request), measures its speed for admission (unless ``cost_chars_per_s`` is set), starts the runner
(micro-batcher or one call per request) and stops both on shutdown.

    uvicorn --factory service.app:create_app        # settings from CSC_* environment variables
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.middleware import Middleware
from starlette.routing import Mount, Route

from corrector import CorrectorError

from .accept_errors import throttled
from .access import AccessMiddleware, RateLimiter
from .batching import Runner
from .body_guard import BodyGuardMiddleware
from .cost import measure_rate
from .descriptors import descriptor_cap, open_files_limit
from .errors import JSONResponse, install_error_handlers, server_maxima
from .metrics import Metrics, MetricsMiddleware
from .protocol import COUNT_REFUSED
from .request_id import RequestIdMiddleware
from .routes import (
    JSON_ROUTES,
    KEYED_PATHS,
    LIMITED_ROUTES,
    STATIC_DIR,
    correct_router,
    demo_router,
    ops_router,
)
from .schemas import max_json_values
from .settings import ServiceSettings
from .shutdown_guard import ShutdownGuardMiddleware
from .unexpected_errors import UnexpectedErrorMiddleware
from .upgrade_refusal import UpgradeRefusalMiddleware
from .work import SupportsWorkUnits

log = logging.getLogger("service")
# how long a thread holding the GIL (the model's decoding, a text being prepared) may keep the event loop waiting;
# Python's default, 5 ms, lets a few such waits add up to tens of milliseconds for a /health during long texts
SWITCH_INTERVAL_S = 0.001


class ModelLoadError(RuntimeError):
    """The model bundle could not be loaded; the server does not start."""


def load_corrector(settings: ServiceSettings) -> SupportsWorkUnits:
    """The corrector, loaded and run once; any failure (a missing or corrupt file, a device that is not
    there) is a ModelLoadError with a one-line message."""
    from corrector import Corrector

    try:
        fixer = Corrector.load(settings.model_dir, device=settings.device, threads=settings.threads,
                               precision=settings.precision, **settings.corrector_overrides())
        fixer.correct_batch(["今天天气很好。"])  # jieba's dictionary and the word-pair index load on first use: before /ready
    except CorrectorError as e:
        raise ModelLoadError(f"cannot load the model: {e}") from None
    except Exception as e:  # ONNX Runtime's own errors: a corrupt graph, a missing CUDA library, ...
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise ModelLoadError(f"cannot load the model: {type(e).__name__}: {lines[0][:300]}") from None
    return fixer


def model_speed(corrector: SupportsWorkUnits, settings: ServiceSettings) -> float:
    """Cost characters per second: ``cost_chars_per_s`` when set, else the start-up measurement (measured now
    unless the CLI measured it before starting its workers). Then the runner follows the model as it runs."""
    if settings.cost_chars_per_s is not None:
        return settings.cost_chars_per_s
    if settings.measured_chars_per_s is not None:
        return settings.measured_chars_per_s
    try:
        return measure_rate(lambda texts: corrector.correct_batch(texts))
    except Exception as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise ModelLoadError(f"cannot run the model: {type(e).__name__}: {lines[0][:300]}") from None


def make_runner(corrector: SupportsWorkUnits, settings: ServiceSettings, metrics: Metrics, rate: float) -> Runner:
    return Runner(corrector, gather=settings.batching, max_batch_size=settings.max_batch_size, max_batch_chars=settings.max_batch_chars,
                  max_wait_ms=settings.max_wait_ms, max_concurrent=settings.max_concurrent_batches,
                  on_batch=metrics.observe_batch, rate=rate, share=settings.admission_share,
                  adapt_rate=settings.cost_chars_per_s is None)


def create_app(settings: ServiceSettings | None = None, *, corrector: SupportsWorkUnits | None = None) -> FastAPI:
    """The app. ``corrector`` skips loading (tests pass a loaded or fake one); otherwise the lifespan loads
    ``settings.model_dir``."""
    settings = settings if settings is not None else ServiceSettings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        throttled(asyncio.get_running_loop())  # a flood of accept errors is one line per interval
        fixer = corrector if corrector is not None else await asyncio.to_thread(load_corrector, settings)
        rate = await asyncio.to_thread(model_speed, fixer, settings)
        gc.freeze()  # the model's objects live as long as the process: no collection walks them again
        runner = make_runner(fixer, settings, metrics, rate)
        metrics.follow(runner)
        await runner.start()
        provider, precision, reason = fixer.networks.provider, fixer.networks.precision, fixer.networks.provider_reason
        metrics.model_info.labels(fixer.name, fixer.version, provider, precision).set(1)
        app.state.corrector, app.state.runner = fixer, runner
        files = open_files_limit()
        log.info("model %s (%s) on %s%s (%s graphs); micro-batching %s; admission at %s cost characters per second; "
                 "%s file descriptors, at most %d connections", fixer.name, fixer.version, provider,
                 f": {reason}" if reason else "", precision,
                 f"on (max {settings.max_batch_size} texts, {settings.max_wait_ms:g} ms)" if settings.batching
                 else "off", f"{rate:,.0f}", "unlimited" if files is None else f"{files:,}",
                 descriptor_cap(settings.max_connections))
        try:  # the connection layer counts the connections it refuses (service.protocol)
            yield {COUNT_REFUSED: lambda cap: metrics.connections_refused.labels(cap).inc()}
        finally:
            app.state.corrector = app.state.runner = None  # /ready says 503 from here on
            await runner.stop(timeout=2.0)  # uvicorn already waited for the requests in flight
            log.info("stopped")

    app = FastAPIOffline(  # /docs and /redoc with Swagger UI and Redoc served from the fastapi-offline package
        title="electra-csc",
        summary="Chinese spelling correction with ELECTRA",
        version=_package_version(),
        lifespan=lifespan,
        default_response_class=JSONResponse,
        redirect_slashes=False,  # a redirect would be built from the client's Host header; /correct/ is a 404
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.corrector = None
    app.state.runner = None
    install_error_handlers(app)
    app.include_router(correct_router)
    app.include_router(ops_router)
    app.include_router(demo_router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    keys = settings.keys()
    limiter = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst) if settings.rate_limit_per_s else None
    app.user_middleware = [  # the stack, outermost first (Starlette builds it from this list)
        Middleware(RequestIdMiddleware, access_log=settings.access_log),  # every log line below has the request's ID
        Middleware(MetricsMiddleware, metrics=metrics, known_paths=known_paths(app), mounts=mount_paths(app)),
        Middleware(UnexpectedErrorMiddleware),
        Middleware(ShutdownGuardMiddleware),
        Middleware(UpgradeRefusalMiddleware),
        *([Middleware(AccessMiddleware, keys=keys, protected=KEYED_PATHS, limiter=limiter, limited=LIMITED_ROUTES)]
          if keys or limiter is not None else []),
        Middleware(BodyGuardMiddleware, max_bytes=settings.max_body_bytes, json_routes=JSON_ROUTES,
                   timeout=settings.body_timeout_s, max_values=max_json_values(settings.max_texts)),
    ]
    document_this_server(app, settings, bool(keys))
    return app


def document_this_server(app: FastAPI, settings: ServiceSettings, keyed: bool) -> None:
    """The OpenAPI document says what this server does: the per-request caps it sets below the declared ranges
    (``top_k``, ``shortlist``), and, when API keys are on, how to send one (so /docs can "Authorize")."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()  # FastAPI caches it; patching is idempotent
        props = schema["components"]["schemas"]["CorrectRequest"]["properties"]
        for name, limit in server_maxima(settings).items():
            for branch in props[name].get("anyOf", [props[name]]):
                if "maximum" in branch:
                    branch["maximum"] = limit
        if keyed:
            schema["components"]["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer KEY"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
            for path in KEYED_PATHS:
                for operation in schema["paths"].get(path, {}).values():
                    operation["security"] = [{"bearer": []}, {"apiKey": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def known_paths(app: FastAPI) -> frozenset[str]:
    """Every route's path template, for the metrics' labels of requests answered before routing (413, 415).
    The routers' own lists: ``app.routes`` holds included-router objects in recent FastAPI versions."""
    routers = (correct_router, ops_router, demo_router)
    return frozenset(r.path for router in routers for r in router.routes if isinstance(r, Route)) \
        | frozenset(r.path for r in app.routes if isinstance(r, Route))


def mount_paths(app: FastAPI) -> tuple[str, ...]:
    return tuple(r.path for r in app.routes if isinstance(r, Mount))


def _package_version() -> str:
    from corrector.model_path import installed_version

    return installed_version() or "0"
