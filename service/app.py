"""``create_app()``: the FastAPI application. The lifespan loads one ``Corrector`` (from settings, never
from a request), starts the runner (micro-batcher or one call per request) and stops both on shutdown.

    uvicorn --factory service.app:create_app        # settings from CSC_* environment variables
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.routing import Mount, Route

from corrector import CorrectorError

from .batching import DirectRunner, MicroBatcher, Runner, SupportsCorrectBatch
from .errors import BodyGuardMiddleware, JSONResponse, ShutdownGuardMiddleware, install_error_handlers
from .metrics import Metrics, MetricsMiddleware
from .routes import JSON_ROUTES, STATIC_DIR, correct_router, demo_router, ops_router
from .settings import ServiceSettings

log = logging.getLogger("service")


class ModelLoadError(RuntimeError):
    """The model bundle could not be loaded; the server does not start."""


def load_corrector(settings: ServiceSettings) -> SupportsCorrectBatch:
    from corrector import Corrector

    try:
        fixer = Corrector.load(settings.model_dir, device=settings.device, threads=settings.threads,
                               precision=settings.precision,
                               **settings.corrector_settings)
    except CorrectorError as e:
        raise ModelLoadError(f"cannot load the model: {e}") from None
    fixer.correct_batch(["今天天气很好。"])  # jieba's dictionary and the word-pair index load on first use: before /ready
    return fixer


def make_runner(corrector: SupportsCorrectBatch, settings: ServiceSettings, metrics: Metrics) -> Runner:
    kind = MicroBatcher if settings.batching else DirectRunner
    return kind(corrector, max_batch_size=settings.max_batch_size, max_batch_chars=settings.max_batch_chars,
                max_wait_ms=settings.max_wait_ms, max_concurrent=settings.max_concurrent_batches,
                on_batch=metrics.observe_batch)


def create_app(settings: ServiceSettings | None = None, *, corrector: SupportsCorrectBatch | None = None) -> FastAPI:
    """The app. ``corrector`` skips loading (tests pass a loaded or fake one); otherwise the lifespan loads
    ``settings.model_dir``."""
    settings = settings if settings is not None else ServiceSettings()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        fixer = corrector if corrector is not None else await asyncio.to_thread(load_corrector, settings)
        runner = make_runner(fixer, settings, metrics)
        await runner.start()
        networks = getattr(fixer, "networks", None)
        provider = str(getattr(networks, "provider", "unknown"))
        precision = str(getattr(networks, "precision", "unknown"))
        metrics.model_info.labels(fixer.name, fixer.version, provider, precision).set(1)
        app.state.corrector, app.state.runner = fixer, runner
        log.info("model %s (%s) on %s (%s graphs); micro-batching %s", fixer.name, fixer.version, provider, precision,
                 f"on (max {settings.max_batch_size} texts, {settings.max_wait_ms:g} ms)" if settings.batching
                 else "off")
        try:
            yield
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
    app.add_middleware(BodyGuardMiddleware, max_bytes=settings.max_body_bytes, json_routes=JSON_ROUTES)
    app.add_middleware(ShutdownGuardMiddleware)
    known = frozenset(r.path for r in app.routes if isinstance(r, Route))
    mounts = tuple(r.path for r in app.routes if isinstance(r, Mount))
    app.add_middleware(MetricsMiddleware, metrics=metrics, known_paths=known, mounts=mounts)  # outermost: sees all
    return app


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("electra-csc")
    except PackageNotFoundError:
        return "0"
